"""result.html in a real headless Chromium (Debian ``chromium`` driven by PyPI ``playwright``).

The page must reach its ready state offline without errors, draw the overview and every core,
show the expected number of commands when zoomed, draw the same occupancy as the Python twin,
and show a command's model values in its hover label. Framework pages: the overview charts show
the tables' values, the Tables tab draws every table, sorts over all its rows and shows markup as
text. Screenshots go to tests/_artifacts/.

Skipped (with the reason) only when chromium or playwright is not installed.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from reportgen.analysis import timeline
from reportgen.analysis.metrics import engine_summary
from reportgen.testing.html_page import decode_items, items_blob, read_page
from reportgen.testing.profiles import make_profile
from reportgen.writers import html as html_writer
from reportgen.writers.html import page as page_writer, payload, tables as table_writer
from reportgen.writers.html.units import fmt_duration

from shared_data import FRAMEWORK, PMU, needs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)"),
    pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)"),
]

ARTIFACTS = Path(__file__).parent / "_artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
XSS_KERNEL = "<script>alert(1)</script>"


# ------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A 37,000-command profile (3 cores x 3 engines x 4000 + 1000 CDMA) written once."""
    profile = make_profile(cores=3, per_engine=4000, seed=11)
    out = tmp_path_factory.mktemp("html")
    path = html_writer.write(profile, engine_summary(profile), out, quiet=True)
    data, _ = read_page(path.read_text(encoding="utf-8"))
    return {"profile": profile, "path": path, "data": data, "t0": int(data["t0_ns"])}


@pytest.fixture(scope="module")
def playwright():
    with sync_playwright() as pw:
        yield pw


def launch(pw, user_dir, **options):
    """Debian's chromium with a fresh profile folder (never a downloaded browser)."""
    return pw.chromium.launch_persistent_context(
        str(user_dir), executable_path=CHROMIUM, args=FLAGS, headless=True,
        viewport={"width": 1500, "height": 1000}, **options)


@pytest.fixture(scope="module")
def browser(playwright, tmp_path_factory):
    context = launch(playwright, tmp_path_factory.mktemp("chromium-profile"))
    yield context
    context.close()


class PageWatch:
    """A page plus everything it complained about."""

    def __init__(self, context, url: str):
        self.problems: list[str] = []
        self.network: list[str] = []
        self.page = context.new_page()
        self.page.on("pageerror", lambda err: self.problems.append(f"pageerror: {err}"))
        self.page.on("console", lambda msg: self.problems.append(f"console.{msg.type}: {msg.text}")
                     if msg.type in ("error", "warning") else None)
        self.page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"), d.dismiss()))
        self.page.route("**/*", self._offline)
        self.page.goto(url)

    def _offline(self, route):
        url = route.request.url
        if url.startswith(("file:", "blob:", "data:")):
            route.continue_()
        else:                               # the page must not need the network
            self.network.append(url)
            route.abort()

    @classmethod
    def ready(cls, context, url: str) -> "PageWatch":
        """A page on a report once its overview is drawn and its data decoded."""
        watch = cls(context, url)
        watch.page.wait_for_function("document.body.dataset.ready !== '0'", timeout=60_000)
        watch.page.evaluate("__report.ready")
        return watch

    def wait_idle(self, view: str):
        self.page.wait_for_function(f"__report.views['{view}'] && !__report.views['{view}'].rendering")

    def check(self):
        assert self.problems == [] and self.network == []


@pytest.fixture(scope="module")
def page(browser, report):
    watch = PageWatch.ready(browser, report["path"].as_uri())
    # these tests count every command: show the waiting (system) ones, hidden by default
    # (tests/test_html_browser_overview.py checks the default)
    watch.page.evaluate("__report.setWaiting(true)")
    yield watch
    watch.page.close()


# ------------------------------------------------------------------------------------ helpers
def view_sheets(profile, core: int) -> list[str]:
    c = profile.commands
    own = [f"{e}_{core}" for e in ("TIU", "GDMA", "SDMA")]
    cdma = sorted(c.loc[(c["engine"] == "CDMA") & (c["core"] == core), "sheet"].astype(str).unique())
    return own + cdma


def count_in_window(profile, sheets, t0, a, b) -> int:
    """Commands of these sheets that overlap [a, b) (ns since the first event), from the model."""
    c = profile.commands
    sel = c["sheet"].astype(str).isin(sheets)
    return int((sel & (c["end_ns"] - t0 > a) & (c["start_ns"] - t0 < b)).sum())


def shot(page, name: str):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


# ------------------------------------------------------------------------------------ tests
def test_ready_offline_without_errors(page, report):
    assert page.page.evaluate("document.body.dataset.ready") == "1"
    assert page.page.title().startswith("AKS")
    page.check()


def test_plotly_is_the_vendored_one(page):
    """The page runs the vendored plotly.js bundle (templates/vendor/README.md)."""
    from reportgen.writers.html.page import PLOTLY_VERSION

    assert page.page.evaluate("Plotly.version") == PLOTLY_VERSION


