"""CSV outputs of framework traces: the seed tool's host/device CSV and one CSV per table.

* :func:`write_seed_csv` - the seed ``profile_parser_main.py`` columns (framework-traces.md §6.3):
  ``name`` (``$$`` call path), ``host duration(ms)``, ``device duration(ms)``,
  ``cuda launch duration(ms)``, ``cuda_runtime`` and ``kernels`` (JSON lists of
  ``[name, duration ms]``), ``kernel infos`` (JSON list of the kernels' args), then ``depth``.
* :func:`write_tables` - every table in ``profile.tables`` as ``<OUT>/tables/<name>.csv``.

The seed tool's command line itself is :mod:`reportgen.profile_parser`.

Numbers come from :mod:`reportgen.analysis.host_device` unchanged; this module only lays them out.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from reportgen.analysis.host_device import host_device_table
from reportgen.errors import OutputError
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
