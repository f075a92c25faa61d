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
    kinds = [lb.split(" · ")[0] if " · pid " in lb or lb.startswith("Overlap Analysis · ") else "device"
             for lb in labels]
    # groups are contiguous: PTA lanes, then CANN lanes, then the device lanes, then Overlap Analysis
    runs = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
    assert runs == ["PTA", "CANN", "device", "Overlap Analysis"]
    shapes = p.evaluate("document.querySelector('#view-core-0 .js-plotly-plot')?.layout?.shapes ?? []")
    dotted = Counter(s.get("line", {}).get("dash") for s in shapes)
    assert dotted["dot"] == len(runs) - 1                      # one separator between levels
    watch.check()
    p.close()


def test_overlap_analysis_is_a_lane_group(browser, tmp_path):
    """The Overlap Analysis process's lanes (Computing, Free on this sample) are their own group
    below the device lanes, each holding - and drawing - every slice the file has for it."""
    prof = derived(ascend.load_ascend(TV))
    path = html_writer.write(prof, engine_summary(prof), tmp_path, quiet=True)
    # independent: the file's X events of the Overlap Analysis process, per thread name
    events = json.loads((TV / "trace_view.json").read_text())
    meta = [e for e in events if e.get("ph") == "M"]
    pid = {e["pid"] for e in meta if e["name"] == "process_name" and e["args"]["name"] == "Overlap Analysis"}
    thread = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name" and e["pid"] in pid}
    expected = Counter(f"Overlap Analysis · {thread[e['tid']]}" for e in events
                       if e.get("ph") == "X" and e["pid"] in pid)
    assert sum(expected.values()) > 500                      # Computing 274, Free 273
    watch = PageWatch.ready(browser, path.as_uri())
    p = watch.page
    result = p.evaluate("__report.show('core-0')")[0]
    labels = _lane_labels(p, "core-0")
    group = [lb for lb in labels if lb.startswith("Overlap")]
    assert len(group) == len(expected)
    assert labels[-len(group):] == group                     # the last group, below the device lanes
    assert any(lb and not lb.startswith("Overlap") and " · pid " not in lb for lb in labels[:-len(group)])
    counts = p.evaluate("""() => {
        const IT = __report.items, L = __report.data.lanes, out = {};
        for (let i = 0; i < IT.start.length; i++) {
          const lane = L[__report.laneOf(i)];
          if (lane.group.endsWith('Overlap Analysis')) out[lane.name] = (out[lane.name] || 0) + 1;
        }
        return out;
    }""")
    assert counts == dict(expected)
    # drawn: the bars on each overlap row of the shown view
    assert result["tier"] == "bars"                      # 2,212 items: every one drawn
    drawn = p.evaluate("""(rows) => {
        const data = document.querySelector('#view-core-0 .timeline-plot').data, out = {};
        for (const t of data) if (t.type === 'bar') for (const y of t.y) out[y] = (out[y] || 0) + 1;
        return rows.map((r) => out[r] || 0);
    }""", [labels.index(g) for g in group])
    assert drawn == [expected[g] for g in group]
    shapes = p.evaluate("document.querySelector('#view-core-0 .js-plotly-plot')?.layout?.shapes ?? []")
    separators = [s for s in shapes if s.get("line", {}).get("dash") == "dot"]
    assert any(abs(s["y0"] - (len(labels) - len(group) - 0.5)) < 1e-9 for s in separators)
    assert "Overlap Analysis" in p.evaluate("__report.hoverText(__report.items.start.length - 1)")
    watch.check()
    p.close()
