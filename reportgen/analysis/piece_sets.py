"""Set algebra on piece sets: disjoint, sorted half-open intervals [s, e) as two int64 arrays
(what ``unions.merged`` returns). numpy only, no loop per interval: the device-time breakdown
(analysis/device_time.py) intersects and subtracts whole timelines with these."""
from __future__ import annotations

import numpy as np

from reportgen.analysis.unions import covered, merged

Pieces = tuple[np.ndarray, np.ndarray]
EMPTY: Pieces = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def pieces(start, end) -> Pieces:
    """The union of any intervals as a piece set (empty and inverted intervals dropped)."""
    s, e = np.asarray(start, np.int64), np.asarray(end, np.int64)
    keep = e > s
    return merged(s[keep], e[keep])


def length(p: Pieces) -> int:
    return int((p[1] - p[0]).sum())


#: which elementary segments each operation keeps, from their membership in a and in b
_KEEP = {"and": np.logical_and, "or": np.logical_or,
         "minus": lambda in_a, in_b: in_a & ~in_b}


def _combine(a: Pieces, b: Pieces, op: str) -> Pieces:
    """The elementary segments between all endpoints, kept by their membership in a and b."""
    pts = np.unique(np.concatenate([a[0], a[1], b[0], b[1]]))
    if len(pts) < 2:
        return EMPTY
    lo, hi = pts[:-1], pts[1:]
    keep = _KEEP[op](covered(lo, *a), covered(lo, *b))
    return merged(lo[keep], hi[keep])


def intersect(a: Pieces, b: Pieces) -> Pieces:
    return _combine(a, b, "and")


def subtract(a: Pieces, b: Pieces) -> Pieces:
    return _combine(a, b, "minus")


def union(a: Pieces, b: Pieces) -> Pieces:
    return _combine(a, b, "or")


def complement(p: Pieces, lo: int, hi: int) -> Pieces:
    """[lo, hi) minus the pieces."""
    return subtract((np.array([lo], np.int64), np.array([hi], np.int64)), p)


def length_in(p: Pieces, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per window [lo[i], hi[i]): the length of the pieces inside it (cumulative sums and two
    binary searches, however many windows)."""
    s, e = p
    lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
    if len(s) == 0:
        return np.zeros(len(lo), np.int64)
    cum = np.concatenate([[0], np.cumsum(e - s)])

    def upto(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(s, t, side="right") - 1
        inside = np.clip(t - s[np.maximum(k, 0)], 0, (e - s)[np.maximum(k, 0)])
        return np.where(k >= 0, cum[np.maximum(k, 0)] + inside, 0)

    return np.maximum(upto(hi) - upto(lo), 0)
