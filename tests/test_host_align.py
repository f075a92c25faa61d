"""Host-trace merge: reading, the three alignment rules, nesting, errors."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from reportgen.errors import InputError
from reportgen.intervals import first_fit_lanes, improper, lanes, nest
from reportgen.model import HOST_COLUMNS
from reportgen.testing.profiles import make_profile, with_host_trace
from shared_data import PMU, needs

CASE = PMU / "aks-m2-trace"
TRACE = CASE / "trace.json"


def stack_nesting(group, start, end):
    """Reference nesting with an explicit stack, one event at a time (test oracle)."""
    n = len(start)
    order = sorted(range(n), key=lambda i: (group[i], start[i], -end[i], i))
    depth, parent = [0] * n, [-1] * n
    stack, current = [], None
    for i in order:
        if group[i] != current:
            stack, current = [], group[i]
        # pop what closed: ends before the start, or ends at it having started earlier
        while stack and (end[stack[-1]] < start[i] or (end[stack[-1]] == start[i] and start[stack[-1]] < start[i])):
            stack.pop()
        depth[i] = len(stack)
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
    return depth, parent


@st.composite
def laminar(draw):
    """Properly nested intervals (a random tree) in 1-3 groups, zero-length ones included."""
    out = []

    def grow(lo, hi, group, level):
        t = lo
        for _ in range(draw(st.integers(0, 3 if level < 3 else 0))):
            if t > hi:
                break
            a = draw(st.integers(t, hi))
            b = draw(st.integers(a, hi))
            out.append((group, a, b))
            grow(a, b, group, level + 1)
            t = b
    for g in range(draw(st.integers(1, 3))):
        grow(0, 60, g, 0)
    return out


@settings(max_examples=200, deadline=None)
@given(laminar())
def test_nest_matches_stack_oracle(events):
    if not events:
        return
    g, s, e = (np.array(x, np.int64) for x in zip(*events))
    depth, parent = nest(g, s, e)
    want_depth, want_parent = stack_nesting(g, s, e)
    assert depth.tolist() == want_depth
    assert parent.tolist() == want_parent
    assert not improper(parent, e, depth).any()
    assert (lanes(g, s, e) == 0).all()


def _intervals(raw: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, start, end) arrays from hypothesis' (group, start, length) tuples."""
    g, start, length = (np.array(col, np.int64) for col in zip(*raw))
    return g, start, start + length


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 50), st.integers(0, 20)), min_size=1, max_size=40))
def test_lanes_are_properly_nested(raw):
    g, s, e = _intervals(raw)
    lane = lanes(g, s, e)
    key = g * 1000 + lane
    depth, parent = nest(key, s, e)
    assert not improper(parent, e, depth).any()
    # and within a lane, every parent really contains its child
    has = parent >= 0
    assert (s[parent[has]] <= s[has]).all() and (e[parent[has]] >= e[has]).all()


def sequential_first_fit(group, start, end):
    """Oracle: intervals in (group, start, end) order onto the lowest free lane."""
    out = [0] * len(start)
    free_at: dict[int, list[int]] = {}
    for i in sorted(range(len(start)), key=lambda i: (group[i], start[i], end[i], i)):
        ends = free_at.setdefault(group[i], [])
        lane = next((k for k, t in enumerate(ends) if t <= start[i]), len(ends))
        if lane == len(ends):
            ends.append(0)
        ends[lane] = end[i]
        out[i] = lane
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 60), st.integers(0, 15)), min_size=1, max_size=60))
def test_first_fit_lanes_match_sequential_oracle(raw):
    g, s, e = _intervals(raw)
    assert first_fit_lanes(g, s, e).tolist() == sequential_first_fit(g.tolist(), s.tolist(), e.tolist())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 60), st.integers(0, 15)), min_size=1, max_size=60),
       st.integers(1, 4))
def test_first_fit_lanes_capped_keep_the_first_lanes_and_overlay_the_rest(raw, most):
    g, s, e = _intervals(raw)
    full = np.array(sequential_first_fit(g.tolist(), s.tolist(), e.tolist()))
    assert first_fit_lanes(g, s, e, most).tolist() == np.minimum(full, most - 1).tolist()


def test_staircase_needs_two_lanes_not_n():
    s = np.arange(100_000, dtype=np.int64) * 5
    lane = first_fit_lanes(np.zeros(len(s), np.int64), s, s + 8)
    assert lane.max() == 1 and (lane[::2] == 0).all()
    assert lanes(np.zeros(len(s), np.int64), s, s + 8).max() < 8


