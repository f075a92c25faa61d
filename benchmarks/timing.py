"""Timing shared by the analysis benchmarks: best and median wall time and best CPU time of a
function over fresh repeats (CPU time is the figure to trust on a loaded machine)."""
from __future__ import annotations

import statistics
import time


def measure(fn, repeat: int):
    """(best wall s, median wall s, best CPU s, the last result) of ``repeat`` calls of ``fn``."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), statistics.median(walls), min(cpus), out
