"""Walks over a host call tree (``profile.host``: ``parent`` rows, per-thread forests) restricted
to a subset of slices (a category): nearest marked ancestor, depth and ``$$`` call paths counting
only marked slices, sums over subtrees.  Every walk climbs parents level by level over whole
arrays (depth iterations, not one Python step per slice)."""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from reportgen.intervals import enclosing, operator_parents
from reportgen.model import operator_rows


def first_category(cat: pd.Series) -> np.ndarray:
    """Lower-case first entry of each category list, computed once per distinct value."""
    codes, uniq = pd.factorize(cat.astype(object).fillna("").astype(str), sort=False)
    mapped = np.array([u.split(",")[0].strip().lower() for u in uniq], dtype=object)
    return mapped[codes] if len(codes) else np.empty(0, object)


def category_mask(cats: np.ndarray, wanted: str | Iterable[str] | None) -> np.ndarray:
    if wanted is None:
        return np.ones(len(cats), bool)
    if isinstance(wanted, str):
        wanted = [wanted]
    return np.isin(cats, [w.strip().lower() for w in wanted])


def nearest_ancestor(parent: np.ndarray, mask: np.ndarray, rows: np.ndarray | None = None
                     ) -> np.ndarray:
    """For each row (default: all), the closest strict ancestor whose ``mask`` is set; -1."""
    rows = np.arange(len(parent)) if rows is None else np.asarray(rows, np.int64)
    out = np.full(len(rows), -1, np.int64)
    todo = np.arange(len(rows))
    cur = parent[rows] if len(rows) else rows
    while len(todo):
        hit = (cur >= 0) & mask[np.maximum(cur, 0)]
        out[todo[hit]] = cur[hit]
        keep = (cur >= 0) & ~hit
        todo, cur = todo[keep], parent[cur[keep]]
    return out


def ancestor_pairs(anc_of: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (row, ancestor) pairs following ``anc_of`` links (already restricted to a category)."""
    src, dst = [], []
    idx = np.arange(len(rows))
    cur = anc_of[rows] if len(rows) else rows
    while len(idx):
        ok = cur >= 0
        src.append(idx[ok])
        dst.append(cur[ok])
        idx, cur = idx[ok], anc_of[cur[ok]]
    if not src:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src), np.concatenate(dst)


def restricted_depth(anc_of: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Depth counting only ``mask`` rows (1 = no masked ancestor); 0 for unmasked rows."""
    n = len(anc_of)
    depth = np.zeros(n, np.int64)
    rows = np.flatnonzero(mask)
    cur = anc_of[rows]
    d = np.ones(len(rows), np.int64)
    while True:
        ok = cur >= 0
        if not ok.any():
            break
        d[ok] += 1
        cur = np.where(ok, anc_of[np.maximum(cur, 0)], -1)
    depth[rows] = d
    return depth


def call_paths(names: np.ndarray, anc_of: np.ndarray, mask: np.ndarray, sep: str = "$$"
               ) -> tuple[np.ndarray, np.ndarray]:
    """``sep``-joined names from the outermost masked ancestor down to each masked row."""
    depth = restricted_depth(anc_of, mask)
    path = np.empty(len(names), object)
    for d in range(1, int(depth.max(initial=0)) + 1):
        rows = np.flatnonzero(depth == d)
        if d == 1:
            path[rows] = names[rows].astype(str)
        else:
            path[rows] = path[anc_of[rows]] + sep + names[rows].astype(str)
    return path, depth


def subtree_sum(parent_of: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each row's value plus the values of all rows below it (``parent_of`` restricted tree)."""
    total = values.astype(float).copy()
    vals = values.astype(float)
    cur = parent_of.copy()
    live = np.flatnonzero((cur >= 0) & (vals != 0))
    cur = cur[live]
    v = vals[live]
    while len(live):
        np.add.at(total, cur, v)
        nxt = parent_of[cur]
        ok = nxt >= 0
        cur, v = nxt[ok], v[ok]
        live = live[ok]
    return total


def function_rows(host: pd.DataFrame) -> np.ndarray:
    """torch's FunctionEvents among the host slices (model.operator_rows): their ``parent`` is
    the operator tree; the other slices' (python frames) ``parent`` is a tree of their own."""
    if "role" not in host.columns:
        return np.ones(len(host), bool)
    return operator_rows(host["role"].to_numpy())


class MonitoredTree:
    """The tree of a monitored subset of host slices (the seed CSV's category) and the slice
    of that subset holding any other slice.

    When the subset lies within one family of ``host["parent"]`` (operators, or python frames)
    its tree is that family's tree; a mixed subset gets a tree of its own under torch's rule.
    A slice of the operator tree held by monitored operators is owned through the operator
    tree (the one tree Self CPU comes from); any other pairing (a runtime call inside python
    frames) is found by interval containment on the same thread, bounds inclusive, as the seed
    tool matches them.
    """

    def __init__(self, host: pd.DataFrame, is_m: np.ndarray):
        self.host, self.is_m = host, is_m
        self.fn = function_rows(host)
        parent = host["parent"].to_numpy(np.int64)
        self.one_family = not (is_m & self.fn).any() or not (is_m & ~self.fn).any()
        m = np.flatnonzero(is_m)
        track = thread_codes(host)[m]
        start = host["start_ns"].to_numpy(np.int64)[m]
        end = host["end_ns"].to_numpy(np.int64)[m]
        order = np.lexsort((m, -(end - start), start, track))
        self.rows, self.track, self.start, self.end = m[order], track[order], start[order], end[order]
        if self.one_family:
            anc = nearest_ancestor(parent, is_m)
            position = np.full(len(host), -1, np.int64)
            position[self.rows] = np.arange(len(self.rows))
            p = anc[self.rows]
            self.parent = np.where(p >= 0, position[np.maximum(p, 0)], -1)
            self.ancestor = np.where(is_m, anc, -1)
            self._tree_anc = anc
        else:
            p, _ = operator_parents(self.track, self.start, self.end)
            self.parent = p
            self.ancestor = np.full(len(host), -1, np.int64)
            self.ancestor[self.rows] = np.where(p >= 0, self.rows[np.maximum(p, 0)], -1)

    def holder(self, rows: np.ndarray) -> np.ndarray:
        """For each host row (not monitored), the innermost monitored slice holding it; -1."""
        rows = np.asarray(rows, np.int64)
        if self.one_family and self.fn[self.rows].all() and self.fn[rows].all():
            return self._tree_anc[rows]
        h = self.host
        q_track = thread_codes(h)[rows]
        pos = enclosing(self.track, self.start, self.end, self.parent, q_track,
                        h["start_ns"].to_numpy(np.int64)[rows], h["end_ns"].to_numpy(np.int64)[rows])
        return np.where(pos >= 0, self.rows[np.maximum(pos, 0)] if len(self.rows) else -1, -1)


def thread_codes(host: pd.DataFrame) -> np.ndarray:
    """One int per (rank, pid, tid): the thread a host slice ran on."""
    key = [host[c].astype(str).to_numpy(object) for c in ("rank", "pid", "tid") if c in host.columns]
    joined = pd.Series(key[0]).str.cat([pd.Series(k) for k in key[1:]], sep="\x1f")
    return pd.factorize(joined, sort=True)[0].astype(np.int64)
