"""Ascend / MindSpore / CANN folders: real shared outputs cross-checked against the stdlib
``csv``/``json`` reading of the same files, plus hand-made CSV quirks and a two-rank folder."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from reportgen.errors import InputError
from reportgen.parsers import ascend
from reportgen.testing.profiles import derived
from shared_data import FRAMEWORK, needs

SHARED = FRAMEWORK
needs_shared = needs(FRAMEWORK)
RANK0 = SHARED / "ascend-msinsight/test_data/test_rank_0"


def load_ascend(path):
    """An Ascend folder as a report sees it: read, then its framework tables derived."""
    return derived(ascend.load_ascend(path))


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def test_csv_quirks(tmp_path):
    p = tmp_path / "kernel_details.csv"
    # CRLF, trailing tab inside a quoted number, N/A, tripled quotes around shapes, renamed
    # column (Block Num), no Step Id
    p.write_bytes(b'Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),'
                  b'Wait Time(us),Block Num,Input Shapes\r\n'
                  b'1,2,16,MatMul,MatMulV2,AI_CORE,"1736413971558972.912\t",10.5,0,24,"""2,8193;4"""\r\n'
                  b'1,N/A,N/A,hcom_allReduce_1,hcom_allReduce_,HCCL,1736413971558990,4,N/A,0,N/A\r\n')
    prof = load_ascend(tmp_path)
    c = prof.commands.set_index("func_name")
    assert c.loc["MatMul", "start_ns"] == 1736413971558972912
    assert c.loc["MatMul", "end_ns"] - c.loc["MatMul", "start_ns"] == 10500
    assert c.loc["MatMul", "engine"] == "Stream 16" and c.loc["MatMul", "block_dim"] == 24
    assert c.loc["MatMul", "input_shapes"] == "2,8193;4"
    assert c.loc["hcom_allReduce_1", "engine"] == "HCCL"      # no stream: lane = core type
    assert c.loc["MatMul", "core_type"] == "AI_CORE" and c.loc["MatMul", "op_type"] == "MatMulV2"
    k = prof.tables["Kernels"].set_index("Name")
    assert k.loc["MatMul", "Accelerator Core"] == "AI_CORE" and k.loc["MatMul", "Block Dim"] == "24"


@needs_shared
def test_msinsight_rank_folder_values():
    prof = load_ascend(RANK0)
    kd = csv_rows(RANK0 / ascend.APO / "kernel_details.csv")
    c = prof.commands
    assert len(c) == len(kd) == 21 and set(c["core"]) == {0}
    z = c[c["func_name"] == "ZerosLike"].iloc[0]
    assert z["start_ns"] == 1695115378713661000 and z["end_ns"] - z["start_ns"] == 496851
    assert prof.meta.source == "ascend"
    # vendor tables carried with clean numbers
    steps = prof.tables["Steps"].iloc[0]
    assert steps["Computing"] == pytest.approx(75174.57464453117)
    ops = prof.tables["Operators"].set_index("Name")
    assert ops.loc["aten::zero_", "Self CPU (us)"] == pytest.approx(221.16)
    assert ops.loc["aten::zero_", "Device total (us)"] == pytest.approx(496.8508203)
    # memory: PTA peak from memory_record.csv read independently
    rec = [r for r in csv_rows(RANK0 / ascend.APO / "memory_record.csv") if r["Component"] == "PTA"]
    peak = prof.tables["Memory Peak"].set_index("Component")
    assert peak.loc["PTA", "Peak Allocated (MB)"] == pytest.approx(max(float(r["Total Allocated(MB)"]) for r in rec))
    # npu_module_mem.csv has CRLF and tab-suffixed times: APP reservation still parsed
    comp = prof.tables["Component Memory"].set_index("Component")
    assert comp.loc["APP", "Peak Reserved (MB)"] == pytest.approx(25750.0)
    comm = json.loads((RANK0 / ascend.APO / "communication.json").read_text())
    n_ops = sum(len(ops_) for kinds in comm.values() for ops_ in kinds.values())
    assert len(prof.tables["Communication"]) == n_ops
    mat = json.loads((RANK0 / ascend.APO / "communication_matrix.json").read_text())
    n_links = sum(len(links) for kinds in mat.values() for ops_ in kinds.values() for links in ops_.values())
    cm = prof.tables["Communication Matrix"]
    assert len(cm) == n_links
    send = cm[(cm["Operator"] == "hcom_send__822_0@13337953553061386822") & (cm["Dst Rank"] == "8")].iloc[0]
    assert send["Transport"] == "RDMA" and send["Bandwidth (GB/s)"] == pytest.approx(24.2778)
    kern = prof.tables["Kernels"]
    fa = kern[kern["Name"] == "FlashAttentionScore"]   # split by core type (MIX_AIC / MIX_AIV)
    assert fa["Calls"].sum() == sum(1 for r in kd if r["Name"] == "FlashAttentionScore")
    assert fa["Total (us)"].sum() == pytest.approx(
        sum(float(r["Duration(us)"]) for r in kd if r["Name"] == "FlashAttentionScore"), abs=1e-3)


@needs_shared
def test_two_rank_folder(tmp_path):
    for r in (0, 1):
        d = tmp_path / f"worker_{r}_ascend_pt"
        shutil.copytree(RANK0, d)
        info = d / "profiler_info_0.json"
        data = json.loads(info.read_text())
        data["rank_id"] = r
        info.unlink()
        (d / f"profiler_info_{r}.json").write_text(json.dumps(data))
    prof = load_ascend(tmp_path)
    assert sorted(set(prof.commands["core"])) == [0, 1]
    assert len(prof.commands) == 42
    ranks = prof.tables["Ranks"].set_index("Rank")
    assert ranks.loc[0, "Device busy (us)"] == pytest.approx(ranks.loc[1, "Device busy (us)"])
    assert set(prof.tables["Steps"]["Rank"]) == {0, 1}
    # global_idx restarts per sheet
    g = prof.commands.groupby("sheet")["global_idx"].agg(["min", "max", "size"])
    assert (g["min"] == 0).all() and (g["max"] == g["size"] - 1).all()


@needs_shared
def test_kernel_details_591_rows_core_types():
    d = SHARED / "ascend-msprof-analyze/ut/advisor/advisor_backend/compute_advice"
    prof = load_ascend(d)
    c = prof.commands
    assert len(c) == 591
    counts = c["core_type"].value_counts().to_dict()
    assert counts == {"AI_VECTOR_CORE": 520, "MIX_AIV": 25, "HCCL": 19, "AI_CORE": 13, "AI_CPU": 7,
                      "DSA_SQE": 7}


@needs_shared
def test_op_summary_folder():
    prof = load_ascend(SHARED / "ascend-msinsight/test_data/test_kernel_parse")
    rows = csv_rows(SHARED / "ascend-msinsight/test_data/test_kernel_parse/op_summary_1.csv")
    assert len(prof.commands) == len(rows)
    assert set(prof.commands["func_type"].astype(str)) == {r["Task Type"] for r in rows}


@needs_shared
def test_trace_view_folder_links_kernels_to_ops():
    prof = load_ascend(SHARED / "ascend-msprof-analyze/ut/advisor/timeline_advice")
    assert len(prof.commands) == 276 and len(prof.host) == 1389
    # self attribution counts every linked task exactly once (its nearest cpu_op)
    hd = prof.tables["Host-Device Self"]
    linked = prof.commands[prof.commands["op_row"] >= 0]
    assert hd["device slices"].sum() == len(linked) == 274
    assert hd["device duration(ms)"].sum() == pytest.approx(
        (linked["end_ns"] - linked["start_ns"]).sum() / 1e6)
    step = prof.tables["Host-Device"].set_index("name").loc["ProfilerStep#1"]
    assert 0 < step["device slices"] < 274   # the backward thread's ops are not inside the step


@needs_shared
def test_cann_prof_folder():
    prof_dir = SHARED / "mindinsight/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC"
    prof = load_ascend(prof_dir)
    ev = json.loads((prof_dir / "device_0/timeline/msprof_0_2_1.json").read_text())
    names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
    hw = [e for e in ev if e.get("ph") == "X" and (
        (names.get(e["pid"]) == "Ascend Hardware" and lanes.get((e["pid"], e["tid"]), "").startswith("Stream"))
        or names.get(e["pid"]) == "HCCL")]
    assert len(prof.commands) == len(hw)
    assert set(prof.commands["core"]) == {0}
    assert not (prof.commands["engine"].astype(str).str.contains("Step Trace")).any()


@needs_shared
def test_mindspore_legacy_folder():
    d = SHARED / "mindinsight/run_2/normal_run/profiler"
    prof = load_ascend(d)
    ev = json.loads((d / "ascend_timeline_display_1.json").read_text())
    assert len(prof.commands) == len(ev) == 112
    assert set(prof.commands["core"]) == {1}            # file suffix _1 = device 1
    aicore = prof.commands[prof.commands["func_type"] == "AI_CORE"]
    assert len(aicore) == sum(1 for e in ev if e["pid"] == 1)
    assert set(aicore["engine"]) == {"Stream 519"}
    assert len(prof.tables["Op Statistic"]) == 21
    assert prof.meta.source == "mindspore"


@needs_shared
def test_cluster_step_trace():
    prof = load_ascend(SHARED / "ascend-msprof-analyze/resource/advisor/cluster_analysis_output")
    t = prof.tables["Cluster Steps"]
    assert len(t) == 9 and (t["Type"] == "rank").sum() == 8


def test_not_ascend(tmp_path):
    with pytest.raises(InputError, match="no ASCEND_PROFILER_OUTPUT"):
        load_ascend(tmp_path)


@needs_shared
def test_mindspore_multi_rank_folders(tmp_path):
    src = SHARED / "mindinsight/run_2/normal_run/profiler"
    for r in (0, 1):
        shutil.copytree(src, tmp_path / "profiler_data" / f"rank_{r}" / "profiler")
    prof = load_ascend(tmp_path / "profiler_data")
    assert sorted(set(prof.commands["core"])) == [0, 1]       # rank from the rank_N folder
    assert len(prof.commands) == 224
    assert set(prof.tables["Op Statistic"]["Rank"]) == {0, 1}
    assert len(prof.tables["Ranks"]) == 2


@needs_shared
def test_trace_view_plus_kernel_details_links(tmp_path):
    """kernel_details rows take the host links of the trace task with the same start."""
    src = SHARED / "ascend-msprof-analyze/ut/advisor/timeline_advice/trace_view.json"
    apo = tmp_path / "run_ascend_pt" / ascend.APO
    apo.mkdir(parents=True)
    shutil.copy(src, apo / "trace_view.json")
    ev = json.loads(src.read_text())
    hw_pid = next(e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"
                  and e["args"]["name"] == "Ascend Hardware")
    tasks = [e for e in ev if e.get("ph") == "X" and e["pid"] == hw_pid]
    with open(apo / "kernel_details.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["Step Id", "Stream ID", "Name", "Type", "Accelerator Core", "Start Time(us)",
                    "Duration(us)", "Block Dim"])
        for e in tasks:
            w.writerow([1, e["tid"], e["name"], "T", "AI_CORE", e["ts"], e["dur"], 8])
    prof = load_ascend(tmp_path)
    c = prof.commands
    assert len(c) == len(tasks) == 276
    assert (c["op_row"] >= 0).sum() == 274                 # same links as the trace alone
    assert set(prof.host["role"].to_numpy()[c["op_row"][c["op_row"] >= 0]]) == {"op"}
    assert (c["block_dim"] == 8).all()


@needs_shared
def test_processed_output_wins_over_raw_prof(tmp_path):
    """A torch_npu rank folder holds ASCEND_PROFILER_OUTPUT and PROF_*: use the former."""
    d = tmp_path / "host_123_ascend_pt"
    shutil.copytree(RANK0, d)
    shutil.copytree(SHARED / "mindinsight/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC",
                    d / "PROF_000001_x")
    prof = load_ascend(d)
    assert len(prof.commands) == 21 and "Steps" in prof.tables


@needs_shared
def test_cann_mindstudio_output_layout(tmp_path):
    src = SHARED / "mindinsight/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC/device_0/timeline"
    out = tmp_path / "PROF_1" / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    shutil.copy(src / "msprof_0_2_1.json", out / "msprof_20230818.json")
    prof = load_ascend(tmp_path)
    assert len(prof.commands) == 828


def test_op_statistic_from_tasks(tmp_path):
    (tmp_path / "kernel_details.csv").write_text(
        "Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n"
        "1,a1,MatMul,AI_CORE,0,10\n1,a2,MatMul,AI_CORE,20,30\n2,b,Add,AI_VECTOR_CORE,5,60\n")
    prof = load_ascend(tmp_path)
    t = prof.tables["Op Statistic"].set_index("OP Type")
    assert t.loc["MatMul", "Count"] == 2 and t.loc["MatMul", "Total Time(us)"] == 40
    assert t.loc["MatMul", "Min Time(us)"] == 10 and t.loc["MatMul", "Max Time(us)"] == 30
    assert t.loc["MatMul", "Ratio(%)"] == pytest.approx(40)
    assert t.loc["Add", "Core Type"] == "AI_VECTOR_CORE"


def test_device_id_without_rank_and_db_only(tmp_path):
    run = tmp_path / "single"
    run.mkdir()
    (run / "kernel_details.csv").write_text(
        "Device_id,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n"
        "3,1,a,MatMul,AI_CORE,0,10\n")
    assert set(load_ascend(run).commands["core"]) == {3}
    db = tmp_path / "db_ascend_pt" / ascend.APO
    db.mkdir(parents=True)
    (db / "ascend_pytorch_profiler_0.db").write_bytes(b"SQLite format 3\x00")
    # a broken DB export is a warning naming it, not a refusal of the folder
    prof = load_ascend(db.parent)
    assert any(w.code == "unreadable-file" and w.where.endswith("ascend_pytorch_profiler_0.db")
               for w in prof.meta.warnings)


@needs_shared
def test_cluster_output_next_to_rank_folders(tmp_path):
    shutil.copytree(RANK0, tmp_path / "rank_0_ascend_pt")
    shutil.copytree(SHARED / "ascend-msprof-analyze/resource/advisor/cluster_analysis_output",
                    tmp_path / "cluster_analysis_output")
    prof = load_ascend(tmp_path)
    assert len(prof.tables["Cluster Steps"]) == 9 and len(prof.commands) == 21


@needs_shared
def test_symlinked_rank_folders_are_followed(tmp_path):
    """Cluster folders assembled from links (profiler_data/rank_N -> elsewhere) read like real
    folders; a link back to an ancestor (a loop) is not followed twice."""
    src = SHARED / "mindinsight/run_2/normal_run"
    data = tmp_path / "profiler_data"
    data.mkdir()
    for r in (0, 1):
        (data / f"rank_{r}").symlink_to(src, target_is_directory=True)  # reads outside tmp_path
    (data / "rank_0_loop").symlink_to(tmp_path, target_is_directory=True)
    prof = load_ascend(data)
    assert sorted(set(prof.commands["core"])) == [0, 1]       # rank from the link's name
    assert len(prof.commands) == 224                           # as test_mindspore_multi_rank_folders
    assert set(prof.tables["Op Statistic"]["Rank"]) == {0, 1}


@needs_shared
def test_symlinked_torch_npu_ranks_and_cann_prof(tmp_path):
    store = tmp_path / "store"
    for r in (0, 1):
        shutil.copytree(RANK0, store / f"r{r}")
        info = store / f"r{r}" / "profiler_info_0.json"
        data = json.loads(info.read_text())
        data["rank_id"] = r
        info.unlink()
        (store / f"r{r}" / f"profiler_info_{r}.json").write_text(json.dumps(data))
        (tmp_path / "cluster").mkdir(exist_ok=True)
        (tmp_path / "cluster" / f"rank_{r}").symlink_to(store / f"r{r}", target_is_directory=True)
    prof = load_ascend(tmp_path / "cluster")
    assert sorted(set(prof.commands["core"])) == [0, 1]
    assert len(prof.commands) == 2 * 21
    assert not any(w.code == "rank-ids" for w in prof.meta.warnings)

    prof_dir = SHARED / "mindinsight/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC"
    (tmp_path / "cann").mkdir()
    (tmp_path / "cann" / "PROF_000001").symlink_to(prof_dir, target_is_directory=True)
    assert len(load_ascend(tmp_path / "cann").commands) == 828  # as test_cann_mindstudio_output_layout
