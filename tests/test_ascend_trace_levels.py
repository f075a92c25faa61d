"""The trace view's levels and flows in perfetto.pftrace, on the shared complete torch_npu
trace_view.json: PTA / CANN processes, an "Ascend Hardware" and an "Overlap Analysis" group per
rank, and one launch flow per async_npu pair of the file (read here with json, independently)."""
from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal

from reportgen.parsers import ascend
from reportgen.testing.profiles import derived
from reportgen.writers import perfetto
from shared_data import FRAMEWORK, needs
from test_perfetto import decode

pytestmark = needs(FRAMEWORK)
TV = FRAMEWORK / "ascend-msprof-analyze/ut/advisor/timeline_advice"


def ns(ts) -> int:
    return int(Decimal(str(ts)) * 1000)


def test_levels_and_flows_in_perfetto(tmp_path):
    prof = derived(ascend.load_ascend(TV))
    d = decode(perfetto.write(prof, prof.summary, tmp_path, quiet=True))
    tracks = d["tracks"]
    name = {u: t.name or t.process.process_name or t.thread.thread_name for u, t in tracks.items()}
    parent = {u: t.parent_uuid for u, t in tracks.items() if t.HasField("parent_uuid")}
    assert {"PTA (pid 437675)", "CANN (pid 43767502)"} <= set(name.values())
    stream = next(u for u, n in name.items() if n == "Stream 3")
    assert name[parent[stream]] == "Ascend Hardware"
    events = json.loads((TV / "trace_view.json").read_text())
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M"
             and e.get("name") == "thread_name"}
    overlap_pid = next(e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
                       and e["args"]["name"] == "Overlap Analysis")
    per_lane = defaultdict(int)
    for e in events:
        if e.get("ph") == "X" and e["pid"] == overlap_pid:
            per_lane[lanes[(e["pid"], e["tid"])]] += 1
    slices_by_track = defaultdict(int)
    for s in d["slices"]:
        slices_by_track[s["track"]] += 1
    for lane, count in per_lane.items():
        u = next(u for u, n in name.items() if n == lane)
        assert name[parent[u]] == "Overlap Analysis" and slices_by_track[u] == count
    # flows: the file's async_npu pairs (s at the framework op, f at the hardware task)
    starts = {e["id"]: ns(e["ts"]) for e in events if e.get("cat") == "async_npu" and e["ph"] == "s"}
    ends = {e["id"]: ns(e["ts"]) for e in events if e.get("cat") == "async_npu" and e["ph"] == "f"}
    pairs = {(starts[i], ends[i]) for i in starts if i in ends}
    assert len(pairs) == 274
    slices = d["slices"]
    drawn = set()
    for fid, dst in d["flows_in"].items():
        (src,) = d["flows_out"][fid]
        op, task = slices[src], slices[dst]
        assert name[parent.get(op["track"], op["track"])].startswith("PTA") or \
            name[op["track"]].lower().startswith("thread")  # named from the trace metadata
        assert name[task["track"]] == "Stream 3"
        s_ts = next(s for s, f in pairs if f == task["ts"])
        assert op["ts"] <= s_ts <= op["ts"] + op["dur"]            # the op encloses the flow start
        drawn.add((s_ts, task["ts"]))
    assert drawn == pairs


def test_overlap_lanes_for_the_html_page():
    """writers.html.overlap on a hand-made case: lanes per core in the vendor's order, each slice
    on its lane with its times relative to t0, one type and op per lane name, items appended."""
    import numpy as np
    import pandas as pd

    from reportgen.writers.html.overlap import overlap_lanes
    from reportgen.writers.html.payload import Items

    prof = derived(ascend.load_ascend(TV))
    vendor = next(iter(prof.vendor_outputs.values()))
    vendor.overlap_lanes = pd.DataFrame({
        "core": [1, 0, 0, 1, 0], "lane": ["Free", "Free", "Computing", "Communication", "Computing"],
        "start_ns": [1500, 1000, 1100, 1200, 1300], "end_ns": [1600, 1050, 1200, 1400, 1350]})
    one = np.zeros(1, np.int64)
    before = Items(lane=one, start=one, end=one + 5, op=one, kernel=one, gidx=one, cmd=one,
                   nbytes=one, bw=np.full(1, np.nan), urate=one)
    types, ops = [{"name": "x", "group": "device", "color": "#000000", "sys": False}], [[0, "x", None, ""]]
    part = overlap_lanes(prof, before, 1000, types, ops, first_lane=7)
    assert [(s["name"], s["cores"], s["group"]) for s in part.lanes] == [
        ("Overlap Analysis · Computing", [0], "core0 Overlap Analysis"),
        ("Overlap Analysis · Free", [0], "core0 Overlap Analysis"),
        ("Overlap Analysis · Communication", [1], "core1 Overlap Analysis"),
        ("Overlap Analysis · Free", [1], "core1 Overlap Analysis")]
    it = part.items
    assert it.lane.tolist() == [0, 10, 8, 7, 9, 7]
    assert it.start.tolist() == [0, 500, 0, 100, 200, 300]
    assert it.end.tolist() == [5, 600, 50, 200, 400, 350]
    assert [ops[k][1] for k in it.op[1:]] == ["Free", "Free", "Computing", "Communication", "Computing"]
    assert [t["name"] for t in types] == ["x", "Free", "Computing", "Communication"]
    assert len({t["color"] for t in types}) == 4
    vendor.overlap_lanes = None
    assert overlap_lanes(prof, before, 1000, types, ops, first_lane=7) is None
