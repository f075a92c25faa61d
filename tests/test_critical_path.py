"""Dependency graph, critical path, waits and what-if (analysis/depgraph, critical_path, waits,
whatif): hand-made graphs with answers worked out by hand, and synthetic captures whose
simulation knows why every command started (reportgen-synth dataflow timing)."""
from __future__ import annotations

import numpy as np
import pytest

from reportgen.analysis.why import explain
from reportgen.testing.profiles import from_rows


def _cmd(core, engine, s, e, name="op", **kw):
    sys_ = kw.pop("sys", False)
    wait = kw.pop("wait", False)
    return {"core": core, "engine": engine, "start_ns": s, "end_ns": e, "func_type": "sys" if sys_ else "work",
            "func_name": name, "is_sys": sys_, "sys_wait": wait, **kw}


def _why(rows, cores=1):
    return explain(from_rows(rows, cores=cores))


def _shares(w):
    return dict(zip(w.path.by_class["class"], w.path.by_class["ns"]))


def test_tiu_bound_chain():
    # GDMA loads 10 ns each; TIU computes 100 ns, each waiting for its load (dep ids)
    rows = []
    for k in range(3):
        rows.append(_cmd(0, "GDMA", 20 * k, 20 * k + 10, dep_cmd_id=0))
    t = 10
    for k in range(3):
        rows.append(_cmd(0, "TIU", t, t + 100, dep_cmd_id=k + 1))
        t += 100
    w = _why(rows)
    ns = _shares(w)
    # path: last TIU <- TIU <- TIU (lane) <- load 1 (dependency, 0 gap): 300 compute + 10 transfer
    assert w.path.span_ns == 310
    assert ns == {"compute": 300, "transfer": 10, "dependency": 0, "barrier": 0, "gap": 0}
    tiu2 = w.scenario("engine", "TIU", None)
    assert tiu2["predicted_span_ns"] == 10 + 150
    assert w.scenario("engine", "GDMA", None)["predicted_span_ns"] == 305   # first load 5 ns


def test_gdma_bound_chain():
    # loads 100 ns back to back; each 10-ns compute waits for its load and ends before the next
    rows = [_cmd(0, "GDMA", 100 * k, 100 * k + 100) for k in range(3)]
    rows += [_cmd(0, "TIU", 100 * k + 105, 100 * k + 115, dep_cmd_id=k + 1) for k in range(3)]
    w = _why(rows)
    assert w.path.span_ns == 315
    ns = _shares(w)
    assert ns == {"compute": 10, "transfer": 300, "dependency": 5, "barrier": 0, "gap": 0}
    assert w.scenario("engine", "GDMA", None)["predicted_span_ns"] == 150 + 15
    assert w.scenario("engine", "TIU", None)["predicted_span_ns"] == 310
    assert w.path.top_commands["class"].iloc[0] == "transfer"
    # computes 2 and 3 stalled on their loads from their lane predecessor's end (115, 215) to
    # the load's end (200, 300); the first has no lane predecessor (no stall to measure)
    dep = w.waits.table[w.waits.table["kind"] == "dependency"].sort_values("start_ns")
    assert dep["ns"].tolist() == [85, 85]
    assert set(dep["waited_for_engine"]) == {"GDMA"}


def test_barrier_held_by_one_slow_core():
    # three cores: work of 100 / 100 / 400 ns, then a TIU send (10) and a wait released 20 ns
    # after core 2's wait starts (it arrives last)
    rows = []
    for core, work in ((0, 100), (1, 100), (2, 400)):
        rows.append(_cmd(core, "TIU", 0, work))
        rows.append(_cmd(core, "TIU", work, work + 10, "send_msg", sys=True))
        rows.append(_cmd(core, "TIU", work + 10, 430, "wait_msg", sys=True, wait=True))
    w = _why(rows, cores=3)
    assert w.path.span_ns == 430
    ns = _shares(w)
    # barrier: core 2's wait start (410) to the release (430); send: gap; work: compute
    assert ns == {"compute": 400, "transfer": 0, "dependency": 0, "barrier": 20, "gap": 10}
    b = w.waits.table[w.waits.table["kind"] == "barrier"].sort_values("core")
    assert b["ns"].tolist() == [300, 300]                    # cores 0 and 1 waited 110 -> 410
    assert b["waited_for_core"].tolist() == [2, 2]
    assert b["waited_for_engine"].tolist() == ["TIU", "TIU"]
    assert w.waits.main_cause["waited_for_core"] == 2
    # core 2 twice as fast: it arrives at 210; everybody is released at 230
    assert w.scenario("engine", "TIU", 2)["predicted_span_ns"] == 230
    # barriers free: every wait lasts only its release latency (20 ns): core 2 ends at 430
    assert w.scenario("barrier")["predicted_span_ns"] == 430
    # core 2 evened out to the median work (100 ns): the slowest core is then 100 ns
    assert w.scenario("balance", None, 2)["predicted_span_ns"] == 130


