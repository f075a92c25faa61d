"""The MindSpore guide's files of the shared legacy profiler folder, each read into its table and
checked against a stdlib reading of the file; files with no public sample (hccl_raw, flops,
parallel_strategy) are written here in the format MindSpore documents."""
from __future__ import annotations

import csv
import json
import shutil

import pytest

from reportgen.parsers import ascend
from reportgen.testing.profiles import derived
from shared_data import FRAMEWORK, needs

pytestmark = needs(FRAMEWORK)
MS = FRAMEWORK / "mindinsight/run_2/normal_run/profiler"


def rows(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh, skipinitialspace=True))


@pytest.fixture(scope="module")
def prof():
    return derived(ascend.load_ascend(MS))


def test_step_trace_ticks_are_10ns(prof):
    steps = prof.tables["Steps"]
    src = rows(MS / "step_trace_raw_1_detail_time.csv")
    assert list(steps["step_num"]) == [int(r["step_num"]) for r in src]
    # MindInsight: ms = ticks / 1e5 (10 ns ticks); step 1 took 23.70905 ms
    assert list(steps["total (ms)"]) == pytest.approx([int(r["total"]) / 1e5 for r in src])
    assert steps["total (ms)"].iloc[0] == pytest.approx(23.70905)
    cl = prof.tables["Cluster Step"]
    src = rows(MS / "ascend_cluster_analyse_data-parallel_1_1_1.csv")
    assert cl["fp_and_bp (ms)"].tolist() == pytest.approx([int(r["fp_and_bp"]) / 1e5 for r in src])
    # the per-rank breakdown takes the per-step file (step_trace_raw) over the cluster summary
    b = prof.tables["Rank Step Breakdown"]
    src = rows(MS / "step_trace_raw_1_detail_time.csv")
    assert b["Step"].tolist() == [int(r["step_num"]) for r in src]
    assert b["FP and BP (ms)"].tolist() == pytest.approx([int(r["fp_and_bp"]) / 1e5 for r in src])
    assert b["Tail (ms)"].tolist() == pytest.approx([int(r["tail"]) / 1e5 for r in src])


def test_framework_raw_shapes_joined_to_ai_core_ops(prof):
    shapes = prof.tables["Op Shapes"].set_index("Full Op Name")
    src = rows(MS / "framework_raw_1.csv")
    assert len(shapes) == len(src)
    for r in src[:20]:
        info = json.loads(r["op_info"])
        ins = [info[k] for k in sorted(info, key=lambda k: int(k.split("_")[1])) if k.startswith("input_")]
        row = shapes.loc[r["full_op_name"]]
        assert row["Input Shapes"] == ";".join(i["shape"] for i in ins)
        assert row["Input Data Types"] == ";".join(i["data_type"] for i in ins)
        assert row["Op Type"] == r["op_type"] and row["Block Dim"] == int(r["block_dim"])
    ops = prof.tables["AI Core Ops"].set_index("Full Op Name")
    detail = rows(MS / "aicore_intermediate_1_detail.csv")
    assert len(ops) == len(detail)
    for r in detail:
        assert ops.loc[r["full_op_name"], "Execution Time (ms)"] == pytest.approx(float(r["execution_time"]))
    assert ops.loc["Default/TransData-op118", "Output Formats"] == "NC1HWC0"


def test_input_pipeline(prof):
    queue = prof.tables["Input Pipeline"]
    dq = queue[queue["Source"] == "device_queue_profiling"].iloc[0]
    # "1 64 1 0 10": queue of capacity 64 empty at step 1; "0 1 1 4 10": push took 4 ms
    assert (dq["Step"], dq["Queue Capacity"], dq["Queue Size"], dq["Push Time (ms)"]) == (1, 64, 0, 4.0)
    assert bool(dq["Queue Empty"])
    summary = prof.tables["Input Pipeline Summary"].set_index("Source")
    assert summary.loc["device_queue_profiling", "Empty Queue Ratio"] == 1.0
    assert summary.loc["device_queue_profiling", "Data Pipeline Bottleneck"] == "Yes"
    assert summary.loc["dataset_iterator_profiling", "Data Pipeline Bottleneck"] == "No"
    ops = prof.tables["Input Pipeline Ops"]
    src = rows(MS / "minddata_pipeline_raw_1.csv")
    assert ops["op_type"].tolist() == [r["op_type"] for r in src]
    assert ops["output_queue_usage_rate"].tolist() == pytest.approx([float(r["output_queue_usage_rate"]) for r in src])
    tp = prof.tables["Input Pipeline Throughput"].set_index("op_id")
    data = json.loads((MS / "pipeline_profiling_1.json").read_text())
    for op in data["op_info"]:
        q = (op.get("metrics") or {}).get("output_queue")
        if q:
            assert tp.loc[op["op_id"], "Mean Throughput"] == pytest.approx(sum(q["throughput"]) / len(q["throughput"]))
    cpu = prof.tables["Input Pipeline CPU"]
    cpu_src = json.loads((MS / "minddata_cpu_utilization_1.json").read_text())
    user = cpu[(cpu["Scope"] == "device") & (cpu["Series"] == "user_utilization")].iloc[0]
    assert user["Mean (%)"] == pytest.approx(sum(cpu_src["device_info"]["user_utilization"]) / 3)


