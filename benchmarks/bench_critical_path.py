"""Time of the dependency graph, critical path, waits and every what-if scenario
(analysis/why.py), and of the numba re-timing pass against a pure-numpy alternative.

    python benchmarks/bench_critical_path.py                  # decoded 8-core dump, 1.1M commands
    python benchmarks/bench_critical_path.py --dump 20000     # a smaller dump
    python benchmarks/bench_critical_path.py --dataflow --dump 3000   # dataflow-timed synth

The dump is a decoded synthetic mode-2 capture (reportgen.testing.synth, cached under
benchmarks/_work like bench_pipeline).  Parts: ``compile`` (numba: loading the cached machine
code, or compiling it when ``--cold`` empties numba's cache first, in a fresh process),
``graph`` (build_graph), ``order`` (in-edges + topological order), ``path``, ``waits``,
``scenarios`` (all of them), ``explain`` (everything as analysis.diagnosis runs it).

The numpy alternative re-times by passes: per-engine lanes are chains, so one pass computes
every lane's ends with a segmented ``maximum.accumulate`` given the cross-lane predecessors' ends
of the previous pass; passes repeat until nothing changes.  Its pass count grows with the number
of cross-lane hops on the longest chain (a pipelined kernel hops TIU<->GDMA every iteration), so
it is run for at most ``--max-passes`` and reported.  Figures are printed, never asserted; the
wall and CPU time are both shown, so a loaded machine can be told from a slow path.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import measure  # noqa: E402


def numpy_retime(g, dur, max_passes: int):
    """Fixpoint of lane passes (see the module doc); returns (span, passes, converged).

    Chains are lanes cut after each barrier wait (a wait's end follows its barrier, not its
    lane); the command after a wait takes the wait's end as a cross-lane input."""
    n = g.n
    lo = np.iinfo(np.int64).min // 4
    lane_key = np.where(g.engine == 3, (1 << 20) + g.port, g.core) * 8 + np.maximum(g.engine, 0)
    order = np.lexsort((g.end, g.start, lane_key))
    lk = lane_key[order]
    wait = g.barrier[order] >= 0
    new_lane = np.r_[True, lk[1:] != lk[:-1]]
    after_wait = np.r_[False, wait[:-1]] & ~new_lane
    first = new_lane | after_wait
    seg = np.cumsum(first) - 1
    a = g.gap[order] + dur[order]
    has_pred = (g.lane_pred[order] >= 0) | (g.dep_src[order] >= 0) | (g.launch_pred[order] >= 0)
    fixed_end = np.where(has_pred, lo, g.start[order] + dur[order])
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    dep = np.where(g.dep_src[order] >= 0, pos[np.maximum(g.dep_src[order], 0)], -1)
    lau = np.where(g.launch_pred[order] >= 0, pos[np.maximum(g.launch_pred[order], 0)], -1)
    prev = np.where(after_wait, np.arange(n) - 1, -1)            # a wait before, in the lane
    gap, lat, bar = g.gap[order], g.lat[order], g.barrier[order]
    A = np.cumsum(a)
    A_lane = A - (A - a)[np.flatnonzero(first)][seg]
    off = seg * (np.int64(1) << 45)
    end = g.start[order] + dur[order]
    for passes in range(1, max_passes + 1):
        X = np.maximum.reduce([np.where(k >= 0, end[np.maximum(k, 0)], lo) for k in (dep, lau, prev)])
        b = np.where(X > lo, X + a, fixed_end)
        run = np.maximum.accumulate(b - A_lane + off) - off
        chain = A_lane + run
        # barrier waits: end = release + lat, release = the latest start of the barrier's waits
        start_w = np.maximum(np.where(first, lo, np.r_[lo, chain[:-1]]), X) + gap
        rel = np.full(max(len(g.release_row), 1), lo)
        np.maximum.at(rel, bar[wait], start_w[wait])
        new_end = np.where(wait, rel[np.maximum(bar, 0)] + lat, chain)
        if np.array_equal(new_end, end):
            return int(new_end.max() - g.start.min()), passes, True
        end = new_end
    return int(end.max() - g.start.min()), max_passes, False


