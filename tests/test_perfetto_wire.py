"""The compiled protobuf encoder of perfetto.pftrace (reportgen.writers.perfetto.wire) checked
against the protobuf library: random TrackEvent packets (optional fields, negative and 64-bit
ints, doubles, typed annotations, repeated flow ids, nested messages whose lengths need several
bytes) are encoded column by column and decoded with ``perfetto_trace_pb2``, field by field."""
from __future__ import annotations

import numpy as np
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from reportgen.writers.perfetto.wire import FLOW_IDS, SLICE_BEGIN, Rows, annotations, packet


def _events(n: int, seed: int):
    r = np.random.default_rng(seed)
    cols = {
        "name": r.integers(0, 400, n), "ts": r.integers(0, 1 << 40, n), "seq": r.integers(2, 1 << 20, n),
        "big": r.integers(-(1 << 62), 1 << 62, n), "big_ok": r.random(n) < 0.7,
        "dbl": r.normal(0, 1e6, n), "dbl_ok": r.random(n) < 0.5,
        "flag_ok": r.random(n) < 0.2, "text": r.integers(1, 1 << 15, n), "text_ok": r.random(n) < 0.9,
        "counter": r.integers(0, 1 << 35, n), "counter_ok": r.random(n) < 0.4,
    }
    k = int(r.integers(0, 3 * n + 1))
    cols["flow_row"] = np.sort(r.integers(0, n, k))
    cols["flow_id"] = r.integers(1, 1 << 40, k)
    return cols


def _encode(n: int, cols) -> bytes:
    te = Rows(n).const(9, SLICE_BEGIN)
    te.varint(10, cols["name"], cols["name"] > 0)
    annotations(te, {"big": 1, "dbl": 2, "flag": 300, "text": 4},
                [("big", "int", cols["big"], cols["big_ok"]), ("dbl", "double", cols["dbl"], cols["dbl_ok"]),
                 ("flag", "bool", np.ones(n, np.int64), cols["flag_ok"]),
                 ("text", "string", cols["text"], cols["text_ok"])])
    te.repeated(FLOW_IDS, cols["flow_row"], cols["flow_id"])
    te.varint(12, cols["counter"], cols["counter_ok"])          # extra_counter_values
    return Rows(n).message(1, packet(n, cols["ts"], cols["seq"], te)).tobytes()


@pytest.mark.parametrize("n, seed", [(1, 0), (2, 1), (7, 2), (500, 3), (5000, 4)])
def test_packets_decode_with_the_perfetto_protos(n, seed):
    cols = _events(n, seed)
    trace = pb.Trace.FromString(_encode(n, cols))
    assert len(trace.packet) == n
    for i, p in enumerate(trace.packet):
        assert p.timestamp == cols["ts"][i] and p.trusted_packet_sequence_id == cols["seq"][i]
        te = p.track_event
        assert te.type == SLICE_BEGIN
        assert te.name_iid == cols["name"][i]            # 0: left out, reads back as 0
        got = {a.name_iid: a for a in te.debug_annotations}
        want = {1: cols["big_ok"][i], 2: cols["dbl_ok"][i], 300: cols["flag_ok"][i], 4: cols["text_ok"][i]}
        assert set(got) == {k for k, present in want.items() if present}
        if 1 in got:
            assert got[1].int_value == cols["big"][i]
        if 2 in got:
            assert got[2].double_value == cols["dbl"][i]
        if 300 in got:
            assert got[300].bool_value is True
        if 4 in got:
            assert got[4].string_value_iid == cols["text"][i]
        assert list(te.flow_ids_old) == cols["flow_id"][cols["flow_row"] == i].tolist()
        assert list(te.extra_counter_values) == ([cols["counter"][i]] if cols["counter_ok"][i] else [])


def test_a_field_present_in_no_row_adds_nothing():
    n = 4
    with_none = Rows(n).varint(3, np.arange(n), np.zeros(n, bool)).const(9, 1).tobytes()
    assert with_none == Rows(n).const(9, 1).tobytes() == b"\x48\x01" * n
