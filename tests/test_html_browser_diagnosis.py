"""The Diagnosis tab and the per-core uArch rate charts of result.html in real headless Chromium:
breakdown small multiples (waiting drawn as waiting), kernel rows that open the timeline at the
call, and the uArch rate re-binned to the visible window as the Python rule computes it."""
from __future__ import annotations

import numpy as np
import pytest

from reportgen.analysis.derive import derive
from reportgen.analysis.uarch_timeline import modelled_tiu, rate_bins
from reportgen.testing.html_page import read_page
from reportgen.testing.profiles import make_profile
from reportgen.writers import html as html_writer

from test_html_browser import CHROMIUM, PageWatch, launch, shot, sync_playwright

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)"),
    pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)"),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    profile = make_profile(cores=3, per_engine=4000, seed=11)
    derive(profile)
    path = html_writer.write(profile, profile.summary, tmp_path_factory.mktemp("html-diag"), quiet=True)
    data, _ = read_page(path.read_text(encoding="utf-8"), items=False)
    return {"profile": profile, "path": path, "data": data, "t0": int(data["t0_ns"])}


@pytest.fixture(scope="module")
def page(tmp_path_factory, report):
    with sync_playwright() as pw:
        context = launch(pw, tmp_path_factory.mktemp("chromium-diag"))
        watch = PageWatch.ready(context, report["path"].as_uri() + "#diagnosis")
        yield watch
        context.close()


def test_breakdown_small_multiples(page, report):
    p = page.page
    assert p.evaluate("document.body.dataset.ready") == "1"
    traces = p.evaluate("document.getElementById('chart-breakdown')._fullData.map(t => "
                        "({name: t.name, xaxis: t.xaxis, y: Array.from(t.y), x: Array.from(t.x), "
                        "pattern: t.marker.pattern ? t.marker.pattern.shape : ''}))")
    b = report["profile"].diagnosis.breakdown
    b = b[b["core"].astype(str) != "Overall"]
    engines = [e for e in ("TIU", "GDMA", "SDMA", "CDMA") if (b["engine"] == e).any()]
    assert sorted({t["xaxis"] for t in traces}) == sorted(["x"] + [f"x{i + 1}" for i in range(1, len(engines))])
    # every value is the analysis' busy time; system commands are "waiting", hatched
    for t in traces:
        engine = engines[0 if t["xaxis"] == "x" else int(t["xaxis"][1:]) - 1]
        waiting = t["name"].startswith("waiting: ")
        ftype = t["name"][len("waiting: "):] if waiting else t["name"]
        rows = b[(b["engine"] == engine) & (b["func_type"].astype(str) == ftype)
                 & (b["category"] == ("waiting" if waiting else "work"))]
        assert len(rows), t["name"]
        want = {f"core {int(r.core)}": r.busy_ns / 1e3 for r in rows.itertuples()}
        for core, x in zip(t["y"], t["x"]):
            assert x == pytest.approx(want.get(core, 0.0), rel=1e-12, abs=0)
        assert (t["pattern"] == "/") == waiting
    assert any(t["name"].startswith("waiting: ") for t in traces)
    shot(p, "html_diagnosis.png")
    page.check()


def test_kernel_row_opens_the_timeline_at_the_call(page, report):
    p = page.page
    calls = report["data"]["diagnosis"]["calls"]
    assert p.locator("table.diag-calls tbody tr").count() == len(calls)
    assert p.locator("table.diag-kernels tbody tr").count() == len(report["data"]["diagnosis"]["kernels"])
    first = calls[0]                          # the longest call
    result = p.evaluate("__report.diagnosis.open('table.diag-calls tbody tr')")
    view = first["link"]["view"]
    assert view == f"core-{first['core']}"
    assert p.evaluate(f"document.getElementById('panel-{view}').hidden") is False
    a, b = result["range"]
    assert a <= first["link"]["a"] and b >= first["link"]["b"]
    assert (b - a) <= (first["link"]["b"] - first["link"]["a"]) * 1.2 + 2000
    assert p.evaluate("location.hash") == f"#{view}"
    page.check()


def test_uarch_rate_follows_the_window_and_matches_python(page, report):
    p = page.page
    profile, t0 = report["profile"], report["t0"]
    a, b = 1_000_000.0, 3_000_000.0
    p.evaluate(f"__report.zoom('core-1', {a}, {b})")
    p.evaluate("__report.diagnosis.drawn()")
    p.wait_for_function(f"document.getElementById('urate-core-1') && "
                        f"document.getElementById('urate-core-1').dataset.range === '{int(a)},{int(b)}'")
    y = p.evaluate("document.getElementById('urate-core-1').data[0].y")
    start, end, alg, uarch = modelled_tiu(profile)[1]
    A, U = rate_bins(start - t0, end - t0, alg, uarch, a, b, len(y))
    want = np.where(U > 0, A / np.where(U > 0, U, 1) * 100, np.nan)
    got = np.array([np.nan if v is None else v for v in y], float)
    np.testing.assert_allclose(got, want, rtol=1e-9)
    assert np.isfinite(got).sum() > 10
    # over the whole span the rule gives the engine summary's rate of the core
    span = float(report["data"]["span_ns"])
    whole = p.evaluate(f"__report.diagnosis.uarchBins(1, 0, {span + 1}, 1)")
    rate = profile.summary.loc[profile.summary["core"].astype(str) == "1", "tiu_uarch_rate"].iloc[0]
    assert whole["A"][0] / whole["U"][0] == pytest.approx(rate, rel=1e-12)
    note = p.evaluate("document.querySelector('#panel-core-1 .note[data-span-rate]').dataset.spanRate")
    assert float(note) == rate
    shot(p, "html_diagnosis_urate.png")
    page.check()
