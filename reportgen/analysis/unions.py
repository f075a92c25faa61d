"""Interval unions of many groups at once, and the merged pieces of one set (numpy only).

``analysis.metrics.union_length`` measures one set; the diagnosis needs the union of every
(core, engine, Function Type) group or kernel call of a million commands in one pass.
"""
from __future__ import annotations

import numpy as np


def group_order(group: np.ndarray, ngroups: int) -> np.ndarray:
    """A stable order by group code (a radix sort when the codes fit 16 bits)."""
    key = group.astype(np.uint16) if ngroups <= 1 << 16 else group
    return np.argsort(key, kind="stable")


def disjoint_lanes(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per row: whether the rows of its lane (e.g. a sheet: one engine of one core) follow each
    other in time without overlapping, i.e. are consecutive rows each starting at or after the
    previous one's end. A hardware queue runs one command at a time, so in a PMU capture every
    lane is; then any group of rows inside one lane covers exactly its summed duration."""
    if len(lane) == 0:
        return np.zeros(0, bool)
    change = np.flatnonzero(lane[1:] != lane[:-1])
    if len(change) + 1 != np.count_nonzero(np.bincount(lane)):     # a lane in several pieces
        return np.zeros(len(lane), bool)
    clash = (lane[1:] == lane[:-1]) & (start[1:] < end[:-1])
    bad = np.zeros(int(lane.max()) + 1, bool)
    bad[lane[1:][clash]] = True
    return ~bad[lane]


def grouped_union(group: np.ndarray, start: np.ndarray, end: np.ndarray, ngroups: int,
                  disjoint: np.ndarray | None = None) -> np.ndarray:
    """Per group 0..ngroups-1, the length covered by its intervals [start, end) (int64 ns).

    ``disjoint``: rows known not to overlap any other row of their group (each such group lies
    inside one lane of :func:`disjoint_lanes`); their groups are measured by a sum, the
    others by merging their sorted intervals.
    """
    if disjoint is not None:
        rest = ~disjoint
        out = np.bincount(group[disjoint], weights=(end - start)[disjoint],
                          minlength=ngroups).astype(np.int64)
        if rest.any():
            out += grouped_union(group[rest], start[rest], end[rest], ngroups)
        return out
    out = np.zeros(ngroups, np.int64)
    if len(group) == 0:
        return out
    # commands arrive in time order per engine, so a stable sort by group is usually already in
    # start order inside each group; only when it is not is the slower two-key sort needed
    order = group_order(group, ngroups)
    g, s = group[order], start[order].astype(np.int64)
    same = g[1:] == g[:-1]
    lo = min(int(s.min()), int(end.min()))
    stride = int(end.max()) - lo + 1
    wide = stride * (ngroups + 1) >= 1 << 62
    if (same & (s[1:] < s[:-1])).any():
        if wide:
            order = np.lexsort((start, group))
        else:   # (group, start) as one key; timsort is near linear on the runs already in order
            order = order[np.argsort(g.astype(np.int64) * stride + (s - lo), kind="stable")]
        g, s = group[order], start[order].astype(np.int64)
        same = g[1:] == g[:-1]
    e = end[order].astype(np.int64)
    # running end per group with one maximum.accumulate: each group's ends are lifted above the
    # previous group's by a stride wider than the whole time range (so no reset is needed)
    if not wide:
        lift = g.astype(np.int64) * stride
        run_end = np.maximum.accumulate(e - lo + lift) - lift + lo
    else:                                               # astronomically wide: reset per group
        run_end = e.copy()
        for first, stop in _runs(g):
            run_end[first:stop] = np.maximum.accumulate(e[first:stop])
    new = np.ones(len(g), bool)
    new[1:] = ~same | (s[1:] > run_end[:-1])
    last = np.append(np.flatnonzero(new)[1:] - 1, len(g) - 1)
    return out + np.bincount(g[new], weights=run_end[last] - s[new], minlength=ngroups).astype(np.int64)


def _runs(g: np.ndarray):
    cut = np.flatnonzero(g[1:] != g[:-1]) + 1
    return zip(np.concatenate([[0], cut]), np.concatenate([cut, [len(g)]]))


def merged(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The disjoint, sorted pieces [s, e) whose union is that of the intervals given."""
    if len(start) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if (start[1:] >= start[:-1]).all():                # already in time order (one queue)
        s, e = start.astype(np.int64, copy=False), end.astype(np.int64, copy=False)
    else:
        order = np.argsort(start, kind="stable")    # timsort: linear on a few sorted runs
        s, e = start[order].astype(np.int64), end[order].astype(np.int64)
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > run_end[:-1]
    last = np.append(np.flatnonzero(new)[1:] - 1, len(s) - 1)
    keep = run_end[last] > s[new]                    # zero-length pieces cover nothing
    return s[new][keep], run_end[last][keep]


def covered(points: np.ndarray, piece_start: np.ndarray, piece_end: np.ndarray) -> np.ndarray:
    """Whether each point lies inside one of the disjoint sorted pieces [s, e)."""
    k = np.searchsorted(piece_start, points, side="right") - 1
    ok = k >= 0
    out = np.zeros(len(points), bool)
    out[ok] = piece_end[k[ok]] > points[ok]
    return out
