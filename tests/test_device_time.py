"""Device time of framework traces (analysis/device_time.py, launch_stats.py, step_variation.py,
fw_findings.py): hand-made Kineto traces whose every figure is computed by hand in the comments,
and the shared real samples (Ascend step_trace_time, the issue's two headline numbers)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

import reportgen
from reportgen.analysis.device_time import KEYS, PARTS
from shared_data import FRAMEWORK, needs

DEV_PID, STREAM, COMM_STREAM = 0, 7, 20


class Trace:
    """A Kineto-style trace built event by event (times in µs, integers)."""

    def __init__(self):
        self.events: list[dict] = []
        self.corr = 0

    def op(self, name, ts, dur, cat="cpu_op"):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts,
                            "dur": dur})

    def kernel(self, name, launch_ts, launch_dur, ts, dur, stream=STREAM, cat="kernel"):
        """A launch call on the host and the device slice it issued."""
        self.corr += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                            "tid": 1, "ts": launch_ts, "dur": launch_dur,
                            "args": {"correlation": self.corr}})
        self.device(name, ts, dur, stream, cat, {"correlation": self.corr})

    def device(self, name, ts, dur, stream=STREAM, cat="kernel", args=None):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": DEV_PID, "tid": stream,
                            "ts": ts, "dur": dur,
                            "args": {"device": 0, "stream": stream, **(args or {})}})

    def load(self, tmp_path):
        path = tmp_path / "trace.json"
        path.write_text(json.dumps({"traceEvents": self.events}))
        return reportgen.load(path)


def figures(profile) -> dict:
    row = profile.framework_diagnosis.device_time.devices.iloc[0]
    return {k: int(row[k]) for k in ("span_ns", *KEYS)}


def fired(profile) -> dict:
    f = profile.framework_diagnosis.findings
    return dict(zip(f["rule"], f["severity"]))


def us(v):
    return v * 1000


def host_bound_loop(slow_step: bool = False) -> Trace:
    """Kernel i launched at 1000 i + 900 (10 µs call), runs 100 µs from 12 µs after the launch
    started; the host does other work in between. With ``slow_step`` the fourth launch comes
    3 ms late and there is a fifth step."""
    t = Trace()
    launches = [900, 1900, 2900, 5900, 6900] if slow_step else [900, 1900, 2900, 3900]
    for i, ls in enumerate(launches):
        t.op(f"ProfilerStep#{i}", ls - 50, 200, cat="user_annotation")
        t.kernel("gemm", ls, 10, ls + 12, 100)
    return t


def test_host_bound_loop(tmp_path):
    p = host_bound_loop().load(tmp_path)
    # span [912, 4012) = 3100 µs; 4 kernels of 100; 3 gaps of 900: 888 before the next launch
    # call starts (host), 12 while it runs (launch: the call [1900, 1910) is open at no point of
    # the gap [1012, 1912) before 1900, then the device waits 12 µs for the kernel)
    assert figures(p) == {"span_ns": us(3100), "compute_ns": us(400), "comm_ns": 0, "memory_ns": 0,
                          "idle_host_ns": us(3 * 888), "idle_launch_ns": us(3 * 12),
                          "idle_sync_ns": 0, "idle_other_ns": 0, "exposed_comm_ns": 0,
                          "comm_total_ns": 0}
    f = fired(p)
    # idle 2700/3100 = 87.1 % (high at 50 %); host 2664/3100 = 85.9 % (high at 20 %);
    # launch 36/3100 = 1.2 % stays under 3 %
    assert f == {"fw_host_bound": "high", "fw_device_idle": "high"}
    host = p.framework_diagnosis.findings.set_index("rule").loc["fw_host_bound"]
    assert host["value"] == pytest.approx(2664 / 3100) and host["gain_ns"] == us(2664)
    assert host["gain_share"] == pytest.approx(2664 / 3100)
    assert host["gain_scenario"] == "the host issues work before the device runs dry"
    assert host["rank"] == 1
    assert "85.9 %" in host["text"] and "2.664 ms" in host["text"]
    # launch statistics: 4 launches of 10 µs, kernels of 100 µs start 12 µs after their launch
    ls = p.framework_diagnosis.launch.iloc[0]
    assert (ls["launches"], ls["kernel_ns"], ls["launch_ns"], ls["mean_delay_ns"], ls["short"]) == \
        (4, us(400), us(40), us(12), 0)
    # per step: each step's window runs from its kernel's start to the next one's
    steps = p.framework_diagnosis.device_time.steps
    assert steps["span_ns"].tolist() == [us(1000)] * 3 + [us(100)]
    assert steps["idle_host_ns"].tolist() == [us(888)] * 3 + [0]


def test_uneven_steps_name_the_slowest_and_what_grew(tmp_path):
    p = host_bound_loop(slow_step=True).load(tmp_path)
    # step windows: 1000, 1000, 3000 (the next launch came 2 ms late), 1000, 100 µs
    v = p.framework_diagnosis.variation.iloc[0]
    assert (v["steps"], v["slowest_step"], v["slowest_ns"], v["median_ns"]) == (5, 2, us(3000), us(1000))
    assert v["grew_most"] == "idle waiting for the host" and v["grew_by_ns"] == us(2000)
    f = p.framework_diagnosis.findings.set_index("rule").loc["fw_uneven_steps"]
    assert f["severity"] == "high" and f["value"] == pytest.approx(3.0) and f["gain_ns"] == us(2000)
    assert f["subject"] == "step 2"


def test_launch_bound_run_of_tiny_kernels(tmp_path):
    t = Trace()
    # launch calls back to back [10 + 10 i, 20 + 10 i); kernel i [22 + 10 i, 25 + 10 i): 3 µs,
    # shorter than its 10 µs launch; the next call is already running when a kernel ends
    for i in range(10):
        t.kernel("tiny", 10 + 10 * i, 10, 22 + 10 * i, 3)
    p = t.load(tmp_path)
    # span [22, 115) = 93; compute 30; 9 gaps of 7 µs, all launch-bound
    assert figures(p) == {"span_ns": us(93), "compute_ns": us(30), "comm_ns": 0, "memory_ns": 0,
                          "idle_host_ns": 0, "idle_launch_ns": us(63), "idle_sync_ns": 0,
                          "idle_other_ns": 0, "exposed_comm_ns": 0, "comm_total_ns": 0}
    assert fired(p) == {"fw_launch_bound": "high", "fw_device_idle": "high"}
    text = p.framework_diagnosis.findings.set_index("rule").loc["fw_launch_bound", "text"]
    assert "100.0 % of its launched kernels run shorter than their launch call" in text
    ls = p.framework_diagnosis.launch.iloc[0]
    assert (ls["launches"], ls["short"], ls["short_share"], ls["mean_delay_ns"]) == (10, 10, 1.0, us(12))


def test_sync_heavy_step(tmp_path):
    t = Trace()
    t.kernel("a", 980, 5, 1000, 100)                         # A [1000, 1100)
    t.op("cudaDeviceSynchronize", 990, 160, cat="cuda_runtime")   # host blocked [990, 1150)
    t.kernel("b", 1160, 5, 1170, 100)                        # B [1170, 1270)
    t.kernel("c", 1200, 5, 1400, 100)                        # C queued early, starts at 1400
    t.device("Stream Wait Event", 1270, 110, cat="cuda_sync")   # device waits [1270, 1380)
    p = t.load(tmp_path)
    # gap [1100, 1170): sync call open to 1150 (50), host until B's launch at 1160 (10), launch
    # 10; gap [1270, 1400): device wait 110, then 20 with C's launch long returned: other
    assert figures(p) == {"span_ns": us(500), "compute_ns": us(300), "comm_ns": 0, "memory_ns": 0,
                          "idle_host_ns": us(10), "idle_launch_ns": us(10), "idle_sync_ns": us(160),
                          "idle_other_ns": us(20), "exposed_comm_ns": 0, "comm_total_ns": 0}
    # sync 160/500 = 32 % (high at 20 %); idle 200/500 = 40 % (medium); launch 10/500 = 2 %
    assert fired(p) == {"fw_sync_bound": "high", "fw_device_idle": "medium"}


@pytest.mark.parametrize("comm, exposed", [((50, 100), 50), ((20, 60), 0)])
def test_overlapped_vs_exposed_communication(tmp_path, comm, exposed):
    t = Trace()
    t.kernel("gemm", 0, 5, 10, 100)                                       # compute [10, 110)
    t.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 1, 5, 10 + comm[0], comm[1],
             stream=COMM_STREAM)
    t.kernel("Memcpy DtoH (Device -> Pageable)", 2, 5, 160, 20, cat="gpu_memcpy")
    p = t.load(tmp_path)
    end_comm = 10 + comm[0] + comm[1]
    # memory [160, 180): nothing else runs; idle between the last of compute/comm and 160
    # (the memcpy's launch had long returned: other)
    got = figures(p)
    assert got == {"span_ns": us(170), "compute_ns": us(100), "comm_ns": us(exposed),
                   "memory_ns": us(20), "idle_host_ns": 0, "idle_launch_ns": 0, "idle_sync_ns": 0,
                   "idle_other_ns": us(160 - max(110, end_comm)), "exposed_comm_ns": us(exposed),
                   "comm_total_ns": us(comm[1])}
    assert sum(got[k] for k in PARTS) == got["span_ns"]
    # exposed 50/170 = 29.4 % (high at 15 %); overlapped: no communication finding
    assert fired(p).get("fw_exposed_comm") == ("high" if exposed else None)


def test_summary_json_and_text_carry_findings_and_device_time(tmp_path):
    from reportgen.writers.text import summary_document, summary_text

    p = host_bound_loop().load(tmp_path)
    doc = summary_document(p, p.summary)
    assert list(doc["device_time"]["0"]) == list(KEYS)
    assert doc["device_time"]["0"]["idle_host_ns"] == us(2664)
    first = doc["findings"][0]
    assert (first["rule"], first["severity"], first["core"], first["gain_ns"]) == \
        ("fw_host_bound", "high", 0, us(2664))
    text = summary_text(p, p.summary)
    assert text.index("Device lanes") < text.index("Findings (2") < text.index("fw_host_bound")
    assert text.index("Findings (2") < text.index("Device time per device")


@needs(FRAMEWORK / "ascend-msinsight/test_data/test_rank_0")
def test_ascend_rank_from_step_trace_time():
    """step_trace_time.csv of the msinsight rank 0 (µs): Computing 75174.575, Communication(Not
    Overlapped) 146614.020, Communication 153601.324, Free 69909.504; Stage 291698."""
    p = reportgen.load(FRAMEWORK / "ascend-msinsight/test_data/test_rank_0")
    got = figures(p)
    assert got["compute_ns"] == 75174575 and got["comm_ns"] == got["exposed_comm_ns"] == 146614020
    assert got["comm_total_ns"] == 153601324 and got["idle_other_ns"] == 69909504
    # the parts add up to 291698.099 µs; the vendor's Stage column says 291698 (its rounding)
    assert got["span_ns"] == 75174575 + 146614020 + 69909504
    f = p.framework_diagnosis.findings.set_index("rule")
    assert f.loc["fw_exposed_comm", "severity"] == "high"
    assert f.loc["fw_exposed_comm", "value"] == pytest.approx(146614.020 / 291698.099, rel=1e-6)
    assert "146.614 ms" in f.loc["fw_exposed_comm", "text"]


@needs(FRAMEWORK / "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz")
def test_falconsai_idle_share_named():
    """The issue's example: the GPU is idle 84 % of the step."""
    p = reportgen.load(FRAMEWORK / "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz")
    lanes = p.tables["Device lanes"]
    device = lanes[lanes["engine"].str.startswith("device")].iloc[0]
    got = figures(p)
    # the device-time idle equals the lanes table's idle (same span, same work union)
    idle = sum(got[k] for k in PARTS[3:])
    assert idle == device["idle_ns"] and got["span_ns"] == device["span_ns"]
    f = p.framework_diagnosis.findings.set_index("rule")
    assert f.loc["fw_device_idle", "value"] == pytest.approx(idle / got["span_ns"])
    assert "83.8 %" in f.loc["fw_device_idle", "text"]


