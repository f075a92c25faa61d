"""Issue 15 acceptance in a real headless Chromium: the first screen, the re-binned bandwidth,
jump and search, a page under a strict Content-Security-Policy, the page without scripts and
at 400 px. Skipped (with the reason) only when chromium or playwright is missing."""
from __future__ import annotations

import numpy as np
import pytest

from reportgen.analysis.metrics import engine_summary
from reportgen.testing.profiles import make_profile
from reportgen.writers import html as html_writer

from shared_data import FRAMEWORK, needs
from test_html_browser import CHROMIUM, FLAGS, PageWatch, sync_playwright

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)"),
    pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)"),
]

KINETO = FRAMEWORK / "kineto-tb-plugin" / "samples" / "resnet50_num_workers_4" / "worker0.1623212756351.pt.trace.json.gz"
CSP = ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
       "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">")


@pytest.fixture(scope="module")
def eight_cores(tmp_path_factory):
    """An 8-core capture with CDMA (the widest engine summary): 8 x 3 x 1500 + 375 commands."""
    profile = make_profile(cores=8, per_engine=1500, seed=21)
    summary = engine_summary(profile)
    path = html_writer.write(profile, summary, tmp_path_factory.mktemp("web8"), quiet=True)
    return {"profile": profile, "summary": summary, "path": path}


@pytest.fixture(scope="module")
def chromium():
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


def open_page(chromium, path, width=1366, height=768, scripts=True):
    context = chromium.new_context(viewport={"width": width, "height": height}, java_script_enabled=scripts)
    watch = PageWatch(context, path.as_uri())
    if scripts:
        watch.page.wait_for_function("document.body.dataset.ready !== '0'", timeout=60_000)
        watch.page.evaluate("__report.ready")
    return watch, context


def box(page, selector):
    return page.evaluate(f"(() => {{ const r = document.querySelector({selector!r}).getBoundingClientRect();"
                         " return [r.left, r.top, r.right, r.bottom]; })()")


def test_summary_fills_the_first_screen_without_overflow(chromium, eight_cores):
    watch, context = open_page(chromium, eight_cores["path"])
    p = watch.page
    assert p.evaluate("document.body.dataset.ready") == "1"
    left, top, right, bottom = box(p, "#engine-summary")
    assert left >= 0 and top >= 0 and right <= 1366 and bottom <= 768, (left, top, right, bottom)
    # the table itself fits its card (no scrolling sideways) and the page does not overflow
    assert p.evaluate("(() => { const w = document.querySelector('#engine-summary .table-wrap');"
                      " return w.scrollWidth <= w.clientWidth; })()")
    assert p.evaluate("document.documentElement.scrollWidth") <= 1366
    assert p.locator("#engine-summary th", has_text="CDMA").count() == 1
    watch.check()
    context.close()


