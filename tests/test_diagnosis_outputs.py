"""The diagnosis in the outputs this branch renders: Perfetto kernel-call args, the HTML
diagnosis payload, and the same number everywhere (Perfetto, HTML, summary.json)."""
from __future__ import annotations

import numpy as np
import pytest

from reportgen.analysis.derive import derive
from reportgen.testing.profiles import make_profile
from reportgen.writers import perfetto

from test_perfetto import decode, track_path


@pytest.fixture(scope="module")
def derived():
    profile = make_profile(cores=2, per_engine=400, seed=3)
    derive(profile)
    return profile


def _kernel_slices(dec):
    return [s for s in dec["slices"] if "/Kernel Function" in track_path(dec["tracks"], s["track"])]


def test_perfetto_kernel_slices_carry_the_call_figures(derived, tmp_path):
    dec = decode(perfetto.write(derived, derived.summary, tmp_path, quiet=True))
    calls = derived.diagnosis.kernel_calls
    calls = calls[calls["source"] == "device"]
    slices = _kernel_slices(dec)
    assert len(slices) == len(calls)
    base = min(s["ts"] for s in dec["slices"]) - int(derived.commands["start_ns"].min())
    by_key = {(int(r.core), int(r.start_ns), int(r.end_ns)): r for r in calls.itertuples()}
    for s in slices:
        core = int(track_path(dec["tracks"], s["track"]).split("/Core ")[1].split("/")[0])
        r = by_key[(core, s["ts"] - base, s["ts"] - base + s["dur"])]
        a = s["args"]
        assert s["name"] == r.name and a["Kernel Function"] == r.name
        assert a["Commands"] == r.commands and a["Wall (ns)"] == r.wall_ns
        assert (a["TIU Busy (ns)"], a["GDMA Busy (ns)"], a["SDMA Busy (ns)"]) == (
            r.tiu_busy_ns, r.gdma_busy_ns, r.sdma_busy_ns)
        assert isinstance(a["uArch Rate"], float)          # typed: a double, not text
        assert a["uArch Rate"] == round(r.uarch_rate * 100, 6)
        assert a["TIU Util (%)"] == round(r.tiu_util * 100, 6)
        assert a["DMA data size(B)"] == int(r.bytes)
        assert a["DDR Bandwidth(GB/s)"] == r.ddr_bw and a["L2M Bandwidth(GB/s)"] == r.l2m_bw
