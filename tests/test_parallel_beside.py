"""parallel.Beside: one computation in a forked child beside this process (the diagnosis' tables
beside the critical path, issue 28). Its result equals the in-process one; whatever it raises,
or its death, is the run's one error; no child outlives it."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import pandas as pd
import pytest

from shared_data import PMU, needs
from reportgen import cli, parallel
from reportgen.analysis import diagnosis
from reportgen.analysis.derive import derive
from reportgen.errors import InputError, ReportgenError
from reportgen.parsers.pmu import load_dump
from reportgen.testing.profiles import make_profile

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="Beside forks on Linux only")


def _no_children_left():
    assert mp.active_children() == []


def test_the_result_is_computed_in_a_child_and_comes_back():
    with parallel.Beside("pid", lambda: (os.getpid(), {"x": [1, 2.5, "a"]}), jobs=2) as side:
        assert side.forked
        pid, value = side.result()
    assert pid != os.getpid() and value == {"x": [1, 2.5, "a"]}
    _no_children_left()


def test_one_job_computes_here_at_once():
    calls = []
    with parallel.Beside("here", lambda: calls.append(os.getpid()) or 7, jobs=1) as side:
        assert not side.forked and calls == [os.getpid()]     # before this process' own part
        assert side.result() == 7
    assert calls == [os.getpid()]


def _frames_equal(a, b):
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    else:
        assert a == b


def _same_diagnosis(profile_a, profile_b):
    da, db = profile_a.diagnosis, profile_b.diagnosis
    for name in ("breakdown", "functions", "kernel_calls", "kernels", "overlap", "stretches",
                 "findings", "roofline"):
        _frames_equal(getattr(da, name), getattr(db, name))
    pd.testing.assert_frame_equal(da.why.what_if, db.why.what_if)
    assert profile_a.meta.warnings == profile_b.meta.warnings
    pd.testing.assert_frame_equal(profile_a.summary, profile_b.summary)


def test_the_diagnosis_beside_equals_the_one_in_process():
    here, there = make_profile(cores=3, per_engine=400, seed=5), make_profile(cores=3, per_engine=400, seed=5)
    derive(here, jobs=1)
    derive(there, jobs=2)
    assert not here.diagnosis.findings.empty
    _same_diagnosis(here, there)
    _no_children_left()


@needs(PMU / "aks-m2-c8")
def test_the_diagnosis_of_a_golden_dump_beside_equals_the_one_in_process():
    here, there = load_dump(PMU / "aks-m2-c8" / "input"), load_dump(PMU / "aks-m2-c8" / "input")
    derive(here, jobs=1)
    derive(there, jobs=2)
    assert len(here.diagnosis.breakdown) and here.diagnosis.lmem is not None
    _same_diagnosis(here, there)


def test_a_reportgen_error_keeps_its_line_and_exit_code():
    def bad_input():
        raise InputError("x/dump", "truncated record", offset=96)    # does not unpickle as is

    with pytest.raises(ReportgenError) as err, parallel.Beside("tables", bad_input, jobs=2) as side:
        side.result()
    assert str(err.value) == "x/dump at byte offset 96: truncated record"
    assert err.value.exit_code == 1
    _no_children_left()


def test_another_exception_is_raised_again_as_itself():
    def bug():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="^boom$"), parallel.Beside("tables", bug, jobs=2) as side:
        side.result()
    _no_children_left()


def test_a_killed_child_is_one_error_naming_it():
    def killed():
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(ReportgenError) as err, parallel.Beside("tables", killed, jobs=2) as side:
        side.result()
    assert str(err.value) == "tables: its process died (killed by SIGKILL)"
    _no_children_left()


def test_leaving_early_kills_the_child(tmp_path):
    started = tmp_path / "pid"

    def forever():
        started.write_text(str(os.getpid()))
        time.sleep(600)

    with pytest.raises(KeyError), parallel.Beside("slow", forever, jobs=2):
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        raise KeyError("this process' own part failed")
    with pytest.raises(ProcessLookupError):
        os.kill(int(started.read_text()), 0)          # killed and reaped
    _no_children_left()


@needs(PMU / "aks-m2-c8")
@pytest.mark.skipif(parallel.workers() < 2, reason="one CPU: the run computes every table in-process")
@pytest.mark.parametrize("how, line", [
    ("killed", "bigTpuProfile: error: diagnosis tables: its process died (killed by SIGKILL)"),
    ("input", "bigTpuProfile: error: x/dump: bad"),
])
def test_the_command_line_says_one_line_and_leaves_no_output(how, line, tmp_path, monkeypatch, capsys):
    def side(profile):
        if how == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        raise InputError("x/dump", "bad")

    monkeypatch.setattr(diagnosis, "tables", side)
    out = tmp_path / "out"
    code = cli.main([str(PMU / "aks-m2-c8" / "input"), str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err == [line]
    assert not out.exists() or not any(Path(out).iterdir())     # nothing committed
    _no_children_left()
