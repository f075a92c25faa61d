"""analysis/unions.py: grouped interval unions (overlapping, unsorted, and one-queue lanes)."""
from __future__ import annotations

import numpy as np

from reportgen.analysis.metrics import union_length
from reportgen.analysis.unions import disjoint_lanes, grouped_union, merged


def test_grouped_union_counts_overlaps_once():
    # group 0: [0,10) [5,20) [30,40) -> 30; group 1: [100,110) inside [90,130) -> 40; group 2: none
    group = np.array([1, 0, 0, 1, 0])
    start = np.array([100, 5, 30, 90, 0])
    end = np.array([110, 20, 40, 130, 10])
    assert grouped_union(group, start, end, 3).tolist() == [30, 40, 0]


def test_grouped_union_agrees_with_the_one_set_union():
    rng = np.random.default_rng(3)
    n = 5000
    group = rng.integers(0, 7, n)
    start = rng.integers(-10_000, 10_000, n)
    end = start + rng.integers(0, 500, n)
    got = grouped_union(group, start, end, 7)
    assert got.tolist() == [union_length(start[group == g], end[group == g]) for g in range(7)]


def test_disjoint_lanes_and_the_summed_fast_path():
    lane = np.array([0, 0, 0, 1, 1, 2, 2])
    start = np.array([0, 10, 20, 0, 5, 0, 10])
    end = np.array([10, 15, 30, 8, 9, 10, 20])     # lane 1 overlaps itself: [0,8) and [5,9)
    assert disjoint_lanes(lane, start, end).tolist() == [True, True, True, False, False, True, True]
    # a lane in two pieces: nothing is taken for granted
    assert not disjoint_lanes(np.array([0, 1, 0]), np.array([0, 0, 5]), np.array([1, 1, 6])).any()
    group = np.array([0, 0, 1, 2, 2, 3, 3])
    solo = disjoint_lanes(lane, start, end)
    assert grouped_union(group, start, end, 4, solo).tolist() == \
        grouped_union(group, start, end, 4).tolist() == [15, 10, 9, 20]


def test_merged_pieces():
    s, e = merged(np.array([5, 0, 20, 9]), np.array([10, 6, 20, 12]))
    assert (s.tolist(), e.tolist()) == ([0], [12])      # the empty [20, 20) covers nothing
