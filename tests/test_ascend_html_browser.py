"""The trace view's levels as lane groups in result.html, in Debian chromium: host lanes named
and grouped by level (PTA, then CANN), separated from each other and from the Ascend Hardware
lanes - on the shared complete torch_npu trace_view.json."""
from __future__ import annotations

import json
from collections import Counter

from reportgen.analysis.metrics import engine_summary
from reportgen.parsers import ascend
from reportgen.testing.html_page import read_page
from reportgen.testing.profiles import derived
from reportgen.writers import html as html_writer
from shared_data import FRAMEWORK, needs
from test_html_browser import (PageWatch, _lane_labels, browser, playwright,  # noqa: F401 - fixtures
                               pytestmark as browser_marks)

TV = FRAMEWORK / "ascend-msprof-analyze/ut/advisor/timeline_advice"
pytestmark = [needs(FRAMEWORK), *browser_marks]


def test_levels_are_lane_groups(browser, tmp_path):
    prof = derived(ascend.load_ascend(TV))
    path = html_writer.write(prof, engine_summary(prof), tmp_path, quiet=True)
    watch = PageWatch.ready(browser, path.as_uri())
    p = watch.page
    p.evaluate("__report.show('core-0')")
    labels = _lane_labels(p, "core-0")
    # independent: the file's threads of the Python and CANN processes that hold X events
    events = json.loads((TV / "trace_view.json").read_text())
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    host_threads = {(procs[e["pid"]], e["pid"], e["tid"]) for e in events
                    if e.get("ph") == "X" and procs.get(e["pid"]) in ("Python", "CANN")}
    level = {"Python": "PTA", "CANN": "CANN"}
    expected = {f"{level[n]} · pid {pid} / tid {tid}" for n, pid, tid in host_threads}
    data, _ = read_page(path.read_text(encoding="utf-8"))
    host_lanes = [lane["name"] for lane in data["lanes"] if lane["host"]]
    assert {n.split(" · d")[0] for n in host_lanes} == expected
    shown = [lb for lb in labels if " · pid " in lb]
    assert len(shown) == len(host_lanes)
    for lb, name in zip(shown, host_lanes):            # long labels are cut with an ellipsis
        assert name.startswith(lb.split("…")[0])
    kinds = [lb.split(" · ")[0] if " · pid " in lb else "device" for lb in labels]
    # groups are contiguous: PTA lanes, then CANN lanes, then the device lanes
    runs = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
    assert runs == ["PTA", "CANN", "device"]
    shapes = p.evaluate("document.querySelector('#view-core-0 .js-plotly-plot')?.layout?.shapes ?? []")
    dotted = Counter(s.get("line", {}).get("dash") for s in shapes)
    assert dotted["dot"] == len(runs) - 1                      # one separator between levels
    watch.check()
    p.close()
