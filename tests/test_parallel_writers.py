"""parallel.Writers: jobs started before the analysis run beside it and are collected with the
rest; an error in one is the run's one error; leaving early stops them (issue 28)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from reportgen import parallel
from reportgen.errors import OutputError

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="writers fork on Linux only")


def _until(path: Path, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return path.exists()


def _writes(path: Path, text: str):
    def job():
        path.write_text(text)
        return path
    return job


def test_a_job_started_early_runs_while_this_process_works(tmp_path):
    early, late = tmp_path / "early", tmp_path / "late"
    with parallel.Writers(2) as pool:
        pool.start([("early", _writes(early, "e"))])
        # the "analysis": this process goes on, the early writer's file appears meanwhile
        assert _until(early)
        files = pool.finish([("late", _writes(late, "l")), ("later", _writes(tmp_path / "x", "x"))])
    assert sorted(p.name for p in files) == ["early", "late", "x"]
    assert early.read_text() == "e" and late.read_text() == "l"


def test_one_worker_runs_the_early_jobs_in_finish(tmp_path):
    order = []
    with parallel.Writers(1) as pool:
        pool.start([("early", lambda: order.append("early"))])
        assert order == []                          # not forked, not run yet
        pool.finish([("late", lambda: order.append("late"))])
    assert order == ["early", "late"]               # in this process, in order


def test_an_early_writer_error_is_the_run_error(tmp_path):
    def broken():
        raise ValueError("boom")

    with pytest.raises(OutputError) as err, parallel.Writers(2) as pool:
        pool.start([("Instr World", broken)])
        pool.finish([("summary", _writes(tmp_path / "s", "s"))])
    assert err.value.exit_code == 3 and "Instr World failed: ValueError: boom" in str(err.value)


def test_leaving_early_stops_the_writers_started(tmp_path):
    started = tmp_path / "started"

    def forever():
        started.write_text(str(os.getpid()))
        time.sleep(600)

    with pytest.raises(KeyError), parallel.Writers(2) as pool:
        pool.start([("slow", forever)])
        assert _until(started)
        raise KeyError("the analysis failed")
    pid = int(started.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)                             # killed and reaped, not left writing
