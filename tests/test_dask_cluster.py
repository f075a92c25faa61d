"""Batch mode on a real, external Dask cluster (issue 28): ``dask scheduler`` and two
``dask worker`` processes on localhost (free ports chosen by the OS, bounded waits, always
stopped), the batch submitted with ``--scheduler``.

* the cluster report (and every device report) is the one a local run writes;
* a worker SIGKILLed while it runs a report: Dask runs that report again on the other worker;
  every report is still complete, committed once (no stage, journal or backup left, exactly
  the files its manifest lists), reported once to the client, and equal to the local run's.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reportgen import batch, cli
from reportgen.testing.synth import SynthConfig, write_dump

pytest.importorskip("distributed")
DASK = Path(sys.executable).with_name("dask")
pytestmark = pytest.mark.skipif(not DASK.exists(), reason=f"no dask command beside {sys.executable}")

N_DUMPS = 8
#: how long any one wait (scheduler up, workers joined, the batch) may take
WAIT_S = 60


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """8 small dumps (2 cores x 1500 commands, each a different program) on two "nodes"."""
    run = tmp_path_factory.mktemp("dask") / "run"
    for i in range(N_DUMPS):
        write_dump(run / f"node{i // 4}", SynthConfig(cores=2, cmds_per_core=1500, seed=40 + i,
                                                      dump_name=f"cdm_profile_data_dev{i % 4}-0",
                                                      write_truth=False))
    return run


@pytest.fixture(scope="module")
def local_out(run_dir) -> Path:
    """The reference: the same batch on a LocalCluster (no --scheduler)."""
    out = run_dir.parent / "local"
    assert cli.main([str(run_dir), str(out), "--quiet"]) == 0
    return out


class Cluster:
    """``dask scheduler`` + ``dask worker`` processes of this test, each in its own session so
    that stopping one stops exactly what it started."""

    def __init__(self, folder: Path):
        self.folder, self.procs, self.workers = folder, [], {}
        self.file = folder / "scheduler.json"
        self._start("scheduler", [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                  "--no-dashboard", "--scheduler-file", str(self.file)])
        deadline = time.monotonic() + WAIT_S
        while not self._address():
            assert self.procs[0].poll() is None, (folder / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.1)
        self.address = self._address()

    def _address(self) -> str | None:
        try:
            return json.loads(self.file.read_text())["address"]
        except (OSError, ValueError, KeyError):
            return None

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=self.folder)
        log.close()
        self.procs.append(proc)
        return proc

    def worker(self, name: str) -> None:
        """One single-threaded worker process (no nanny: killing it kills the worker, nothing
        restarts it) that exits by itself if the scheduler goes away."""
        self.workers[name] = self._start(name, [
            str(DASK), "worker", self.address, "--name", name, "--no-nanny", "--nthreads", "1",
            "--memory-limit", "0", "--no-dashboard", "--host", "127.0.0.1", "--death-timeout", "30"])

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=WAIT_S) as client:
            client.wait_for_workers(n, timeout=WAIT_S)

    def stop(self) -> None:
        """SIGTERM to every process of ours at once, SIGKILL to those still there 5 s later."""
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    try:
        c.worker("w0")
        c.worker("w1")
        c.wait_for_workers(2)
        yield c
    finally:
        c.stop()


def _batch(run: Path, out: Path, address: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "reportgen", str(run), str(out),
                             "--scheduler", address], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _finish(proc: subprocess.Popen) -> tuple[str, str]:
    try:
        out, err = proc.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the batch took more than {WAIT_S} s: {err}")
    assert proc.returncode == 0, err
    return out, err


def _cluster_doc(out: Path) -> dict:
    """cluster.json without the only field that is a timing (each report's seconds)."""
    doc = json.loads((out / "cluster.json").read_text())
    for d in doc["devices"]:
        d.pop("seconds")
    return doc


def _same_reports(run: Path, out: Path, local: Path) -> None:
    assert _cluster_doc(out) == _cluster_doc(local)
    dumps = [d.relative_to(run) for d in batch.find_dumps(run)]
    assert len(dumps) == N_DUMPS
    for rel in dumps:
        report, reference = out / rel, local / rel
        # complete and committed once: exactly the files its manifest lists, nothing of a stage,
        # a journal or a backup left beside them
        listed = json.loads((report / ".reportgen-manifest.json").read_text())
        files = sorted(p.relative_to(report).as_posix() for p in report.rglob("*") if p.is_file())
        assert files == sorted([".reportgen-manifest.json", *listed["files"]]), rel
        assert not [p for p in report.iterdir() if p.name.startswith(".reportgen-")
                    and p.name != ".reportgen-manifest.json"], rel
        for name in ("summary.json", "PerfDoc/instr_world.csv", "perfetto.pftrace", "PerfWeb/result.html"):
            assert (report / name).read_bytes() == (reference / name).read_bytes(), (rel, name)


def test_a_batch_on_an_external_scheduler_equals_the_local_run(run_dir, local_out, cluster, tmp_path):
    out = tmp_path / "out"
    _, err = _finish(_batch(run_dir, out, cluster.address))
    assert f"batch mode, {N_DUMPS} dumps on the Dask scheduler at {cluster.address}" in err
    _same_reports(run_dir, out, local_out)


def test_a_worker_killed_in_the_middle_of_the_batch(run_dir, local_out, cluster, tmp_path):
    """w1 is SIGKILLed while it holds a report (after at least one report is committed, so in
    the middle of the batch); the batch still ends with every report complete and ok."""
    from distributed import Client

    out = tmp_path / "out"
    proc = _batch(run_dir, out, cluster.address)
    victim = cluster.workers["w1"]
    deadline = time.monotonic() + WAIT_S
    with Client(cluster.address, timeout=WAIT_S) as client:
        addr = next(a for a, w in client.scheduler_info()["workers"].items() if w["name"] == "w1")
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the batch ended before the kill"
            committed = len(list(out.glob("node*/*/.reportgen-manifest.json")))
            held = client.processing(workers=[addr]).get(addr, ())
            if committed >= 1 and held:
                os.kill(victim.pid, signal.SIGKILL)
                break
            time.sleep(0.02)
    victim.wait(timeout=10)
    assert committed < N_DUMPS and held          # killed while w1 ran a report, mid-batch
    _, err = _finish(proc)
    # the client heard of each dump once (one progress line each), every one ok
    lines = [l for l in err.splitlines() if l.startswith("[")]
    assert sorted(l.split("] ", 1)[1] for l in lines) == sorted(
        f"{d.relative_to(run_dir).as_posix()}: ok" for d in batch.find_dumps(run_dir))
    _same_reports(run_dir, out, local_out)
    doc = json.loads((out / "cluster.json").read_text())
    assert [d["status"] for d in doc["devices"]] == ["ok"] * N_DUMPS
