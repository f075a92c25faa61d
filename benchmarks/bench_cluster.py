"""Batch (cluster) mode at scale: N synthetic dumps through Dask, with 1 and 2 workers.

    python benchmarks/bench_cluster.py --dumps 64 --cores 8 --cmds 10000 --workers 1 2
    python benchmarks/bench_cluster.py --dumps 16 32 64 --workers 2 --outputs summary   # memory
    python benchmarks/bench_cluster.py --dumps 8 --workers 1 2 --repeat 3    # what a 2nd worker buys

Measures, per (dumps, workers): wall time, dumps/s and commands/s, the client's peak RSS (the
run happens in a fresh child process so ru_maxrss is that run's own), and the cluster report's
own time (analysis + index.html, cluster.xlsx, cluster.json), and the CPU time of the run's whole
process tree (client and workers); with several --workers, the speed-up of each over the first
(median wall times of --repeat alternating runs: on a loaded machine read the CPU times too). Every device runs the same
synthetic program with a TIU clock between 995 and 1005 MHz; one dump is planted as a straggler
(its conv kernels' TIU time x3) and the run checks that the cluster report names it, alone.
Dumps are generated once into --cache and reused.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STRAGGLER = 5        # index of the planted straggler


def make_dumps(cache: Path, n: int, cores: int, cmds: int) -> Path:
    """``cache/run-N-C-K/node{i // 8}/cdm_profile_data_dev{i % 8}-0``, made once."""
    from reportgen.testing.synth import SynthConfig, write_dump

    run = cache / f"run2-{n}-{cores}-{cmds}"
    done = run / ".complete"
    if done.exists():
        return run
    shutil.rmtree(run, ignore_errors=True)
    t0 = time.perf_counter()
    for i in range(n):
        slow = dict(slow_kernel="conv", slow_factor=3) if i == STRAGGLER else {}
        # every device runs the same program (one seed); their TIU clocks differ by up to 1 %
        write_dump(run / f"node{i // 8}", SynthConfig(cores=cores, cmds_per_core=cmds, seed=100,
                                                      tiu_freq=995 + i % 11,
                                                      dump_name=f"cdm_profile_data_dev{i % 8}-0",
                                                      write_truth=False, **slow))
    for meta in run.glob("node*/generator_meta.json"):
        meta.unlink()
    done.write_text("")
    print(f"made {n} dumps in {time.perf_counter() - t0:.1f} s: {run}", file=sys.stderr)
    return run


def child(run: Path, out: Path, n: int, workers: int, outputs: str) -> dict:
    """One batch run in this (fresh) process: what the client holds and how long each part takes."""
    from reportgen import batch
    from reportgen.analysis.cluster import cluster_analysis
    from reportgen.options import Options
    from reportgen.writers.cluster import write_cluster

    every = outputs == "all"
    options = Options(input=str(run), output=str(out), jobs=workers, quiet=True,
                      workbook=every, perfetto=every, web=every or "web" in outputs,
                      summary=True)
    dumps = batch.find_dumps(run)[:n]
    runs = [(options.replace(input=str(d.resolve()), output=str((out / d.relative_to(run)).resolve()),
                             jobs=1), d.relative_to(run).as_posix(), "dump") for d in dumps]
    t0 = time.perf_counter()
    results, _ = batch.run_tasks(runs, options)
    t1 = time.perf_counter()
    cluster = cluster_analysis(results)
    write_cluster(out, cluster, results)
    t2 = time.perf_counter()
    commands = sum(r.meta.get("commands", 0) for r in results)
    return {"dumps": len(dumps), "workers": workers, "outputs": outputs, "failed": cluster.failed,
            "tasks_s": round(t1 - t0, 2), "cluster_report_s": round(t2 - t1, 3),
            "dumps_per_s": round(len(dumps) / (t1 - t0), 3),
            "commands_per_s": round(commands / (t1 - t0)), "commands": commands,
            "client_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "stragglers": cluster.stragglers["name"].tolist()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dumps", type=int, nargs="+", default=[64])
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--cmds", type=int, default=10000, help="commands per core")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--outputs", default="all", choices=("all", "summary", "summary+web"))
    ap.add_argument("--repeat", type=int, default=1, help="alternating runs of each worker count")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "reportgen-bench-cluster"))
    ap.add_argument("--child", nargs=5, metavar=("RUN", "OUT", "N", "WORKERS", "OUTPUTS"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        run, out, n, workers, outputs = a.child
        print(json.dumps(child(Path(run), Path(out), int(n), int(workers), outputs)))
        return 0
    cache = Path(a.cache)
    rows = []
    # one set of the largest size; smaller runs take its first dumps (the straggler is among them)
    run = make_dumps(cache, max(a.dumps), a.cores, a.cmds)
    for n in a.dumps:
        planted = f"node{STRAGGLER // 8}/cdm_profile_data_dev{STRAGGLER % 8}-0"
        walls: dict[int, list[float]] = {w: [] for w in a.workers}
        for _ in range(a.repeat):
            for w in a.workers:        # alternating: a load that comes and goes hits every count
                out = cache / f"out-{n}-{w}"
                shutil.rmtree(out, ignore_errors=True)
                cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                res = subprocess.run([sys.executable, __file__, "--child", str(run), str(out), str(n),
                                      str(w), a.outputs], capture_output=True, text=True)
                cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                if res.returncode:
                    print(res.stderr, file=sys.stderr)
                    return res.returncode
                row = json.loads(res.stdout.strip().splitlines()[-1])
                row["tree_cpu_s"] = round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 2)
                row["planted_straggler_named"] = row["stragglers"] == [planted]
                rows.append(row)
                walls[w].append(row["tasks_s"])
                print(json.dumps(row), flush=True)
                shutil.rmtree(out, ignore_errors=True)
        first = a.workers[0]
        for w in a.workers[1:]:
            print(f"{n} dumps: {w} workers {statistics.median(walls[w]):.2f} s vs {first} "
                  f"{statistics.median(walls[first]):.2f} s (median of {a.repeat}): "
                  f"{statistics.median(walls[first]) / statistics.median(walls[w]):.2f}x", flush=True)
    return 0 if all(r["planted_straggler_named"] and not r["failed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
