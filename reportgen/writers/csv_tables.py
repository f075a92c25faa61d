"""CSV outputs of framework traces: the seed tool's host/device CSV and one CSV per table.

* :func:`write_seed_csv` - the seed ``profile_parser_main.py`` columns (framework-traces.md §6.3):
  ``name`` (``$$`` call path), ``host duration(ms)``, ``device duration(ms)``,
  ``cuda launch duration(ms)``, ``cuda_runtime`` and ``kernels`` (JSON lists of
  ``[name, duration ms]``), ``kernel infos`` (JSON list of the kernels' args), then ``depth``.
* :func:`write_tables` - every table in ``profile.tables`` as ``<OUT>/tables/<name>.csv``.
* :func:`profile_parser_main` - the seed tool's command line
  (``profile_parser_main -s SRC -d DST [-hc HOST_CAT] [-dc DEVICE_CAT] [-mc MONITOR_CAT]
  [--max_depth N] [--min_depth N]``), for the console script of the same name.

Numbers come from :mod:`reportgen.analysis.host_device` unchanged; this module only lays them out.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

from reportgen.analysis.host_device import host_device_table
from reportgen.errors import OutputError, ReportgenError
from reportgen.model import Profile
from reportgen.writers.atomic import atomic_open

SEED_COLUMNS = ["name", "host duration(ms)", "device duration(ms)", "cuda launch duration(ms)",
                "cuda_runtime", "kernels", "kernel infos", "depth"]


def seed_frame(profile: Profile, monitor: str = "python_function", launch: str = "cuda_runtime",
               device: str | None = "kernel", min_depth: int | None = None,
               max_depth: int | None = None, self_only: bool = False) -> pd.DataFrame:
    """The seed CSV's rows, in host time order (as the seed walked the trace)."""
    t = host_device_table(profile, monitor=monitor, launch=launch, device=device,
                          min_depth=min_depth, max_depth=max_depth, self_only=self_only,
                          with_lists=True)
    t = t.sort_values(["rank", "pid", "tid", "start_ns"], kind="stable")
    return pd.DataFrame({
        "name": t["name"], "host duration(ms)": t["host duration(ms)"],
        "device duration(ms)": t["device duration(ms)"],
        "cuda launch duration(ms)": t["launch duration(ms)"],
        "cuda_runtime": t["launch list"], "kernels": t["kernel list"],
        "kernel infos": t["kernel infos"], "depth": t["depth"],
    })[SEED_COLUMNS].reset_index(drop=True)


def write_seed_csv(profile: Profile, path: str | Path, **kwargs) -> Path:
    """Write :func:`seed_frame` to ``path`` atomically; returns the path."""
    frame = seed_frame(profile, **kwargs)
    path = Path(path)
    try:
        with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
            frame.to_csv(fh, index=False)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write the CSV ({exc.strerror or exc})") from None
    return path


def table_file_name(name: str) -> str:
    """A table name as a portable file name ("Host-Device Self" -> "Host-Device_Self.csv")."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") + ".csv"


def write_tables(profile: Profile, out_dir: str | Path) -> list[Path]:
    """Every table of ``profile.tables`` as ``out_dir/tables/<name>.csv``."""
    written = []
    folder = Path(out_dir) / "tables"
    for name, table in profile.tables.items():
        path = folder / table_file_name(name)
        try:
            with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
                table.to_csv(fh, index=False)
        except OSError as exc:
            raise OutputError(f"{path}: cannot write the CSV ({exc.strerror or exc})") from None
        written.append(path)
    return written


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="profile_parser_main",
        description="Chrome/PyTorch trace -> CSV of monitored host events with their launches "
                    "and device kernels ($$-joined call paths).")
    p.add_argument("-s", "--src", required=True, help="trace file (JSON, .gz, .zip) or profiler folder")
    p.add_argument("-d", "--dst", required=True, help="output CSV file (or folder: <src name>.csv inside)")
    p.add_argument("-hc", "--host_cat", default="cuda_runtime", help="launch (host runtime) category")
    p.add_argument("-dc", "--device_cat", default="kernel", help="device category ('all' for every device slice)")
    p.add_argument("-mc", "--monitor_cat", default="python_function", help="monitored host category")
    p.add_argument("--max_depth", type=int, default=None, help="deepest call depth kept (inclusive)")
    p.add_argument("--min_depth", type=int, default=None, help="shallowest call depth kept (inclusive)")
    p.add_argument("--self", action="store_true", help="self attribution (exclude deeper monitored events)")
    return p


def profile_parser_main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        from reportgen.parsers.detect import load_profile

        profile = load_profile(args.src)
        dst = Path(args.dst)
        if dst.is_dir() or args.dst.endswith(("/", "\\")):
            stem = Path(args.src).name.split(".")[0] or "trace"
            dst = dst / f"{stem}.csv"
        device = None if args.device_cat.lower() in ("all", "any", "*") else args.device_cat
        write_seed_csv(profile, dst, monitor=args.monitor_cat, launch=args.host_cat, device=device,
                       min_depth=args.min_depth, max_depth=args.max_depth, self_only=args.self)
    except ReportgenError as exc:
        print(f"profile_parser_main: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"wrote {dst}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(profile_parser_main())