def test_overview_renders(page, report):
    p = page.page
    for chart in ("util", "functype"):
        assert p.locator(f"#chart-{chart} .main-svg").count() >= 1, chart
    # utilisation bars: one trace per engine, values = the summary's util in %
    util = p.evaluate("document.getElementById('chart-util')._fullData.map(t => [t.name, Array.from(t.y)])")
    summary = engine_summary(report["profile"])
    for name, values in util:
        want = summary.iloc[:-1][f"{name.lower()}_util"].to_numpy(float) * 100
        np.testing.assert_allclose(values, want, rtol=1e-6)
    rows = p.locator("table.summary tbody tr")
    assert rows.count() == 3 + 1
    assert "Overall" in rows.nth(3).inner_text()
    shot(p, "html_overview.png")
    page.check()


@pytest.mark.parametrize("core", [0, 1, 2])
def test_each_core_renders_every_command(page, report, core):
    result = page.page.evaluate(f"__report.show('core-{core}')")[0]
    sheets = view_sheets(report["profile"], core)
    expected = int(report["profile"].commands["sheet"].astype(str).isin(sheets).sum())
    assert result["tier"] == "heatmap"             # > BAR_LIMIT commands: occupancy view
    assert result["visible"] == expected
    labels = page.page.evaluate(f"Array.from(document.querySelectorAll('#view-core-{core} .yaxislayer-above text'))"
                                ".map(t => t.textContent)")
    assert labels == sheets
    page.check()


def test_heatmap_matches_python_occupancy(page, report):
    profile, t0 = report["profile"], report["t0"]
    sheets = view_sheets(profile, 0)
    a, b = 1_000_000.0, 3_000_000.0
    result = page.page.evaluate(f"__report.zoom('core-0', {a}, {b})")
    assert result["tier"] == "heatmap"
    assert result["visible"] == count_in_window(profile, sheets, t0, a, b)
    z = page.page.evaluate("document.querySelector('#view-core-0 .timeline-plot').data[0].z")
    width = len(z[0])
    c = profile.commands
    sel = c["sheet"].astype(str).isin(sheets).to_numpy()
    lane = np.array([sheets.index(s) for s in c.loc[sel, "sheet"].astype(str)])
    occ = timeline.occupancy((c.loc[sel, "start_ns"] - t0).to_numpy(), (c.loc[sel, "end_ns"] - t0).to_numpy(),
                             lane, len(sheets), a, b, width)
    zz = np.array([[np.nan if v is None else v for v in row] for row in z], float)
    frac = np.where(np.isnan(zz), 0.0, (zz - np.floor(zz) - 0.02) / 0.97)
    np.testing.assert_allclose(frac, occ, atol=1e-9)
    page.check()


def test_zoom_to_a_known_window_draws_each_command(page, report):
    profile, t0 = report["profile"], report["t0"]
    sheets = view_sheets(profile, 1)
    anchor = profile.sheet("GDMA_1").iloc[2000]
    a = float(anchor["start_ns"] - t0)
    b = a + 40_000.0
    expected = count_in_window(profile, sheets, t0, a, b)
    assert 10 < expected < page_writer.BAR_LIMIT
    result = page.page.evaluate(f"__report.zoom('core-1', {a}, {b})")
    assert (result["tier"], result["visible"], result["bars"]) == ("bars", expected, expected)
    # SVG bars in the main plot area (the range slider draws its own small copy)
    drawn = page.page.evaluate("Array.from(document.querySelectorAll('#view-core-1 .barlayer .point'))"
                               ".filter(b => !b.closest('.rangeslider-container')).length")
    assert drawn == expected
    page.check()


def _bar_centre(p, view: str, index: int) -> tuple[float, float]:
    """Page coordinates of the middle of item ``index``'s bar."""
    return tuple(p.evaluate(f"""() => {{
        const gd = document.querySelector('#view-{view} .timeline-plot');
        for (const t of gd.data) {{
            if (t.type !== 'bar' || !t.customdata) continue;
            const k = t.customdata.indexOf({index});
            if (k < 0) continue;
            const fl = gd._fullLayout, box = gd.getBoundingClientRect();
            const x = fl.xaxis.l2p(t.base[k] + t.x[k] / 2) + fl._size.l + box.left;
            const y = fl.yaxis.l2p(t.y[k]) + fl._size.t + box.top;
            return [x, y];
        }}
        throw new Error('bar not drawn');
    }}"""))


def _core0_bars(browser, profile, tmp_path, end_ns: int):
    """``profile``'s page opened on core 0, zoomed to [0, end_ns] where items are drawn as bars."""
    path = html_writer.write(profile, engine_summary(profile), tmp_path, quiet=True)
    watch = PageWatch(browser, path.as_uri())
    p = watch.page
    p.wait_for_function("document.body.dataset.ready !== '0'", timeout=60_000)
    p.evaluate("__report.ready")
    p.evaluate("__report.show('core-0')")
    assert p.evaluate(f"__report.zoom('core-0', 0, {end_ns})")["tier"] == "bars"
    return watch, p


