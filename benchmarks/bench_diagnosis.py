"""Time of the diagnosis (analysis/diagnosis.py) against the engine summary it follows.

    python benchmarks/bench_diagnosis.py                 # 8 cores, ~1.1M commands, 5 repeats
    python benchmarks/bench_diagnosis.py --per-engine 10000 --repeat 3
    python benchmarks/bench_diagnosis.py --dump 137500      # a decoded synthetic 8-core dump

On a synthetic Profile (reportgen.testing.profiles.make_profile: kernel names and scopes on every
command, system commands mixed in), or with ``--dump N`` on a decoded synthetic mode-2 dump of 8
cores x N commands (reportgen.testing.synth, cached under benchmarks/_work like bench_pipeline). Prints the fastest and median wall time and the CPU time of
each part, so a loaded machine can be told from a slow path. Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reportgen.analysis import breakdown, diagnosis, kernel_calls, overlap  # noqa: E402
from reportgen.analysis.metrics import engine_summary  # noqa: E402
from reportgen.testing.profiles import make_profile  # noqa: E402
from timing import measure  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--per-engine", type=int, default=46_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dump", type=int, default=0, help="commands per core of a decoded dump")
    args = ap.parse_args()
    if args.dump:
        from bench_pipeline import dump_for
        from reportgen.parsers.pmu import load_dump
        p = load_dump(dump_for(args.cores, args.dump, 2))
    else:
        p = make_profile(cores=args.cores, per_engine=args.per_engine)
    p.summary = engine_summary(p)
    a = breakdown.command_arrays(p.commands)
    ncores = args.cores
    parts = {
        "engine_summary (before)": lambda: engine_summary(p),
        "diagnose (all of it)": lambda: diagnosis.diagnose(p),
        "  command arrays": lambda: breakdown.command_arrays(p.commands),
        "  breakdowns (type + name)": lambda: breakdown.breakdowns(p, a),
        "  device kernel calls": lambda: kernel_calls.device_calls(p, a),
        "  overlap + stretches": lambda: overlap.overlap(a, ncores),
    }
    print(f"{len(p.commands):,} commands, {ncores} cores, {args.repeat} repeats")
    print(f"{'part':30s} {'best s':>8s} {'median s':>9s} {'cpu s':>7s}")
    for name, fn in parts.items():
        best, median, cpu, _ = measure(fn, args.repeat)
        print(f"{name:30s} {best:8.3f} {median:9.3f} {cpu:7.3f}")


if __name__ == "__main__":
    main()
