"""Load and analysis time of one framework trace, fastest of N (each run in this process).

    python benchmarks/bench_framework.py TRACE [--repeat 3] [--profile analysis|load]

Run it with PYTHONPATH pointing at another checkout to compare two versions on the same input
(the reportgen that is imported is printed). ``--profile`` prints the cProfile of one more run
of that stage (top 25 by cumulative time). Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import reportgen
from reportgen import pipeline
from reportgen.options import Options


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", choices=("load", "analysis"))
    a = ap.parse_args()
    options = Options(input=a.trace)
    print("reportgen from", reportgen.__file__)
    loads, analyses = [], []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        profile = pipeline.load(options)
        t1 = time.perf_counter()
        pipeline.analyse(profile, options)
        t2 = time.perf_counter()
        loads.append(t1 - t0)
        analyses.append(t2 - t1)
    print(f"load     fastest {min(loads):.2f} s  ({', '.join(f'{t:.2f}' for t in loads)})")
    print(f"analysis fastest {min(analyses):.2f} s  ({', '.join(f'{t:.2f}' for t in analyses)})")
    if a.profile:
        prof = cProfile.Profile()
        if a.profile == "load":
            prof.runcall(pipeline.load, options)
        else:
            profile = pipeline.load(options)
            prof.runcall(pipeline.analyse, profile, options)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
