"""``profile_parser_main``: the seed tool's command line, kept for its users.

``profile_parser_main -s SRC -d DST [-hc HOST_CAT] [-dc DEVICE_CAT] [-mc MONITOR_CAT]
[--max_depth N] [--min_depth N] [--self]`` writes the seed CSV of a framework trace
(:func:`reportgen.writers.csv_tables.write_seed_csv`): one row per monitored host event with
its launches and device kernels.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reportgen.errors import ReportgenError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="profile_parser_main",
        description="Chrome/PyTorch trace -> CSV of monitored host events with their launches "
                    "and device kernels ($$-joined call paths).")
    p.add_argument("-s", "--src", required=True, help="trace file (JSON, .gz, .zip) or profiler folder")
    p.add_argument("-d", "--dst", required=True, help="output CSV file (or folder: <src name>.csv inside)")
    p.add_argument("-hc", "--host_cat", help="launch (host runtime) category (default: the "
                   "trace's runtime categories, e.g. cuda_runtime)")
    p.add_argument("-dc", "--device_cat", help="device category, 'all' for every device slice "
                   "that is work (default: kernel when the trace has kernels, else all)")
    p.add_argument("-mc", "--monitor_cat", help="monitored host category (default: python_function "
                   "when the trace has python frames, else its aten ops: cpu_op or Operator)")
    p.add_argument("--max_depth", type=int, default=None, help="deepest call depth kept (inclusive; -1: no limit)")
    p.add_argument("--min_depth", type=int, default=None, help="shallowest call depth kept (inclusive)")
    p.add_argument("--self", action="store_true", help="self attribution (exclude deeper monitored events)")
    return p


def missing_category_warning(profile, category: str | None) -> str | None:
    """One line when the monitored category ``-mc`` names no host event of the trace, naming
    the categories it has (else the CSV would be a header with no rows and no reason)."""
    if not category:
        return None
    from reportgen.analysis.calltree import first_category

    have = sorted(set(first_category(profile.host["category"]))) if len(profile.host) else []
    if category.strip().lower() in have:
        return None
    return (f"{profile.meta.input_path}: no host event of category '{category}'; "
            f"the trace has: {', '.join(have) or 'no host events'}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        from reportgen import pipeline
        from reportgen.options import Options
        from reportgen.writers.csv_tables import write_seed_csv

        profile = pipeline.load(Options(input=args.src, quiet=True))
        dst = Path(args.dst)
        if dst.is_dir() or args.dst.endswith(("/", "\\")):
            stem = Path(args.src).name.split(".")[0] or "trace"
            dst = dst / f"{stem}.csv"
        missing = missing_category_warning(profile, args.monitor_cat)
        if missing:
            print(f"profile_parser_main: warning: {missing}", file=sys.stderr)
        write_seed_csv(profile, dst, monitor=args.monitor_cat, launch=args.host_cat, device=args.device_cat,
                       min_depth=args.min_depth, max_depth=args.max_depth, self_only=args.self)
    except ReportgenError as exc:
        print(f"profile_parser_main: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"wrote {dst}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
