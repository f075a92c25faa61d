"""What the roofline and the local-memory view cost at scale (issue 26).

    python benchmarks/bench_hardware.py                   # decoded mode-2 dump, 8 cores x 137,500
    python benchmarks/bench_hardware.py --per-core 20000  # smaller
    python benchmarks/bench_hardware.py --profile         # make_profile (no descriptors): roofline only
    python benchmarks/bench_hardware.py --no-limit        # the local-memory view above MAX_COMMANDS too
    python benchmarks/bench_hardware.py --dump DIR        # an existing dump (e.g. benchmarks/_work/...)

On a decoded synthetic mode-2 dump (reportgen.testing.synth, cached under benchmarks/_work like
bench_pipeline): the descriptors give every TIU and DMA command its local-memory accesses. Prints,
for each part, the fastest and median wall time and the CPU time (the machine may be shared):
the register tables (assembled once; the workbook assembles them anyway below 200k commands),
the roofline, the local-memory view, and the writers' added parts (summary.json keys, workbook
sheets' tables, the page's block); then result.html's size with both blocks. Figures are
printed, never asserted.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reportgen.analysis import breakdown  # noqa: E402
from reportgen.analysis.chip import peaks_for  # noqa: E402
from reportgen.analysis.derive import derive  # noqa: E402
from reportgen.analysis import lmem  # noqa: E402
from reportgen.analysis.lmem import local_memory  # noqa: E402
from reportgen.analysis.lmem_access import accesses  # noqa: E402
from reportgen.analysis.roofline import roofline  # noqa: E402
from timing import measure  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--per-core", type=int, default=137_500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="make_profile instead of a dump")
    ap.add_argument("--dump", type=Path, help="an existing dump directory instead of the synthetic one")
    ap.add_argument("--no-limit", action="store_true",
                    help="lift analysis/lmem.py MAX_COMMANDS (measure the view above it)")
    args = ap.parse_args()
    if args.no_limit:
        lmem.MAX_COMMANDS = 1 << 62
    if args.profile:
        from reportgen.testing.profiles import make_profile
        p = make_profile(cores=args.cores, per_engine=args.per_core // 3)
    else:
        from reportgen.parsers.pmu import load_dump
        if args.dump is not None:
            p = load_dump(args.dump)
        else:
            from bench_pipeline import dump_for
            p = load_dump(dump_for(args.cores, args.per_core, 2))
    print(f"{len(p.commands):,} commands, {args.cores} cores")
    rows = []

    def run(label, fn, repeat=args.repeat):
        best, median, cpu, out = measure(fn, repeat)
        rows.append((label, best, median, cpu))
        print(f"{label:<34} {best:8.3f} s  median {median:8.3f} s  cpu {cpu:8.3f} s", flush=True)
        return out

    if not args.profile and len(p.commands) <= lmem.MAX_COMMANDS:
        run("register tables (once)", lambda: [p.registers[k] for k in list(p.registers)], 1)
    run("derive (whole analysis, with both)", lambda: derive(p), 1)
    a = breakdown.command_arrays(p.commands)
    roof = run("roofline", lambda: roofline(p, a, peaks_for(p.meta)))
    print(f"  {len(roof)} scopes")
    if not args.profile and len(p.commands) <= lmem.MAX_COMMANDS:
        acc = run("  lmem accesses", lambda: accesses(p))
        print(f"  {len(acc):,} accesses, {int((~acc['decoded']).sum()):,} not placed")
        lm = run("local memory (all of it)", lambda: local_memory(p))
        if lm is None:
            print("  not computed: above analysis/lmem.py MAX_COMMANDS (the warning says so)")
        else:
            print(f"  {int(lm.cores['accesses'].sum()):,} accesses, "
                  f"{int(lm.cores['conflict_candidates'].sum()):,} conflict candidates ({len(lm.conflicts):,} listed)")
    from reportgen.writers import html
    from reportgen.writers.hardware_text import hardware_document
    from reportgen.writers.html import hardware
    run("summary.json keys", lambda: hardware_document(p.diagnosis))
    from reportgen.writers.xlsx.hardware_sheets import hardware_sheets
    run("workbook tables", lambda: hardware_sheets(p.diagnosis))

    class Parts:
        template, data = {}, {}
    views = [{"id": f"core-{k}"} for k in range(args.cores)] + [{"id": "all"}]
    run("page block (roofline + lmem data)", lambda: hardware.attach(Parts, p, 0, views))
    with tempfile.TemporaryDirectory() as tmp:
        path = run("result.html (whole page)", lambda: html.write(p, p.summary, tmp, quiet=True), 1)
        size = path.stat().st_size
        import resource
        print(f"peak memory (max RSS) {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        print(f"result.html {size / 1e6:.2f} MB; roofline + lmem data in it "
              f"{(len(str(Parts.data.get('roofline', ''))) + len(Parts.data.get('lmem', {}).get('b64', ''))) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
