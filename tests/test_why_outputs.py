"""The critical path, waits and what-if of one run read back from every output: summary.json,
summary.txt, the workbook (Critical Path / What-if sheets), perfetto.pftrace (``critical`` args,
dependency and barrier flows) and result.html in real headless Chromium (overview bar, path
toggle, a click on a waiting command).  Every number must be the analysis' own."""
from __future__ import annotations

import json

import numpy as np
import openpyxl
import pytest

from reportgen.analysis.waits import describe
from reportgen.options import Options
from reportgen.parsers.pmu import load_dump
from reportgen.pipeline import report
from reportgen.testing.synth import SynthConfig, write_dump
from reportgen.analysis.derive import derive

from test_perfetto import decode


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("why")
    r = write_dump(base / "dump", SynthConfig(cores=4, cmds_per_core=1000, mode=2, seed=7,
                                              dataflow=True))
    out = base / "out"
    report(Options(input=str(r.dump_dir), output=str(out), quiet=True, jobs=1))
    profile = load_dump(str(r.dump_dir))
    derive(profile)
    return {"out": out, "profile": profile, "why": profile.diagnosis.why}


def test_summary_json(run):
    doc = json.loads((run["out"] / "summary.json").read_text())
    why = run["why"]
    cp = doc["critical_path"]
    assert {"class", "core", "engine", "ns", "share"} <= set(cp[0])
    by_class = {}
    for r in cp:
        by_class[r["class"]] = by_class.get(r["class"], 0) + r["ns"]
    want = dict(zip(why.path.by_class["class"], why.path.by_class["ns"]))
    assert by_class == {k: v for k, v in want.items() if v}
    assert sum(r["ns"] for r in cp) == why.path.span_ns
    assert doc["what_if"][0]["predicted_span_ns"] == int(why.what_if["predicted_span_ns"].iloc[0])
    assert {"scenario", "kind", "target", "core", "factor", "predicted_span_ns", "gain_ns"} <= set(doc["what_if"][0])
    gdma = [r for r in doc["what_if"] if r["kind"] == "engine" and r["target"] == "GDMA" and r["core"] is None]
    assert gdma[0]["factor"] == 2.0
    w = doc["waits"][0]
    assert {"core", "engine", "waited_for_core", "waited_for_engine", "ns"} <= set(w)
    assert w["ns"] == int(why.waits.table["ns"].iloc[0])
    assert all("gain_ns" in f for f in doc["findings"])


def test_summary_txt(run):
    text = (run["out"] / "summary.txt").read_text()
    why = run["why"]
    for share in why.path.by_class["share"]:
        assert f"{100 * share:.2f}%" in text
    for r in why.what_if.head(5).itertuples():
        assert r.scenario[:37] in text
        assert f"{r.gain_ns / 1000.0:.3f}" in text


def test_workbook_sheets(run):
    wb = openpyxl.load_workbook(run["out"] / "PerfDoc" / "PerfAI_output.xlsx", read_only=True)
    why = run["why"]
    rows = list(wb["Critical Path"].iter_rows(values_only=True))
    overall = {r[0]: (r[3], r[4]) for r in rows[1:] if r[1] == "Overall"}
    for cls, ns, share in why.path.by_class.itertuples(index=False):
        assert overall[cls][0] == ns and overall[cls][1] == pytest.approx(share)
    rows = list(wb["What-if"].iter_rows(values_only=True))
    head = rows[0]
    got = [dict(zip(head, r)) for r in rows[1:]]
    assert [g["Scenario"] for g in got] == why.what_if["scenario"].tolist()
    assert [g["Predicted span (ns)"] for g in got] == why.what_if["predicted_span_ns"].tolist()


