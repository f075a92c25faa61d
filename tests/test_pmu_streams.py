"""Vectorised stream repairs against straightforward sequential versions of the spec's rules
(pmu-dump-format.md §9.1), on random streams, plus hand-made cases."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from reportgen.parsers.pmu import match

U32 = 1 << 32


def reorder_sequential(start, end):
    n, perm = len(start), np.arange(len(start))
    s, e = start.astype(np.int64).copy(), end.astype(np.int64).copy()
    for i in range(1, n - 1):
        if match._retire_swap(s, e, i):
            for a in (s, e, perm):
                a[i], a[i + 1] = a[i + 1], a[i]
    return perm


def unwrap_sequential(start, end):
    """§9.1 step 4 read literally: +2^32 to a record and every later one when its start is below
    the previous (corrected) end and that end is above 2^31; fix ends below their start."""
    s, e = [int(x) for x in start], [int(x) for x in end]
    lift = 0
    out_s, out_e = [], []
    for i in range(len(s)):
        cs, ce = s[i] + lift, e[i] + lift
        if i and cs < out_e[-1] and out_e[-1] > (1 << 31):
            lift += U32
            cs, ce = cs + U32, ce + U32
        if ce < cs:
            ce += U32
        out_s.append(cs)
        out_e.append(ce)
    return np.array(out_s), np.array(out_e)


streams = st.lists(st.tuples(st.integers(0, 300), st.integers(-5, 60)), min_size=0, max_size=40)


@settings(max_examples=400, deadline=None)
@given(streams, st.booleans())
def test_send_retire_reorder_matches_the_sequential_pass(pairs, shuffle):
    start = np.array([a for a, _ in pairs], np.int64)
    if not shuffle:
        start = np.sort(start)
    end = start + np.array([b for _, b in pairs], np.int64)
    assert (match.sdma_send_retire_reorder(start, end) == reorder_sequential(start, end)).all()


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 1 << 12)), min_size=1, max_size=30),
       st.integers(0, U32 - 1))
def test_time_unwrap_matches_the_sequential_rule(steps, origin):
    """A monotone counter started at ``origin`` and wrapped modulo 2^32, as the hardware writes it."""
    t = origin + np.cumsum([gap for gap, _ in steps])
    raw_s = t % U32
    raw_e = (t + np.array([d for _, d in steps])) % U32
    s, e = match.unwrap_time(raw_s, raw_e)
    ws, we = unwrap_sequential(raw_s, raw_e)
    assert (s == ws).all() and (e == we).all()


def test_straddling_record_lifts_everything_after_it():
    start = np.array([U32 - 300, U32 - 100, 50, 400])
    end = np.array([U32 - 200, 20, 300, 500])          # the second record straddles the wrap
    s, e = match.unwrap_time(start, end)
    assert list(s) == [U32 - 300, U32 - 100, U32 + 50, U32 + 400]
    assert list(e) == [U32 - 200, U32 + 20, U32 + 300, U32 + 500]


def test_id_unwrap_only_from_the_top_window():
    ids = np.array([65530, 65535, 3, 4, 1, 2])
    assert list(match.unwrap_ids16(ids)) == [65530, 65535, 65539, 65540, 65537, 65538]
    assert list(match.unwrap_ids16(np.array([60000, 3]))) == [60000, 3]   # not a wrap


def test_section_alignment_pairs_equal_spans_and_prefers_deleting_monitor_runs():
    assert match.align_sections(np.array([3, 5, 5]), np.array([3, 5])) == [(0, 0), (1, 1)]
    assert match.align_sections(np.array([4, 2, 7]), np.array([2, 7])) == [(1, 0), (2, 1)]
    assert match.align_sections(np.array([1, 1]), np.array([2])) == []


def test_ring_rotation_finds_the_oldest_record():
    start = np.array([500, 600, 700, 100, 200, 300])
    assert match.rotate_ring(start, start + 50) == 3
    assert match.rotate_ring(np.array([1, 2, 3]), np.array([1, 2, 3])) is None


def test_dyn_extra_offsets_from_node_predictions_equal_the_walk(tmp_path):
    from reportgen.parsers.pmu import container
    from reportgen.parsers.pmu.chips import AKS
    from reportgen.parsers.pmu.dump import _dyn_extra_entries, _predicted_extra_lengths
    from reportgen.parsers.pmu.nodes import parse_dyn_data
    from reportgen.testing.synth import write_dump

    res = write_dump(tmp_path, arch="AKS", cores=8, cmds_per_core=200, mode=2, seed=3)
    for f in sorted(res.dump_dir.glob("cdmlib*.profile")):
        blocks = container.read_blocks(f)
        words = np.frombuffer(next(b for b in blocks if b.type == 5).payload, "<u4")
        extra = next(b for b in blocks if b.type == 6)
        predicted = _predicted_extra_lengths(AKS, parse_dyn_data(words, AKS, f).tdi)
        fast = _dyn_extra_entries(extra.payload, f, 0, print, predicted)
        walk = _dyn_extra_entries(extra.payload, f, 0, print, None)
        assert (fast[0] == walk[0]).all() and (fast[1] == walk[1]).all()
        wrong = predicted.copy()
        wrong[5] += 16                           # a wrong prediction falls back to the walk
        again = _dyn_extra_entries(extra.payload, f, 0, print, wrong)
        assert (again[0] == walk[0]).all()


def test_rvt_id_wrap_injects_the_firmware_swr_and_gdma_commands():
    """Spec §6.6: the TIU counter reaching 0x3FFFF after an RVT node adds TIU swr (15, 3) with id
    0x3FFFF and GDMA (6, 3) with the current GDMA id, then both counters restart at 0."""
    from reportgen.parsers.pmu.chips import AKSV
    from reportgen.parsers.pmu.nodes import RVT_WRAP_ID, parse_dyn_data
    from reportgen.parsers.pmu.records import Node, pack_node

    tiu = pack_node(Node.RVT_NODE_SET, AKSV.engine_code("TIU"), 3, 2)
    gdma = pack_node(Node.RVT_NODE_SET, AKSV.engine_code("GDMA"), 0, 0)
    words = np.array([pack_node(Node.ID_RESET, AKSV.engine_code("TIU")), gdma, gdma]
                     + [tiu] * RVT_WRAP_ID + [gdma] + [tiu] * 3, np.uint32)
    lists = parse_dyn_data(words, AKSV, "<test>").lists
    t, g = lists["TIU"], lists["GDMA"]
    assert len(t) == RVT_WRAP_ID + 1 + 3
    assert t.ids[RVT_WRAP_ID - 1] == RVT_WRAP_ID - 1
    assert (t.ids[RVT_WRAP_ID], t.tsk_typ[RVT_WRAP_ID], t.eu[RVT_WRAP_ID]) == (RVT_WRAP_ID, 15, 3)
    assert list(t.ids[-3:]) == [0, 1, 2]
    assert list(g.ids) == [0, 1, 2, 0]                      # synthetic GDMA took id 2, then reset
    assert (g.tsk_typ[2], g.eu[2]) == (6, 3)
    assert t.section[RVT_WRAP_ID] != t.section[-1]          # the runs before and after split
