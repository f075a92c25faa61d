"""Device time against HolisticTraceAnalysis's temporal breakdown on the shared real traces.

tests/data/hta/temporal_breakdown.json holds HTA 0.5.0's own figures, computed once by
tests/data/hta/make_expected.py (its docstring has the command) in a separate environment.
Where the rule is the same (docs/metrics.md "Where we differ from HolisticTraceAnalysis"):

* HTA's compute time = our ``compute_ns``; its non-compute = ``comm_ns + memory_ns``; its idle
  = our idle parts; its kernel time = our span;
* measured on the kernels HTA keeps: those launched (by correlation) by a runtime call that
  starts before the last ``ProfilerStep`` (HTA drops the last step), all of them with fewer
  than two steps;
* HTA counts ``cuda_sync`` stream waits as kernels (its known mistake, not copied), and rounds
  fractional µs timestamps to whole µs: :func:`as_hta_reads` feeds our rule the slices as HTA
  reads them, so the figures must agree exactly.

HTA's idle-time breakdown is a different rule (per stream; a whole gap is "host wait" when the
next kernel's runtime call started after it began): its figures are stored beside, not compared.

``REPORTGEN_HTA_PYTHON=/path/to/python`` (an interpreter with HTA) recomputes them (opt-in).
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import reportgen
from reportgen.analysis.device_time import device_time
from shared_data import FRAMEWORK

EXPECTED = Path(__file__).parent / "data" / "hta" / "temporal_breakdown.json"
CASES = json.loads(EXPECTED.read_text())["traces"] if EXPECTED.exists() else {}
#: traces whose timestamps are fractional µs (HTA rounds them to whole µs)
FLOAT_TS = {"hta/nccl_parser_config/nccl_data.json.gz",
            "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz"}


def hta_scope(profile):
    """The profile restricted to the device slices HTA's temporal breakdown keeps."""
    host, cmds = profile.host, profile.commands
    steps = host["name"].astype(str).str.contains("ProfilerStep").to_numpy()
    if steps.sum() < 2:
        return profile
    last = host["start_ns"].to_numpy()[steps].max()
    lr = cmds["launch_row"].to_numpy(np.int64)
    keep = lr >= 0
    keep[keep] = host["start_ns"].to_numpy()[lr[keep]] < last
    return dataclasses.replace(profile, commands=cmds[keep].reset_index(drop=True))


def as_hta_reads(profile, float_ts: bool):
    """The same slices as HTA reads them (test-only emulation of its input, not of its rules):
    float µs timestamps rounded to whole µs (start up, end down: its round_down_time_stamps);
    ``cuda_sync`` waits as kernels, named "...Sync" ones non-compute (we label them Memset so
    our classes put them with memory) and the others compute."""
    c = profile.commands.copy()
    if float_ts:
        start = -((-c["start_ns"]) // 1000) * 1000
        end = (c["end_ns"] // 1000) * 1000
        c["start_ns"], c["end_ns"] = start, np.maximum(end, start)
    waits = (c["is_sys"] & c["sys_wait"]).to_numpy()
    if waits.any():
        names = np.array(c["func_name"].astype(object).to_numpy())
        sync = waits & pd.Series(names).astype(str).str.contains("Sync").to_numpy()
        names[sync] = ("Memset (" + pd.Series(names[sync]).astype(str) + ")").to_numpy()
        c["func_name"] = names
        c["is_sys"] = c["is_sys"].to_numpy() & ~waits
    return dataclasses.replace(profile, commands=c)


def ours_as_hta(profile, float_ts: bool) -> dict:
    d = device_time(as_hta_reads(hta_scope(profile), float_ts)).devices.iloc[0]
    idle = d[["idle_host_ns", "idle_launch_ns", "idle_sync_ns", "idle_other_ns"]].sum()
    return {"idle": idle / 1e3, "compute": d["compute_ns"] / 1e3,
            "non_compute": (d["comm_ns"] + d["memory_ns"]) / 1e3, "span": d["span_ns"] / 1e3}


@pytest.mark.skipif(not CASES, reason=f"no expected HTA figures at {EXPECTED}")
@pytest.mark.parametrize("rel", sorted(CASES))
def test_temporal_breakdown_agrees_with_hta(rel):
    path = FRAMEWORK / rel
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    profile = reportgen.load(path)
    got = ours_as_hta(profile, float_ts=rel in FLOAT_TS)
    hta = CASES[rel]["temporal"][0]
    assert got == {"span": hta["kernel_time(us)"], "compute": hta["compute_time(us)"],
                   "non_compute": hta["non_compute_time(us)"], "idle": hta["idle_time(us)"]}


@pytest.mark.skipif(not os.environ.get("REPORTGEN_HTA_PYTHON"),
                    reason="opt-in: REPORTGEN_HTA_PYTHON=<a python with HolisticTraceAnalysis 0.5.0>")
def test_live_hta_reproduces_the_stored_figures():
    import subprocess

    out = subprocess.run([os.environ["REPORTGEN_HTA_PYTHON"], str(EXPECTED.parent / "make_expected.py"),
                          str(FRAMEWORK)], capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["traces"] == CASES
