"""Operator analyses on hand-made traces with hand-computed values (and real-trace checks).

tests/data/framework/handmade_kineto.json, times in µs (ts relative to baseTimeNanoseconds):

thread 1: python "step" [0,100]
            aten::linear [10,60] (ext 1, dims [[2,3],[4,3]])
              aten::addmm [15,55] (ext 2)
                cudaLaunchKernel [20,25] corr 11 -> kernel gemm 10 us
                cudaLaunchKernel [30,34] corr 12 -> kernel bias 3 us
            aten::relu [70,90] (ext 3)
              cudaLaunchKernel [75,81] corr 13 -> kernel relu_k 2 us
            aten::linear [92,98] (ext 4, dims [[5,3],[4,3]])
thread 2: aten::copy_ [20,50]
            cudaMemcpyAsync [25,27] corr 14 -> memcpy 8 us
device:   kernel x 1 us (correlation 99: no launch in the window)
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import reportgen
from reportgen import profile_parser
from reportgen.analysis.framework import TABLE_DEFINITIONS, TABLE_ORDER
from reportgen.analysis.host_device import host_device_table
from reportgen.analysis.memory import downsample_curve
from reportgen.analysis.operators import input_shapes, key_averages, key_averages_from_calls
from reportgen.parsers import chrome as ct
from reportgen.writers import csv_tables
from reportgen.testing.profiles import derived
from shared_data import FRAMEWORK, needs

DATA = Path(__file__).parent / "data" / "framework"
SHARED = FRAMEWORK
needs_shared = needs(FRAMEWORK)


@pytest.fixture(scope="module")
def prof():
    return reportgen.load(DATA / "handmade_kineto.json")


def rows(t: pd.DataFrame, key="name") -> dict:
    return {r[key]: r for _, r in t.iterrows()}


# -------------------------------------------------------------------------------------------
# (a) seed table
# -------------------------------------------------------------------------------------------
def test_seed_total_cpu_op(prof):
    t = host_device_table(prof, monitor="cpu_op", launch="cuda_runtime", device="kernel")
    assert list(t["name"]) == ["aten::linear", "aten::linear$$aten::addmm", "aten::relu",
                               "aten::linear", "aten::copy_"]
    first = t.iloc[0]
    assert first["host duration(ms)"] == pytest.approx(0.050)
    assert first["launch duration(ms)"] == pytest.approx(0.009)   # 5 + 4 us, inside addmm
    assert first["device duration(ms)"] == pytest.approx(0.013)   # gemm 10 + bias 3
    assert first["depth"] == 1 and first["launches"] == 2 and first["device slices"] == 2
    addmm = t.iloc[1]
    assert addmm["depth"] == 2 and addmm["device duration(ms)"] == pytest.approx(0.013)
    relu = t.iloc[2]
    assert relu["launch duration(ms)"] == pytest.approx(0.006)
    assert relu["device duration(ms)"] == pytest.approx(0.002)
    assert t.iloc[3]["device duration(ms)"] == 0 and t.iloc[3]["launches"] == 0
    # copy_ (thread 2) overlaps L1 in time but only its own thread's launch counts; the
    # memcpy is not a "kernel"
    copy = t.iloc[4]
    assert copy["launch duration(ms)"] == pytest.approx(0.002)
    assert copy["device duration(ms)"] == 0


def test_seed_self_variant_and_device_all(prof):
    t = host_device_table(prof, monitor="cpu_op", launch="cuda_runtime", device=None,
                              self_only=True)
    r = t.set_index("name")
    # the outer linear's launches belong to addmm: self launch/device time 0
    assert r.loc["aten::linear$$aten::addmm", "device duration(ms)"] == pytest.approx(0.013)
    assert t.iloc[0]["device duration(ms)"] == 0 and t.iloc[0]["launches"] == 0
    # device=None also takes the memcpy
    assert r.loc["aten::copy_", "device duration(ms)"] == pytest.approx(0.008)
    # totals never double count under the self variant: sum = all linked device time
    assert t["device duration(ms)"].sum() == pytest.approx(0.023)


def test_seed_depth_filters_closed_interval(prof):
    t2 = host_device_table(prof, monitor="cpu_op", launch="cuda_runtime", min_depth=2)
    assert list(t2["name"]) == ["aten::linear$$aten::addmm"]
    t1 = host_device_table(prof, monitor="cpu_op", launch="cuda_runtime", max_depth=1)
    assert len(t1) == 4 and (t1["depth"] == 1).all()
    t12 = host_device_table(prof, monitor="cpu_op", launch="cuda_runtime", min_depth=1, max_depth=2)
    assert len(t12) == 5
    assert host_device_table(prof, monitor="cpu_op", min_depth=3).empty


def test_seed_python_monitor(prof):
    t = host_device_table(prof, monitor="python_function", launch="cuda_runtime", device="kernel")
    assert list(t["name"]) == ["train.py(10): step"]
    assert t.iloc[0]["launch duration(ms)"] == pytest.approx(0.015)  # 5 + 4 + 6
    assert t.iloc[0]["device duration(ms)"] == pytest.approx(0.015)  # 10 + 3 + 2


def test_seed_csv_columns_and_lists(prof, tmp_path):
    out = csv_tables.write_seed_csv(prof, tmp_path / "seed.csv", monitor="cpu_op",
                                    launch="cuda_runtime", device="kernel")
    df = pd.read_csv(out)
    assert list(df.columns) == csv_tables.SEED_COLUMNS
    addmm = df[df["name"] == "aten::linear$$aten::addmm"].iloc[0]
    assert json.loads(addmm["cuda_runtime"]) == [["cudaLaunchKernel", 0.005], ["cudaLaunchKernel", 0.004]]
    assert json.loads(addmm["kernels"]) == [["gemm", 0.01], ["bias", 0.003]]
    infos = json.loads(addmm["kernel infos"])
    assert infos[0]["grid"] == [1, 1, 1] and infos[0]["correlation"] == 11


def test_profile_parser_main_cli(tmp_path):
    dst = tmp_path / "out"
    dst.mkdir()
    rc = profile_parser.main(["-s", str(DATA / "handmade_kineto.json"), "-d", str(dst),
                                         "-mc", "cpu_op", "--max_depth", "1"])
    assert rc == 0
    df = pd.read_csv(dst / "handmade_kineto.csv")
    assert len(df) == 4 and (df["depth"] == 1).all()
    rc = profile_parser.main(["-s", str(tmp_path / "missing.json"), "-d", str(dst)])
    assert rc != 0


def test_max_depth_minus_one_means_no_limit(tmp_path):
    """Issue 16 item 3: the seed tool documents ``--max_depth -1`` as "everything"; it used to
    give no rows. Every cpu_op slice of the file (5, counted from the JSON) is a row."""
    events = json.loads((DATA / "handmade_kineto.json").read_text())["traceEvents"]
    cpu_ops = sum(1 for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X")
    dst = tmp_path / "seed.csv"
    assert profile_parser.main(["-s", str(DATA / "handmade_kineto.json"), "-d", str(dst),
                                "-mc", "cpu_op", "--max_depth", "-1"]) == 0
    assert len(pd.read_csv(dst)) == cpu_ops == 5


# -------------------------------------------------------------------------------------------
# (b) key_averages
# -------------------------------------------------------------------------------------------
def test_key_averages_hand_computed(prof):
    t = key_averages(prof).set_index("Name")
    # self CPU: linear (50-40)+(6) = 16, addmm 40-5-4 = 31, launches 15, relu 14, copy_ 28,
    # memcpy call 2; the python frame is not a torch function event
    assert t.loc["aten::linear", "Self CPU (us)"] == pytest.approx(16)
    assert t.loc["aten::linear", "CPU total (us)"] == pytest.approx(56)
    assert t.loc["aten::linear", "CPU time avg (us)"] == pytest.approx(28)
    assert t.loc["aten::linear", "# of Calls"] == 2
    assert t.loc["aten::addmm", "Self CPU (us)"] == pytest.approx(31)
    assert t.loc["cudaLaunchKernel", "Self CPU (us)"] == pytest.approx(15)
    assert t.loc["aten::copy_", "Self CPU (us)"] == pytest.approx(28)
    assert "train.py(10): step" not in t.index
    total_self = 16 + 31 + 15 + 14 + 28 + 2
    assert t["Self CPU (us)"].sum() == pytest.approx(total_self)
    assert t.loc["aten::linear", "Self CPU %"] == pytest.approx(100 * 16 / total_self)
    # torch divides CPU total by the same self-CPU sum
    assert t.loc["aten::linear", "CPU total %"] == pytest.approx(100 * 56 / total_self)
    # device: kernels belong to the op that launched them; totals add the subtree
    assert t.loc["aten::addmm", "Self Device (us)"] == pytest.approx(13)
    assert t.loc["aten::linear", "Self Device (us)"] == 0
    assert t.loc["aten::linear", "Device total (us)"] == pytest.approx(13)
    assert t.loc["aten::linear", "Device time avg (us)"] == pytest.approx(6.5)
    assert t.loc["aten::relu", "Device total (us)"] == pytest.approx(2)
    assert t.loc["aten::copy_", "Self Device (us)"] == pytest.approx(8)
    assert t.loc["cudaLaunchKernel", "Self Device (us)"] == 0
    assert t.loc["aten::addmm", "Self Device %"] == pytest.approx(100 * 13 / 23)


def test_key_averages_group_by_input_shape(prof):
    t = key_averages(prof, group_by_input_shape=True)
    lin = t[t["Name"] == "aten::linear"].set_index("Input Shapes")
    assert set(lin.index) == {"2,3;4,3", "5,3;4,3"}
    assert lin.loc["2,3;4,3", "Self CPU (us)"] == pytest.approx(10)
    assert lin.loc["2,3;4,3", "Device total (us)"] == pytest.approx(13)
    assert lin.loc["5,3;4,3", "CPU total (us)"] == pytest.approx(6)
    assert "Operators by Shape" in prof.tables


def test_input_shape_key_same_for_pytorch_and_ascend():
    a = input_shapes(pd.Series([{"Input Dims": [[2, 8193], [4]]},
                                    {"Input Dims": '"2,8193";\r\n"4"'}, None]))
    assert list(a) == ["2,8193;4", "2,8193;4", ""]


def test_key_averages_from_calls():
    calls = pd.DataFrame({"Name": ["a", "a", "b"], "Input Shapes": ["1", "2", ""],
                          "host_self_us": [1.0, 3.0, 4.0], "host_total_us": [2.0, 4.0, 4.0],
                          "device_self_us": [5.0, 5.0, 0.0], "device_total_us": [6.0, 6.0, 0.0]})
    t = key_averages_from_calls(calls).set_index("Name")
    assert t.loc["a", "Self CPU (us)"] == 4 and t.loc["a", "# of Calls"] == 2
    assert t.loc["a", "Self CPU %"] == pytest.approx(50)
    assert t.loc["a", "Device time avg (us)"] == 6


# -------------------------------------------------------------------------------------------
# (c) kernels, (d) memory, (e) ranks
# -------------------------------------------------------------------------------------------
def test_kernel_table(prof):
    t = prof.tables["Kernels"].set_index("Name")
    assert t.loc["gemm", "Calls"] == 1 and t.loc["gemm", "Total (us)"] == pytest.approx(10)
    assert t.loc["gemm", "Grid"] == "[1, 1, 1]" and t.loc["gemm", "Block"] == "[128, 1, 1]"
    assert t.loc["gemm", "Share %"] == pytest.approx(100 * 10 / 24)
    assert t.index[0] == "gemm"  # sorted by total


def test_memory_tables(prof):
    mem = prof.tables["Memory"]
    by_op = mem.set_index("Operator")
    # 4096 B at 16 us (inside addmm), 1024 B at 72 us (relu), free 4096 at 95 us (2nd linear)
    assert by_op.loc["aten::addmm", "Allocated (bytes)"] == 4096
    assert by_op.loc["aten::relu", "Allocations"] == 1
    assert by_op.loc["aten::linear", "Freed (bytes)"] == 4096
    assert by_op.loc["aten::linear", "Size Increase (bytes)"] == -4096
    # addr 1000: allocated at 16 us, freed at 95 us -> lifetime 79 us; addr 2000 never freed
    assert by_op.loc["aten::addmm", "Mean Allocation Lifetime (us)"] == pytest.approx(79)
    assert by_op.loc["aten::addmm", "Unreleased in Window"] == 0
    assert by_op.loc["aten::relu", "Unreleased in Window"] == 1
    peak = prof.tables["Memory Peak"].iloc[0]
    assert peak["Peak Allocated (bytes)"] == 5120 and peak["Operator at Peak"] == "aten::relu"
    assert peak["Peak Reserved (bytes)"] == 8192
    assert len(prof.tables["Memory Timeline"]) == 3


def test_downsample_keeps_peaks():
    n = 10_000
    df = pd.DataFrame({"k": "d", "t": np.arange(n), "v": np.sin(np.arange(n) / 50.0)})
    df.loc[5_003, "v"] = 7.0
    out = downsample_curve(df, ["k"], "t", ["v"], points=100)
    assert len(out) <= 100 and out["v"].max() == 7.0


def test_rank_table_two_ranks(tmp_path):
    def trace(rank, kdur):
        return {"distributedInfo": {"rank": rank}, "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": kdur,
             "args": {"device": 0}},
            {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 8, "ts": 15,
             "dur": 20, "args": {"device": 0}},
        ]}
    for r, d in ((0, 10), (1, 30)):
        (tmp_path / f"rank{r}.json").write_text(json.dumps(trace(r, d)))
    prof = derived(ct.load_chrome_traces(sorted(tmp_path.glob("*.json")), str(tmp_path)))
    t = prof.tables["Ranks"].set_index("Rank")
    assert list(t.index) == [0, 1]
    # rank 0: gemm [10,20] + nccl [15,35] -> busy 25 us; rank 1: gemm [10,40] -> busy 30
    assert t.loc[0, "Device busy (us)"] == pytest.approx(25)
    assert t.loc[1, "Device busy (us)"] == pytest.approx(30)
    assert t.loc[0, "Communication busy (us)"] == pytest.approx(20)
    assert t.loc[1, "Compute busy (us)"] == pytest.approx(30)
    assert t.loc[0, "Steps"] == 1 and t.loc[0, "Mean step (us)"] == pytest.approx(100)
    assert set(prof.commands["core"]) == {0, 1}


# -------------------------------------------------------------------------------------------
# real traces
# -------------------------------------------------------------------------------------------
@needs_shared
def test_real_key_averages_totals_match_plain_json():
    path = SHARED / "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"
    ev = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    addmm = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e["name"] == "aten::addmm"]
    prof = reportgen.load(path)
    t = prof.tables["Operators"].set_index("Name")
    assert t.loc["aten::addmm", "# of Calls"] == len(addmm)
    assert t.loc["aten::addmm", "CPU total (us)"] == pytest.approx(sum(e["dur"] for e in addmm), abs=1e-3)
    # device time of addmm = kernels whose External id is one of the addmm calls'
    ext = {e["args"]["External id"] for e in addmm}
    kern = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
            and e["args"].get("External id") in ext]
    assert t.loc["aten::addmm", "Self Device (us)"] == pytest.approx(sum(e["dur"] for e in kern), abs=1e-3)


def test_step_table(tmp_path):
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 0, "dur": 50},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 20},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 2,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 30, "dur": 2,
         "args": {"correlation": 2}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 1, "tid": 1, "ts": 50, "dur": 10},
        {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 40, "dur": 10, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 55, "dur": 5, "args": {"correlation": 2}},
    ]
    p = tmp_path / "steps.json"
    p.write_text(json.dumps(ev))
    prof = reportgen.load(p)
    t = prof.tables["Steps"].set_index("Step")
    # step 4 launched k1 [40,50] and k2 [55,60]: device step 40..60 = 20 us, 15 us of kernels
    assert t.loc[4, "Host duration (us)"] == 50
    assert t.loc[4, "Device duration (us)"] == 20 and t.loc[4, "Device slices"] == 2
    assert t.loc[4, "Device time sum (us)"] == 15
    assert t.loc[5, "Device slices"] == 0


def test_kernel_table_weighted_occupancy(tmp_path):
    ev = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 0, "dur": 10,
         "args": {"grid": [1, 1, 1], "block": [32, 1, 1], "blocks per SM": 1.0, "est. achieved occupancy %": 50}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 30,
         "args": {"grid": [1, 1, 1], "block": [32, 1, 1], "blocks per SM": 2.0, "est. achieved occupancy %": 10}},
    ]
    p = tmp_path / "k.json"
    p.write_text(json.dumps(ev))
    t = reportgen.load(p).tables["Kernels"].iloc[0]
    assert t["Calls"] == 2 and t["Avg (us)"] == 20
    assert t["Mean Blocks per SM"] == pytest.approx((1 * 10 + 2 * 30) / 40)
    assert t["Mean Est. Achieved Occupancy %"] == pytest.approx((50 * 10 + 10 * 30) / 40)


def test_host_device_summary_per_path(prof):
    t = prof.tables["Host-Device"].set_index("name")
    # default monitor for a Kineto trace: cpu_op; launches: every runtime category present
    lin = t.loc["aten::linear"]
    assert lin["calls"] == 2 and lin["host duration(ms)"] == pytest.approx(0.056)
    assert lin["device duration(ms)"] == pytest.approx(0.013)
    assert t.loc["aten::copy_", "device duration(ms)"] == pytest.approx(0.008)  # device = all work
    self_t = prof.tables["Host-Device Self"]
    assert self_t["device duration(ms)"].sum() == pytest.approx(0.023)
    # largest device time first; ties (linear and its addmm, 13 us) by host time
    assert list(t.index[:2]) == ["aten::linear", "aten::linear$$aten::addmm"]


def test_table_order_and_definitions(prof):
    names = [n for n in prof.tables if n not in ("Operators by Stack", "Call Stacks")]  # issue 23
    assert names[:3] == ["Operators", "Operators by Shape", "Kernels"]
    assert list(prof.tables)[:3] == ["Operators", "Operators by Shape", "Operators by Stack"]
    assert names.index("Kernels") < names.index("Host-Device") < names.index("Memory")
    assert set(TABLE_ORDER) == set(TABLE_DEFINITIONS)


# -------------------------------------------------------------------------------------------
# (issue 18 item 6) names that a spreadsheet would evaluate stay text in every CSV
# -------------------------------------------------------------------------------------------
FORMULA_NAMES = {
    "train.py(10): step": "=1+1",
    "aten::linear": '=HYPERLINK("http://evil.example","click")',
    "aten::relu": "=cmd|' /C calc'!A0",
    "aten::copy_": "@SUM(1+1)",
    "aten::addmm": "ok\r=2+2",                  # a lone CR: a spreadsheet would start a row there
    "gemm": "+1+1", "bias": "-2+3", "relu_k": "\t=1+1", "x": "\r=1+1",
}


def _soffice():
    import shutil

    return shutil.which("libreoffice") or shutil.which("soffice")


@pytest.mark.skipif(_soffice() is None, reason="LibreOffice (libreoffice/soffice) is not on PATH; "
                    "install Debian package libreoffice-calc to run this test")
def test_formula_names_open_as_text_in_libreoffice(tmp_path):
    """Issue 18 item 6: '=HYPERLINK(...)', '=cmd|...', '+..', '-..', '@..', tab/CR-led names were
    written raw into tables/*.csv and host_device.csv, and LibreOffice made them live formulas.
    Converted by LibreOffice to xlsx, every CSV has no formula, the names are text and no row
    was split; the number columns are still numbers."""
    import subprocess
    import zipfile

    trace = json.loads((DATA / "handmade_kineto.json").read_text())
    for e in trace["traceEvents"]:
        e["name"] = FORMULA_NAMES.get(e.get("name"), e.get("name"))
    (tmp_path / "evil.json").write_text(json.dumps(trace))
    prof = reportgen.load(tmp_path / "evil.json")
    written = csv_tables.write_tables(prof, tmp_path / "out")
    written.append(csv_tables.write_seed_csv(prof, tmp_path / "out" / "host_device.csv"))
    res = subprocess.run([_soffice(), f"-env:UserInstallation=file://{tmp_path}/profile", "--headless",
                          "--convert-to", "xlsx", "--outdir", str(tmp_path / "xlsx"), *map(str, written)],
                         capture_output=True, text=True, timeout=180)
    seen = set()
    for csv_path in written:
        book = tmp_path / "xlsx" / (csv_path.stem + ".xlsx")
        assert book.exists(), res.stdout + res.stderr
        with zipfile.ZipFile(book) as z:
            sheet = z.read("xl/worksheets/sheet1.xml").decode()
            strings = _shared_strings(z)
        assert "<f" not in sheet, csv_path.name                         # no cell is a formula
        assert sheet.count("<row ") == len(pd.read_csv(csv_path)) + 1, csv_path.name   # no row split
        seen |= {n for n in FORMULA_NAMES.values() if _lines("'" + n) in strings or _lines(n) in strings}
    assert seen == set(FORMULA_NAMES.values())
    ops = pd.read_csv(tmp_path / "out" / "tables" / "Operators.csv")
    assert ops["Self CPU (us)"].dtype == np.float64 and "'=cmd|' /C calc'!A0" in set(ops["Name"])


def _lines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _shared_strings(book) -> set[str]:
    """The text cells of a LibreOffice xlsx, line ends as LF."""
    from xml.etree import ElementTree

    if "xl/sharedStrings.xml" not in book.namelist():
        return set()
    ns = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
    root = ElementTree.fromstring(book.read("xl/sharedStrings.xml"))
    return {_lines("".join(t.text or "" for t in si.iter(f"{ns}t"))) for si in root.iter(f"{ns}si")}