def _lane_labels(p, view: str) -> list[str]:
    """The lane labels of a timeline view, top to bottom."""
    return p.evaluate(f"Array.from(document.querySelectorAll('#view-{view} .yaxislayer-above text'))"
                      ".map(t => t.textContent)")


def _hover_lines(p, view: str, start: int, end: int) -> list[str]:
    """The hover text lines of the item drawn from ``start`` to ``end`` (ns) in ``view``."""
    index = p.evaluate(f"""(() => {{ const it = __report.items;
        for (let i = 0; i < it.n; i++) if (it.start[i] === {start} && it.end[i] === {end}) return i;
        return -1; }})()""")
    x, y = _bar_centre(p, view, index)
    p.mouse.move(x, y)
    p.wait_for_selector(".hoverlayer .hovertext", timeout=5000)
    return p.evaluate("Array.from(document.querySelectorAll('.hoverlayer .hovertext text.nums tspan.line'))"
                      ".map(t => t.textContent)")


def test_jump_and_hover_show_the_model_row(page, report):
    profile, t0 = report["profile"], report["t0"]
    p = page.page
    p.evaluate("__report.show('core-1')")
    g = profile.sheet("GDMA_1")
    # a data-moving command with the hostile kernel name; its bandwidth at the page's 2 decimals
    pick = g[(g["global_idx"] >= 3000) & ~g["is_sys"] & (g["kernel"] == XSS_KERNEL)]
    pick = pick[[f"{r.ddr_bw if r.ddr_bw == r.ddr_bw else r.l2m_bw:.2f}" == f"{r.bytes / (r.end_ns - r.start_ns):.2f}"
                 for r in pick.itertuples()]]
    row = pick.iloc[0]
    # use the toolbar like a user: choose the sheet, type the global_idx, press Go
    panel = p.locator("#view-core-1")
    panel.locator("select.jump-sheet").select_option(label="GDMA_1")
    panel.locator("input.jump-idx").fill(str(int(row["global_idx"])))
    panel.locator("button", has_text="Go").click()
    page.wait_idle("core-1")
    last = p.evaluate("__report.views['core-1'].last")
    assert last["tier"] == "bars"
    index = p.evaluate(f"__report.findItem('GDMA_1', {int(row['global_idx'])})")
    x, y = _bar_centre(p, "core-1", index)
    p.mouse.move(x, y)
    p.wait_for_selector(".hoverlayer .hovertext", timeout=5000)
    lines = p.evaluate("Array.from(document.querySelectorAll('.hoverlayer .hovertext text.nums tspan.line'))"
                       ".map(t => t.textContent)")
    text = re.sub(r"\s+", " ", "\n".join(lines))
    bw = row["ddr_bw"] if row["ddr_bw"] == row["ddr_bw"] else row["l2m_bw"]
    kind = "DDR" if row["ddr_bw"] == row["ddr_bw"] else "L2M"
    expected = [
        f"GDMA_1 #{int(row['global_idx'])} cmd id {int(row['cmd_id'])}",
        f"op {row['func_type']} / {row['func_name']}",
        f"kernel {XSS_KERNEL}",                      # shown as text, not run
        f"start {fmt_duration(row['start_ns'] - t0)} · duration {fmt_duration(row['end_ns'] - row['start_ns'])}",
        f"bytes {int(row['bytes']):,} · {kind} bandwidth {bw:.2f} GB/s · {row['direction']}",
    ]
    assert text == " ".join(expected)
    # the highlight frame marks the command
    shapes = p.evaluate("document.querySelector('#view-core-1 .timeline-plot').layout.shapes"
                        ".filter(s => s.type === 'rect')")
    # the jumped-to lane is banded across the plot, the command outlined
    assert len(shapes) == 2 and shapes[0]["xref"] == "paper"
    assert shapes[1]["x0"] == pytest.approx((row["start_ns"] - t0) / 1e3)
    shot(p, "html_core1_hover.png")
    page.check()


