"""Run independent output writers side by side in forked processes.

The decoded Profile is built once in the parent; ``fork`` gives each writer process the same
memory pages (copy-on-write), so nothing is pickled or decoded twice. A writer that fails in
its process fails the run with exit code 3 and one line, never silently. Writer processes die
with the run: the parent kills them on any error or signal, and the kernel kills them when the
parent itself is killed (:func:`die_with_parent`).

Progress (reportgen/progress.py): unless quiet, one line per finished writer, printed by this
process only; on a terminal one "writing" bar here shows how far the running writers got (their
own bars forward their progress through the result pipe instead of drawing).
"""
from __future__ import annotations

import ctypes
import functools
import gc
import multiprocessing as mp
import os
import pickle
import signal
import threading
import time
import traceback
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable

from reportgen import progress
from reportgen.errors import OutputError, ReportgenError


def _flatten(result) -> list[Path]:
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        return [Path(p) for p in result]
    return [Path(result)]


def _guarded(label: str, fn: Callable):
    """Run one writer; any failure becomes an OutputError (exit 3)."""
    try:
        return _flatten(fn())
    except ReportgenError:
        raise
    except OSError as exc:
        raise OutputError(f"{label}: {exc.filename or ''} {exc.strerror or exc}".strip()) from exc
    except Exception as exc:  # a writer bug must not look like success
        if os.environ.get("REPORTGEN_DEBUG"):
            traceback.print_exc()
        raise OutputError(f"{label} failed: {type(exc).__name__}: {exc} "
                          "(set REPORTGEN_DEBUG=1 for the traceback)") from exc


_PR_SET_PDEATHSIG = 1
#: what stops a run (cli.STOP_SIGNALS)
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def die_with_parent(parent_pid: int) -> None:
    """In a forked child: be killed (SIGKILL) when the parent dies, even by SIGKILL.

    Linux only (``prctl(PR_SET_PDEATHSIG)``); elsewhere the parent's own clean-up on errors
    and signals is all there is. If the parent died before this call, exit at once.
    """
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):       # pragma: no cover - not Linux
        pass
    if os.getppid() != parent_pid:
        os._exit(1)


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _child(label, fn, conn, parent_pid, sigmask=None) -> None:
    if sigmask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, sigmask)     # the parent's, before the fork
    die_with_parent(parent_pid)
    progress.forward_to(lambda desc, done: conn.send(("progress", (desc, done))))
    t0 = time.perf_counter()
    try:
        files = [str(p) for p in _guarded(label, fn)]
        conn.send(("ok", (files, time.perf_counter() - t0)))
    except ReportgenError as exc:
        conn.send(("err", (type(exc).__name__, str(exc), exc.exit_code)))
    except BaseException as exc:  # noqa: BLE001 - report anything, the parent decides
        conn.send(("err", ("OutputError", f"{label} failed: {exc}", 3)))
    finally:
        conn.close()


def _inherited(target: Callable, *args) -> None:
    """A forked child's first step: every object inherited from the parent is moved out of
    reach of its garbage collector (``gc.freeze``, a constant-time list move). A collection
    writes into each object it examines, and each page so written would be copied from the
    parent's (copy-on-write): memory the child would hold for nothing."""
    gc.freeze()
    target(*args)