def cold_compile() -> tuple[float, float]:
    """numba compile time of analysis/retime.py in a fresh process with an empty cache."""
    import reportgen.analysis.retime as rt
    cache = Path(rt.__file__).parent / "__pycache__"
    for f in cache.glob("retime.*.nb*"):
        f.unlink()
    code = ("import time; t, c = time.perf_counter(), time.process_time(); "
            "from reportgen.analysis import retime; retime.compile_all(); "
            "print(time.perf_counter() - t, time.process_time() - c)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    wall, cpu = out.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--dump", type=int, default=137_500, help="commands per core of a decoded dump")
    ap.add_argument("--dataflow", action="store_true", help="dataflow-timed synthetic dump (slow to make)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-passes", type=int, default=60)
    ap.add_argument("--cold", action="store_true", help="measure numba's compile with an empty cache")
    args = ap.parse_args()
    if args.cold:
        wall, cpu = cold_compile()
        print(f"numba compile (empty cache, fresh process): {wall:.2f} s (cpu {cpu:.2f} s)")
    t, cpu = time.perf_counter(), time.process_time()
    from reportgen.analysis import retime
    from reportgen.analysis.critical_path import critical_path
    from reportgen.analysis.depgraph import build_graph
    from reportgen.analysis.waits import waits
    from reportgen.analysis.whatif import Retimer, label_groups, scenarios, what_if
    from reportgen.analysis.why import explain
    from reportgen.parsers.pmu import load_dump
    retime.compile_all()
    print(f"numba: import + load the cached machine code: {time.perf_counter() - t:.3f} s "
          f"(cpu {time.process_time() - cpu:.3f} s)")
    if args.dataflow:
        from reportgen.testing.synth import SynthConfig, write_dump
        work = Path(__file__).parent / "_work" / f"dataflow_{args.cores}x{args.dump}"
        if not (work / "cdm_profile_data_dev0-0").exists():
            shutil.rmtree(work, ignore_errors=True)
            write_dump(work, SynthConfig(cores=args.cores, cmds_per_core=args.dump, mode=2, seed=1,
                                         dataflow=True, cdma_ports=(), write_truth=False))
        p = load_dump(str(work / "cdm_profile_data_dev0-0"))
    else:
        from bench_pipeline import dump_for
        p = load_dump(dump_for(args.cores, args.dump, 2))
    c = p.commands
    print(f"{len(c):,} commands, {args.cores} cores; machine shared (loaded): see CPU vs wall")
    rows = []
    w = measure(lambda: build_graph(c), args.repeat)
    rows.append(("graph", w))
    g = w[3]
    labels = label_groups(c)
    w = measure(lambda: Retimer(g, labels), args.repeat)
    rows.append(("order + layout", w))
    rt = w[3]
    rows.append(("path", measure(lambda: critical_path(g, c), args.repeat)))
    rows.append(("waits", measure(lambda: waits(g, c), args.repeat)))
    scens = scenarios(g, rt, labels)
    w = measure(lambda: what_if(rt, scens), args.repeat)
    rows.append((f"scenarios ({len(scens)})", w))
    gdma2 = rt.engine_table(1, None, 2.0)
    rows.append(("one re-timing", measure(lambda: rt.span("engine_core", gdma2), args.repeat)))
    rows.append(("explain (all)", measure(lambda: explain(p), args.repeat)))
    print(f"{'part':<22}{'best s':>9}{'median s':>10}{'cpu s':>8}")
    for name, (best, med, cpu, _) in rows:
        print(f"{name:<22}{best:>9.3f}{med:>10.3f}{cpu:>8.3f}")
    dur = np.where(~g.is_sys & (g.engine == 1), np.rint((g.end - g.start) / 2.0).astype(np.int64), g.end - g.start)
    t, cpu = time.perf_counter(), time.process_time()
    span, passes, ok = numpy_retime(g, dur, args.max_passes)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    numba_span = rt.span("engine_core", gdma2)
    print(f"numpy fixpoint, GDMA 2x: {passes} passes in {wall:.2f} s (cpu {cpu:.2f} s), "
          f"{'converged' if ok else 'NOT converged'}; span {span:,} vs numba pass {numba_span:,}")


if __name__ == "__main__":
    main()
