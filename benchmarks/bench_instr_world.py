"""Instr World (PerfDoc/instr_world.csv) speed: rows per second and peak memory added.

    python benchmarks/bench_instr_world.py [--cores 8] [--per-engine 42000] [--repeat 3]

A synthetic Profile (reportgen.testing.profiles.make_profile: cores x (TIU, GDMA, SDMA) x
per_engine commands plus CDMA) is written to a temporary folder; the best of ``repeat`` runs is
reported (the machine is shared), with the size of the file and the peak RSS growth.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc

from reportgen.testing.profiles import make_profile
from reportgen.writers import instr_world


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--per-engine", type=int, default=42_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    profile = make_profile(cores=args.cores, per_engine=args.per_engine)
    n = len(profile.commands)
    best, cpu = float("inf"), float("inf")
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            path = instr_world.write(profile, out)
            best, cpu = min(best, time.perf_counter() - t), min(cpu, time.process_time() - c)
        size = os.path.getsize(path)
        tracemalloc.start()                 # numpy's buffers are traced too
        instr_world.write(profile, out)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(f"{n:,} commands: best {best:.2f} s wall = {n / best:,.0f} rows/s "
          f"({n / cpu:,.0f} rows per CPU second), {size / 1e6:.1f} MB written, "
          f"peak memory allocated while writing {peak / 1e6:.0f} MB "
          f"(the commands frame: {profile.commands.memory_usage(deep=True).sum() / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
