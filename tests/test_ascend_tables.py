"""The NPU plugin's columns and the MindSpore guide's files, each checked against an independent
stdlib reading (``csv`` / ``json``) of the shared sample it comes from."""
from __future__ import annotations

import csv
import json
import math
from collections import defaultdict

import numpy as np
import pytest

from reportgen.analysis.derive import derive
from reportgen.parsers import ascend
from reportgen.testing.profiles import derived
from shared_data import FRAMEWORK, needs

pytestmark = needs(FRAMEWORK)
RANK0 = FRAMEWORK / "ascend-msinsight/test_data/test_rank_0"
ADVISOR = FRAMEWORK / "ascend-msprof-analyze/ut/advisor/advisor_backend/compute_advice"
MS = FRAMEWORK / "mindinsight/run_2/normal_run/profiler"
PROF = FRAMEWORK / "mindinsight/profiler"


def rows(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def number(text):
    text = (text or "").strip().strip('"').strip()
    try:
        return float(text)
    except ValueError:
        return math.nan


def test_ai_core_columns_equal_operator_details():
    prof = derived(ascend.load_ascend(RANK0))
    ops = prof.tables["Operators"].set_index("Name")
    sums = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for r in rows(RANK0 / ascend.APO / "operator_details.csv"):
        s = sums[r["Name"]]
        s[0] += number(r["Device Self Duration(us)"])
        s[1] += number(r["Device Total Duration(us)"])
        s[2] += number(r["Device Self Duration With AICore(us)"])
        s[3] += number(r["Device Total Duration With AICore(us)"])
    assert set(ops.index) == set(sums)
    for name, (self_, total, self_ai, total_ai) in sums.items():
        row = ops.loc[name]
        assert row["AI Cores Eligible"] == ("Yes" if total_ai > 0 else "No")
        expect_self = 100 * self_ai / self_ if self_ else math.nan
        expect_total = 100 * total_ai / total if total else math.nan
        assert row["AI Cores Self (%)"] == pytest.approx(expect_self, nan_ok=True)
        assert row["AI Cores Total (%)"] == pytest.approx(expect_total, nan_ok=True)
    assert ops.loc["aten::zero_", "AI Cores Total (%)"] == pytest.approx(100.0)


def test_call_stacks_as_written():
    prof = derived(ascend.load_ascend(RANK0))
    t = prof.tables["Operators by Call Stack"].set_index("Name")
    for r in rows(RANK0 / ascend.APO / "operator_details.csv"):
        frames = [f.strip().rstrip(";") for f in r["Call Stack"].replace("\r", "").split("\n")]
        assert t.loc[r["Name"], "Call Stack"].split("\n") == frames
        assert t.loc[r["Name"], "Calls"] == 1


def test_accelerator_core_utilisation_sums_to_100_per_operator():
    prof = derived(ascend.load_ascend(ADVISOR))
    t = prof.tables["Accelerator Core Utilization"]
    per = defaultdict(lambda: defaultdict(float))
    for r in rows(ADVISOR / "kernel_details.csv"):
        per[r["Type"]][r["Accelerator Core"]] += number(r["Duration(us)"])
    for typ, g in t[t["Type"] != "(all)"].groupby("Type"):
        assert g["Utilization (%)"].sum() == pytest.approx(100.0)
        total = sum(per[typ].values())
        for r in g.itertuples():
            assert r[4] == pytest.approx(per[typ][r[2]])                        # Total (us)
            assert r[5] == pytest.approx(100 * per[typ][r[2]] / total)         # Utilization (%)
    assert set(t["Type"]) - {"(all)"} == set(per)
    everything = t[t["Type"] == "(all)"].set_index("Accelerator Core")
    assert everything["Utilization (%)"].sum() == pytest.approx(100.0)
    assert set(everything.index) == {"AI_VECTOR_CORE", "MIX_AIV", "HCCL", "AI_CORE", "AI_CPU", "DSA_SQE"}


def test_kernel_shapes_types_formats_and_pmu_columns():
    prof = derived(ascend.load_ascend(ADVISOR))
    t = prof.tables["Kernel Shapes"]
    src = rows(ADVISOR / "kernel_details.csv")
    assert t["Calls"].sum() == len(src)
    # the PMU columns carry their unit in the name, as numbers
    for name in ("Mean aicore_time (us)", "Mean aic_total_cycles (cycles)",
                 "Mean aic_mac_fp16_ratio (ratio)", "Mean aic_cube_fops (FLOP)", "Mean aiv_vector_fops (FLOP)"):
        assert name in t.columns and t[name].dtype.kind == "f"
    cast = [r for r in src if r["Name"] == "Cast66"]
    row = t[t["Name"] == "Cast66"].iloc[0]
    assert row["Input Shapes"] == "4,1025" and row["Input Data Types"] == "INT64"
    assert row["Output Data Types"] == "INT32" and row["Input Formats"] == "FORMAT_ND"
    assert row["Mean aiv_vector_fops (FLOP)"] == pytest.approx(np.mean([number(r["aiv_vector_fops"]) for r in cast]))
    assert row["Total (us)"] == pytest.approx(sum(number(r["Duration(us)"]) for r in cast))


def test_memory_allocations_and_component_peaks():
    prof = derived(ascend.load_ascend(RANK0))
    alloc = prof.tables["Memory Allocations"]
    src = rows(RANK0 / ascend.APO / "operator_memory.csv")
    assert len(alloc) == len(src)
    assert sorted(alloc["Size (KB)"]) == sorted(number(r["Size(KB)"]) for r in src)
    assert sorted(alloc["Release Time (us)"]) == pytest.approx(sorted(number(r["Release Time(us)"]) for r in src))
    assert list(alloc["Allocation Time (us)"]) == sorted(alloc["Allocation Time (us)"])
    peaks = prof.tables["Component Peaks"].set_index("Component")
    expect = defaultdict(float)
    for r in rows(RANK0 / ascend.APO / "npu_module_mem.csv"):
        expect[r["Component"]] = max(expect[r["Component"]], number(r["Total Reserved(MB)"]))
    assert set(peaks.index) == set(expect)
    for comp, peak in expect.items():
        assert peaks.loc[comp, "Peak Reserved (MB)"] == pytest.approx(peak)


def test_hccl_lanes_busy_is_the_union_of_their_slices():
    prof = ascend.load_ascend(PROF)
    derive(prof)
    lanes = prof.tables["Device lanes"]
    # independent reading: the HCCL process of the msprof timeline, slices per thread
    ev = json.loads((PROF / "PROF_000001_20230818142704322_COJGGGCANRMICFBC/device_0/timeline/msprof_0_2_1.json").read_text())
    pid = {e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"
           and e["args"]["name"] == "HCCL"}
    tname = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e["pid"] in pid:
            s = round(float(e["ts"]) * 1000)
            spans[tname[(e["pid"], e["tid"])]].append((s, s + round(float(e["dur"]) * 1000)))
    assert spans
    for lane, iv in spans.items():
        iv.sort()
        union, end = 0, -1
        for s, e in iv:
            if s > end:
                union, end = union + e - s, e
            elif e > end:
                union, end = union + e - end, e
        row = lanes[lanes["engine"] == f"HCCL {lane}"]
        assert len(row) == 1, lane
        assert row["busy_ns"].iloc[0] > 0
        assert row["busy_ns"].iloc[0] == pytest.approx(union, abs=len(iv))
    kernel = lanes[lanes["engine"] == "HCCL Communication Kernel"]["busy_ns"].iloc[0]
    assert kernel == pytest.approx(41.5343e6, rel=1e-6)                 # the 41.5 ms AllReduce
