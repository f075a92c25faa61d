"""Interval nesting over whole arrays: call trees of framework slices, host-trace nesting and
lanes, and "which slice holds this point" queries.  numpy only, no reportgen imports, so
parsers and analysis can both use it.  No Python loop runs per interval: loops run per
nesting level, per doubling step or per lane.

Every function takes ``group`` (int codes: a thread, a lane), ``start`` and ``end`` (int64)
and orders intervals within a group by (start, longest first, input order), so an enclosing
interval always comes before what it holds.  Times are turned into dense ranks offset per
group (:func:`_group_keys`), which keeps groups apart in one sorted key space.

Two nesting rules are provided because their consumers need different answers for intervals
that overlap without nesting:

* :func:`call_forest` (framework call trees): a slice that outlives its parent is clipped to
  the parent's end, so every slice has exactly one parent to attribute its time to.
  An interval is *open* at a later start ``s`` when it ends strictly after ``s``.
* :func:`nest` (host traces, drawing lanes): no clipping; depth counts the intervals still open,
  an interval ending at ``s`` that started before is closed, a zero-length interval at its
  parent's start stays inside it.  Overlapping intervals are then found by :func:`improper`
  and moved to other lanes by :func:`lanes`.
"""
from __future__ import annotations

import numpy as np


def _group_keys(group: np.ndarray, *times: np.ndarray) -> list[np.ndarray]:
    """``group * width`` (the lowest key of each interval's group), then each time array as
    ``group * width + dense rank of the time``: one sortable int64 key per (group, time), so
    searches never cross a group boundary."""
    n = len(times[0])
    ranks = np.unique(np.concatenate(times), return_inverse=True)[1].reshape(len(times), n)
    base = group * (n * len(times) + 1)
    return [base] + [base + r for r in ranks]


def _chain_depth(parent: np.ndarray) -> np.ndarray:
    """Number of ancestors + 1 per interval, climbing all parent chains one level per step."""
    depth = np.ones(len(parent), np.int32)
    cur = parent.copy()
    while True:
        ok = cur >= 0
        if not ok.any():
            return depth
        depth[ok] += 1
        cur = np.where(ok, parent[np.maximum(cur, 0)], -1)