def _fork(target: Callable, args: tuple, listed: Callable[[mp.Process, object], None]) -> None:
    """Fork ``target(*args, conn, parent_pid, sigmask)``, a daemon process, and hand it with the
    read end of its result pipe to ``listed`` before any stop signal is taken: one arriving
    between the fork and the bookkeeping would leave a child that the clean-up does not know
    of (a writer writing into a stage being removed), so they are held until it is listed."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    target = functools.partial(_inherited, target)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        proc = ctx.Process(target=target, args=(*args, child, os.getpid(), held), daemon=True)
        proc.start()
        listed(proc, parent)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    child.close()            # this process' copy: the pipe ends (EOF) when the child does


def workers(requested: int | None = None) -> int:
    """``requested`` processes, else as many as the CPUs this process may use."""
    if requested:
        return requested
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _written(label: str, seconds: float, quiet: bool) -> None:
    progress.line(f"{label} written in {progress.seconds(seconds)}", quiet)


def run_jobs(jobs: list[tuple[str, Callable]], max_workers: int | None = None,
             quiet: bool = True) -> list[Path]:
    """Run ``(label, fn)`` jobs, up to ``workers(max_workers)`` at a time; returns the files
    written. Unless ``quiet``: a line per finished job, and on a terminal a bar."""
    with Writers(max_workers, quiet) as pool:
        return pool.finish(jobs)


class Writers:
    """Writer processes that may start before the rest of their jobs are known.

    ``start(jobs)`` forks jobs that need only what the parent holds now while the parent goes
    on working (the analysis) on one CPU: they use the other CPUs, at most ``workers() - 1``
    at a time, and are not waited for until ``finish(jobs)``, which runs the remaining jobs
    beside them and returns every file written. Leaving the ``with`` block early (an error, a
    signal) kills whatever still runs. With one worker, or without ``fork``, every job runs in
    this process inside ``finish``.
    """

    def __init__(self, max_workers: int | None = None, quiet: bool = True):
        self.n = workers(max_workers)
        self.quiet = quiet
        self.forking = self.n > 1 and "fork" in mp.get_all_start_methods()
        self.pending: list[tuple[str, Callable]] = []
        self.running: list[tuple[str, mp.Process, object, float]] = []

    def __enter__(self) -> "Writers":
        return self

    def __exit__(self, *exc) -> None:
        # an error or a signal here: no writer may go on writing into a stage being removed
        for _, proc, _, _ in self.running:
            proc.kill()
            proc.join()
        self.running = []

    def start(self, jobs: list[tuple[str, Callable]]) -> None:
        """Start ``jobs`` now (as many as the CPUs left beside this process allow)."""
        self.pending += jobs
        if self.forking:
            self._fill(self.n - 1)

    def _fill(self, limit: int) -> None:
        while self.pending and len(self.running) < limit:
            label, fn = self.pending.pop(0)
            _fork(_child, (label, fn), lambda proc, conn: self.running.append(
                (label, proc, conn, time.perf_counter())))

    def finish(self, jobs: list[tuple[str, Callable]]) -> list[Path]:
        """Run ``jobs`` and wait for every job started; the files written, or the first
        writer's error as an OutputError (the others are stopped)."""
        self.pending += jobs
        if not self.forking or (not self.running and len(self.pending) < 2):
            written = []
            for label, fn in self.pending:
                t0 = time.perf_counter()
                written += _guarded(label, fn)
                _written(label, time.perf_counter() - t0, self.quiet)
            self.pending = []
            return written
        written: list[Path] = []
        error: tuple | None = None
        shown = {label: label for label, *_ in self.running}  # writer -> how far its bar got
        total = len(self.pending) + len(self.running)
        with progress.bar(total, "writing", "output", self.quiet) as bar:
            while self.pending or self.running:
                if error is None:
                    before = {label for label, *_ in self.running}
                    self._fill(self.n)
                    shown.update((label, label) for label, *_ in self.running if label not in before)
                if not self.running:
                    break
                # whichever writer finishes first frees its worker for the next job (waiting
                # for the oldest would leave a CPU idle behind a long workbook)
                ready = wait([conn for _, _, conn, _ in self.running])
                i = next(i for i, r in enumerate(self.running) if r[2] in ready)
                label, proc, conn, t0 = self.running[i]
                try:
                    status, payload = conn.recv()
                except EOFError:
                    proc.join()
                    status, payload = "err", ("OutputError", f"{label}: writer process died "
                                              f"({_exit_text(proc.exitcode)})", 3)
                if status == "progress":
                    desc, done = payload
                    shown[label] = f"{desc} {done:.0%}"
                    bar.describe(", ".join(shown.values()))
                    continue
                self.running.pop(i)
                proc.join()
                del shown[label]
                bar.describe(", ".join(shown.values()))
                if status == "ok":
                    files, seconds = payload
                    written += [Path(p) for p in files]
                    _written(label, seconds, self.quiet)
                    bar.update()
                elif error is None:
                    error = payload
                    self.pending = []
        if error is not None:
            _, message, code = error
            exc = OutputError(message)
            exc.exit_code = code
            raise exc
        return written


