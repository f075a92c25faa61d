"""Framework traces in Perfetto: every launched device slice terminates a flow that starts on
the host slice that launched it (the runtime call), and host threads carry the trace's thread
names.  Checked with the perfetto protos (tests/test_perfetto.decode) against the trace JSON
read with the stdlib."""
from __future__ import annotations

import gzip
import json

import pytest

from reportgen import pipeline
from reportgen.options import Options
from reportgen.writers.perfetto import writer
from shared_data import FRAMEWORK
from test_perfetto import decode

AMD = FRAMEWORK / "hta" / "amd_trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"


@pytest.mark.skipif(not AMD.exists(), reason=f"shared trace not present ({AMD})")
def test_launch_flows_and_thread_names(tmp_path):
    opts = Options(input=str(AMD))
    profile = pipeline.load(opts)
    pipeline.analyse(profile, opts)
    dec = decode(writer.write(profile, profile.summary, tmp_path, quiet=True))
    raw = json.loads(gzip.decompress(AMD.read_bytes()))["traceEvents"]
    # the JSON's own links: runtime correlation == device correlation
    runtime = {e["args"]["correlation"]: e for e in raw
               if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    device = [e for e in raw if e.get("cat") in ("kernel", "gpu_memcpy")]
    linked = [e for e in device if e["args"].get("correlation") in runtime]
    assert len(linked) == 16
    slices = dec["slices"]
    assert len(dec["flows_in"]) == len(linked)
    for fid, dst in dec["flows_in"].items():
        (src,) = dec["flows_out"][fid]
        d, s = slices[dst], slices[src]
        want = [e for e in linked if e["name"] == d["name"]]
        assert want, d["name"]
        # the flow starts at a runtime call of that kernel's correlation, on the host
        assert s["name"] in {runtime[e["args"]["correlation"]]["name"] for e in want}
        assert s["ts"] <= d["ts"]
    names = {d.thread.thread_name for d in dec["tracks"].values() if d.HasField("thread")}
    assert "thread 597913 (python3)" in names and "thread 598009 (pt_autograd_0)" in names


@pytest.mark.skipif(not AMD.exists(), reason=f"shared trace not present ({AMD})")
def test_framework_sheets_have_typed_relative_ns_and_no_cycles():
    from reportgen.writers.xlsx.sheet_columns import command_sheet_columns
    import numpy as np

    profile = pipeline.load(Options(input=str(AMD)))
    raw = json.loads(gzip.decompress(AMD.read_bytes()))
    base = raw["baseTimeNanoseconds"]
    events = [e for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace"]
    # the first slice time, exactly (the JSON's µs with 3 decimals, + the base)
    t0 = min(base + round(float(e["ts"]) * 1000) for e in events)
    pos = np.arange(len(profile.commands))
    cols = {c.header: c for c in command_sheet_columns(profile, pos, False)}
    assert "Asic Cycle" not in cols and "Start Time(ns)" not in cols
    start = cols["Start (ns since trace start)"]
    assert start.kind == "number" and start.data.dtype == np.int64
    kernels = sorted(base + round(float(e["ts"]) * 1000) - t0 for e in events
                     if e.get("cat") in ("kernel", "gpu_memcpy"))
    assert sorted(start.data.tolist()) == kernels
    assert str(t0) in start.note


WINDOWS = FRAMEWORK / "kineto-tb-plugin" / "samples" / "resnet50_num_workers_4"


@pytest.mark.skipif(not WINDOWS.exists(), reason=f"shared traces not present ({WINDOWS})")
def test_window_files_of_one_run_are_one_report_with_a_row_per_file():
    from decimal import Decimal

    opts = Options(input=str(WINDOWS))
    profile = pipeline.load(opts)
    pipeline.analyse(profile, opts)
    w = profile.tables["Trace Windows"]
    files = sorted(WINDOWS.glob("*.pt.trace.json.gz"))
    assert w["File"].tolist() == [f.name for f in files]
    spans = []
    for f in files:
        ev = [e for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"] if e.get("ph") == "X"]
        lo = min(int(Decimal(str(e["ts"])) * 1000) for e in ev)
        hi = max(int((Decimal(str(e["ts"])) + Decimal(str(e.get("dur", 0)))) * 1000) for e in ev)
        spans.append((lo, hi, len(ev)))
    t0 = min(s[0] for s in spans)
    assert w["Start (ns since first window)"].tolist() == [s[0] - t0 for s in spans]
    assert w["End (ns since first window)"].tolist() == [s[1] - t0 for s in spans]
    assert w["Slices"].tolist() == [s[2] for s in spans]
    assert profile.commands["core"].nunique() == 1          # one device, not a cluster of ranks


@pytest.mark.skipif(not WINDOWS.exists(), reason=f"shared traces not present ({WINDOWS})")
def test_tensorboard_logdir_runs_are_separate_reports(tmp_path):
    import shutil

    from reportgen import batch

    one = FRAMEWORK / "kineto-tb-plugin" / "samples" / "resnet50_num_workers_0"
    logdir = tmp_path / "logdir"
    shutil.copytree(WINDOWS, logdir / "run_windows")                 # one worker, two windows
    shutil.copytree(one, logdir / "run_single")                      # one file
    runs = batch.find_runs(logdir)
    assert sorted(runs) == sorted([logdir / "run_single" / next(one.glob("*.json.gz")).name,
                                   logdir / "run_windows"])
    assert [batch._kind(r) for r in runs] == ["trace", "trace"]
    # the windows folder alone is one run (one report), not a batch of its files
    assert batch.find_runs(logdir / "run_windows") == [logdir / "run_windows"]
    # two workers' files side by side stay runs of their own (ranks of one job)
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for k, f in enumerate(sorted(WINDOWS.glob("*.json.gz"))):
        shutil.copy(f, ranks / f"worker{k}.16232{k}.pt.trace.json.gz")
    assert len(batch.find_runs(ranks)) == 2