def test_workbook_findings_and_device_time_sheets(tmp_path):
    import openpyxl

    from reportgen.writers import xlsx

    p = host_bound_loop().load(tmp_path)
    path = xlsx.write(p, p.summary, tmp_path / "out", quiet=True)
    wb = openpyxl.load_workbook(path, read_only=True)
    assert wb.sheetnames.index("Findings") < wb.sheetnames.index("Device Time")
    rows = [r for r in wb["Findings"].iter_rows(values_only=True) if any(c is not None for c in r)]
    header = next(i for i, r in enumerate(rows) if r[0] == "Rank")
    head, first = rows[header], dict(zip(rows[header], rows[header + 1]))
    assert "Estimated gain (ns)" in head and "Engine" not in head
    assert (first["Rule"], first["Device"], first["Estimated gain (ns)"]) == ("fw_host_bound", 0, us(2664))
    dt = [r for r in wb["Device Time"].iter_rows(values_only=True) if any(c is not None for c in r)]
    h = next(i for i, r in enumerate(dt) if r[0] == "device")
    got = dict(zip(dt[h], dt[h + 1]))
    assert (got["idle_host_ns"], got["idle_launch_ns"], got["span_ns"]) == (us(2664), us(36), us(3100))


def _py_union(intervals) -> int:
    """Length of a union of (start, end) pairs: a plain sorted sweep (the independent check)."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            total += (cur_e - cur_s) if cur_e is not None else 0
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + ((cur_e - cur_s) if cur_e is not None else 0)


COMPUTE_ADVICE = FRAMEWORK / "ascend-msprof-analyze/ut/advisor/advisor_backend/compute_advice"


@needs(COMPUTE_ADVICE)
def test_ascend_kernel_details_against_a_plain_sweep():
    """kernel_details.csv alone (no step_trace_time): communication = Accelerator Core HCCL;
    compute and exposed communication recomputed from the CSV with a plain Python sweep in
    exact decimal ns (the parser's rounding: Decimal µs x 1000, half to even)."""
    import csv
    from decimal import Decimal

    rows = list(csv.DictReader(open(COMPUTE_ADVICE / "kernel_details.csv", newline="", encoding="utf-8")))
    ns = lambda v: int((Decimal(v.strip()) * 1000).to_integral_value())     # noqa: E731
    iv = [(ns(r["Start Time(us)"]), ns(r["Start Time(us)"]) + ns(r["Duration(us)"]),
           r["Accelerator Core"]) for r in rows]
    comm = [(s, e) for s, e, core in iv if core == "HCCL"]
    comp = [(s, e) for s, e, core in iv if core != "HCCL"]
    comm_total = _py_union(comm)
    exposed = _py_union(comm + comp) - _py_union(comp)
    p = reportgen.load(COMPUTE_ADVICE)
    got = figures(p)
    assert abs(got["comm_total_ns"] - comm_total) <= len(comm)        # at most 1 ns per slice
    assert abs(got["comm_ns"] - exposed) <= len(iv)
    assert abs(got["compute_ns"] + got["memory_ns"] - _py_union(comp)) <= len(iv)
    assert got["span_ns"] == max(e for _, e, _ in iv) - min(s for s, _, _ in iv)
    assert fired(p)["fw_exposed_comm"] == "high"        # 66.8 % of the span


MINDSPORE = FRAMEWORK / "mindinsight/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC"


@needs(MINDSPORE)
def test_mindspore_capture_gets_the_same_findings_from_its_tables():
    p = reportgen.load(MINDSPORE)
    got = figures(p)
    assert sum(got[k] for k in PARTS) == got["span_ns"] > 0
    c = p.commands
    work = c[~c["is_sys"]]
    # compute + memory = the union of its work slices (no communication in this capture)
    assert got["compute_ns"] + got["memory_ns"] == _py_union(zip(work["start_ns"], work["end_ns"]))
    # its stream waits cover most of the idle: a synchronisation finding, not "other"
    assert fired(p)["fw_sync_bound"] == "high"


def test_cluster_report_lists_each_devices_top_findings(tmp_path):
    """Two rank traces through the batch worker (no Dask): the cluster tables list each run's
    first findings as its own summary.json ranks them; index.html and cluster.json show them."""
    from reportgen import batch
    from reportgen.analysis.cluster import cluster_analysis
    from reportgen.options import Options
    from reportgen.writers.cluster import write_cluster

    runs = []
    for name, trace in (("host", host_bound_loop()), ("tiny", Trace())):
        if name == "tiny":
            for i in range(10):
                trace.kernel("tiny", 10 + 10 * i, 10, 22 + 10 * i, 3)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"traceEvents": trace.events}))
        options = Options(input=str(path), output=str(tmp_path / "out" / name), workbook=False,
                          perfetto=False, quiet=True)
        runs.append(batch.report_one(options, name, "trace"))
    cluster = cluster_analysis(runs)
    f = cluster.findings
    assert f[["name", "device", "rank", "rule", "severity"]].values.tolist() == [
        ["host", 0, 1, "fw_host_bound", "high"], ["host", 0, 2, "fw_device_idle", "high"],
        ["tiny", 0, 1, "fw_launch_bound", "high"], ["tiny", 0, 2, "fw_device_idle", "high"]]
    own = json.loads((tmp_path / "out" / "host" / "summary.json").read_text())["findings"]
    assert f["text"].iloc[0] == own[0]["text"]
    write_cluster(tmp_path / "out", cluster, runs)
    doc = json.loads((tmp_path / "out" / "cluster.json").read_text())
    assert [d["rule"] for d in doc["findings"]] == f["rule"].tolist()
    page = (tmp_path / "out" / "index.html").read_text()
    assert "Top findings per device" in page and "fw_launch_bound" in page


