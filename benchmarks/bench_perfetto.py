"""Time and size of perfetto.pftrace for a synthetic profile (default 10^6 commands).

    PYTHONPATH=. python benchmarks/bench_perfetto.py [--cores 8] [--per-engine 41667] [--decode]
    PYTHONPATH=. python benchmarks/bench_perfetto.py --synth 80000 [--cores 8] [--runs 3]

Prints build time of the profile (not counted), write time (wall and CPU), file size (bytes per
command), gzip size estimate and the RSS growth while writing; ``--decode`` also decodes the file
with perfetto_trace_pb2 and counts the slices.  ``--fork``: each write in a forked child, as the
pipeline runs its writers: the child's CPU time and peak RSS (VmHWM, which includes the pages
of the profile it reads) are reported instead.  ``--synth N``: the profile of a synthetic mode-2
PMU capture of N commands per core (``reportgen-synth``, cached under benchmarks/_work), loaded
and analysed as a run does, instead of ``make_profile``.
"""
from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import threading
import time
from pathlib import Path

from reportgen.analysis.metrics import engine_summary
from reportgen.testing.profiles import make_profile
from reportgen.writers import perfetto


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakRss(threading.Thread):
    """Samples this process's RSS every 20 ms (ru_maxrss would include the profile build)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self.running = rss_mb(), True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, rss_mb())
            time.sleep(0.02)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--per-engine", type=int, default=41_667)   # 8 x 3 x 41667 + CDMA ~ 1.01e6
    ap.add_argument("--decode", action="store_true")
    ap.add_argument("--synth", type=int, metavar="N", help="a synthetic mode-2 capture, N commands per core")
    ap.add_argument("--runs", type=int, default=1, help="writes (the fastest is shown)")
    ap.add_argument("--fork", action="store_true", help="write in a forked child, report its CPU and peak RSS")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.synth:
        prof, summary = synth_profile(args.cores, args.synth)
    else:
        prof = make_profile(cores=args.cores, per_engine=args.per_engine, seed=1)
        summary = engine_summary(prof)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        rss0 = rss_mb()
        sampler = PeakRss()
        sampler.start()
        best = None
        child_peak = []
        for _ in range(args.runs):
            c2, t2 = time.process_time(), time.perf_counter()
            if args.fork:
                out, cpu, peak = forked_write(prof, summary, tmp)
                child_peak.append(peak)
            else:
                out = perfetto.write(prof, summary, tmp, quiet=True)
                cpu = time.process_time() - c2
            t3 = time.perf_counter()
            best = min(best or (t3 - t2, cpu), (t3 - t2, cpu))
        wall, cpu = best
        sampler.running = False
        sampler.join()
        size = out.stat().st_size
        data = out.read_bytes()
        gz = len(gzip.compress(data, 6))
        n = len(prof.commands)
        memory = (f"writer child's peak RSS +{max(child_peak):,.0f} MB over the parent's at the fork"
                  if args.fork else
                  f"RSS before {rss0:.0f} MB, peak while writing +{sampler.peak - rss0:.0f} MB")
        print(f"commands {n:,}  profile {t1 - t0:.1f}s  write {wall:.2f}s (CPU {cpu:.2f}s) "
              f"({n / wall:,.0f} cmd/s)  size {size / 1e6:.1f} MB ({size / n:.1f} B/cmd), "
              f"gzip {gz / 1e6:.1f} MB  {memory}")
        if args.decode:
            from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
            t4 = time.perf_counter()
            trace = pb.Trace.FromString(data)
            begins = sum(1 for p in trace.packet if p.HasField("track_event") and p.track_event.type == 1)
            print(f"decode {time.perf_counter() - t4:.1f}s  slice begins {begins:,}")


def forked_write(prof, summary, out_dir):
    """perfetto.write in a forked child: (path, the child's CPU seconds, its peak RSS in MB minus
    the parent's RSS at the fork: what the write added)."""
    read, write = os.pipe()
    at_fork = rss_mb()
    before = os.times()
    pid = os.fork()
    if pid == 0:                                          # the child: write, report VmHWM
        os.close(read)
        try:
            perfetto.write(prof, summary, out_dir, quiet=True)
            with open("/proc/self/status") as fh:
                hwm = next(line.split()[1] for line in fh if line.startswith("VmHWM"))
            os.write(write, hwm.encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    after = os.times()
    with os.fdopen(read, "rb") as fh:
        peak_kb = int(fh.read() or 0)
    cpu = after.children_user - before.children_user + after.children_system - before.children_system
    return Path(out_dir) / perfetto.FILE_NAME, cpu, peak_kb / 1024 - at_fork


def synth_profile(cores: int, per_core: int):
    """Profile and engine summary of a synthetic mode-2 capture, loaded and analysed as a run."""
    from bench_pipeline import dump_for
    from reportgen.analysis.derive import derive
    from reportgen.parsers.detect import load_profile

    prof = load_profile(str(dump_for(cores, per_core, 2)), quiet=True)
    return prof, derive(prof, categories={"monitor": None, "launch": None, "device": None})


if __name__ == "__main__":
    main()
