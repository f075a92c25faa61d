"""Issue 16 items 3-6 on Ascend/MindSpore inputs: host_device.csv for a torch_npu trace_view.json,
HCCL plane views counted once, cpu_op slices on Ascend Hardware streams, MindSpore lanes."""
from __future__ import annotations

import json

import pytest

from reportgen import pipeline
from reportgen.analysis.derive import derive
from reportgen.analysis.kernels import kernel_table
from reportgen.options import Options
from reportgen.parsers.chrome import load_chrome_trace
from tests.shared_data import FRAMEWORK, needs

TRACE_VIEW = FRAMEWORK / "ascend-msprof-analyze/ut/advisor/timeline_advice/trace_view.json"
MSPROF = FRAMEWORK / "mindinsight/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC"


@needs(TRACE_VIEW)
def test_trace_view_json_gets_host_device_csv(tmp_path):
    """Seen on this torch_npu trace_view.json: no host_device.csv at all."""
    done = pipeline.report(Options(input=str(TRACE_VIEW), output=str(tmp_path / "out"), quiet=True,
                                   web=False, perfetto=False, summary=False))
    csv = tmp_path / "out" / "host_device.csv"
    assert csv in done.files
    assert len(csv.read_text().splitlines()) > 1


@needs(MSPROF)
def test_hccl_plane_views_are_counted_once():
    """Seen on this CANN msprof timeline: the HCCL process repeats the streams' tasks (and a
    Communication Kernel over them), so HCCL time was in the Kernels share up to three times."""
    prof = pipeline.load(Options(input=str(MSPROF)))
    derive(prof)
    c = prof.commands
    hccl = c["engine"].astype(str).str.startswith("HCCL")
    assert hccl.any() and c.loc[hccl, "is_sys"].all()
    k = kernel_table(prof)
    assert not k["Name"].isin(["Notify_Wait", "Memcpy", "Reduce_Inline"]).any()
    # the streams' own REDUCE/MEMCPY tasks stay, once
    assert k.loc[k["Name"] == "MEMCPY_ASYNC", "Calls"].sum() == 29
    assert k["Share %"].sum() == pytest.approx(100.0)


