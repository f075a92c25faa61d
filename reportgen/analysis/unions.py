"""Interval unions of many groups at once, and the merged pieces of one set (numpy only).

``analysis.metrics.union_length`` measures one set; the diagnosis needs the union of every
(core, engine, Function Type) group or kernel call of a million commands in one pass.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def grouped_union(group: np.ndarray, start: np.ndarray, end: np.ndarray, ngroups: int) -> np.ndarray:
    """Per group 0..ngroups-1, the length covered by its intervals [start, end) (int64 ns)."""
    out = np.zeros(ngroups, np.int64)
    if len(group) == 0:
        return out
    order = np.lexsort((start, group))
    g, s, e = group[order], start[order].astype(np.int64), end[order].astype(np.int64)
    # the running end of each group's intervals (pandas' grouped cummax: one C pass, no reset loop)
    run_end = pd.Series(e).groupby(g, sort=False).cummax().to_numpy(np.int64)
    new = np.ones(len(g), bool)
    new[1:] = (g[1:] != g[:-1]) | (s[1:] > run_end[:-1])
    last = np.append(np.flatnonzero(new)[1:] - 1, len(g) - 1)
    np.add.at(out, g[new], run_end[last] - s[new])
    return out


def merged(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The disjoint, sorted pieces [s, e) whose union is that of the intervals given."""
    if len(start) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(start, kind="stable")
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