def test_perfetto_critical_args_and_flows(run):
    dec = decode(run["out"] / "perfetto.pftrace")
    why = run["why"]
    crit = [s for s in dec["slices"] if s["args"].get("critical")]
    assert len(crit) == len(why.path.rows)
    c = run["profile"].commands
    want = sorted(zip(c["sheet"].astype(str).to_numpy()[why.path.rows],
                      c["global_idx"].to_numpy()[why.path.rows].tolist()))
    assert sorted((s["args"]["Sheet"], s["args"]["Global Idx"]) for s in crit) == want
    g = why.graph
    waits = np.flatnonzero(g.barrier >= 0)
    barrier_flows = int(((g.release_cmd[g.barrier[waits]] != waits) & (g.dep_src[waits] < 0)).sum())
    assert len(dec["flows_in"]) == int((g.dep_src >= 0).sum()) + barrier_flows
    assert barrier_flows > 0


def test_html_page(run, tmp_path_factory):
    from test_html_browser import CHROMIUM, PageWatch, launch, sync_playwright
    if CHROMIUM is None or sync_playwright is None:
        pytest.skip("chromium or playwright not installed")
    why = run["why"]
    path = run["out"] / "PerfWeb" / "result.html"
    with sync_playwright() as pw:
        context = launch(pw, tmp_path_factory.mktemp("chromium-why"))
        watch = PageWatch.ready(context, path.as_uri())
        p = watch.page
        segs = p.evaluate("Array.from(document.querySelectorAll('#why-path .why-seg')).map(s => "
                          "({cls: s.dataset.cls, w: parseFloat(s.style.width)}))")
        want = {k: 100 * s for k, s in zip(why.path.by_class["class"], why.path.by_class["share"]) if s > 0}
        assert {s["cls"]: s["w"] for s in segs} == pytest.approx(want, abs=1e-3)
        rows = p.evaluate("Array.from(document.querySelectorAll('table.why-whatif tbody th')).map(t => t.textContent)")
        assert rows == why.what_if["scenario"].head(len(rows)).tolist()
        # the path toggle outlines path commands on the timeline of the core with most path time,
        # zoomed to its longest path stretch
        st = why.path.stretches
        top = st[st["class"].isin(["compute", "transfer"])].nlargest(1, "ns").iloc[0]
        view = f"core-{int(top['core'])}"
        t0 = int(p.evaluate("__report.data.t0_ns"))
        a, b = int(top["start_ns"]) - t0 - 1000, int(top["end_ns"]) - t0 + 1000
        p.evaluate(f"window.__report.zoom('{view}', {a}, {b})")
        watch.wait_idle(view)
        p.evaluate("window.__report.why.setPath(true)")
        watch.wait_idle(view)
        n = p.evaluate(f"__report.views['{view}'].plot.layout.shapes"
                       ".filter(s => s.name === 'critical path').length")
        assert n > 0
        # a waiting command explained: the longest wait, by its sheet and global_idx
        w = why.waits.table.iloc[0]
        c = run["profile"].commands
        sheet, g = str(c["sheet"].iloc[w["row"]]), int(c["global_idx"].iloc[w["row"]])
        # a click on it (the plot's own click event, as Plotly emits it for a bar)
        i = p.evaluate(f"__report.findItem({json.dumps(sheet)}, {g})")
        assert i >= 0
        p.evaluate(f"__report.views['{view}'].plot.emit('plotly_click', {{points: [{{customdata: {i}}}]}})")
        note = p.evaluate(f"__report.views['{view}'].whyNote.textContent")
        assert note.startswith(describe(w))
        # its link jumps to the command it waited for
        other = int(w["waited_for_row"])
        p.evaluate(f"__report.views['{view}'].whyNote.querySelector('a.why-jump').click()")
        watch.wait_idle(view)
        hl = p.evaluate(f"__report.views['{view}'].highlight")
        want = p.evaluate(f"__report.findItem({json.dumps(str(c['sheet'].iloc[other]))}, "
                          f"{int(c['global_idx'].iloc[other])})")
        assert hl == want
        watch.check()
        context.close()