def test_undocumented_samples_written_as_documented(tmp_path):
    d = tmp_path / "profiler"
    shutil.copytree(MS, d)
    link = {"0-1": {"SDMA": [2.0, 8.0, 4.0]}, "1-0": {"SDMA": [1.0, 4.0, 4.0], "RDMA": [3.0, 3.0, 1.0]}}
    ops = {"AllReduce-op1": [1, 5.5, 1.5, link]}
    with open(d / "hccl_raw_1.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["step_num", "communication_cost", "wait_cost", "link_info", "communication_operator_cost"])
        w.writerow([1, 7.25, 2.5, json.dumps(link), json.dumps(ops)])
    (d / "flops_1.txt").write_text("full_kernel_name, MFLOPs(10^6), GFLOPS(10^9), FLOPS utilization(%)\n"
                                   "Default/MatMul-op1, 12.5, 3.0, 40.0\n")
    (d / "flops_summary_1.json").write_text('{"FLOPs": 12.5, "FLOPS": 3.0, "FLOPS_Utilization": 40.0}')
    (d / "parallel_strategy_1.json").write_text(json.dumps({"config": {"parallelType": "data_parallel",
                                                                       "stageDevices": [0, 1]}}))
    (d / "dynamic_shape_info_1.json").write_text("{broken")
    prof = derived(ascend.load_ascend(d))
    comm = prof.tables["Communication"].set_index("Operator")
    assert comm.loc["(all)", "Cost (ms)"] == 7.25 and comm.loc["(all)", "Wait (ms)"] == 2.5
    assert comm.loc["(all)", "SDMA Time (ms)"] == 3.0 and comm.loc["(all)", "SDMA Size (MB)"] == 12.0
    assert comm.loc["(all)", "SDMA Bandwidth (GB/s)"] == pytest.approx(4.0)
    assert comm.loc["AllReduce-op1", "Cost (ms)"] == 5.5 and comm.loc["AllReduce-op1", "RDMA Time (ms)"] == 3.0
    flops = prof.tables["FLOPs"]
    assert flops["GFLOPS(10^9)"].tolist() == [3.0]
    assert prof.tables["FLOPs Summary"]["FLOPS_Utilization"].tolist() == [40.0]
    facts = prof.tables["Facts"].set_index("Key")
    assert facts.loc["config.parallelType", "Value"] == "data_parallel"
    assert facts.loc["config.stageDevices", "Value"] == "[0, 1]"
    assert any(w.code == "unreadable-file" and w.where.endswith("dynamic_shape_info_1.json")
               for w in prof.meta.warnings)


def test_multi_rank_step_trace_and_cluster_files(tmp_path):
    data = tmp_path / "profiler_data"
    for r in (0, 1):
        shutil.copytree(MS, data / f"rank_{r}" / "profiler")
    prof = derived(ascend.load_ascend(data))
    b = prof.tables["Rank Step Breakdown"]
    src = rows(MS / "step_trace_raw_1_detail_time.csv")
    assert sorted(set(b["Rank"])) == [0, 1]
    for r in (0, 1):
        assert b[b["Rank"] == r]["Total (ms)"].tolist() == pytest.approx([int(x["total"]) / 1e5 for x in src])
    assert sorted(set(prof.tables["Cluster Step"]["Rank"])) == [0, 1]


def test_timeline_tasks_joined_to_framework_raw(prof):
    """Kernel Shapes of a legacy timeline: each task by its op name, with framework_raw's shapes."""
    k = prof.tables["Kernel Shapes"].set_index("Name")
    events = json.loads((MS / "ascend_timeline_display_1.json").read_text())
    src = {r["op_name"]: r for r in rows(MS / "framework_raw_1.csv")}
    dur = {}
    for e in events:
        if e.get("ph") == "X" and str(e["pid"]) == "1" and e["name"] in src:
            dur[e["name"]] = dur.get(e["name"], 0.0) + float(e["dur"])
    assert dur
    for name, total in dur.items():
        info = json.loads(src[name]["op_info"])
        outs = [info[x] for x in sorted(info) if x.startswith("output_")]
        assert k.loc[name, "Output Shapes"] == ";".join(o["shape"] for o in outs)
        assert k.loc[name, "Total (us)"] == pytest.approx(total, rel=1e-6)
        assert k.loc[name, "Type"] == src[name]["op_type"]
    util = prof.tables["Accelerator Core Utilization"]
    assert util.groupby("Type")["Utilization (%)"].sum().round(9).eq(100).all()