def test_zoomed_bandwidth_is_binned_again(chromium, eight_cores):
    watch, context = open_page(chromium, eight_cores["path"])
    p = watch.page
    p.evaluate("__report.show('compare')")
    p.wait_for_function("__report.bandwidth && document.getElementById('chart-bandwidth').data")
    full = p.evaluate("__report.bandwidth.draw().then((s) => s.map((x) => ({name: x.name, kind: x.kind,"
                      " gbps: Array.from(x.gbps)})))")
    span = p.evaluate("__report.views.all.range[1]")
    # the mean over the span of each core's GDMA DDR line is the summary's wall bandwidth
    summary = eight_cores["summary"].set_index("core")
    for s in full:
        if s["kind"] == "DDR":
            core = int(s["name"].split()[-1])
            assert np.mean(s["gbps"]) == pytest.approx(summary.loc[core, "gdma_ddr_bw_wall"], rel=1e-6)
    # zoom the timeline to 1/2000 of the span around a GDMA command: the chart follows, binned
    # for that window
    c = eight_cores["profile"].commands
    gdma = c[(c["engine"] == "GDMA") & ~c["is_sys"] & (c["bytes"].fillna(0) > 0)]
    t0 = int(c["start_ns"].min())
    mid = float(gdma["start_ns"].iloc[len(gdma) // 2] - t0)
    a, b = mid - span / 4000, mid + span / 4000
    p.evaluate(f"__report.zoom('all', {a}, {b})")
    p.wait_for_function(f"__report.bandwidth.range[0] === {a}")
    zoomed = p.evaluate("__report.bandwidth.pending.then((s) => s.map((x) => Array.from(x.gbps)))")
    distinct_zoomed = len({round(v, 9) for s in zoomed for v in s})
    # what fixed full-span buckets show in that window: the buckets overlapping it
    k0, k1 = int(a / span * 1000), int(np.ceil(b / span * 1000))
    distinct_fixed = len({round(v, 9) for s in full for v in s["gbps"][k0:k1]})
    assert distinct_zoomed > max(distinct_fixed, 10), (distinct_zoomed, distinct_fixed)
    rng = p.evaluate("document.getElementById('chart-bandwidth').layout.xaxis.range")
    assert rng == pytest.approx([a / 1e3, b / 1e3])
    # the chip's peak is drawn as a line on the DDR plot
    shapes = p.evaluate("document.getElementById('chart-bandwidth').layout.shapes")
    assert any(sh["y0"] == pytest.approx(68.264) for sh in shapes)
    watch.check()
    context.close()


def test_search_finds_a_known_name_and_steps(chromium, eight_cores):
    watch, context = open_page(chromium, eight_cores["path"])
    p = watch.page
    c = eight_cores["profile"].commands
    name = str(c.loc[(c["core"] == 2) & (c["engine"] == "TIU"), "func_name"].iloc[0])
    p.evaluate("__report.show('core-2')")
    watch.wait_idle("core-2")
    mine = c[(c["core"] == 2)]
    want = int(mine["func_name"].astype(str).str.lower().str.contains(name.lower(), regex=False).sum()
               | 0)
    got = p.evaluate(f"__report.search('core-2', {name!r})")
    assert got["matches"] >= want > 0 and got["note"] == f"1 / {got['matches']:,}"
    hover = p.evaluate(f"__report.hoverText({got['highlight']})")
    assert name in hover
    second = p.evaluate("__report.views['core-2'].step(1).then(() => __report.views['core-2'].searchNote.textContent)")
    assert second == f"2 / {got['matches']:,}"
    assert p.evaluate("__report.search('core-2', 'no such name at all')")["matches"] == 0
    watch.check()
    context.close()


@needs(KINETO)
def test_jump_scrolls_the_lane_into_view(chromium, tmp_path):
    import reportgen

    profile = reportgen.load(str(KINETO))
    path = html_writer.write(profile, profile.summary, tmp_path, quiet=True)
    watch, context = open_page(chromium, path, height=500)
    p = watch.page
    p.evaluate("__report.show('core-0')")
    watch.wait_idle("core-0")
    lane = p.evaluate("__report.views['core-0'].spec.lanes.filter((l) => !%s[l].host).pop()"
                      % "JSON.parse(document.getElementById('rg-data').textContent).lanes")
    sheet = p.evaluate(f"JSON.parse(document.getElementById('rg-data').textContent).lanes[{lane}].name")
    p.evaluate("window.scrollTo(0, 0)")
    p.evaluate(f"__report.jump('core-0', {sheet!r}, 3)")
    y = p.evaluate(f"""(() => {{ const v = __report.views['core-0'], ya = v.plot._fullLayout.yaxis;
        const r = v.rows().indexOf({lane});
        return v.plot.getBoundingClientRect().top + ya._offset + ya.l2p(r); }})()""")
    assert 0 <= y <= 500, y
    shapes = p.evaluate("__report.views['core-0'].plot.layout.shapes")
    assert any(sh.get("xref") == "paper" and sh.get("fillcolor", "").startswith("rgba(255, 213") for sh in shapes)
    # a framework search finds a kernel by name; the hover names the kernel first, then its operator
    got = p.evaluate("__report.search('core-0', 'volta_scudnn')")
    assert got["matches"] > 0
    hover = p.evaluate(f"__report.hoverText({got['highlight']})")
    assert hover.startswith("<b>volta_scudnn") and "launched by aten::" in hover
    watch.check()
    context.close()


def test_plots_draw_under_a_csp_that_allows_inline_scripts_only(chromium, eight_cores, tmp_path):
    text = eight_cores["path"].read_text(encoding="utf-8").replace("<head>\n", "<head>\n" + CSP + "\n", 1)
    path = tmp_path / "csp.html"
    path.write_text(text, encoding="utf-8")
    watch, context = open_page(chromium, path)
    p = watch.page
    assert p.evaluate("document.body.dataset.ready") == "1"
    assert p.locator("#panel-overview .js-plotly-plot .main-svg").count() >= 2
    assert p.evaluate("document.getElementById('rg-error').hidden")
    watch.check()
    context.close()


def test_without_scripts_no_empty_chart_box(chromium, eight_cores):
    watch, context = open_page(chromium, eight_cores["path"], scripts=False)
    p = watch.page
    empty = p.evaluate("""Array.from(document.querySelectorAll('.chart, .timeline')).filter((n) =>
        n.offsetParent !== null && n.getBoundingClientRect().height > 20 && !n.textContent.trim()).length""")
    assert empty == 0
    assert p.locator("#engine-summary").is_visible()
    assert box(p, "#engine-summary")[2] <= 1366
    context.close()


def test_legends_do_not_overlap_plots_at_400px(chromium, eight_cores):
    watch, context = open_page(chromium, eight_cores["path"], width=400, height=800)
    p = watch.page
    overlaps = p.evaluate("""Array.from(document.querySelectorAll('#panel-overview .js-plotly-plot')).map((gd) => {
        const legend = gd.querySelector('.legend'), plot = gd.querySelector('.cartesianlayer .plot, .draglayer .nsewdrag');
        if (!legend || !plot) return null;
        const a = legend.getBoundingClientRect(), b = gd.querySelector('.draglayer .nsewdrag').getBoundingClientRect();
        return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    })""")
    assert overlaps and True not in overlaps, overlaps
    assert p.evaluate("document.documentElement.scrollWidth") <= 400
    watch.check()
    context.close()


def test_waiting_commands_are_hidden_and_one_legend_entry(chromium, eight_cores):
    watch, context = open_page(chromium, eight_cores["path"])
    p = watch.page
    c = eight_cores["profile"].commands
    sheets = [f"{e}_1" for e in ("TIU", "GDMA", "SDMA")]
    mine = c[c["sheet"].astype(str).isin(sheets)]
    result = p.evaluate("__report.show('core-1')")[0]
    assert result["visible"] == int((~mine["is_sys"]).sum()) < len(mine)
    chips = p.locator("#view-core-1 .legend .chip.waiting")
    assert chips.count() == 1 and "off" in chips.get_attribute("class")
    assert p.locator("#view-core-1 .legend .chip", has_text="sys").count() == 0 or \
        p.locator("#view-core-1 .legend .chip", has_text="sys").all_inner_texts() == ["waiting (system)"]
    chips.click()
    watch.wait_idle("core-1")
    p.wait_for_function(f"__report.views['core-1'].last.visible === {len(mine)}")
    watch.check()
    context.close()
