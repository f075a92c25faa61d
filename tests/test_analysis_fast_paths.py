"""The shortcuts of the analysis' sorts (issue 28) against plain per-row re-implementations of
their rules: lane predecessors (depgraph._lane_pred), the latest command of a core before a time
(depgraph.prev_on_core, with and without the shared order), group unions of unsorted groups
(unions.grouped_union), labels of some rows (depgraph.labels_of), the graph trimmed for the
outputs (DepGraph.for_outputs) and the digest's timeline lanes."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis import depgraph
from reportgen.analysis.unions import grouped_union


def _rows(seed: int, n: int = 400, sorted_lanes: bool = False):
    rng = np.random.default_rng(seed)
    lane = rng.integers(0, 6, n) * 7 + 3                 # sparse lane values
    start = rng.integers(0, 500, n)                      # many equal starts
    end = start + rng.integers(0, 40, n)
    if sorted_lanes:                                     # rows of a lane in time order
        o = np.lexsort((end, start, lane))
        lane, start, end = lane[o], start[o], end[o]
    return lane, start.astype(np.int64), end.astype(np.int64)


def _lane_pred_by_hand(lane, start, end):
    pred = np.full(len(lane), -1, np.int64)
    for v in set(lane.tolist()):
        rows = sorted(np.flatnonzero(lane == v).tolist(), key=lambda r: (start[r], end[r], r))
        for a, b in zip(rows, rows[1:]):
            pred[b] = a
    return pred


@pytest.mark.parametrize("seed,sorted_lanes", [(1, False), (2, True), (3, False), (4, True)])
def test_lane_pred(seed, sorted_lanes):
    lane, start, end = _rows(seed, sorted_lanes=sorted_lanes)
    assert np.array_equal(depgraph._lane_pred(lane, start, end), _lane_pred_by_hand(lane, start, end))


def _prev_by_hand(core, engine, start, end, query, at):
    out = []
    for q, t in zip(query, at):
        cand = [r for r in range(len(core)) if engine[r] <= 2 and core[r] == core[q] and end[r] <= t]
        # the latest end; of equal ends the last row
        best = max(cand, key=lambda r: (end[r], r), default=-1)
        out.append(best if best != q else -1)
    return np.array(out, np.int64)


@pytest.mark.parametrize("seed", [5, 6])
def test_prev_on_core(seed):
    rng = np.random.default_rng(seed)
    n = 300
    core = rng.integers(0, 3, n).astype(np.int64)
    engine = rng.integers(0, 5, n).astype(np.int64)      # 3, 4: never candidates
    start = rng.integers(0, 400, n).astype(np.int64)
    end = start + rng.integers(0, 50, n)
    want = _prev_by_hand(core, engine, start, end, range(n), start)
    assert np.array_equal(depgraph.prev_on_core(core, engine, start, end), want)
    order = depgraph.core_end_order(core, end)
    assert np.array_equal(depgraph.prev_on_core(core, engine, start, end, order=order), want)
    q = rng.integers(0, n, 40)
    at = rng.integers(0, 450, 40)
    assert np.array_equal(depgraph.prev_on_core(core, engine, start, end, q, at=at, order=order),
                          _prev_by_hand(core, engine, start, end, q, at))


def _union_by_hand(group, start, end, ngroups):
    out = np.zeros(ngroups, np.int64)
    for g in range(ngroups):
        pieces = sorted(zip(start[group == g].tolist(), end[group == g].tolist()))
        covered, run_s, run_e = 0, None, None
        for s, e in pieces:
            if run_e is None or s > run_e:
                covered += 0 if run_e is None else run_e - run_s
                run_s, run_e = s, e
            else:
                run_e = max(run_e, e)
        out[g] = covered + (0 if run_e is None else run_e - run_s)
    return out


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_grouped_union_of_unsorted_groups(seed):
    rng = np.random.default_rng(seed)
    n, ng = 500, 9
    group = rng.integers(0, ng, n)
    start = rng.integers(10**12, 10**12 + 2000, n).astype(np.int64)   # far from 0
    end = start + rng.integers(0, 120, n)
    assert np.array_equal(grouped_union(group, start, end, ng), _union_by_hand(group, start, end, ng))


def test_labels_of_rows():
    c = pd.DataFrame({"kernel": pd.Categorical(["b", None, "a", "b", "c"], categories=["c", "b", "a"]),
                      "plain": ["x", "y", None, "x", "z"]})
    rows = np.array([4, 1, 0, 2])
    assert depgraph.labels_of(c, "kernel", rows, "(none)").tolist() == ["c", "(none)", "b", "a"]
    assert depgraph.labels_of(c, "plain", rows).tolist() == ["z", "y", "x", None]
    assert depgraph.labels_of(c, "absent", rows, "-").tolist() == ["-"] * 4


def test_graph_for_outputs_keeps_what_the_writers_read():
    from reportgen.testing.profiles import make_profile
    c = make_profile(cores=2, per_engine=200).commands
    g = depgraph.build_graph(c)
    slim = g.for_outputs()
    for name in ("dep_src", "barrier", "release_row", "release_cmd", "start", "end"):
        assert np.array_equal(getattr(slim, name), getattr(g, name))
    assert (slim.has_dependency_ids, slim.has_launch, slim.n) == (g.has_dependency_ids, g.has_launch, g.n)
    assert slim.bind is None and slim.engine is None and g.bind is not None


def test_digest_timeline_lanes():
    from reportgen.analysis.digest import TIMELINE_BUCKETS, _timeline
    from reportgen.analysis.timeline import occupancy
    from reportgen.model import ENGINES
    c = pd.DataFrame({"core": np.array([1, 0, 1, 0, 2, 0], np.int16),
                      "engine": pd.Categorical(["TIU", "GDMA", "GDMA", "TIU", "SDMA", "CDMA"]),
                      "start_ns": [0, 10, 20, 30, 40, 50], "end_ns": [15, 30, 60, 45, 90, 95],
                      "is_sys": [False, False, False, False, True, False]})
    work = np.flatnonzero(~c["is_sys"].to_numpy())
    t = _timeline(c, work, 100)
    want = sorted({(int(c["core"][r]), c["engine"][r]) for r in work}, key=lambda k: (k[0], ENGINES.index(k[1])))
    assert t["lanes"] == [list(k) for k in want]
    for i, (core, eng) in enumerate(want):
        rows = [r for r in work if (int(c["core"][r]), c["engine"][r]) == (core, eng)]
        busy = occupancy(c["start_ns"].to_numpy()[rows], c["end_ns"].to_numpy()[rows], np.zeros(len(rows), np.int64),
                         1, 0.0, 100.0, TIMELINE_BUCKETS)[0]
        assert t["busy"][i] == np.round(busy, 3).tolist()


def _latest_by_hand(s_core, s_id, s_time, q_core, q_id, q_time):
    src, qry = [], []
    for q in range(len(q_core)):
        cand = [s for s in range(len(s_core)) if (s_core[s], s_id[s]) == (q_core[q], q_id[q])
                and s_time[s] <= q_time[q]]
        if cand:
            src.append(max(cand, key=lambda s: (s_time[s], s)))
            qry.append(q)
    return np.array(src, np.int64), np.array(qry, np.int64)


@pytest.mark.parametrize("case", ["plain", "shuffled", "wide times", "odd ids"])
def test_latest_match(case):
    rng = np.random.default_rng(len(case))
    n, m = 300, 200
    s_core, q_core = rng.integers(0, 3, n), rng.integers(0, 3, m)
    s_id, q_id = rng.integers(0, 6, n), rng.integers(0, 7, m)
    s_time, q_time = rng.integers(0, 200, n), rng.integers(0, 220, m)
    if case != "shuffled":           # sources of each core in time order, as a queue gives them
        o = np.lexsort((s_time, s_core))
        s_core, s_id, s_time = s_core[o], s_id[o], s_time[o]
    if case == "wide times":
        s_time, q_time = s_time * (1 << 55), q_time * (1 << 55)
    if case == "odd ids":
        s_id, q_id = s_id - 3, q_id * (1 << 50)
    got = depgraph.latest_match(s_core, s_id, s_time, q_core, q_id, q_time)
    want = _latest_by_hand(s_core, s_id, s_time, q_core, q_id, q_time)
    assert len(want[0]) > 0
    assert all(np.array_equal(a, b) for a, b in zip(got, want))


def _launch_pred_by_hand(core, engine, scope, lane_pred, start, end):
    n, low = len(core), np.iinfo(np.int64).min
    calls = {}                                           # (core, scope) -> rows, first seen first
    for r in range(n):
        if scope[r] >= 0:
            calls.setdefault((core[r], scope[r]), []).append(r)
    info = {}
    for k, rows in calls.items():
        ends = [end[r] if engine[r] <= 2 else low for r in rows]
        info[k] = (min(start[r] for r in rows), rows[ends.index(max(ends))], max(ends))
    prev_of = {}
    for c in set(k[0] for k in calls):
        mine = sorted((k for k in calls if k[0] == c), key=lambda k: info[k][0])   # stable: first seen
        for a, b in zip(mine, mine[1:]):
            if info[a][2] > low:
                prev_of[b] = info[a][1]
    out = np.full(n, -1, np.int64)
    for r in range(n):
        lp = lane_pred[r]
        if scope[r] >= 0 and (lp < 0 or scope[lp] != scope[r]):
            p = prev_of.get((core[r], scope[r]), -1)
            out[r] = p if p >= 0 and end[p] <= start[r] else -1
    return out


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_launch_pred(seed):
    rng = np.random.default_rng(seed)
    n = 400
    core = rng.integers(0, 2, n).astype(np.int64)
    engine = rng.integers(0, 5, n).astype(np.int64)
    scope = rng.integers(-1, 12, n).astype(np.int64)    # -1: no kernel call known
    # calls 2k and 2k + 1 share their start times (ties between calls) and overlap
    start = ((scope // 2) * 300 + rng.integers(0, 3, n) * 40).astype(np.int64)
    end = start + rng.integers(0, 100, n)
    lane = core * 8 + engine
    lane_pred = depgraph._lane_pred(lane, start, end)
    got = depgraph._launch_pred(core, engine, scope, lane_pred, start, end)
    want = _launch_pred_by_hand(core, engine, scope, lane_pred, start, end)
    assert (want >= 0).sum() >= 8
    assert np.array_equal(got, want)
