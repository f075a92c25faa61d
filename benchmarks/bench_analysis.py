"""CPU time of every analysis of the analysis stage (``pipeline.analyse`` -> analysis/derive.py),
and the memory the stage takes at its peak and keeps when it ends.

    python benchmarks/bench_analysis.py                      # 8 cores x 80,000 commands (mode 2)
    python benchmarks/bench_analysis.py --dump 390000        # the --size max capture (3.3M)
    python benchmarks/bench_analysis.py --input DUMP_FOLDER  # any input
    python benchmarks/bench_analysis.py --memory             # peak / retained bytes instead (tracemalloc)

The dump is the decoded synthetic mode-2 capture of bench_pipeline (cached under benchmarks/_work).
In a fresh process, like the pipeline: the imports of the analysis modules and the loading of
the compiled passes (numba cache, analysis/retime.py) are timed first, then ``derive`` runs
``--repeat`` times on the parsed profile, each analysis timed through a wrapper around the
module-level name its caller uses (no change to the code measured).  The table shows, per
analysis (indented under its caller), the CPU seconds of the first run (what a report pays) and
the best of the runs. CPU time is the figure to trust on a loaded machine; wall is printed for the
whole stage. ``--memory`` instead runs derive once under tracemalloc (numpy reports its buffers to
it): per analysis and for the whole stage the peak above what was allocated when it began, and
what is still allocated when derive returns (what the forked writers inherit). Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: (module, name) of every analysis timed, in call order; the caller is the module whose global
#: ``name`` is replaced, so a function is timed where that caller calls it
PARTS = (
    ("derive", "attach_framework_tables"), ("derive", "align_host_trace"),
    ("derive", "engine_summary"), ("derive", "build_layer_view"), ("derive", "diagnose"),
    ("diagnosis", "command_arrays"), ("diagnosis", "breakdowns"), ("diagnosis", "device_calls"),
    ("diagnosis", "host_calls"), ("diagnosis", "kernel_table"), ("diagnosis", "overlap"),
    ("diagnosis", "roofline"), ("diagnosis", "local_memory"), ("diagnosis", "findings"),
    ("diagnosis", "explain"),
    ("why", "build_graph"), ("depgraph", "descriptor_dependencies"), ("depgraph", "_launch_pred"),
    ("depgraph", "barrier_groups"), ("depgraph", "prev_on_core"),
    ("why", "label_groups"), ("why", "Retimer"), ("why", "scenarios"), ("why", "what_if"),
    ("why", "critical_path"), ("why", "waits"), ("why", "_path_by_layer"),
    ("diagnosis", "rank_by_gain"),
    ("derive", "lane_summary"), ("derive", "diagnose_framework"), ("derive", "run_digest"),
)


def _modules():
    from reportgen.analysis import depgraph, derive, diagnosis, why
    return {"derive": derive, "diagnosis": diagnosis, "why": why, "depgraph": depgraph}


def instrument(cpu: dict, calls: dict) -> list:
    """Wrap every part; returns the (module, name, original) to restore."""
    mods, undo = _modules(), []
    for mod, name in PARTS:
        m = mods[mod]
        if not hasattr(m, name):
            continue
        fn = getattr(m, name)

        def timed(*a, _fn=fn, _key=f"{mod}.{name}", **k):
            c = time.process_time()
            try:
                return _fn(*a, **k)
            finally:
                cpu[_key] += time.process_time() - c
                calls[_key] += 1

        setattr(m, name, timed)
        undo.append((m, name, fn))
    return undo


def level(key: str) -> str:
    mod = key.split(".")[0]
    return {"derive": "", "diagnosis": "  ", "why": "    ", "depgraph": "      "}[mod]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--dump", type=int, default=80_000, help="commands per core of the synthetic dump")
    ap.add_argument("--input", help="any input instead of the synthetic dump")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory", action="store_true", help="also peak / retained memory (tracemalloc)")
    args = ap.parse_args()
    from reportgen.parsers.detect import load_profile
    from reportgen.textsafe import clean_profile
    if args.input:
        source = Path(args.input)
    else:
        from bench_pipeline import dump_for
        source = dump_for(args.cores, args.dump, 2)
    profile = load_profile(str(source), quiet=True)
    clean_profile(profile)
    print(f"{source}: {len(profile.commands):,} commands")

    c0 = time.process_time()
    from reportgen.analysis.derive import derive
    c1 = time.process_time()
    from reportgen.analysis.retime import compile_all
    compile_all()
    c2 = time.process_time()
    print(f"{'imports of the analysis modules':44s} {c1 - c0:8.3f} s CPU")
    print(f"{'compiled passes loaded (numba cache)':44s} {c2 - c1:8.3f} s CPU")

    if args.memory:
        memory(derive, profile)
        return
    runs = []
    for _ in range(args.repeat):
        cpu, calls = defaultdict(float), defaultdict(int)
        undo = instrument(cpu, calls)
        w, c = time.perf_counter(), time.process_time()
        try:
            derive(profile)
        finally:
            for m, name, fn in undo:
                setattr(m, name, fn)
        cpu["derive (the whole stage)"] = time.process_time() - c
        cpu["wall"] = time.perf_counter() - w
        runs.append((cpu, calls))
    first, _ = runs[0]
    print(f"{'analysis':44s} {'first':>8s} {'best':>8s}  (CPU s; {args.repeat} runs)")
    for key in ["derive (the whole stage)", *(f"{m}.{n}" for m, n in PARTS)]:
        if key not in first:
            continue
        name = key if key.startswith("derive (") else level(key) + key.split(".")[1]
        n = runs[0][1].get(key, 1)
        label = f"{name} (x{n})" if n > 1 else name
        print(f"{label:44s} {first[key]:8.3f} {min(r[0][key] for r in runs):8.3f}")
    print(f"{'wall of the whole stage':44s} {first['wall']:8.3f} {min(r[0]['wall'] for r in runs):8.3f}"
          "  (machine load shows here)")


def _status(field: str) -> int:
    """A /proc/self/status figure in kB."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field + ":"))


