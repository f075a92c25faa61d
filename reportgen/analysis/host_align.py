"""Merge a host chrome trace (``--trace_file``) into a Profile, on the device timeline.

One function, :func:`attach_host_trace`, reads a tpudnn / tpu-train / PyTorch chrome-trace JSON
(plain or gzip; a ``{"traceEvents": [...]}`` object or a bare array) and fills ``profile.host``
(``model.HOST_COLUMNS``) with times in the device frame (device time 0 = the first command of
the dump).  The HTML and the Perfetto writers only draw ``profile.host``; neither aligns again.

Which events are kept (as the reference does, pmu-dump-format.md §12.3):

* only complete events (``"ph": "X"``); ``B``/``E`` pairs, instants, counters and metadata are
  ignored (the full framework-trace parser lives elsewhere);
* the profiler bookkeeping events ``PyTorch Profiler (0)``, ``enable_profile``,
  ``my_ops::enable_profile``, ``disable_profile``, ``my_ops::disable_profile`` are dropped;
* host start = ``ts`` µs × 1000 rounded to ns, end = (``ts`` + ``dur``) × 1000 rounded (missing
  ``dur`` = 0), so rounding never makes a nested event stick out of its parent.

Alignment, i.e. the host time ``offset_ns`` of device time 0 (device = host − offset):

1. ``tail_offset`` (preferred): the runtime writes ``tail_offset_ns`` into global.profile, the CPU
   time between the PMU pause and the end of ``disable_profile``.  When the trace has a tpudnn
   ``disable_profile`` event and the dump gave both ``meta.tail_offset_ns`` and ``meta.pmu_tail_ns``
   (end of the last PMU record, device frame): ``offset = disable_end − tail_offset_ns −
   pmu_tail_ns``, so the last PMU record ends ``tail_offset_ns`` before ``disable_profile`` ends.
2. ``estimated_start`` (the reference's fallback and 0.3.0's only rule): device time 0 is the end
   of the first remaining tpudnn event.  We take the *earliest* one by ``ts`` (the reference takes
   the first in file order, which is the same for a time-sorted trace).  A warning says the
   placement is an estimate.
3. ``host_start`` (no tpudnn event at all; the reference then drops the host trace): device time
   0 = start of the earliest host event, with a warning that the placement is unknown.

The rule, the offset and the event counts are recorded in ``profile.meta.host_alignment``.

Nesting: per (pid, tid), events are sorted by (start, longest first); ``depth`` is the number of
earlier events still open at an event's start and ``parent`` the row of the innermost one
(:func:`nest`, vectorised).  An event that starts inside another but ends after it is not
properly nested; it keeps the stack depth, is counted in ``host_alignment["improper"]`` (with
everything inside it in ``["overflow"]``) and the writers move it to an overflow lane.
"""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.errors import InputError
from reportgen.model import HOST_COLUMNS, Profile

#: Events of the profiling machinery itself, not of the workload (reference behaviour).
PROFILER_EVENTS = frozenset({"PyTorch Profiler (0)", "enable_profile", "my_ops::enable_profile",
                             "disable_profile", "my_ops::disable_profile"})
DISABLE_EVENTS = frozenset({"disable_profile", "my_ops::disable_profile"})
TPUDNN_CATEGORY = "tpudnn"


