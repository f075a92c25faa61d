"""The roofline block (Diagnosis tab) and the local-memory chart (core tabs) of result.html in
real headless Chromium, on the golden mode-2 dump ``../shared/data/lmem/aks-m2-lmem-kernels``:
drawn from the analysis' numbers, hover text, a click on a point opens the timeline at that
scope, the memory chart follows the timeline's zoom and back, and no page error."""
from __future__ import annotations

import pytest

from reportgen.analysis.derive import derive
from reportgen.parsers.pmu.dump import load_dump
from reportgen.testing.html_page import read_page
from reportgen.writers import html as html_writer

from shared_data import DATA
from test_html_browser import CHROMIUM, PageWatch, launch, shot, sync_playwright

CASE = DATA / "lmem" / "aks-m2-lmem-kernels"
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)"),
    pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)"),
    pytest.mark.skipif(not CASE.exists(), reason=f"shared data not present at {CASE}"),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    profile = load_dump(CASE / "input")
    derive(profile)
    path = html_writer.write(profile, profile.summary, tmp_path_factory.mktemp("html-hw"), quiet=True)
    data, _ = read_page(path.read_text(encoding="utf-8"), items=False)
    return {"profile": profile, "path": path, "data": data, "t0": int(data["t0_ns"])}


@pytest.fixture(scope="module")
def page(tmp_path_factory, report):
    with sync_playwright() as pw:
        context = launch(pw, tmp_path_factory.mktemp("chromium-hw"))
        watch = PageWatch.ready(context, report["path"].as_uri() + "#diagnosis")
        watch.page.evaluate("__report.hardware.drawRoofline()")
        yield watch
        context.close()


def _points(p):
    return p.evaluate("Array.from(document.getElementById('roofline-chart')._fullData)"
                      ".map((t, i) => ({i, name: t.name, mode: t.mode, x: Array.from(t.x), y: Array.from(t.y),"
                      " custom: t.customdata || null}))")


def test_roofline_drawn_from_the_analysis(page, report):
    p = page.page
    traces = _points(p)
    roof = report["profile"].diagnosis.roofline
    shown = roof[(roof["ops"] > 0) & (roof["ddr_bytes"] > 0)]
    roofs = [t for t in traces if t["mode"] == "lines"]
    points = [t for t in traces if t["mode"] == "markers"]
    # one roof per data type and memory level; every roof's flat part is that type's peak
    assert {t["name"].split(" · ")[1] for t in roofs} == {"DDR", "L2M"}
    assert len(roofs) % 2 == 0 and len(roofs) >= 2
    drawn = {(t["name"], c[0], c[1]): (x, y) for t in points for x, y, c in zip(t["x"], t["y"], t["custom"])}
    assert len(drawn) == len(shown)
    for r in shown.itertuples(index=False):
        x, y = drawn[(r.scope.replace("_", " "), str(r.name), "all" if r.core is None else int(r.core))]
        assert x == pytest.approx(r.intensity, rel=1e-12) and y == pytest.approx(r.ops_per_s / 1e12, rel=1e-12)
    rows = p.locator("table.diag-roofline tbody tr")
    assert rows.count() == len(report["data"]["diagnosis"]["roofline"]["rows"]) == min(len(roof), 200)
    first = roof.iloc[0]
    assert rows.nth(0).locator("th").inner_text() == str(first["name"])
    assert rows.nth(0).locator("td").nth(3).inner_text() == f"{first['under_roof_ns'] / 1000:,.3f}"
    shot(p, "html_roofline.png")
    page.check()


def _screen_xy(p, curve, index):
    return p.evaluate(f"""(() => {{
        const gd = document.getElementById('roofline-chart'), fl = gd._fullLayout, t = gd._fullData[{curve}];
        const box = gd.querySelector('.nsewdrag').getBoundingClientRect();
        const x = fl.xaxis.c2p(t.x[{index}]), y = fl.yaxis.c2p(t.y[{index}]);
        return [box.left + x, box.top + y];
    }})()""")