def test_cdma_port_queue():
    # two cores submit to CDMA port 0: transfers run one at a time, each 50 ns, 5 ns apart
    rows = [_cmd(k % 2, "CDMA", 55 * k, 55 * k + 50, "send", port=0) for k in range(4)]
    rows.append(_cmd(0, "TIU", 0, 20))
    w = _why(rows, cores=2)
    assert w.path.span_ns == 215
    ns = _shares(w)
    assert ns == {"compute": 0, "transfer": 200, "dependency": 0, "barrier": 0, "gap": 15}
    assert w.scenario("engine", "CDMA", None)["predicted_span_ns"] == 4 * 25 + 15


def test_mode1_without_dependency_ids():
    # no dependency ids: the TIU command's start is explained by nothing but its lane, the
    # system wait on GDMA by nothing at all
    rows = [_cmd(0, "GDMA", 0, 100), _cmd(0, "GDMA", 100, 300, "wait", sys=True, wait=True),
            _cmd(0, "TIU", 310, 400)]
    w = _why(rows)
    assert not w.graph.has_dependency_ids
    assert w.waits.unattributed_ns == 200
    assert w.waits.unattributed_share == 1.0
    ns = _shares(w)
    # TIU (compute 90) <- nothing on its lane: the latest command of the core (the wait, gap 10)
    # <- its own 200 ns (system: gap) <- the load (transfer 100)
    assert ns == {"compute": 90, "transfer": 100, "dependency": 0, "barrier": 0, "gap": 210}


def test_identity_retiming_reproduces_the_capture():
    rng = np.random.default_rng(4)
    rows, t = [], {0: 0, 1: 0}
    for k in range(200):
        core = int(rng.integers(0, 2))
        eng = ("TIU", "GDMA")[k % 2]
        s = t[core] + int(rng.integers(0, 30))
        e = s + int(rng.integers(5, 90))
        rows.append(_cmd(core, eng, s, e, dep_cmd_id=int(rng.integers(0, 5))))
        t[core] = s + int(rng.integers(0, 50))
    w = _why(rows, cores=2)
    assert w.retimer.span() == w.path.span_ns
    assert w.path.stretches["ns"].sum() == w.path.span_ns


@pytest.fixture(scope="module")
def dataflow_pair(tmp_path_factory):
    from reportgen.parsers.pmu import load_dump
    from reportgen.testing.synth import SynthConfig, write_dump
    out = tmp_path_factory.mktemp("dataflow")
    base = dict(cores=4, cmds_per_core=1200, mode=2, seed=5, dataflow=True, cdma_ports=())
    r = write_dump(out / "base", SynthConfig(**base))
    p = load_dump(str(r.dump_dir))
    fast = {}
    for eng in ("GDMA", "TIU"):
        rs = write_dump(out / eng, SynthConfig(**base, speedup_engine=eng, speedup=2.0))
        c = load_dump(str(rs.dump_dir)).commands
        fast[eng] = int(c["end_ns"].max() - c["start_ns"].min())
    return r.meta["critical_path"], p, fast


def test_path_shares_match_the_simulation(dataflow_pair):
    truth, profile, _ = dataflow_pair
    w = explain(profile)
    got = dict(zip(w.path.by_class["class"], w.path.by_class["share"]))
    for cls, share in truth["share"].items():
        assert abs(got[cls] - share) <= 0.02, (cls, got[cls], share)
    # the simulation's span starts at its profile-init preamble, of which the decoder drops the
    # first records (a few us)
    assert abs(w.path.span_ns - truth["span_ns"]) <= 0.005 * truth["span_ns"]


@pytest.mark.parametrize("engine", ["GDMA", "TIU"])
def test_what_if_matches_the_resimulated_capture(dataflow_pair, engine):
    _, profile, fast = dataflow_pair
    w = explain(profile)
    predicted = w.scenario("engine", engine, None)["predicted_span_ns"]
    assert abs(predicted - fast[engine]) <= 0.02 * w.path.span_ns


def test_synth_cli_dataflow_speedup(tmp_path):
    import json

    from reportgen.testing.synth import main
    assert main(["--cores", "2", "--cmds-per-core", "200", "--ports", "", "--dataflow",
                 "--speedup", "GDMA=2", str(tmp_path)]) == 0
    meta = json.loads((tmp_path / "generator_meta.json").read_text())
    assert meta["speedup"] == {"engine": "GDMA", "factor": 2.0}
    assert sum(meta["critical_path"]["ns"].values()) == meta["critical_path"]["span_ns"]
    with pytest.raises(SystemExit):
        main(["--speedup", "GDMA", str(tmp_path / "x")])
