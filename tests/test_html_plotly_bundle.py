"""The page's plotly.js is a partial bundle (templates/vendor): every trace type the page can
draw must be registered in it, or plotly.js would silently leave that chart empty.

Two independent checks: the trace types written in the page's code (templates/*.js and
reportgen/writers/html/*.py) against the trace modules the bundle itself registers (read from
the vendored file), and, in Chromium, the types of every trace drawn on a page with every tab
shown against ``Plotly.PlotSchema`` of the running bundle.
"""
from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pytest

from reportgen.testing.profiles import make_profile
from reportgen.writers import html as html_writer
from reportgen.writers.html import page as page_writer

ROOT = Path(__file__).resolve().parents[1]
#: ``type`` values in the code that are not trace types: layout shapes, axis types, <input> types
NOT_TRACES = {"line", "rect", "log", "linear", "category", "date", "checkbox", "number", "search", "button"}


def bundle_traces() -> set[str]:
    js = gzip.decompress(page_writer.plotly_bundle()).decode("utf-8")
    return set(re.findall(r'moduleType:"trace",name:"(\w+)"', js))


def code_trace_types() -> set[str]:
    found = set()
    for path in (ROOT / "templates").glob("*.js"):
        found |= set(re.findall(r"\btype: '(\w+)'", path.read_text(encoding="utf-8")))
    for path in (ROOT / "reportgen" / "writers" / "html").glob("*.py"):
        found |= set(re.findall(r'"type": "(\w+)"', path.read_text(encoding="utf-8")))
    return found - NOT_TRACES


def test_bundle_is_the_cartesian_one():
    assert bundle_traces() == {"bar", "box", "contour", "heatmap", "histogram", "histogram2d",
                               "histogram2dcontour", "image", "pie", "scatter", "scatterternary", "violin"}


def test_every_trace_type_in_the_code_is_in_the_bundle():
    used = code_trace_types()
    assert {"bar", "scatter", "heatmap"} <= used          # the scan finds what the page draws
    assert used <= bundle_traces(), used - bundle_traces()


CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed")
def test_every_drawn_trace_is_registered(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    from reportgen.testing.profiles import derived

    profile = make_profile(cores=2, per_engine=1500, seed=3)
    summary = derived(profile).summary           # the Diagnosis tab too (roofline, uArch charts)
    path = html_writer.write(profile, summary, tmp_path, quiet=True)
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium"), executable_path=CHROMIUM, headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu"], viewport={"width": 1500, "height": 1000})
        try:
            p = ctx.new_page()
            errors = []
            p.on("pageerror", lambda e: errors.append(str(e)))
            p.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
            p.goto(path.as_uri())
            p.wait_for_function("document.body.dataset.ready !== '0'", timeout=60_000)
            p.evaluate("__report.ready")
            assert p.evaluate("Plotly.version") == page_writer.PLOTLY_VERSION
            for tab in p.evaluate("__report.data.tabs.map((t) => t.id)"):
                p.evaluate(f"__report.show({tab!r})")
            got = p.evaluate("""() => {
                const used = new Set();
                for (const gd of document.querySelectorAll('.js-plotly-plot'))
                  for (const tr of gd.data || []) used.add(tr.type || 'scatter');
                return {used: [...used], known: Object.keys(Plotly.PlotSchema.get().traces)};
            }""")
        finally:
            ctx.close()
    assert {"bar", "scatter", "heatmap"} <= set(got["used"])
    assert set(got["used"]) <= set(got["known"])
    assert errors == []