def test_roofline_hover_and_click_open_the_timeline(page, report):
    p = page.page
    p.evaluate("__report.show('diagnosis')")
    p.locator("#roofline-chart").scroll_into_view_if_needed()
    points = [t for t in _points(p) if t["mode"] == "markers"]
    core_pts = next(t for t in points if t["name"] == "core")
    k = 0
    custom = core_pts["custom"][k]
    x, y = _screen_xy(p, core_pts["i"], k)
    p.mouse.move(x, y)
    p.wait_for_function("document.querySelector('#roofline-chart .hoverlayer .hovertext') !== null")
    text = p.evaluate("document.querySelector('#roofline-chart .hoverlayer').textContent")
    roof = report["profile"].diagnosis.roofline
    # the point under the mouse is the closest one: find which core it is by its text
    hit = [c for c in core_pts["custom"] if f"core {c[0]} (core" in text]
    assert len(hit) == 1, text
    custom = hit[0]
    row = roof[(roof["scope"] == "core") & (roof["name"] == custom[0])].iloc[0]
    assert f"bound by {row['bound_by']}" in text
    assert f"{100 * row['efficiency']:.1f}% of its roof" in text
    assert f"{row['under_roof_ns'] / 1e3:,.3f} µs under the roof" in text
    p.mouse.click(x, y)
    p.wait_for_function(f"document.getElementById('roofline-chart').dataset.opened === '{custom[10]}'")
    view = custom[10]
    p.wait_for_function(f"!document.getElementById('panel-{view}').hidden")
    page.wait_idle(view)
    a, b = p.evaluate(f"__report.views['{view}'].range || null") or (None, None)
    if a is None:                                    # the view keeps its window elsewhere: read the link
        a, b = p.evaluate(f"[__report.views['{view}'].a, __report.views['{view}'].b]")
    assert a <= custom[11] and b >= custom[12]
    page.check()


def test_lmem_chart_follows_the_timeline(page, report):
    p = page.page
    lm = report["profile"].diagnosis.lmem
    t0 = report["t0"]
    span = int(report["profile"].commands["end_ns"].max()) - t0
    p.evaluate(f"__report.zoom('core-0', 0, {span})")
    page.wait_idle("core-0")
    p.wait_for_function("document.getElementById('lmem-core-0') !== null")
    p.evaluate("__report.hardware.drawn()")
    traces = p.evaluate("document.getElementById('lmem-core-0')._fullData.map(t => ({type: t.type, name: t.name,"
                        " y: t.type === 'heatmap' ? null : Array.from(t.y), x: t.type === 'heatmap' ? null : Array.from(t.x),"
                        " zmax: t.type === 'heatmap' ? t.z.map(r => Math.max(...r)) : null}))")
    total = next(t for t in traces if t["name"] == "live bytes")
    core0 = lm.cores[lm.cores["core"] == 0].iloc[0]
    assert max(total["y"]) == core0["peak_bytes"]                 # the peak survives the buckets
    peak = next(t for t in traces if t["name"] == "peak")
    assert peak["x"][0] == pytest.approx((core0["peak_at_ns"] - t0) / 1e3) and peak["y"][0] == core0["peak_bytes"]
    heat = next(t for t in traces if t["type"] == "heatmap")
    assert heat["zmax"] == lm.banks[lm.banks["core"] == 0]["peak_bytes"].tolist()
    # zooming the memory chart zooms the timeline, and the timeline's zoom redraws the chart
    a, b = span * 0.25, span * 0.5
    p.evaluate(f"Plotly.relayout('lmem-core-0', {{'xaxis.range[0]': {a / 1e3}, 'xaxis.range[1]': {b / 1e3}}})")
    page.wait_idle("core-0")
    p.evaluate("__report.hardware.drawn()")
    p.wait_for_function(f"(() => {{ const r = document.getElementById('lmem-core-0').dataset.range.split(',').map(Number);"
                        f" return Math.abs(r[0] - {a}) < 1 && Math.abs(r[1] - {b}) < 1; }})()")
    # hover on the total line names bytes per lane
    p.locator("#lmem-core-0").scroll_into_view_if_needed()
    heat_area = p.locator("#lmem-core-0 .nsewdrag").last.bounding_box()   # the bank strip
    p.mouse.move(heat_area["x"] + heat_area["width"] * 0.5, heat_area["y"] + heat_area["height"] / 32)
    p.wait_for_function("document.querySelector('#lmem-core-0 .hoverlayer .hovertext') !== null")
    text = p.evaluate("document.querySelector('#lmem-core-0 .hoverlayer').textContent")
    assert text.startswith("bank 0: ") and "B of 16,384 at" in text
    shot(p, "html_lmem.png")
    page.check()