@needs(TRACE)
def test_tail_offset_rule_matches_reference_numbers():
    prof = make_profile(cores=1, per_engine=10)
    prof.meta.tail_offset_ns, prof.meta.pmu_tail_ns = 850_000, 3_579_809
    with_host_trace(prof, TRACE)
    info = prof.meta.host_alignment
    # disable_profile ends at 1700000003801 + 700 us; minus tail offset and PMU tail
    assert info["rule"] == "tail_offset" and info["disable_end_ns"] == 1_700_000_004_501_000
    assert info["offset_ns"] == 1_700_000_004_501_000 - 850_000 - 3_579_809 == 1_700_000_000_071_191
    h = prof.host
    assert list(h.columns) == list(HOST_COLUMNS) and str(h["start_ns"].dtype) == "int64"
    assert str(h["depth"].dtype) == "int32" and h["name"].dtype == object
    assert len(h) == 10                        # 13 events - enable/disable_profile - PyTorch Profiler
    assert not h["name"].isin(["enable_profile", "disable_profile", "PyTorch Profiler (0)"]).any()
    row = h[h["name"] == "aten::quant"].iloc[0]
    assert (row["start_ns"], row["end_ns"]) == (1_700_000_003_414_000 - info["offset_ns"],
                                                 1_700_000_003_651_000 - info["offset_ns"])
    assert row["end_ns"] == 3_579_809          # ends with the last PMU record
    assert not any(w.code.startswith("host-align") for w in prof.meta.warnings)


@needs(TRACE)
def test_estimated_start_fallback_warns():
    prof = make_profile(cores=1, per_engine=10)       # no tail_offset_ns / pmu_tail_ns
    with_host_trace(prof, TRACE)
    info = prof.meta.host_alignment
    # end of the first tpudnn event after the markers: launchKernel (ts 51 us, dur 15 us)
    assert info["rule"] == "estimated_start" and info["offset_ns"] == 1_700_000_000_066_000
    launch = prof.host[prof.host["name"] == "launchKernel:tpu_matmul_bf16_multi_core"].iloc[0]
    assert launch["end_ns"] == 0
    warn = [w for w in prof.meta.warnings if w.code == "host-align-estimated"]
    assert len(warn) == 1 and "tail_offset_ns" in warn[0].message


def test_host_start_rule_without_tpudnn(tmp_path):
    f = tmp_path / "torch.json.gz"
    events = [{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 5.5, "dur": 2.25, "pid": "host", "tid": "main"},
              {"ph": "X", "name": "aten::add", "cat": "cpu_op", "ts": 10, "dur": 1, "pid": "host", "tid": "main"},
              {"ph": "i", "name": "mark", "ts": 3, "pid": 1, "tid": 1},
              {"ph": "B", "name": "open", "ts": 1, "pid": 1, "tid": 1}]
    f.write_bytes(gzip.compress(json.dumps(events).encode()))      # bare array, gzip
    prof = make_profile(cores=1, per_engine=10)
    with_host_trace(prof, f)
    assert prof.meta.host_alignment["rule"] == "host_start"
    assert prof.host[["name", "start_ns", "end_ns"]].values.tolist() == [["aten::mm", 0, 2250],
                                                                          ["aten::add", 4500, 5500]]
    assert any(w.code == "host-align-unknown" for w in prof.meta.warnings)


@needs(TRACE)
def test_golden_alignment_with_decoder():
    try:
        from reportgen.parsers.pmu import load_dump
        prof = load_dump(CASE / "input")
    except ImportError:
        pytest.skip("PMU decoder not available")
    with_host_trace(prof, TRACE)
    info = prof.meta.host_alignment
    assert info["rule"] == "tail_offset" and info["offset_ns"] == 1_700_000_000_071_191
    # the reference put aten::matmul 25.191 us before the first TPU command and aten::quant's end
    # on the last one
    first = prof.commands["start_ns"].min()
    last = prof.commands["end_ns"].max()
    assert prof.host["start_ns"].min() - first == -25_191
    assert prof.host["end_ns"].max() == last


@pytest.mark.parametrize("content, problem", [
    (b"{not json", "not a chrome-trace JSON"),
    (b'{"events": []}', "without a 'traceEvents' array"),
    (b'"text"', "expected a JSON object or array"),
    (b'[{"ph": "X", "name": "enable_profile", "ts": 1, "dur": 1}]', "no complete"),
    (b"\x1f\x8b\x08garbage", "corrupt gzip"),
])
def test_user_errors_are_one_line(tmp_path, content, problem):
    f = tmp_path / "bad.json"
    f.write_bytes(content)
    with pytest.raises(InputError) as err:
        with_host_trace(make_profile(cores=1, per_engine=5), f)
    assert problem in str(err.value) and str(f) in str(err.value) and "\n" not in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read the host trace"):
        with_host_trace(make_profile(cores=1, per_engine=5), tmp_path / "nope.json")


def test_rounding_keeps_children_inside(tmp_path):
    # the child ends with its parent at 15.0004 us; rounding start and duration separately would
    # put the child's end 1 ns after the parent's (10001 + 5000 > 10000 + 5000)
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "parent", "cat": "cpu_op", "ts": 10.0004, "dur": 5.0, "pid": 1, "tid": 1},
        {"ph": "X", "name": "child", "cat": "cpu_op", "ts": 10.0006, "dur": 4.9998, "pid": 1, "tid": 1}]}))
    prof = make_profile(cores=1, per_engine=5)
    with_host_trace(prof, f)
    h = prof.host.set_index("name")
    assert (h.loc["child", "end_ns"], h.loc["parent", "end_ns"]) == (5000, 5000)
    assert h.loc["child", "depth"] == 1 and prof.meta.host_alignment["improper"] == 0
