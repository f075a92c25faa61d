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
    base = min(s["ts"] for s in slices)
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