def test_tiu_hover_text_has_the_uarch_rate(page, report):
    profile, t0 = report["profile"], report["t0"]
    row = profile.sheet("TIU_2").iloc[1234]
    index = page.page.evaluate(f"__report.findItem('TIU_2', {int(row['global_idx'])})")
    text = page.page.evaluate(f"__report.hoverText({index})")
    kernel = row["kernel"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert text.split("<br>") == [
        f"<b>TIU_2 #1234</b>  cmd id {int(row['cmd_id'])}",
        f"op {row['func_type']} / {row['func_name']}",
        f"kernel {kernel}",
        f"start {fmt_duration(row['start_ns'] - t0)} · duration {fmt_duration(row['end_ns'] - row['start_ns'])}",
        f"uArch rate {row['uarch_rate'] * 100:.2f}%",
    ]
    page.check()


def test_filters_engines_and_function_types(page, report):
    profile = report["profile"]
    p = page.page
    p.evaluate("__report.show('core-2')")
    p.evaluate("__report.reset('core-2')")
    page.wait_idle("core-2")
    c = profile.commands
    sheets = view_sheets(profile, 2)
    total = int(c["sheet"].astype(str).isin(sheets).sum())
    assert p.evaluate("__report.views['core-2'].last.visible") == total
    # engines: untick TIU in the toolbar
    p.locator("#view-core-2 input[data-engine=TIU]").uncheck()
    page.wait_idle("core-2")
    assert p.evaluate("__report.views['core-2'].last.visible") == total - int((c["sheet"] == "TIU_2").sum())
    p.locator("#view-core-2 input[data-engine=TIU]").check()
    page.wait_idle("core-2")
    # Function Types: hide the system commands with their one legend chip, "waiting (system)"
    p.locator("#view-core-2 .legend .chip.waiting").click()
    page.wait_idle("core-2")
    in_view = c["sheet"].astype(str).isin(sheets)
    hidden = int((in_view & c["is_sys"]).sum())
    assert p.evaluate("__report.views['core-2'].last.visible") == total - hidden
    p.locator("#view-core-2 .legend .chip-all").click()
    page.wait_idle("core-2")
    assert p.evaluate("__report.views['core-2'].last.visible") == total
    # every engine off: an empty (but valid) plot
    engines = ["TIU", "GDMA", "SDMA", "CDMA"]
    for e in engines:
        p.evaluate(f"__report.setEngine('core-2', '{e}', false)")
    assert p.evaluate("__report.views['core-2'].last.visible") == 0
    for e in engines:
        p.evaluate(f"__report.setEngine('core-2', '{e}', true)")
    assert p.evaluate("__report.views['core-2'].last.visible") == total
    page.check()


def test_wheel_zoom_slider_and_reset(page, report):
    p = page.page
    p.evaluate("__report.show('core-0')")
    p.evaluate("__report.reset('core-0')")
    page.wait_idle("core-0")
    full = p.evaluate("__report.views['core-0'].last.range")
    box = p.locator("#view-core-0 .nsewdrag").first.bounding_box()
    p.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(6):
        p.mouse.wheel(0, -400)
        p.wait_for_timeout(150)
    p.wait_for_function("__report.views['core-0'].last.range[1] - __report.views['core-0'].last.range[0] "
                        f"< {(full[1] - full[0]) * 0.9}")
    page.wait_idle("core-0")
    p.locator("#view-core-0 button.reset").click()
    page.wait_idle("core-0")
    assert p.evaluate("__report.views['core-0'].last.range") == full
    # the range slider: drag its left handle a third of the way in
    grab = p.locator("#view-core-0 .rangeslider-grabber-min").bounding_box()
    slider = p.locator("#view-core-0 .rangeslider-bg").bounding_box()
    p.mouse.move(grab["x"] + grab["width"] / 2, grab["y"] + grab["height"] / 2)
    p.mouse.down()
    p.mouse.move(grab["x"] + slider["width"] / 3, grab["y"] + grab["height"] / 2, steps=8)
    p.mouse.up()
    p.wait_for_function(f"__report.views['core-0'].last.range[0] > {(full[1] - full[0]) * 0.25}")
    page.wait_idle("core-0")
    assert p.evaluate("__report.views['core-0'].last.range[1]") == pytest.approx(full[1])
    p.mouse.dblclick(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)     # double click resets
    p.wait_for_function(f"__report.views['core-0'].last.range[0] === {full[0]}")
    # keys (mouse over the plot): W halves the window around its middle, D pans right by a fifth
    p.keyboard.press("w")
    page.wait_idle("core-0")
    quarter = (full[1] - full[0]) / 4
    assert p.evaluate("__report.views['core-0'].last.range") == pytest.approx([full[0] + quarter, full[1] - quarter])
    p.keyboard.press("d")
    page.wait_idle("core-0")
    assert p.evaluate("__report.views['core-0'].last.range") == pytest.approx(
        [full[0] + quarter * 1.4, full[1] - quarter * 0.6])
    p.locator("#view-core-0 button.reset").click()
    page.wait_idle("core-0")
    page.check()


def test_cross_core_view_and_linked_bandwidth(page, report):
    profile = report["profile"]
    p = page.page
    result = p.evaluate("__report.show('compare')")[0]
    assert result["visible"] == len(profile.commands)
    assert p.locator("#panel-compare .js-plotly-plot").count() == 3       # timeline, bandwidth, busy/idle
    a, b = 2_000_000.0, 2_500_000.0
    p.evaluate(f"__report.zoom('all', {a}, {b})")
    p.wait_for_function("document.getElementById('chart-bandwidth').layout.xaxis.range[0] > 1000")
    rng = p.evaluate("document.getElementById('chart-bandwidth').layout.xaxis.range")
    assert rng == pytest.approx([a / 1e3, b / 1e3])
    p.evaluate("__report.reset('all')")
    page.wait_idle("all")
    shot(p, "html_compare.png")
    page.check()


def test_static_summary_without_scripts(playwright, report, tmp_path):
    context = launch(playwright, tmp_path / "chromium-profile", java_script_enabled=False)
    try:
        p = context.new_page()
        p.goto(report["path"].as_uri())
        assert p.locator("table.summary").is_visible()
        assert "Scripts are disabled" in p.locator("body").inner_text()
        assert p.locator("#tabs").is_hidden()
        shot(p, "html_noscript.png")
    finally:
        context.close()


def test_host_lanes_sit_above_the_device_lanes(browser, tmp_path):
    """A profile with host events: host lanes first in every timeline, hover shows the event."""
    import pandas as pd

    from reportgen.model import HOST_COLUMNS

    profile = make_profile(cores=1, per_engine=200, seed=4)
    t0 = int(profile.commands["start_ns"].min())
    host = pd.DataFrame({
        "name": ["ProfilerStep#1", "<b>aten::mm</b>", "aten::add"],
        "category": ["user_annotation", "cpu_op", "cpu_op"], "pid": [7, 7, 7], "tid": [1, 1, 1],
        "start_ns": [t0, t0 + 1000, t0 + 50_000], "end_ns": [t0 + 90_000, t0 + 40_000, t0 + 60_000],
        "depth": [0, 1, 1], "parent": [-1, 0, 0], "args": [None] * 3,
    }).astype({k: v for k, v in HOST_COLUMNS.items() if k != "args"})
    profile.host = host
    watch, p = _core0_bars(browser, profile, tmp_path, 100_000)
    labels = _lane_labels(p, "core-0")
    assert labels == ["pid 7 / tid 1", "pid 7 / tid 1 · d1", "TIU_0", "GDMA_0", "SDMA_0", "CDMA_0"]
    lines = _hover_lines(p, "core-0", 1000, 40000)
    assert lines == ["<b>aten::mm</b>", "cpu_op · pid 7 / tid 1 · d1", "start 1.000 µs · duration 39.000 µs"]
    shot(p, "html_host_lanes.png")
    watch.check()
    p.close()


def test_js_decoder_matches_the_python_twin_on_unusual_payloads(browser, tmp_path):
    """Wide columns (10 s gaps, 2**40 cmd ids: float64), negative deltas, explicit bandwidths and
    overlapping host events decode in the page exactly as decode_items() does."""
    import pandas as pd

    from reportgen.model import HOST_COLUMNS

    profile = make_profile(cores=2, per_engine=300, seed=9)
    c = profile.commands
    late = c["sheet"].astype(str).eq("GDMA_1") & (c["global_idx"] >= 150)
    c.loc[late, ["start_ns", "end_ns"]] += 10**10                      # a 10 s hole
    c.loc[c["sheet"].astype(str).eq("TIU_0"), "cmd_id"] += 2**40
    c.loc[c["sheet"].astype(str).eq("SDMA_0"), "global_idx"] = 299 - c.loc[c["sheet"].astype(str).eq("SDMA_0"), "global_idx"]
    dma = c["ddr_bw"].notna()
    c.loc[dma[dma].index[::7], "ddr_bw"] *= 1.5                       # not bytes/duration
    t0 = int(c["start_ns"].min())
    profile.host = pd.DataFrame({                                     # overlapping at one depth
        "name": ["a", "b", "c"], "category": ["x", "x", "y"], "pid": [1, 1, 1], "tid": [2, 2, 2],
        "start_ns": [t0, t0 + 10, t0 + 5], "end_ns": [t0 + 100, t0 + 20, t0 + 300],
        "depth": [0, 0, 0], "parent": [-1, -1, -1], "args": [None] * 3,
    }).astype({k: v for k, v in HOST_COLUMNS.items() if k != "args"})
    path = html_writer.write(profile, engine_summary(profile), tmp_path, quiet=True)
    data, _ = read_page(path.read_text(encoding="utf-8"))
    dtypes = {col["name"]: col["dtype"] for col in data["payload"]["columns"]}
    assert dtypes["gap"] == "f8" and dtypes["cmd"] == "f8" and dtypes["bwx_pos"] != "u1"
    blob = items_blob(path.read_text(encoding="utf-8"))
    want = decode_items(dict(data["payload"], ops=data["ops"], urate_scale=data["urate_scale"]), blob)

    watch = PageWatch(browser, path.as_uri())
    p = watch.page
    p.wait_for_function("document.body.dataset.ready !== '0'", timeout=60_000)
    p.evaluate("__report.ready")
    got = p.evaluate("""(() => { const it = __report.items, bw = [], bytes = [], urate = [];
        for (let i = 0; i < it.n; i++) {
            const b = it.bytesPlus1[i];
            bytes.push(b > 0 ? b - 1 : null);
            urate.push(it.urateQ[i] > 0 ? (it.urateQ[i] - 1) : null);
            bw.push(it.bwExplicit.has(i) ? it.bwExplicit.get(i) : null);
        }
        return {start: Array.from(it.start), end: Array.from(it.end), gidx: Array.from(it.gidx),
                cmd: Array.from(it.cmd), op: Array.from(it.op), kernel: Array.from(it.kernel),
                bytes, urate, explicit: bw}; })()""")
    for key in ("start", "end", "gidx", "cmd", "op", "kernel"):
        np.testing.assert_array_equal(np.array(got[key], np.float64), want[key].astype(np.float64), err_msg=key)
    np.testing.assert_array_equal(np.array(got["bytes"], float), want["bytes"])
    np.testing.assert_allclose(np.array(got["urate"], float) / payload.URATE_SCALE, want["urate"])
    explicit = np.array(got["explicit"], float)
    has = ~np.isnan(explicit)
    assert has.sum() >= 10
    np.testing.assert_array_equal(explicit[has], want["bw"][has])
    # and the hover of one explicit-bandwidth command prints that value
    i = int(np.flatnonzero(has)[0])
    assert f"bandwidth {want['bw'][i]:.2f} GB/s" in p.evaluate(f"__report.hoverText({i})")
    watch.check()
    p.close()


REAL_DUMP = PMU / "aks-m2-ports5" / "input"


@needs(REAL_DUMP)
def test_real_dump_page(browser, tmp_path):
    """A golden PMU dump: every core renders without errors and the hover shows the model's
    bandwidth (which the payload predicts as bytes / (duration + one DMA cycle))."""
    pmu = pytest.importorskip("reportgen.parsers.pmu")
    profile = pmu.load_dump(REAL_DUMP)
    path = html_writer.write(profile, engine_summary(profile), tmp_path, quiet=True)
    watch = PageWatch(browser, path.as_uri())
    p = watch.page
    p.wait_for_function("document.body.dataset.ready !== '0'", timeout=60_000)
    p.evaluate("__report.ready")
    for core in range(profile.meta.num_cores):
        result = p.evaluate(f"__report.show('core-{core}')")[0]
        sheets = view_sheets(profile, core)
        # system (waiting) commands are hidden by default
        mine = profile.commands["sheet"].astype(str).isin(sheets) & ~profile.commands["is_sys"]
        assert result["visible"] == int(mine.sum())
    dma = profile.commands[profile.commands["ddr_bw"].notna()]
    for row in dma.iloc[:: max(len(dma) // 25, 1)].itertuples():
        index = p.evaluate(f"__report.findItem('{row.sheet}', {row.global_idx})")
        shown = re.search(r"DDR bandwidth ([0-9.]+) GB/s", p.evaluate(f"__report.hoverText({index})"))
        assert abs(float(shown.group(1)) - row.ddr_bw) <= 0.005 + 1e-9    # 2 decimals of the model
    p.evaluate("__report.show('compare')")
    shot(p, "html_real_dump_compare.png")
    watch.check()
    p.close()


# ------------------------------------------------------------------------------ framework views
HANDMADE = Path(__file__).parent / "data" / "framework" / "handmade_kineto.json"
BIG_ROWS = 1200          # more than TABLE_ROWS_SHOWN: the page draws 500 and sorts all 1200


def _framework_profile(path: Path):
    import reportgen

    if not path.exists():
        pytest.skip(f"{path} not present")
    return reportgen.load(path)


@pytest.fixture(scope="module")
def framework(browser, tmp_path_factory):
    """The hand-made Kineto trace plus a vendor table of 1200 rows whose largest value sits at
    row 900 (beyond the first 500 drawn) and whose names include markup."""
    import pandas as pd

    profile = _framework_profile(HANDMADE)
    values = (np.arange(BIG_ROWS) * 7919 % 1000).astype(float) + 0.25
    values[900] = 5000.125
    names = np.array([f"op{i:04d}" for i in range(BIG_ROWS)], object)
    names[3] = XSS_KERNEL
    names[4] = None
    profile.tables["Vendor"] = pd.DataFrame({"Name": names, "Value (us)": values,
                                             "Calls": np.arange(BIG_ROWS, dtype=np.int64),
                                             # epoch ns: beyond a JavaScript number's 53 bits
                                             "Start (ns)": 1_700_000_000_123_456_789 - np.arange(BIG_ROWS)})
    path = html_writer.write(profile, engine_summary(profile), tmp_path_factory.mktemp("fw"), quiet=True)
    watch = PageWatch.ready(browser, path.as_uri())
    yield {"profile": profile, "watch": watch, "p": watch.page,
           "heads": {h["name"]: h for h in read_page(path.read_text(encoding="utf-8"), items=False)[0]["tables"]}}
    watch.page.close()


def _column(p, table_id: str, j: int) -> list[str]:
    return p.evaluate(f"Array.from(document.querySelectorAll('#table-{table_id} tbody tr'))"
                      f".map(tr => tr.children[{j}].textContent)")


def _number(text: str) -> float:
    return float("nan") if text == "n/a" else float(text.replace(",", "").rstrip("%"))


def test_framework_overview_charts(framework):
    p, profile = framework["p"], framework["profile"]
    assert p.evaluate("document.body.dataset.ready") == "1"
    for chart in ("operators", "kernels", "memory"):
        assert p.locator(f"#chart-{chart} .main-svg").count() >= 1, chart
    assert p.locator("#chart-util").count() == 0 and p.locator("table.lanes").is_visible()
    bars = p.evaluate("Array.from(document.getElementById('chart-operators')._fullData[0].x)")
    ops = profile.tables["Operators"]
    ops = ops[ops["Device Type"] == "CPU"]                 # torch's rows of its CPU events (issue 23)
    assert bars == sorted(ops["Self Device (us)"].tolist(), reverse=True)
    labels = p.evaluate("Array.from(document.querySelectorAll('#chart-operators .ytick text')).map(t => t.textContent)")
    # aten::copy_'s memcpy has no External id, so torch gives it no self device time (issue 23)
    top = ops.sort_values("Self Device (us)", ascending=False, kind="stable")["Name"]
    assert labels[:3] == top.tolist()[:3] and labels[:2] == ["aten::addmm", "aten::relu"]
    shares = p.evaluate("Array.from(document.getElementById('chart-kernels')._fullData[0].x)")
    np.testing.assert_array_equal(shares, sorted(profile.tables["Kernels"]["Share %"], reverse=True))
    shot(p, "html_framework_overview.png")
    framework["watch"].check()


def test_tables_tab_renders_every_table(framework):
    p, profile, heads = framework["p"], framework["profile"], framework["heads"]
    p.evaluate("__report.show('tables')")
    for name, df in profile.tables.items():
        tid = heads[name]["id"]
        shown = min(len(df), table_writer.TABLE_ROWS_SHOWN)
        assert p.locator(f"#table-{tid} tbody tr").count() == shown, name
        # a duration column is shown in one unit named in its header
        assert p.locator(f"#table-{tid} thead th").all_inner_texts() == [
            table_writer.column_format(str(c), df[c])["label"] for c in df.columns]
        assert f"Showing {shown:,} of {len(df):,} rows" in p.locator(f"#table-{tid} .table-status").inner_text()
        # every numeric column shows the table's value at the column's decimals
        for j, col in enumerate(df.columns):
            fmt = table_writer.column_format(str(col), df[col])
            cells = _column(p, tid, j)
            if fmt["kind"] in ("text", "bigint"):
                want = [table_writer.format_cell(None if pd_isna(v) else v, fmt) for v in df[col].iloc[:shown]]
                assert cells == want, (name, col)
                continue
            got = np.array([_number(c) for c in cells])
            want = df[col].to_numpy(float, na_value=np.nan)[:shown] * (
                100 if fmt["kind"] == "frac" else fmt.get("factor", 1))
            np.testing.assert_allclose(got, want, atol=0.5 * 10 ** -fmt["decimals"] + 1e-9, rtol=0,
                                       equal_nan=True, err_msg=f"{name}.{col}")
    kernels = heads["Kernels"]["id"]
    assert _column(p, kernels, 0)[1] == "Memcpy HtoD (Pageable -> Device)"
    shot(p, "html_framework_tables.png")
    framework["watch"].check()


def pd_isna(v) -> bool:
    import pandas as pd

    return v is None or bool(pd.isna(v))


def test_sorting_covers_every_row_and_markup_stays_text(framework):
    p, profile, heads = framework["p"], framework["profile"], framework["heads"]
    p.evaluate("__report.show('tables')")
    tid = heads["Vendor"]["id"]
    vendor = profile.tables["Vendor"]
    header = p.locator(f"#table-{tid} thead th")
    assert _column(p, tid, 0)[3] == XSS_KERNEL                        # shown as typed, not run
    assert _column(p, tid, 0)[4] == "n/a"
    header.nth(1).click()                              # Value (us), shown in ms: largest first
    assert header.nth(1).inner_text().startswith("Value (ms)")
    assert header.nth(1).get_attribute("aria-sort") == "descending"
    values = [_number(c) for c in _column(p, tid, 1)]
    want = np.sort(vendor["Value (us)"].to_numpy())[::-1][:table_writer.TABLE_ROWS_SHOWN] / 1e3
    np.testing.assert_allclose(values, want, atol=5e-4, rtol=0)
    assert values[0] == 5.000 and _column(p, tid, 0)[0] == "op0900"      # row 900: beyond the first 500
    header.nth(1).click()                                             # again: smallest first
    assert header.nth(1).get_attribute("aria-sort") == "ascending"
    assert _number(_column(p, tid, 1)[0]) == round(vendor["Value (us)"].min() / 1e3, 3)
    header.nth(3).click()                                             # epoch ns: exact BigInt order
    assert _column(p, tid, 3)[:2] == ["1,700,000,000,123,456,789", "1,700,000,000,123,456,788"]
    header.nth(3).click()
    assert _column(p, tid, 3)[0] == f"{1_700_000_000_123_456_789 - BIG_ROWS + 1:,}"
    header.nth(0).click()                                             # text: A to Z, missing last
    order = sorted(n for n in vendor["Name"] if isinstance(n, str))
    assert _column(p, tid, 0)[:3] == order[:3] == [XSS_KERNEL, "op0000", "op0001"]
    p.locator(f"#table-{tid} button.more").click()                    # the next 500, then the rest
    p.locator(f"#table-{tid} button.more").click()
    names = _column(p, tid, 0)
    assert len(names) == BIG_ROWS and names[-1] == "n/a" and names[:-1] == order
    assert p.locator("img").count() == 0
    box = p.locator(f"#table-{tid} input.table-filter")                # filter: text columns, any case
    box.fill("OP09")
    want = [n for n in order if n.lower().startswith("op09")]             # still in the Name order
    assert _column(p, tid, 0) == want and len(want) == 100
    assert "Showing 100 of 100 rows containing" in p.locator(f"#table-{tid} .table-status").inner_text()
    box.fill("<script>")
    assert _column(p, tid, 0) == [XSS_KERNEL]
    box.fill("")
    assert len(_column(p, tid, 0)) == table_writer.TABLE_ROWS_SHOWN
    framework["watch"].check()


def test_real_two_rank_trace_page(browser, tmp_path):
    """A real two-rank trace: the Ranks chart, every table and both device timelines render."""
    profile = _framework_profile(FRAMEWORK / "hta" / "trace_filter")
    path = html_writer.write(profile, engine_summary(profile), tmp_path, quiet=True)
    watch = PageWatch(browser, path.as_uri())
    p = watch.page
    p.wait_for_function("document.body.dataset.ready !== '0'", timeout=60_000)
    p.evaluate("__report.ready")
    assert p.locator("#chart-ranks .main-svg").count() >= 1
    busy = p.evaluate("document.getElementById('chart-ranks')._fullData.find(t => t.name === 'Device busy (s)').y")
    np.testing.assert_allclose(busy, profile.tables["Ranks"]["Device busy (us)"].to_numpy(float) / 1e6)
    shot(p, "html_framework_ranks.png")
    p.evaluate("__report.show('tables')")
    assert p.locator(".data-table tbody tr").count() == sum(min(len(df), table_writer.TABLE_ROWS_SHOWN)
                                                            for df in profile.tables.values())
    for core in (0, 1):
        result = p.evaluate(f"__report.show('core-{core}')")[0]
        assert result["visible"] > 0
    watch.check()
    p.close()


# ------------------------------------------------------------------- names turned against the user
QUOTED = 'say "hi" <i>now</i> & <b>x</b>'


def test_quotes_and_markup_in_names_show_as_typed(browser, tmp_path):
    """Issue 18 item 9: a '"' in a name showed as '&quot;' in lane labels and hover text (the
    page escaped it, Plotly does not decode &quot;); '<' must stay text too (no tag injected)."""
    import pandas as pd

    from reportgen.model import HOST_COLUMNS

    profile = make_profile(cores=1, per_engine=50, seed=5)
    t0 = int(profile.commands["start_ns"].min())
    profile.host = pd.DataFrame({
        "name": [QUOTED], "category": ['cat "c"'], "pid": ['"p" <b>7</b>'], "tid": [1],
        "start_ns": [t0], "end_ns": [t0 + 40_000], "depth": [0], "parent": [-1], "args": [None],
    }).astype({k: v for k, v in HOST_COLUMNS.items() if k != "args"})
    watch, p = _core0_bars(browser, profile, tmp_path, 50_000)
    assert _lane_labels(p, "core-0")[0] == 'pid "p" <b>7</b> / tid 1'
    lines = _hover_lines(p, "core-0", 0, 40000)
    assert lines[:2] == [QUOTED, 'cat "c" · pid "p" <b>7</b> / tid 1']
    # the input's <i> and <b> stayed text: no italic anywhere, bold only for the page's own title line
    styled = p.evaluate("""Array.from(document.querySelectorAll('#view-core-0 tspan, .hoverlayer tspan'))
        .filter(t => /italic|bold/.test(t.getAttribute('style') || '')).map(t => t.textContent)""")
    assert styled == [QUOTED]
    assert p.evaluate("Array.from(document.querySelectorAll('i, b'))"
                      ".filter(e => ['now', 'x', '7'].includes(e.textContent)).length") == 0
    watch.check()
    p.close()


def test_index_link_of_a_script_named_dump_runs_no_script(browser, tmp_path):
    """Issue 18 item 2: a dump folder named 'javascript:alert(document.domain)' made the index's
    link a script URL (clicking it ran the script). The link is relative and percent-encoded:
    clicking it opens that dump's own report and runs nothing."""
    from urllib.parse import unquote

    from reportgen.analysis.cluster import DeviceRun, cluster_analysis
    from reportgen.writers.cluster import write_index

    out = tmp_path / "out"
    name = "javascript:alert(document.domain)"
    report = out / name
    (report / "PerfWeb").mkdir(parents=True)
    (report / "PerfWeb" / "result.html").write_text("<!DOCTYPE html><title>the dump's report</title>")
    runs = [DeviceRun(name, str(tmp_path / "run" / name), str(report), "ok",
                      engines=[{"core": "Overall", "span_ns": 1000}])]
    index = write_index(out, cluster_analysis(runs), runs)
    watch = PageWatch(browser, index.as_uri())
    p = watch.page
    assert p.locator("td", has_text=name).count() == 1            # the name itself, as text
    with p.expect_navigation():
        p.locator("a", has_text="result.html").click()
    assert p.title() == "the dump's report"
    assert unquote(p.url) == unquote((report / "PerfWeb" / "result.html").as_uri())
    watch.check()                                                 # no dialog, no page error
    p.close()