def memory(derive, profile) -> None:
    """One run of derive under tracemalloc: per analysis (and the whole stage) the peak it
    reached above what was allocated when it began, and what stays allocated after derive."""
    import gc
    import tracemalloc
    peaks: dict[str, int] = {}
    stack: list[list[int]] = []          # per running analysis: [allocated at its start, peak]

    def traced(fn, key):
        def run(*a, **k):
            now, peak = tracemalloc.get_traced_memory()
            if stack:
                stack[-1][1] = max(stack[-1][1], peak)
            stack.append([now, now])
            tracemalloc.reset_peak()
            try:
                return fn(*a, **k)
            finally:
                begin, top = stack.pop()
                top = max(top, tracemalloc.get_traced_memory()[1])
                peaks[key] = max(peaks.get(key, 0), top - begin)
                if stack:
                    stack[-1][1] = max(stack[-1][1], top)
                tracemalloc.reset_peak()
        return run

    mods, undo = _modules(), []
    for mod, name in PARTS:
        if hasattr(mods[mod], name):
            fn = getattr(mods[mod], name)
            setattr(mods[mod], name, traced(fn, f"{mod}.{name}"))
            undo.append((mods[mod], name, fn))
    gc.collect()
    rss_before = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:       # the resident peak from here on
        fh.write("5")
    tracemalloc.start()
    try:
        traced(derive, "derive (the whole stage)")(profile)
    finally:
        for m, name, fn in undo:
            setattr(m, name, fn)
    gc.collect()
    now = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"derive: retained after it {now / 2**20:,.0f} MB above the parsed profile "
          "(inherited by the forked writers)")
    print(f"process resident: {rss_before / 2**10:,.0f} MB before derive, peak {_status('VmHWM') / 2**10:,.0f} MB "
          f"during it, {_status('VmRSS') / 2**10:,.0f} MB after it (pages never touched, e.g. the "
          "path walk's worst-case buffers, count in the peaks below but not here)")
    import ctypes
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    print(f"  after malloc_trim(0) (the heap's free memory handed back): {_status('VmRSS') / 2**10:,.0f} MB")
    print(f"{'analysis':44s} {'peak MB':>8s}  (above what was allocated when it began)")
    for key in ["derive (the whole stage)", *(f"{m}.{n}" for m, n in PARTS)]:
        if key in peaks:
            name = key if key.startswith("derive (") else level(key) + key.split(".")[1]
            print(f"{name:44s} {peaks[key] / 2**20:8.0f}")

if __name__ == "__main__":
    main()
