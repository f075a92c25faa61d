"""Ascend folder at scale: the shared 591-row kernel_details.csv (ArithmeticUtilization PMU
columns) repeated ``--copies`` times, each copy shifted 2 s later, in a tmp
``ASCEND_PROFILER_OUTPUT``; times reading (``load_ascend``) and deriving every table
(``derive``: Kernels, Kernel Shapes, Accelerator Core Utilization, Device lanes, ...), wall and
CPU, and the process's peak RSS. Run it against another checkout with ``PYTHONPATH=<tree>``.

    nice python benchmarks/bench_ascend.py --copies 340      # ~200k tasks
"""
from __future__ import annotations

import argparse
import csv
import resource
import tempfile
import time
from decimal import Decimal
from pathlib import Path

SAMPLE = (Path(__file__).resolve().parents[2] / "shared/data/framework/ascend-msprof-analyze/ut/advisor/"
          "advisor_backend/compute_advice/kernel_details.csv")


def make_folder(root: Path, copies: int) -> Path:
    rows = list(csv.reader(open(SAMPLE, encoding="utf-8-sig")))
    head, body = rows[0], rows[1:]
    start = head.index("Start Time(us)")
    apo = root / "ASCEND_PROFILER_OUTPUT"
    apo.mkdir(parents=True)
    with open(apo / "kernel_details.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        for k in range(copies):
            shift = Decimal(k) * 2_000_000
            for r in body:
                w.writerow(r[:start] + [str(Decimal(r[start]) + shift)] + r[start + 1:])
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=340)
    args = ap.parse_args()
    from reportgen.analysis.derive import derive
    from reportgen.parsers.ascend import load_ascend

    with tempfile.TemporaryDirectory() as tmp:
        folder = make_folder(Path(tmp), args.copies)
        t0, c0 = time.perf_counter(), time.process_time()
        profile = load_ascend(folder)
        t1, c1 = time.perf_counter(), time.process_time()
        derive(profile)
        t2, c2 = time.perf_counter(), time.process_time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(profile.commands)} tasks: load {t1 - t0:.2f} s wall / {c1 - c0:.2f} s CPU, "
          f"derive {t2 - t1:.2f} s wall / {c2 - c1:.2f} s CPU, peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
