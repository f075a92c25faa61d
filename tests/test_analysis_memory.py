"""The analysis' memory-saving layouts (issue 28) give the results of the plain ones: the
what-if batch sized in bytes (whatif.batch_size), the re-timing's times stored as int32 when
they fit and int64 when they do not (whatif.time_dtype), the graph's binding edges built with
early-freed temporaries (depgraph.build_graph), checked against hand-computed spans, a per-row
re-implementation of the binding rule, and the int64 / one-scenario-per-pass layout on
synthetic and golden captures."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis import whatif
from reportgen.analysis.depgraph import DEP, LANE, LAUNCH, build_graph
from reportgen.analysis.why import explain
from reportgen.testing.profiles import from_rows

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "pmu"


def _cmd(core, engine, s, e, **kw):
    return {"core": core, "engine": engine, "start_ns": s, "end_ns": e, "func_type": "work",
            "func_name": "op", "is_sys": False, "sys_wait": False, **kw}


def test_batch_size_in_bytes():
    mb = 1 << 20
    assert whatif.batch_size(1_000_000, 46, budget=3 * 8 * 1_000_000) == 3
    assert whatif.batch_size(1_000_000, 46, budget=3 * 8 * 1_000_000 - 1) == 2
    assert whatif.batch_size(10_000_000, 46, budget=mb) == 1          # at least one
    assert whatif.batch_size(100, 46, budget=64 * mb) == whatif.BATCH   # at most BATCH
    assert whatif.batch_size(100, 5, budget=64 * mb) == 5               # no more than asked
    assert whatif.batch_size(0, 0) == 1


def test_times_beyond_int32_keep_int64_and_the_hand_computed_span():
    # one core's TIU lane: A (100 ns) at 3 s, B (200 ns) 2.5 s after A's end: the gap and the
    # starts do not fit int32
    t0, gap = 3_000_000_000, 2_500_000_000
    rows = [_cmd(0, "TIU", t0, t0 + 100), _cmd(0, "TIU", t0 + 100 + gap, t0 + 300 + gap)]
    w = explain(from_rows(rows, cores=1))
    rt = w.retimer
    assert rt.start0.dtype == np.int64 and rt.gap.dtype == np.int64
    assert rt.span() == 300 + gap
    # TIU twice as fast: A 50 ns, B starts the same gap after A's end and takes 100 ns
    assert w.scenario("engine", "TIU", None)["predicted_span_ns"] == 50 + gap + 100


def test_times_within_int32_are_int32_and_the_same_span():
    t0, gap = 3_000_000_000, 1_000
    rows = [_cmd(0, "TIU", t0, t0 + 100), _cmd(0, "TIU", t0 + 100 + gap, t0 + 300 + gap)]
    w = explain(from_rows(rows, cores=1))
    assert w.retimer.start0.dtype == np.int32          # starts counted from the earliest one
    assert w.scenario("engine", "TIU", None)["predicted_span_ns"] == 50 + gap + 100


def _bind_by_hand(g):
    """The binding rule one row at a time: the in-edge whose predecessor ended last (ties:
    dependency, launch, lane); the gap is the start minus that end."""
    bind, kind, gap = [], [], []
    for v in range(g.n):
        best = None
        for p, k in ((g.dep_src[v], DEP), (g.launch_pred[v], LAUNCH), (g.lane_pred[v], LANE)):
            if p >= 0 and (best is None or g.end[p] > best[2]):
                best = (p, k, g.end[p])
        bind.append(best[0] if best else -1)
        kind.append(best[1] if best else 0)
        gap.append(g.start[v] - best[2] if best else 0)
    return np.array(bind), np.array(kind), np.array(gap)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_binding_edges_match_the_rule(seed):
    rng = np.random.default_rng(seed)
    rows, t = [], {0: 0, 1: 0}
    for k in range(300):
        core = int(rng.integers(0, 2))
        s = t[core] + int(rng.integers(-20, 30))
        rows.append(_cmd(core, ("TIU", "GDMA", "SDMA")[k % 3], s, s + int(rng.integers(0, 60)),
                         dep_cmd_id=int(rng.integers(0, 6)), func_scope=k // 40))
        t[core] = max(0, s + int(rng.integers(0, 40)))
    g = build_graph(from_rows(rows, cores=2).commands)
    bind, kind, gap = _bind_by_hand(g)
    assert (g.dep_src >= 0).any() and (g.launch_pred >= 0).any()
    assert np.array_equal(g.bind, bind)
    assert np.array_equal(g.bind_kind, kind)
    assert np.array_equal(g.gap, gap)


def _what_if_tables(profile, monkeypatch, plain: bool) -> pd.DataFrame:
    """The what-if table, and each finding scenario's span, with the compact layout (int32
    times when they fit, the byte-sized batch) or the plain one (int64 times, one scenario
    per pass)."""
    with monkeypatch.context() as m:
        if plain:
            m.setattr(whatif, "time_dtype", lambda g, base: np.int64)
            m.setattr(whatif, "BATCH_BYTES", 0)
        w = explain(profile)
        assert (w.retimer.start0.dtype == np.int64) == plain
        return w.what_if


def _golden(case: str):
    from reportgen.parsers.pmu import load_dump
    d = SHARED / case / "input"
    if not d.is_dir():
        pytest.skip(f"shared golden dump {case} not found next to the checkout (../shared)")
    return load_dump(str(d))


def _synthetic(tmp_path):
    from reportgen.parsers.pmu import load_dump
    from reportgen.testing.synth import SynthConfig, write_dump
    r = write_dump(tmp_path / "d", SynthConfig(cores=4, cmds_per_core=600, mode=2, seed=9, dataflow=True))
    return load_dump(str(r.dump_dir))


@pytest.mark.parametrize("source", ["synthetic", "aks-m2-c8", "aks-m1-c8", "aks-m2-des"])
def test_compact_layout_gives_the_plain_layout_results(source, tmp_path, monkeypatch):
    profile = _synthetic(tmp_path) if source == "synthetic" else _golden(source)
    compact = _what_if_tables(profile, monkeypatch, plain=False)
    plain = _what_if_tables(profile, monkeypatch, plain=True)
    assert len(compact) > 3
    pd.testing.assert_frame_equal(compact, plain)


def test_command_arrays_derived_on_first_read():
    from reportgen.analysis.breakdown import command_arrays
    rows = [_cmd(0, "TIU", 0, 10, alg_ops=100.0, uarch_ops=200.0),
            _cmd(0, "TIU", 10, 30),                                  # not modelled
            _cmd(0, "GDMA", 0, 40, bytes=64, direction="DDR->L2M")]
    a = command_arrays(from_rows(rows, cores=1).commands)
    assert "alg0" not in a and "solo" not in a                       # nothing derived yet
    order = np.argsort(a["start"] * 10 + a["engine"], kind="stable")   # rows: TIU, GDMA, TIU
    assert a["alg0"][order].tolist() == [100.0, 0.0, 0.0]
    assert a["modelled"][order].tolist() == [True, False, False]
    assert a["dur"][order].tolist() == [10, 40, 20]
    assert a["bytes0"][order].tolist() == [0.0, 64.0, 0.0]
    assert a["ddr_bytes0"][order].tolist() == [0.0, 64.0, 0.0]
    assert a["alg0"] is a["alg0"]                                     # made once
    with pytest.raises(KeyError):
        a["no such array"]
