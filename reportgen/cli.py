"""`bigTpuProfile INPUT [OUT]`: command-line compatible with the vendor tool 0.3.0 and 0.3.7.

Outputs (all on by default; see README "Outputs and options"):
  OUT/summary.txt + summary.json      off with --disable_summary
  OUT/PerfDoc/PerfAI_output.xlsx      off with --disable_doc (--enable_doc accepted: 0.3.7 spelling)
  OUT/*RegInfo_*.txt                  with the workbook up to 200k commands; --reginfo on|off
  OUT/tables/*.csv, host_device.csv   framework traces: every analysis table, the seed tool's CSV
  OUT/PerfWeb/result.html             off with --disable_web
  OUT/perfetto.pftrace                off with --no_perfetto (--perfetto accepted: 0.3.0 spelling)

A user mistake (bad input, bad option) prints one line and exits non-zero; a writer failure
exits 3 and leaves no half-written file (every output is written under a temporary name).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

from reportgen import parallel
from reportgen.errors import OutputError, ReportgenError
from reportgen.writers.atomic import staged_dir


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bigTpuProfile",
        description="Profile reports (xlsx, html, perfetto, summary) from a TPU PMU dump "
                    "directory or a framework trace.")
    p.add_argument("input", help="PMU dump directory (cdm_profile_data_devX-Y/), chrome trace JSON, "
                   "Ascend ASCEND_PROFILER_OUTPUT or MindSpore profiler folder")
    p.add_argument("output", nargs="?", default="profile_out", help="output folder (default: profile_out)")
    p.add_argument("--disable_web", action="store_true", help="do not write PerfWeb/result.html")
    p.add_argument("--disable_doc", action="store_true", help="do not write the xlsx and RegInfo files")
    p.add_argument("--enable_doc", action="store_true", help="(0.3.7) write the xlsx and RegInfo files: on by default")
    p.add_argument("--perfetto", action="store_true", help="(0.3.0) write perfetto.pftrace: on by default")
    p.add_argument("--no_perfetto", action="store_true", help="do not write perfetto.pftrace")
    p.add_argument("--disable_summary", action="store_true", help="do not write summary.txt/summary.json")
    p.add_argument("--trace_file", metavar="F", help="host chrome trace (tpudnn/PyTorch JSON, .gz) to "
                   "merge above the device timeline")
    p.add_argument("--tiu_freq", type=float, metavar="MHZ", help="TIU clock in MHz (default: tpu_freq "
                   "from global.profile, else the chip default)")
    p.add_argument("--num_core", type=int, metavar="N", help="(0.3.0) accepted for compatibility; the "
                   "core count comes from the dump")
    p.add_argument("--registers", choices=("auto", "on", "off"), default="auto",
                   help="register columns in the workbook (auto: only below ~200k commands)")
    p.add_argument("--reginfo", choices=("auto", "on", "off"), default="auto",
                   help="RegInfo text files (auto: with the workbook, up to %d commands: "
                        "beyond that they run to gigabytes)" % REGINFO_AUTO_LIMIT)
    p.add_argument("--min_depth", type=int, default=None, help="framework traces: shallowest call depth kept")
    p.add_argument("--max_depth", type=int, default=None, help="framework traces: deepest call depth kept")
    p.add_argument("--quiet", action="store_true", help="no progress bars and no printed summary")
    return p


#: --reginfo auto writes the RegInfo text up to this many commands (about 1.2 KB of text each)
REGINFO_AUTO_LIMIT = 200_000

#: (option that disables it, module, label) in the order outputs are written
#: writers by how long they usually take on a large dump, longest first
LONGEST_FIRST = {"workbook": 0, "RegInfo files": 1, "perfetto trace": 2, "web report": 3}
WRITERS = [
    ("disable_doc", "reportgen.writers.xlsx", "workbook"),
    ("disable_web", "reportgen.writers.html", "web report"),
    ("no_perfetto", "reportgen.writers.perfetto", "perfetto trace"),
]


def run(args: argparse.Namespace) -> int:
    from reportgen import batch

    dumps = batch.dump_dirs(Path(args.input))
    if dumps:
        return batch.run_many(dumps, args)
    written, elapsed, text_summary = run_one(args)
    if not args.quiet:
        if text_summary:
            print(text_summary)
        print(f"Wrote {len(written)} file(s) to {Path(args.output).resolve()} in {elapsed:.1f} s:")
        for p in written:
            print(f"  {p}")
    return 0


def _want_reginfo(args, profile) -> bool:
    if args.reginfo == "off" or not profile.meta.is_pmu:
        return False
    if args.reginfo == "on":
        return True
    if args.disable_doc:
        return False
    if len(profile.commands) > REGINFO_AUTO_LIMIT:
        profile.meta.warn("reginfo-skipped", f"RegInfo text files not written: {len(profile.commands)} "
                          f"commands would make about {len(profile.commands) * 1.2e-3:.0f} MB of text "
                          "(--reginfo on writes them; the workbook and perfetto trace hold the same data)")
        return False
    return True


def _jobs(args, profile, summary, out: Path) -> list[tuple[str, object]]:
    """The writers this run asks for, as (label, callable) pairs writing into ``out``."""
    from reportgen.writers import text

    jobs: list[tuple[str, object]] = []
    if not args.disable_summary:
        jobs.append(("summary", lambda: text.write_summary(profile, summary, out)))
    if _want_reginfo(args, profile):
        # RegInfo reads every register table: assemble them before the writers fork, so a
        # workbook that shows them too shares these tables instead of building its own
        list(profile.registers.values())
        jobs.append(("RegInfo files", lambda: text.write_reginfo(profile, out)))
    if profile.tables and not args.disable_doc:
        from reportgen.writers import csv_tables
        jobs.append(("CSV tables", lambda: csv_tables.write_tables(profile, out)))
        if profile.meta.source == "chrome" and len(profile.host):
            jobs.append(("seed CSV", lambda: csv_tables.write_seed_csv(
                profile, out / "host_device.csv", min_depth=args.min_depth, max_depth=args.max_depth)))
    for flag, module, label in WRITERS:
        if getattr(args, flag):
            continue
        kwargs = {"quiet": args.quiet}
        if module.endswith("xlsx"):
            kwargs["registers"] = {"auto": "auto", "on": True, "off": False}[args.registers]
        jobs.append((label, lambda module=module, kwargs=kwargs:
                     importlib.import_module(module).write(profile, summary, out, **kwargs)))
    # longest first: the workers then finish close together
    return sorted(jobs, key=lambda job: LONGEST_FIRST.get(job[0], len(LONGEST_FIRST)))


def run_one(args: argparse.Namespace) -> tuple[list[Path], float, str]:
    """Decode one input and write every requested output; returns (files, seconds, summary)."""
    from reportgen.analysis.metrics import engine_summary, lane_summary
    from reportgen.parsers.detect import load_profile
    from reportgen.writers import text

    t0 = time.perf_counter()
    profile = load_profile(args.input, tiu_freq=args.tiu_freq, quiet=args.quiet)
    if not profile.meta.is_pmu:
        from reportgen.analysis.framework import attach_framework_tables
        attach_framework_tables(profile, min_depth=args.min_depth, max_depth=args.max_depth)
    if args.trace_file:
        from reportgen.analysis.host_align import attach_host_trace
        attach_host_trace(profile, args.trace_file)
    summary = engine_summary(profile)
    if not profile.meta.is_pmu:
        profile.tables["Device lanes"] = lane_summary(profile)
    final = Path(args.output)
    try:
        with staged_dir(final, replace_glob=("*RegInfo_*.txt",)) as out:
            written = parallel.run_jobs(_jobs(args, profile, summary, out))
    except OSError as exc:
        raise OutputError(f"{final}: cannot write the reports ({exc.strerror or exc})") from None
    written = [final / p.relative_to(out) for p in written]
    summary_txt = text.summary_text(profile, summary) if not args.disable_summary else ""
    return written, time.perf_counter() - t0, summary_txt


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.tiu_freq is not None and not args.tiu_freq > 0:
        parser.error(f"--tiu_freq must be a clock in MHz above 0, not {args.tiu_freq:g}")
    try:
        return run(args)
    except ReportgenError as exc:
        if os.environ.get("REPORTGEN_DEBUG"):
            raise
        print(f"bigTpuProfile: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("bigTpuProfile: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:          # `bigTpuProfile ... | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