def test_cpu_op_on_ascend_hardware_streams_is_device_work(tmp_path):
    """msinsight fixtures write cat cpu_op on "Ascend Hardware" stream lanes: device tasks."""
    ev = [{"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "Ascend Hardware"}},
          {"ph": "M", "name": "thread_name", "pid": 7, "tid": 3, "args": {"name": "Stream 3"}},
          {"ph": "X", "cat": "cpu_op", "name": "MatMul", "pid": 7, "tid": 3, "ts": 10, "dur": 5,
           "args": {"Task Type": "AI_CORE"}},
          {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 9, "dur": 8}]
    p = tmp_path / "trace_view.json"
    p.write_text(json.dumps(ev))
    prof = load_chrome_trace(p)
    assert list(prof.commands["func_name"]) == ["MatMul"]
    assert list(prof.host["name"]) == ["aten::mm"]


def test_mindspore_step_trace_and_gpu_lanes(tmp_path):
    """Legacy MindSpore: pid 10000 stream_*_parallel_0 slices are step-trace intervals (were
    95.7 % of the Kernels time as "AI_CPU"); a GPU timeline's kernels are GPU stream lanes."""
    folder = tmp_path / "profiler"
    folder.mkdir()
    (folder / "ascend_timeline_display_0.json").write_text(json.dumps([
        {"ph": "X", "name": "Conv2D-op1", "pid": 1, "tid": 5, "ts": 0, "dur": 10},
        {"ph": "X", "name": "stream_5_parallel_0", "pid": 10000, "tid": 5, "ts": 0, "dur": 1000},
        {"ph": "X", "name": "GetNext-op2", "pid": 9000, "tid": 2, "ts": 20, "dur": 4}]))
    prof = pipeline.load(Options(input=str(folder)))
    derive(prof)
    c = prof.commands.set_index("func_name")
    assert c.loc["stream_5_parallel_0", "func_type"] == "STEP_TRACE"
    assert bool(c.loc["stream_5_parallel_0", "is_sys"])
    assert c.loc["Conv2D-op1", "engine"] == "Stream 5" and c.loc["GetNext-op2", "func_type"] == "AI_CPU"
    assert set(kernel_table(prof)["Name"]) == {"Conv2D-op1", "GetNext-op2"}
    gpu = tmp_path / "gpu" / "profiler"
    gpu.mkdir(parents=True)
    (gpu / "gpu_timeline_display_0.json").write_text(json.dumps([
        {"ph": "X", "name": "volta_sgemm", "pid": 0, "tid": 7, "ts": 0, "dur": 10}]))
    g = pipeline.load(Options(input=str(gpu)))
    assert list(g.commands["engine"].astype(str)) == ["GPU stream 7"]
    assert list(g.commands["func_type"].astype(str)) == ["GPU_KERNEL"]


def test_seed_csv_gzip_round_trip(tmp_path):
    """compress=True writes host_device.csv.gz holding exactly the plain CSV's bytes."""
    import gzip

    from reportgen.writers.csv_tables import write_seed_csv

    trace = FRAMEWORK / "hta/call_stack/backward_thread.json"
    prof = load_chrome_trace(trace) if trace.exists() else pytest.skip("no data")
    small = write_seed_csv(prof, tmp_path / "host_device.csv")
    big = write_seed_csv(prof, tmp_path / "b" / "host_device.csv", compress=True)
    assert small.name == "host_device.csv" and big.name == "host_device.csv.gz"
    assert gzip.decompress(big.read_bytes()).decode() == small.read_text()
    # reproducible: no name (the temporary file's) and no time in the gzip header (RFC 1952)
    again = write_seed_csv(prof, tmp_path / "c" / "host_device.csv", compress=True)
    assert big.read_bytes() == again.read_bytes() and big.read_bytes()[3] & 0x08 == 0


@pytest.mark.parametrize("rel", ["hta/call_stack/backward_thread.json",
                                 "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
                                 "ascend-msprof-analyze/ut/advisor/timeline_advice/trace_view.json"])
def test_seed_csv_size_estimate_is_close(tmp_path, rel):
    """The size decided on before the writers run is within 25 % of the file then written."""
    from reportgen.analysis.host_device import seed_csv_bytes
    from reportgen.writers.csv_tables import write_seed_csv

    trace = FRAMEWORK / rel
    prof = pipeline.load(Options(input=str(trace))) if trace.exists() else pytest.skip("no data")
    real = write_seed_csv(prof, tmp_path / "host_device.csv").stat().st_size
    assert real > 1000
    assert 0.8 < seed_csv_bytes(prof) / real < 1.25


@needs(TRACE_VIEW)
def test_large_seed_csv_is_gzipped_with_a_warning_in_the_summary(tmp_path, monkeypatch):
    """Above the bound, host_device.csv.gz, and the summary (written in another process at the
    same time) says why (issue 16: 373 MB once, and no word of it in the summary)."""
    from reportgen.analysis import host_device

    def run(out):
        done = pipeline.report(Options(input=str(TRACE_VIEW), output=str(out), quiet=True,
                                       perfetto=False, web=False))
        return done, json.loads((out / "summary.json").read_text())

    done, summary = run(tmp_path / "plain")
    assert (tmp_path / "plain" / "host_device.csv").is_file()
    assert not any(w["code"] == "seed-csv-gzip" for w in summary["warnings"])
    monkeypatch.setattr(host_device, "SEED_CSV_GZIP_BYTES", 1000)
    done, summary = run(tmp_path / "packed")
    assert (tmp_path / "packed" / "host_device.csv.gz").is_file()
    assert not (tmp_path / "packed" / "host_device.csv").exists()
    [w] = [w for w in summary["warnings"] if w["code"] == "seed-csv-gzip"]
    assert "host_device.csv.gz" in w["message"]
    assert "host_device.csv.gz" in (tmp_path / "packed" / "summary.txt").read_text()
