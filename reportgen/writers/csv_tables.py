"""CSV outputs of framework traces: the seed tool's host/device CSV and one CSV per table.

* :func:`write_seed_csv` - the seed ``profile_parser_main.py`` columns (framework-traces.md §6.3):
  ``name`` (``$$`` call path), ``host duration(ms)``, ``device duration(ms)``,
  ``cuda launch duration(ms)``, ``cuda_runtime`` and ``kernels`` (JSON lists of
  ``[name, duration ms]``), ``kernel infos`` (JSON list of the kernels' args), then ``depth``.
* :func:`write_tables` - every table in ``profile.tables`` as ``<OUT>/tables/<name>.csv``.

The seed tool's command line itself is :mod:`reportgen.profile_parser`.

Both write through :func:`inert_frame`: a text cell that a spreadsheet would evaluate as a formula
(it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return: the OWASP rule for CSV
injection) is written with a leading ``'``, so a name such as ``=HYPERLINK(...)`` opens as text,
and a carriage return inside a cell is written as CR LF (the cell is then quoted: a lone CR would
start a new row whose first cell is not checked).
Number columns are never touched (a negative number stays a number), nor is a text cell that is a
plain decimal number such as ``-12.5`` (a spreadsheet reads it as that number, not a formula).
The JSON-list cells of the seed CSV start with ``[``: never evaluated, they stay valid JSON and
the names inside them are left as they are.

Numbers come from :mod:`reportgen.analysis.host_device` unchanged; this module only lays them out.
"""
from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.analysis.host_device import host_device_table, seed_categories
from reportgen.errors import OutputError
from reportgen.model import Profile
from reportgen.writers.atomic import atomic_open

#: first characters that make a spreadsheet read a cell as a formula (OWASP: CSV injection)
FORMULA_STARTS = np.array(["=", "+", "-", "@", "\t", "\r"])
#: a text cell that is only a decimal number is read as that number: harmless, kept as it is
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_LONE_CR = re.compile(r"\r(?!\n)")

SEED_COLUMNS = ["name", "host duration(ms)", "device duration(ms)", "cuda launch duration(ms)",
                "cuda_runtime", "kernels", "kernel infos", "depth"]


def seed_frame(profile: Profile, monitor: str | None = None, launch: str | None = None,
               device: str | None = None, min_depth: int | None = None,
               max_depth: int | None = None, self_only: bool = False) -> pd.DataFrame:
    """The seed CSV's rows, in host time order (as the seed walked the trace); categories as
    ``-mc/-hc/-dc`` (None: fitting the trace, :func:`reportgen.analysis.host_device.seed_categories`)."""
    t = host_device_table(profile, **seed_categories(profile, monitor, launch, device, use="seed"),
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


def _has_return(values: np.ndarray, chunk: int = 4096) -> bool:
    """Whether a str cell of ``values`` holds a CR: the cells joined in C, a chunk at a time."""
    present = values[pd.notna(values)]
    for lo in range(0, len(present), chunk):
        part = present[lo:lo + chunk]
        try:
            text = "".join(part)
        except TypeError:                       # numbers among the text
            text = "".join(v for v in part if isinstance(v, str))
        if "\r" in text:
            return True
    return False


def inert_cells(values: np.ndarray) -> np.ndarray | None:
    """``values`` (an object array) with every str cell a spreadsheet would evaluate prefixed
    with ``'``, and every carriage return that no line feed follows written as CR LF; None when
    no cell needs either. The first characters are compared as one array and only the cells that
    start with a formula character are looked at one by one.

    A lone CR is not a line end for pandas' CSV writer, so a cell holding one is not quoted, and
    a spreadsheet starts a new row there: ``"a\r=cmd|..."`` would put a live formula in the first
    cell of that row. With an LF beside it the cell is quoted and stays one cell.
    """
    try:
        first = values.astype("U1")             # str(cell)[:1], in C; non-text cells are skipped below
    except (TypeError, ValueError):             # lists among the cells: numpy reads them as sequences
        first = np.array([v[:1] if isinstance(v, str) else "" for v in values], "U1")
    suspects = np.flatnonzero(np.isin(first, FORMULA_STARTS))
    formulas = [i for i, v in zip(suspects, values[suspects])
                if isinstance(v, str) and not _PLAIN_NUMBER.fullmatch(v)]
    returns = ([i for i, v in enumerate(values) if isinstance(v, str) and "\r" in v]
               if _has_return(values) else [])
    if not formulas and not returns:
        return None
    out = values.copy()
    out[formulas] = ["'" + v for v in values[formulas]]
    for i in returns:
        out[i] = _LONE_CR.sub("\r\n", out[i])
    return out


def inert_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its text cells and column names made inert (:func:`inert_cells`); text
    and categorical columns only, numbers as they are. The frame itself when nothing changed."""
    fixed: dict[int, np.ndarray] = {}
    for j in range(frame.shape[1]):
        s = frame.iloc[:, j]
        if isinstance(s.dtype, pd.CategoricalDtype):
            categories = inert_cells(s.cat.categories.to_numpy(object))
            if categories is not None:
                codes = s.cat.codes.to_numpy()
                fixed[j] = np.where(codes >= 0, categories[np.maximum(codes, 0)], None)
        elif pd.api.types.is_string_dtype(s.dtype):
            cells = inert_cells(s.to_numpy(object))
            if cells is not None:
                fixed[j] = cells
    header = inert_cells(np.array([str(c) for c in frame.columns], object))
    if not fixed and header is None:
        return frame
    frame = frame.copy(deep=False)
    for j, cells in fixed.items():
        frame.isetitem(j, pd.Series(cells, index=frame.index, dtype=object))
    if header is not None:
        frame.columns = header
    return frame


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    try:
        if path.suffix == ".gz":
            with atomic_open(path, "wb") as raw, \
                    gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=1, mtime=0) as packed, \
                    io.TextIOWrapper(packed, encoding="utf-8", newline="") as fh:
                inert_frame(frame).to_csv(fh, index=False)
        else:
            with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
                inert_frame(frame).to_csv(fh, index=False)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write the CSV ({exc.strerror or exc})") from None


def write_seed_csv(profile: Profile, path: str | Path, compress: bool = False, **kwargs) -> Path:
    """Write :func:`seed_frame` to ``path`` atomically; returns the path written: ``path`` +
    ``.gz``, gzip-compressed, with ``compress`` (decided before the writers run:
    :func:`reportgen.analysis.host_device.seed_csv_gzip`)."""
    path = Path(path)
    frame = seed_frame(profile, **kwargs)
    if compress:
        path = path.with_name(path.name + ".gz")
    _write_csv(frame, path)
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
        _write_csv(table, path)
        written.append(path)
    return written
