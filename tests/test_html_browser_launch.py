"""Clicking a framework device slice in the HTML timeline (real headless Chromium) shows the
host slice that launched it: a line under the plot naming both, outlines and a connector.
The expected pair is the trace's own link (runtime call and kernel with one correlation)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen import pipeline
from reportgen.options import Options
from reportgen.writers import html as html_writer
from test_html_browser import CHROMIUM, PageWatch, _bar_centre, browser, playwright, sync_playwright  # noqa: F401

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)"),
    pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)"),
]

TRACE = Path(__file__).parent / "data" / "framework" / "handmade_kineto.json"


def test_clicking_a_kernel_shows_its_launch(browser, tmp_path):
    raw = json.loads(TRACE.read_text())["traceEvents"]
    kernel = next(e for e in raw if e.get("cat") == "kernel" and e["name"] == "gemm")
    launch = next(e for e in raw if e.get("cat") == "cuda_runtime"
                  and e["args"].get("correlation") == kernel["args"]["correlation"])
    opts = Options(input=str(TRACE))
    profile = pipeline.load(opts)
    summary = pipeline.analyse(profile, opts)
    path = html_writer.write(profile, summary, tmp_path, quiet=True)
    watch = PageWatch.ready(browser, path.as_uri())
    p = watch.page
    p.evaluate("__report.show('core-0')")
    watch.wait_idle("core-0")
    index = p.evaluate("(() => { const IT = __report.items; for (let i = 0; i < IT.n; i++) "
                       "if (IT.launch && IT.launch[i] > 0 && __report.hoverText(i).startsWith('<b>gemm</b>')) return i;"
                       " return -1; })()")
    assert index >= 0
    x, y = _bar_centre(p, "core-0", index)
    p.mouse.click(x, y)
    p.wait_for_selector("#view-core-0 .launch-link")
    text = p.locator("#view-core-0 .launch-link").text_content()
    assert text.startswith(f"launch: {launch['name']} (") and " → gemm (" in text
    delay_us = kernel["ts"] - launch["ts"]
    assert text.endswith(f"launch delay {delay_us:.3f} µs") or f"launch delay {delay_us:g}" in text
    watch.wait_idle("core-0")
    shapes = p.evaluate("document.querySelector('#view-core-0 .timeline-plot').layout.shapes"
                        ".filter(s => s.name === 'launch' || s.name === 'launch-flow').map(s => s.type)")
    assert sorted(shapes) == ["line", "rect", "rect"]
    watch.check()
