"""Decoder speed per command on each chip, on the same workload shape (issue 25).

    python benchmarks/bench_chips.py [--commands 300000] [--repeat 3]

For AKS (aks-m2-c8), BM1688 (bm1688-m2-c2) and CV84X6 (cv84x6-m2-c4) a dump of about
``--commands`` commands is made by repeating the golden case's workload
(benchmarks/replicate_dump.py); each is decoded in fresh child processes: ``read_dump`` (decode:
bytes -> arrays) and ``build_profile`` (model: binding, alignment, description). Printed: the
fastest wall and CPU time of each, and µs per command of the two together, with the ratios to
AKS (on a loaded machine the CPU ratio is the steadier one). Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
WORK = ROOT / "benchmarks" / "_work" / "chips"
PMU = ROOT.parent / "shared" / "data" / "pmu"
CASES = {"AKS": "aks-m2-c8", "BM1688": "bm1688-m2-c2", "CV84X6": "cv84x6-m2-c4"}

CHILD = r"""
import json, resource, sys, time
from reportgen.parsers.pmu import build_profile, read_dump
cpu = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(resource.RUSAGE_SELF).ru_stime
t, c = time.perf_counter(), cpu(); raw = read_dump(sys.argv[1])
decode, decode_cpu = time.perf_counter() - t, cpu() - c
t, c = time.perf_counter(), cpu(); p = build_profile(raw)
model, model_cpu = time.perf_counter() - t, cpu() - c
print(json.dumps({"decode": decode, "decode_cpu": decode_cpu, "model": model, "model_cpu": model_cpu,
                  "commands": len(p.commands)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commands", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from replicate_dump import replicate
    from reportgen.parsers.pmu import load_dump

    rows = {}
    for chip, case in CASES.items():
        per_copy = len(load_dump(PMU / case / "input").commands)
        copies = max(1, args.commands // per_copy)
        dump = replicate(PMU / case, WORK / case, copies)
        runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD, str(dump)], check=True,
                                          capture_output=True, text=True, cwd=ROOT).stdout)
                for _ in range(args.repeat)]
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        best["us_per_cmd"] = (best["decode"] + best["model"]) / best["commands"] * 1e6
        best["cpu_us_per_cmd"] = (best["decode_cpu"] + best["model_cpu"]) / best["commands"] * 1e6
        rows[chip] = best
    base = rows["AKS"]
    print(f"{'chip':8} {'commands':>9} {'decode s':>9} {'cpu':>7} {'model s':>8} {'cpu':>7} "
          f"{'µs/cmd':>7} {'cpu µs/cmd':>10} {'vs AKS':>7} {'cpu vs AKS':>10}")
    for chip, r in rows.items():
        print(f"{chip:8} {r['commands']:>9,} {r['decode']:>9.3f} {r['decode_cpu']:>7.3f} "
              f"{r['model']:>8.3f} {r['model_cpu']:>7.3f} {r['us_per_cmd']:>7.3f} "
              f"{r['cpu_us_per_cmd']:>10.3f} {r['us_per_cmd'] / base['us_per_cmd']:>7.2f} "
              f"{r['cpu_us_per_cmd'] / base['cpu_us_per_cmd']:>10.2f}")


if __name__ == "__main__":
    main()
