"""Issue 24 in a real headless Chromium: a framework report's Overview opens with the findings,
then the stacked bar of device time per device and step, whose bars carry the analysis values."""
from __future__ import annotations

import pytest

from reportgen.writers import html as html_writer
from test_device_time import host_bound_loop
from test_html_browser import CHROMIUM, FLAGS, PageWatch, sync_playwright

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)"),
    pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)"),
]


def test_overview_opens_with_findings_then_device_time_bars(tmp_path):
    profile = host_bound_loop(slow_step=True).load(tmp_path)
    path = html_writer.write(profile, profile.summary, tmp_path / "web", quiet=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        context = browser.new_context(viewport={"width": 1366, "height": 768})
        watch = PageWatch.ready(context, path.as_uri())
        p = watch.page
        p.wait_for_function("document.querySelector('#chart-devicetime .main-svg') !== null",
                            timeout=60_000)
        order = p.evaluate("""(() => {
            const panel = document.querySelector('#panel-overview');
            const f = panel.querySelector('.findings'), c = panel.querySelector('#chart-devicetime');
            return [f.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING,
                    f.querySelectorAll('li').length, f.querySelector('li').textContent];
        })()""")
        assert order[0] and order[1] == len(profile.framework_diagnosis.findings)
        top = profile.framework_diagnosis.findings.iloc[0]
        assert order[2].startswith(top["text"])              # then its estimated gain
        assert ("est. gain" in order[2]) == (top["gain_ns"] > 0)
        # the drawn traces: one per non-zero part, one bar per step, values in the axis unit (ms)
        traces = p.evaluate("""(() => document.querySelector('#chart-devicetime')._fullData.map(
            t => [t.name, Array.from(t.x), Array.from(t.y)]))()""")
        by_name = {name: dict(zip(x, y)) for name, x, y in traces}
        assert set(by_name) == {"compute", "idle waiting for the host", "idle on kernel launches"}
        assert by_name["idle waiting for the host"]["device 0 step 2"] == pytest.approx(2.888)
        assert by_name["compute"]["device 0 step 4"] == pytest.approx(0.1)
        watch.check()
        context.close()
        browser.close()