# ============================================================================================
# framework call trees: clipped forest
# ============================================================================================
def _last_open_before(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """For each i, the largest j < i with ``e[j] > s[i]`` (still open at i's start), or -1.

    Vectorised binary lifting over a sparse table of range maxima of ``e``: from j = i-1,
    skip blocks of 2^k intervals that all ended by ``s[i]``, largest blocks first.
    """
    n = len(s)
    levels = [e]
    k = 1
    while (1 << k) <= n:
        prev = levels[-1]
        half = 1 << (k - 1)
        levels.append(np.maximum(prev[:-half], prev[half:]))
        k += 1
    pos = np.arange(n, dtype=np.int64) - 1
    for k in range(len(levels) - 1, -1, -1):
        size = 1 << k
        lo = pos - size + 1
        ok = lo >= 0
        table = levels[k]
        ok[ok] &= table[lo[ok]] <= s[ok]
        pos[ok] -= size
    ok = pos >= 0
    ok[ok] &= e[pos[ok]] > s[ok]
    return np.where(ok, pos, -1)


def call_forest(track: np.ndarray, start: np.ndarray, end: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Order slices by (track, start, -duration) and build each track's call tree.

    This is the stack walk of framework-traces.md §6.2 without the Python loop: a slice's
    parent is the latest earlier slice of its track still open at its start (the walk pops
    while ``end(top) <= start``), and a slice that outlives its parent is clipped to the
    parent's end.  Clipped ends feed back into "still open", so iterate to the fixed point
    (parents always come earlier, so it is reached in at most depth rounds).

    Returns ``order`` (permutation into the input), ``depth`` (1 = top level) and ``parent``
    (positions in the ordered sequence, -1), and the number of slices that end after their
    parent's recorded end (clipped).
    """
    track = np.asarray(track, np.int64)
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    n = len(start)
    order = np.lexsort((np.arange(n), -(end - start), start, track))
    g, s, e = track[order], start[order], end[order]
    _, key_s, key_e = _group_keys(g, s, e)
    clip = key_e.copy()
    parent = np.full(n, -1, np.int64)
    for _ in range(n + 1):
        parent = _last_open_before(key_s, clip)
        has = parent >= 0
        new = key_e.copy()
        new[has] = np.minimum(key_e[has], clip[parent[has]])
        if np.array_equal(new, clip):
            break
        clip = new
    has = parent >= 0
    clipped = int((has & (e > e[np.maximum(parent, 0)])).sum())
    return order, _chain_depth(parent), parent, clipped


def operator_parents(track: np.ndarray, start: np.ndarray, end: np.ndarray
                     ) -> tuple[np.ndarray, int]:
    """Parents under torch's rule (``torch/autograd/profiler_util.py``, ``_populate_cpu_children``)
    for slices already in (track, start, longest first) order.

    torch walks a track's slices in that order with a stack and pops the top while the next
    slice starts at or after the top's end or ends after it; the slice becomes a child of what
    is left on top.  The stack after a slice is always its ancestor chain, so a slice's parent
    is simply the latest earlier slice of its track that ends at or after its end and after
    its start (nothing later than that can have been popped without a later such slice): one
    vectorised search, no loop per slice and no clipping.

    Returns ``parent`` (positions, -1 at top level) and the number of slices that start inside
    another slice of their track but end after it (torch pops that one: they are not nested).
    """
    track = np.asarray(track, np.int64)
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    if len(start) == 0:
        return np.zeros(0, np.int64), 0
    # end_j >= end_i and end_j > start_i  <=>  end_j > max(end_i - 1, start_i) (integer ns)
    need = np.maximum(end - 1, start)
    _, key_s, key_need, key_e = _group_keys(track, start, need, end)
    parent = _last_open_before(key_need, key_e)
    still_open = _last_open_before(key_s, key_e)
    return parent, int(((still_open >= 0) & (still_open != parent)).sum())


def enclosing(track: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
              q_track: np.ndarray, q_ts: np.ndarray, q_end: np.ndarray | None = None
              ) -> np.ndarray:
    """Innermost slice (position) of an ordered forest containing ``q_ts`` on ``q_track``
    (with ``q_end``: containing the whole interval [q_ts, q_end], bounds inclusive).

    ``track``/``start``/``end``/``parent`` are as :func:`call_forest` orders them.  Start from
    the last slice of the track starting at or before the point and climb parents until one
    still covers it; -1 when nothing does.
    """
    nq = len(q_ts)
    if nq == 0 or len(start) == 0:
        return np.full(nq, -1, np.int64)
    n = len(start)
    track = np.asarray(track, np.int64)
    q_track = np.asarray(q_track, np.int64)
    q_ts = np.asarray(q_ts, np.int64)
    q_end = q_ts if q_end is None else np.asarray(q_end, np.int64)
    # (track, start) keys are sorted in forest order: one search finds each point's candidate
    _, keys = _group_keys(np.concatenate([track, q_track]), np.concatenate([start, q_ts]))
    cur = np.searchsorted(keys[:n], keys[n:], "right") - 1
    cur[(cur < 0) | (track[np.maximum(cur, 0)] != q_track)] = -1
    for _ in range(4096):
        bad = (cur >= 0) & (end[np.maximum(cur, 0)] < q_end)
        if not bad.any():
            break
        cur[bad] = parent[cur[bad]]
    return cur


# ============================================================================================
# host traces: counted nesting and lanes
# ============================================================================================
def nest(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth and parent of intervals, per group, in any input order.

    Returns ``depth`` (int32, 0 = top level) and ``parent`` (int64 index into the inputs, -1).
    An interval ``j`` is *closed* at the start ``s`` of a later interval when ``end_j < s``, or
    ``end_j == s`` and ``j`` started before ``s`` (touching siblings; a zero-length interval at
    its parent's start stays inside it).  ``depth`` = intervals before it minus those closed;
    ``parent`` = the last earlier interval one level up.  Exact for properly nested input.
    """
    n = len(start)
    if n == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int64)
    group = np.asarray(group, np.int64)
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    order = np.lexsort((np.arange(n), -end, start, group))
    g, s, e = group[order], start[order], end[order]
    base, key_s, key_e = _group_keys(g, s, e)
    key_e = np.sort(key_e)
    zero = key_s[s == e]                                     # sorted, as key_s is
    before = np.searchsorted(key_e, key_s, "left") - np.searchsorted(key_e, base, "left")
    equal = np.searchsorted(key_e, key_s, "right") - np.searchsorted(key_e, key_s, "left")
    zeros_here = np.searchsorted(zero, key_s, "right") - np.searchsorted(zero, key_s, "left")
    closed = before + equal - zeros_here
    pos = np.arange(n) - np.searchsorted(g, g, "left")
    depth_sorted = (pos - closed).astype(np.int64)
    # parent: the last earlier interval of the same group one level up
    levels = int(depth_sorted.max()) + 2
    idx = np.arange(n)
    level = g * levels + depth_sorted                     # one code per (group, depth)
    codes = np.unique(level)
    by_level = np.sort(np.searchsorted(codes, level) * n + idx)
    want = level - 1
    want_code = np.minimum(np.searchsorted(codes, want), len(codes) - 1)
    exists = (depth_sorted > 0) & (codes[want_code] == want)
    hit = np.searchsorted(by_level, want_code * n + idx, "left") - 1
    hit_key = by_level[np.maximum(hit, 0)]
    found = exists & (hit >= 0) & (hit_key // n == want_code)
    parent_sorted = np.where(found, hit_key % n, -1)
    depth = np.empty(n, np.int32)
    parent = np.empty(n, np.int64)
    depth[order] = depth_sorted
    parent[order] = np.where(parent_sorted >= 0, order[np.maximum(parent_sorted, 0)], -1)
    return depth, parent


def improper(parent: np.ndarray, end: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Events not inside their parent, and every descendant of such an event (a subtree moves
    together so the rest stays properly nested)."""
    has_parent = parent >= 0
    bad = np.zeros(len(parent), bool)
    bad[has_parent] = end[has_parent] > end[parent[has_parent]]
    if bad.any():
        for level in range(1, int(depth.max()) + 1):     # one vectorised step per depth level
            at = np.flatnonzero((depth == level) & has_parent)
            bad[at] |= bad[parent[at]]
    return bad


def first_fit_lanes(group: np.ndarray, start: np.ndarray, end: np.ndarray,
                    max_lanes: int | None = None) -> np.ndarray:
    """Lane per interval so that no two intervals of a (group, lane) overlap (touching is fine).

    The same result as placing intervals in start order on the lowest lane that is free,
    which uses as many lanes as the largest number of intervals open at once.  Computed one
    lane at a time: a lane is the greedy chain "first interval, then the first one starting at
    or after its end, ..." over what is left, found by pointer doubling (no loop per interval).
    With ``max_lanes``, whatever the first ``max_lanes - 1`` lanes leave goes on the last one
    (overlapping there).
    """
    n = len(start)
    group = np.asarray(group, np.int64)
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    lane = np.zeros(n, np.int32)
    todo = np.lexsort((np.arange(n), end, start, group))
    current = 0
    while len(todo):
        if max_lanes is not None and current >= max_lanes - 1:
            lane[todo] = current
            break
        m = len(todo)
        g, s, e = group[todo], start[todo], end[todo]
        _, key_s, key_e = _group_keys(g, s, e)            # key_s sorted: todo is in (group, start) order
        nxt = np.searchsorted(key_s, key_e, "left")
        nxt = np.maximum(nxt, np.arange(1, m + 1))        # a later interval, never itself
        nxt[(nxt < m) & (g[np.minimum(nxt, m - 1)] != g)] = m
        jump = np.append(nxt, m)                           # m = end of chain
        on = np.zeros(m + 1, bool)
        on[np.flatnonzero(np.r_[True, g[1:] != g[:-1]])] = True   # chains start at group heads
        while True:
            on[jump[np.flatnonzero(on[:m])]] = True        # chain positions < 2^(k+1)
            if (jump[:m] == m).all():
                break
            jump = jump[jump]
        chosen = on[:m]
        lane[todo[chosen]] = current
        todo = todo[~chosen]
        current += 1
    return lane


def lanes(group: np.ndarray, start: np.ndarray, end: np.ndarray, nesting_rounds: int = 4) -> np.ndarray:
    """Lane number per event so that each (group, lane) is properly nested.

    Lane 0 keeps every event that nests; improperly nested subtrees move to lane 1, and so on.
    A long staircase of partial overlaps would need one round per event, so after
    ``nesting_rounds`` the rest is laid out without any overlap by :func:`first_fit_lanes`.
    """
    group = np.asarray(group, np.int64)
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    lane = np.zeros(len(start), np.int32)
    todo = np.arange(len(start))
    current = 0
    while len(todo) and current < nesting_rounds:
        depth, parent = nest(group[todo], start[todo], end[todo])
        bad = improper(parent, end[todo], depth)
        lane[todo[~bad]] = current
        todo = todo[bad]
        current += 1
    if len(todo):
        lane[todo] = current + first_fit_lanes(group[todo], start[todo], end[todo])
    return lane


