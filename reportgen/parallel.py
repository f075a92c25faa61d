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
import multiprocessing as mp
import os
import signal
from multiprocessing.connection import wait
import time
import traceback
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


def _child(label, fn, conn, parent_pid) -> None:
    die_with_parent(parent_pid)
    progress.forward_to(lambda desc, done: conn.send(("progress", (desc, done))))
    try:
        conn.send(("ok", [str(p) for p in _guarded(label, fn)]))
    except ReportgenError as exc:
        conn.send(("err", (type(exc).__name__, str(exc), exc.exit_code)))
    except BaseException as exc:  # noqa: BLE001 - report anything, the parent decides
        conn.send(("err", ("OutputError", f"{label} failed: {exc}", 3)))
    finally:
        conn.close()


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
    n = workers(max_workers)
    if n == 1 or len(jobs) < 2 or "fork" not in mp.get_all_start_methods():
        written = []
        for label, fn in jobs:
            t0 = time.perf_counter()
            written += _guarded(label, fn)
            _written(label, time.perf_counter() - t0, quiet)
        return written
    ctx = mp.get_context("fork")
    pending = list(jobs)
    running: list[tuple[str, mp.Process, object, float]] = []
    written: list[Path] = []
    error: tuple | None = None
    shown: dict[str, str] = {}               # running writer -> how far its own bar got
    with progress.bar(len(jobs), "writing", "output", quiet) as bar:
        try:
            while pending or running:
                while pending and len(running) < n and error is None:
                    label, fn = pending.pop(0)
                    parent, child = ctx.Pipe(duplex=False)
                    proc = ctx.Process(target=_child, args=(label, fn, child, os.getpid()),
                                       daemon=True)
                    proc.start()
                    child.close()
                    running.append((label, proc, parent, time.perf_counter()))
                    shown[label] = label
                if not running:
                    break
                # whichever writer finishes first frees its worker for the next job (waiting
                # for the oldest would leave a CPU idle behind a long workbook)
                ready = wait([conn for _, _, conn, _ in running])
                i = next(i for i, r in enumerate(running) if r[2] in ready)
                label, proc, conn, t0 = running[i]
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
                running.pop(i)
                proc.join()
                del shown[label]
                bar.describe(", ".join(shown.values()))
                if status == "ok":
                    written += [Path(p) for p in payload]
                    _written(label, time.perf_counter() - t0, quiet)
                    bar.update()
                elif error is None:
                    error = payload
        finally:
            # an error or a signal here: no writer may go on writing into a stage being removed
            for _, proc, _, _ in running:
                proc.kill()
                proc.join()
    if error is not None:
        _, message, code = error
        exc = OutputError(message)
        exc.exit_code = code
        raise exc
    return written