# -- nesting ---------------------------------------------------------------------------------
def nest(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth and parent of intervals, per group, without a Python loop over events.

    ``group`` (int codes), ``start``/``end`` (int64) are in any order.  Returns ``depth`` (int32)
    and ``parent`` (int64 index into the inputs, -1 at top level).  Within a group, events are
    ordered by (start, end descending, input order); an event ``j`` is *closed* at the start
    ``s`` of a later event when ``end_j < s``, or ``end_j == s`` and ``j`` started before ``s``
    (touching siblings; a zero-length event at its parent's start stays inside it).
    ``depth`` = events before it in that order minus those closed; ``parent`` = the last
    earlier event one level up.  Exact for properly nested input.
    """
    n = len(start)
    if n == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int64)
    group = np.asarray(group, np.int64)
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    order = np.lexsort((np.arange(n), -end, start, group))
    g, s, e = group[order], start[order], end[order]
    # dense time ranks make one sortable int64 key per (group, time)
    times, inv = np.unique(np.concatenate([s, e]), return_inverse=True)
    r_s, r_e = inv[:n], inv[n:]
    width = len(times) + 1
    key_s = g * width + r_s
    key_e = np.sort(g * width + r_e)
    zero = np.sort(key_s[s == e])
    before = np.searchsorted(key_e, key_s, "left") - np.searchsorted(key_e, g * width, "left")
    equal = np.searchsorted(key_e, key_s, "right") - np.searchsorted(key_e, key_s, "left")
    zeros_here = np.searchsorted(zero, key_s, "right") - np.searchsorted(zero, key_s, "left")
    closed = before + equal - zeros_here
    first_of_group = np.searchsorted(g, g, "left")
    pos = np.arange(n) - first_of_group
    depth_sorted = (pos - closed).astype(np.int64)
    # parent: the last earlier event of the same group one level up
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


def first_fit_lanes(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Lane per interval so that no two intervals of a (group, lane) overlap (touching is fine).

    The same result as placing intervals in start order on the lowest lane that is free,
    which uses as many lanes as the largest number of intervals open at once.  Computed one
    lane at a time: a lane is the greedy chain "first interval, then the first one starting at
    or after its end, ..." over what is left, found by pointer doubling (no loop per interval).
    """
    n = len(start)
    group = np.asarray(group, np.int64)
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    lane = np.zeros(n, np.int32)
    todo = np.lexsort((np.arange(n), end, start, group))
    current = 0
    while len(todo):
        m = len(todo)
        g, s, e = group[todo], start[todo], end[todo]
        times, inv = np.unique(np.concatenate([s, e]), return_inverse=True)
        width = len(times) + 1
        key_s = g * width + inv[:m]                       # sorted: todo is in (group, start) order
        nxt = np.searchsorted(key_s, g * width + inv[m:], "left")
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


# -- reading ---------------------------------------------------------------------------------
def _read_events(path: Path) -> list:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(path, f"cannot read the host trace: {err.strerror or err}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise InputError(path, f"corrupt gzip data: {err}") from None
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as err:
        line = getattr(err, "lineno", None)
        msg = getattr(err, "msg", str(err))
        raise InputError(path, f"not a chrome-trace JSON file ({msg})", line=line) from None
    if isinstance(doc, dict):
        events = doc.get("traceEvents")
        if not isinstance(events, list):
            raise InputError(path, "JSON object without a 'traceEvents' array")
        return events
    if isinstance(doc, list):
        return doc
    raise InputError(path, f"expected a JSON object or array, found {type(doc).__name__}")


def _event_frame(events: list) -> pd.DataFrame:
    events = [ev for ev in events if isinstance(ev, dict)]
    cols = {k: [ev.get(k) for ev in events] for k in ("name", "cat", "ph", "ts", "dur", "pid", "tid", "args")}
    df = pd.DataFrame(cols)
    df["ts"] = pd.to_numeric(df["ts"], errors="coerce")
    df["dur"] = pd.to_numeric(df["dur"], errors="coerce").fillna(0.0)
    df["name"] = df["name"].astype(object).where(df["name"].notna(), "").astype(str)
    df["cat"] = df["cat"].astype(object).where(df["cat"].notna(), "")
    return df


def _us_to_ns(us) -> np.ndarray:
    return np.round(np.asarray(us, np.float64) * 1000.0).astype(np.int64)


def _host_times(events: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) in host ns.  The end is rounded from ts + dur, not start + rounded dur, so a
    child that ends inside its parent in µs still does after rounding (rounding is monotone)."""
    ts = events["ts"].to_numpy(np.float64)
    dur = np.maximum(events["dur"].to_numpy(np.float64), 0.0)
    return _us_to_ns(ts), _us_to_ns(ts + dur)


# -- the merge -------------------------------------------------------------------------------
def attach_host_trace(profile: Profile, trace_path: str | os.PathLike) -> None:
    """Fill ``profile.host`` from a chrome trace, aligned to the device timeline (see module doc)."""
    path = Path(trace_path)
    df = _event_frame(_read_events(path))
    is_x = (df["ph"] == "X").to_numpy(bool) & df["ts"].notna().to_numpy(bool)
    cat = df["cat"].astype(str)
    tpudnn = (cat == TPUDNN_CATEGORY).to_numpy(bool)
    disable = is_x & tpudnn & df["name"].isin(DISABLE_EVENTS).to_numpy(bool)
    keep = is_x & ~df["name"].isin(PROFILER_EVENTS).to_numpy(bool)
    if not keep.any():
        raise InputError(path, "no complete ('ph': 'X') host events besides the profiler markers")

    host = df[keep]
    start_host, end_host = _host_times(host)
    meta = profile.meta
    info: dict = {"trace_path": str(path), "events_read": int(len(df)), "events_kept": int(keep.sum()),
                  "tail_offset_ns": meta.tail_offset_ns, "pmu_tail_ns": meta.pmu_tail_ns}

    if disable.any() and meta.tail_offset_ns is not None and meta.pmu_tail_ns is not None:
        disable_end = int(_host_times(df[disable])[1].max())
        offset = disable_end - int(meta.tail_offset_ns) - int(meta.pmu_tail_ns)
        info.update(rule="tail_offset", disable_end_ns=disable_end)
    elif tpudnn[keep].any():
        t = np.flatnonzero(tpudnn[keep])
        first = t[np.argmin(start_host[t])]
        offset = int(end_host[first])
        info.update(rule="estimated_start", anchor_event=str(host["name"].iloc[first]))
        missing = [k for k, v in (("a tpudnn disable_profile event", disable.any()),
                                  ("tail_offset_ns in global.profile", meta.tail_offset_ns is not None),
                                  ("the PMU tail time", meta.pmu_tail_ns is not None)) if not v]
        meta.warn("host-align-estimated",
                  "host trace aligned on the end of the first tpudnn event (estimate); missing: "
                  + ", ".join(missing), str(path))
    else:
        offset = int(start_host.min())
        info.update(rule="host_start")
        meta.warn("host-align-unknown",
                  "host trace has no tpudnn events: its first event is placed at device time 0 "
                  "(alignment unknown)", str(path))
    info["offset_ns"] = offset

    start = start_host - offset
    end = end_host - offset
    pid = host["pid"].to_numpy(object)
    tid = host["tid"].to_numpy(object)
    thread = pd.factorize(host["pid"].astype(str) + "\x1f" + host["tid"].astype(str))[0]
    # rows in (thread, start, longest first) order, so a parent row precedes its children
    order = np.lexsort((np.arange(len(start)), -end, start, thread))
    depth, parent = nest(thread[order], start[order], end[order])
    bad = improper(parent, end[order], depth)
    has = parent >= 0
    roots = int((end[order][has] > end[order][parent[has]]).sum())
    info["improper"], info["overflow"] = roots, int(bad.sum())
    if roots:
        meta.warn("host-overlap", f"{roots} host events overlap an enclosing event without nesting in "
                  f"it; they and the events inside them ({int(bad.sum())} in all) are drawn on "
                  "overflow lanes", str(path))

    frame = pd.DataFrame({
        "name": host["name"].to_numpy(object)[order],
        "category": pd.Categorical(cat[keep].to_numpy(object)[order]),
        "pid": pid[order], "tid": tid[order],
        "start_ns": start[order], "end_ns": end[order],
        "depth": depth.astype(np.int32), "parent": parent.astype(np.int64),
        "args": [a if isinstance(a, dict) else None for a in host["args"].to_numpy(object)[order]],
    })
    for col, dtype in HOST_COLUMNS.items():
        if dtype != "category":
            frame[col] = frame[col].astype(dtype)
    profile.host = frame[list(HOST_COLUMNS)].reset_index(drop=True)
    meta.host_alignment = info
