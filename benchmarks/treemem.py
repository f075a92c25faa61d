"""One command measured as a whole process tree: wall time, CPU time and peak memory.

Peak memory is the largest sum, over the command and every process below it (forked writers,
Dask workers, ...), of their proportional set sizes (``Pss`` of ``/proc/PID/smaps_rollup``),
sampled every 20 ms, or less often while a sample is costly: reading ``smaps_rollup`` walks
the page tables (~10 ms at 1.5 GB) under the process's memory lock, so at 20 ms the sampler
took a third of a core from the run it measured (3.3M commands: 29.4 s instead of 21.1 s);
the pause after a sample is at least ``DUTY`` times its cost (<= 5 % of a core). The largest single process alone (ru_maxrss) undercounts a run that forks;
the sum of RSS overcounts pages the forked writers share with their parent copy-on-write: PSS
charges each shared page to its sharers in parts, so the sum is what the tree really holds.
A tree that lives less than one period may be missed between samples (a short peak is caught
at most 20 ms late, or 20x the last sample's cost late for a large tree). CPU time is user + system of the command and its reaped descendants
(``wait4``). Linux only.
"""
from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass, field

PERIOD_S = 0.020
#: the pause after a sample is at least this many times the sample's own cost
DUTY = 20


def _children_map() -> dict[int, list[int]]:
    below: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command name (field 2) may hold spaces and parentheses: ppid follows the last ')'
        ppid = int(stat[stat.rindex(b")") + 2:].split(None, 2)[1])
        below.setdefault(ppid, []).append(int(entry.name))
    return below


def tree(pid: int) -> list[int]:
    """``pid`` and every process below it now."""
    below, found, todo = _children_map(), [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += below.get(p, [])
    return found


def pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass        # ended between the listing and the read
    return 0


@dataclass
class Measured:
    returncode: int
    wall_s: float
    cpu_s: float
    peak_pss_mb: float
    peak_processes: int                   # processes in the tree at the peak
    #: each process's PSS (MB) at the peak, the command's first
    peak_parts_mb: list[float] = field(default_factory=list)
    stderr: str = ""
    stamps: list[tuple[float, str]] = field(default_factory=list)   # (seconds, stderr line)


def run(cmd: list[str], env: dict | None = None, cwd=None) -> Measured:
    """Run ``cmd`` (stdout dropped, stderr kept line by line with the time each line came)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    peak = [0, 0, []]
    stamps: list[tuple[float, str]] = []
    done = threading.Event()

    def sample():
        while not done.is_set():
            began = time.perf_counter()
            pids = tree(proc.pid)
            parts = [pss_kb(p) for p in pids]
            total = sum(parts)
            if total > peak[0]:
                peak[:] = [total, len(pids), [kb / 1024 for kb in parts]]
            done.wait(max(PERIOD_S, DUTY * (time.perf_counter() - began)))

    def read():
        for raw in proc.stderr:
            stamps.append((time.perf_counter() - t0, raw.decode("utf-8", "replace").rstrip("\n")))

    threads = [threading.Thread(target=sample, daemon=True), threading.Thread(target=read, daemon=True)]
    for t in threads:
        t.start()
    # wait4, not Popen.wait: its rusage covers the command and the descendants it reaped
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    for t in threads:
        t.join(timeout=5)       # a leftover grandchild may hold stderr open: not waited for
    return Measured(proc.returncode, wall, usage.ru_utime + usage.ru_stime, peak[0] / 1024, peak[1],
                    peak[2], "\n".join(line for _, line in stamps), stamps)