def test_steps_that_launch_nothing_leave_one_whole_device_row(tmp_path):
    t = Trace()
    t.op("ProfilerStep#0", 0, 5, cat="user_annotation")        # launches nothing
    t.kernel("k", 100, 5, 110, 10)
    p = t.load(tmp_path)
    steps = p.framework_diagnosis.device_time.steps
    assert len(steps) == 1 and steps["step"].iloc[0] is None and steps["span_ns"].iloc[0] == us(10)


def test_memory_close_to_the_stated_capacity(tmp_path):
    """The trace's Memory Peak (reserved 245366784 B on device 0 of the Falconsai sample shape)
    against a capacity a parser states in meta.arch: 245366784 / 2.5e8 = 98.1 % (high at 95 %)."""
    from reportgen.analysis.fw_diagnosis import diagnose_framework

    p = host_bound_loop().load(tmp_path)
    p.tables["Memory Peak"] = pd.DataFrame({"Device": ["CPU", "device 0"],
                                            "Peak Allocated (bytes)": [16, 231332864],
                                            "Peak Reserved (bytes)": [0, 245366784]})
    p.meta.arch["device_memory_bytes"] = {0: 2.5e8}
    f = diagnose_framework(p).findings.set_index("rule").loc["fw_memory_capacity"]
    assert f["severity"] == "high" and f["value"] == pytest.approx(245366784 / 2.5e8)
    assert f["core"] == 0 and "98.1 %" in f["text"]