# -- one computation beside this process ---------------------------------------------------------

def _beside_child(label, fn, conn, parent_pid, sigmask) -> None:
    # a stop signal ends this child at once: the parent, which gets it too (same process
    # group) or sees the pipe close, says what happened
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, sigmask)
    die_with_parent(parent_pid)
    try:
        try:
            conn.send(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 - raised again in the parent
            if os.environ.get("REPORTGEN_DEBUG"):
                traceback.print_exc()
            conn.send(("err", _portable(label, exc)))
    finally:
        conn.close()


def _portable(label: str, exc: BaseException):
    """``exc`` as it can cross the pipe: itself when it pickles back to the same line, else a
    ReportgenError with its line and exit code (an error class whose ``__init__`` takes other
    arguments than its message does not unpickle)."""
    exc.__traceback__ = None
    try:
        copy = pickle.loads(pickle.dumps(exc))
        if type(copy) is type(exc) and str(copy) == str(exc):
            return exc
    except Exception:  # noqa: BLE001 - any pickling failure: the fallback below
        pass
    if isinstance(exc, ReportgenError):
        text, code = str(exc), exc.exit_code
    else:
        text, code = f"{label} failed: {type(exc).__name__}: {exc}", 1
    return ("ReportgenError", text, code)


class Beside:
    """``fn()`` computed in a forked child while this process goes on with its own work.

    The analysis uses it for the tables that do not depend on what this process computes
    meanwhile: ``fork`` shares the parsed profile (copy-on-write, nothing decoded or pickled
    twice) and only the result, small and picklable, comes back through a pipe::

        with parallel.Beside("diagnosis tables", lambda: tables(profile), jobs) as side:
            ... this process' own part ...
            tables = side.result()

    Whatever ``fn`` raises is raised again by ``result()``: the same exception when it pickles
    (a ReportgenError keeps its one line and exit code), else a ReportgenError with that line
    and code. A child that dies without answering (killed, out of memory) is a ReportgenError
    naming it. Leaving the ``with`` block before ``result()`` (an error, a signal) kills the
    child, and the kernel kills it when this process dies (:func:`die_with_parent`). With one
    worker (``workers(jobs) == 1``) or without ``fork``, ``fn`` runs here at once, before this
    process' own part (what it frees is then not held beside what that part allocates).
    """

    def __init__(self, label: str, fn: Callable[[], object], jobs: int | None = None):
        self.label = label
        self.proc: mp.Process | None = None
        self.conn = None
        #: whether ``fn`` runs in a child (its changes to what this process holds stay there)
        self.forked = workers(jobs) > 1 and "fork" in mp.get_all_start_methods()
        if self.forked:
            _fork(_beside_child, (label, fn), self._listed)
        else:
            self.value = fn()       # here and now: this process' own part then comes after it

    def _listed(self, proc: mp.Process, conn) -> None:
        self.proc, self.conn = proc, conn
        # received as soon as it is sent: a result larger than the pipe's buffer would
        # otherwise keep the child, and every page it holds, alive until result() is called
        self.received: list = []
        self.receiver = threading.Thread(target=self._receive, name=f"{self.label} result", daemon=True)
        self.receiver.start()

    def _receive(self) -> None:
        try:
            self.received.append(self.conn.recv())
        except (EOFError, OSError):
            pass                    # died without answering, or killed by __exit__

    def __enter__(self) -> "Beside":
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.receiver.join()    # the pipe ended with the child
            self.conn.close()
            self.proc = None

    def result(self):
        """``fn``'s result: waited for from the child, or the one computed at the start."""
        if not self.forked:
            return self.value
        self.receiver.join()
        if self.received:
            status, payload = self.received[0]
        else:
            self.proc.join()
            status, payload = "err", ("ReportgenError", f"{self.label}: its process died "
                                      f"({_exit_text(self.proc.exitcode)})", 1)
        self.__exit__()
        if status == "ok":
            return payload
        if isinstance(payload, BaseException):
            raise payload
        _, text, code = payload
        exc = ReportgenError(text)
        exc.exit_code = code
        raise exc
