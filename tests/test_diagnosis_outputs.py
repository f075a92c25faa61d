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


def test_the_same_numbers_in_perfetto_html_and_summary_json(derived, tmp_path):
    """A kernel's total, a call's uArch rate and a core's uArch rate, read back from each file."""
    import json

    from reportgen.testing.html_page import read_page
    from reportgen.writers import html, text

    dec = decode(perfetto.write(derived, derived.summary, tmp_path, quiet=True))
    page, _ = read_page(html.write(derived, derived.summary, tmp_path, quiet=True)
                        .read_text(encoding="utf-8"), items=False)
    text.write_summary(derived, derived.summary, tmp_path)
    summary_json = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    diag = page["diagnosis"]

    # a kernel's total wall time: Perfetto (its slices' Wall args) = HTML = the analysis
    slices = _kernel_slices(dec)
    kernels = derived.diagnosis.kernels
    for k in diag["kernels"]:
        perfetto_total = sum(s["args"]["Wall (ns)"] for s in slices if s["name"] == k["name"])
        want = int(kernels.loc[kernels["name"] == k["name"], "total_ns"].iloc[0])
        (row,) = [r for r in summary_json["kernels"] if (r["source"], r["name"]) == (k["source"], k["name"])]
        assert perfetto_total == k["total_ns"] == want == row["total_ns"]

    # a call's uArch rate: the Perfetto arg is the page's number in %
    by_start = {(s["args"]["Wall (ns)"], s["name"]): s["args"]["uArch Rate"] for s in slices}
    for call in diag["calls"]:
        assert by_start[(call["wall_ns"], call["name"])] == round(call["uarch_rate"] * 100, 6)

    # a core's uArch rate: summary.json = the page's span rate = the Perfetto core description
    descriptions = {d.name: d.description for d in dec["tracks"].values()}
    for head in diag["urate"]["cores"]:
        (row,) = [r for r in summary_json["summary"] if str(r["core"]) == str(head["core"])]
        assert row["tiu_uarch_rate"] == head["span_rate"]
        assert f"TIU uArch rate {head['span_rate'] * 100:.1f}%" in descriptions[f"Core {head['core']}"]
