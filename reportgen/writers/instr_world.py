"""``PerfDoc/instr_world.csv``: every command of every engine and core in one time-sorted table
(the vendor's "Instr World", reference-tool.md §2.5), streamed.

Rows are sorted as the vendor sorts them, by (Start, End, Cmd Id, Engine Id), then by core and
Global Idx so that equal keys keep one order from run to run. Columns are the vendor's detail
columns that the model holds, in the vendor's order, plus ``Kernel``, ``Duration(ns)``,
``Concurrency`` (docs/metrics.md: the commands of the same core in flight at the command's
start, this one included, so never below 1, where the vendor's Engine Summary ratio goes
negative), ``Dep Cmd Id``, ``Port`` and ``Sheet`` (``Sheet`` + ``Global Idx`` find the command in
the workbook, the HTML page and the Perfetto trace). Register fields are not repeated: they are
the workbook's command sheets. Layer columns are not written (no layer information here).

Streaming. Only the sort order (one int64 per command), the Concurrency column (int32) and the
codes of the number columns written from a table (one or two bytes each) are held for the
whole file; the rows are then formatted and written :data:`CHUNK` at a time, column
by column into one NUL-padded byte matrix (a number column of few distinct values from a
table of its cells formatted once, other integers from a table of 4-digit groups, decimals
likewise, other floats through numpy's shortest round-trip text, text from a per-column table
of already quoted, formula-safe cells), whose non-NUL bytes are the lines: no Python loop per
row, and a million commands never exist twice as a frame or as one string.

Cells are inert (:func:`reportgen.writers.csv_tables.inert_cells`: a name starting with ``=``
opens as text) and quoted as RFC 4180 says (a comma, quote or line break inside a name).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.errors import OutputError
from reportgen.model import ENGINE_IDS, Profile
from reportgen.writers.atomic import atomic_open
from reportgen.writers.byte_cells import Cells, const, digits as _digits, fixed as _fixed, lines, pick
from reportgen.writers.csv_tables import inert_cells

FILE = Path("PerfDoc") / "instr_world.csv"
#: rows formatted and written at a time: a chunk's byte matrix (~2 MB) stays in the CPU cache
#: (8k rows measured 25 % faster than 64k)
CHUNK = 8_192

#: (header, model column, kind): kinds int, float (shortest round-trip repr; integral values
#: without ".0", as the vendor prints ops), rate (vendor's ``{:.1%}``), text; "derived" columns
#: are computed here (engine id, duration, concurrency)
COLUMNS = [
    ("Engine Id", "engine_id", "derived"),
    ("Core Id", "core", "int"),
    ("Global Idx", "global_idx", "int"),
    ("Cmd Id", "cmd_id", "int"),
    ("Kernel", "kernel", "text"),
    ("Function Type", "func_type", "text"),
    ("Function Name", "func_name", "text"),
    ("Alg Cycle", "alg_cycle", "float"),
    ("Asic Cycle", "cycles", "int"),
    ("Start Time(ns)", "start_ns", "int"),
    ("End Time(ns)", "end_ns", "int"),
    ("Duration(ns)", "duration", "derived"),
    ("Concurrency", "concurrency", "derived"),
    ("Alg Ops", "alg_ops", "float"),
    ("uArch Ops", "uarch_ops", "float"),
    ("uArch Rate", "uarch_rate", "rate"),
    ("Data Type", "dtype", "text"),
    ("Dep Cmd Id", "dep_cmd_id", "int"),
    ("DMA data size(B)", "bytes", "int"),
    ("Stall Cycle", "stall_cycles", "int"),
    ("DDR Bandwidth(GB/s)", "ddr_bw", "float"),
    ("L2M Bandwidth(GB/s)", "l2m_bw", "float"),
    ("Direction", "direction", "text"),
    ("Port", "port", "int"),
    ("Sheet", "sheet", "text"),
]
HEADER = [h for h, _, _ in COLUMNS]

_NEEDS_QUOTES = re.compile(r'[",\r\n]')


def csv_cell(text: str) -> str:
    """One CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote or
    a line break; a NUL (no text format keeps one) becomes U+FFFD."""
    text = text.replace("\0", "\ufffd")
    return '"' + text.replace('"', '""') + '"' if _NEEDS_QUOTES.search(text) else text


def engine_ids(engine: pd.Series) -> np.ndarray:
    """The vendor's engine id per command (0 TIU, 1 GDMA, 3 SDMA, 4 CDMA; -1 another lane)."""
    cat = engine.astype("category")
    table = np.array([ENGINE_IDS.get(str(e), -1) for e in cat.cat.categories] + [-1], np.int8)
    return table[cat.cat.codes.to_numpy()]


def concurrency(core: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per command: how many commands of its core (any engine) are in flight at its start
    (``start_j <= start_i < end_j``), itself always included: an integer >= 1.

    Counted by binary search in the core's sorted starts and ends: #(start_j <= s) minus
    #(end_j <= s) is the number in flight at s (end_j <= s implies start_j <= s); a command of
    zero duration is not in flight at its own start, so it is added once more."""
    out = np.empty(len(start), np.int32)
    for k in np.unique(core):
        rows = np.flatnonzero(core == k)
        s, e = start[rows], end[rows]
        # "stable" (timsort): a core's commands are a few runs already sorted by time (one per
        # engine), which it merges ~3x faster than the default sort
        running = (np.searchsorted(np.sort(s, kind="stable"), s, "right")
                   - np.searchsorted(np.sort(e, kind="stable"), s, "right"))
        out[rows] = running + (e <= s)
    return out


def sort_order(c: pd.DataFrame, engine_id: np.ndarray) -> np.ndarray:
    """Rows by (Start, End, Cmd Id, Engine Id, Core Id, Global Idx).

    By start first (a stable timsort: the commands come as a few runs already in time order),
    then only the rows whose start is shared are ordered by the other keys, within their start
    (under 1% of a dump's rows): ~2.5x faster than sorting every row by all six keys."""
    start = c["start_ns"].to_numpy()
    order = np.argsort(start, kind="stable")
    ordered = start[order]
    tie = ordered[1:] == ordered[:-1]
    del ordered
    if tie.any():
        shared = np.zeros(len(order), bool)
        shared[1:] |= tie
        shared[:-1] |= tie
        group = np.concatenate([[0], np.cumsum(~tie)])[shared]     # rank of the start
        rows = order[shared]
        order[shared] = rows[np.lexsort((c["global_idx"].to_numpy()[rows], c["core"].to_numpy()[rows],
                                         engine_id[rows], c["cmd_id"].to_numpy()[rows],
                                         c["end_ns"].to_numpy()[rows], group))]
    return order


def _text_table(column: pd.Series) -> tuple[np.ndarray, Cells]:
    """(codes, cells): a text column as category codes and a table of its quoted, inert UTF-8
    cells; the trailing entry (code -1) is the empty cell."""
    cat = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    names = np.array([str(x) for x in cat.cat.categories], object)
    safe = inert_cells(names)
    names = names if safe is None else safe
    encoded = [csv_cell(x).encode("utf-8") for x in names] + [b""]
    return cat.cat.codes.to_numpy(), _fixed(np.array(encoded, dtype=bytes))


#: ".dddd" of 0..9999 ten-thousandths without trailing zeros, NUL-padded; 0: nothing
_DECIMALS = np.frombuffer(b"".join((b"." + (b"%04d" % k).rstrip(b"0")).ljust(5, b"\0") if k else b"\0" * 5
                                   for k in range(10_000)), np.uint8).reshape(10_000, 5)


def _int_cells(values: np.ndarray) -> list[Cells]:
    """The decimal cells of an integer slice."""
    v = values.astype(np.int64, copy=False)
    return _digits(np.abs(v), v < 0)


def _decimal_cells(v: np.ndarray) -> list[Cells] | None:
    """Python's repr of every value, when each has at most 4 decimals (bandwidths are rounded
    so) and is positional in repr (1e-4 <= |v| < 1e11, or 0): integer part, then "." and the
    decimals without trailing zeros; a whole number without them (as :func:`_number_cells`
    writes every whole number). None when a value is not of that kind."""
    size = np.abs(v)
    with np.errstate(invalid="ignore"):
        ok = (np.round(v, 4) == v) & (size < 1e11) & ((size >= 1e-4) | (v == 0))
    if not ok.all():
        return None
    whole, frac = np.divmod(np.round(size * 10_000).astype(np.int64), 10_000)
    return [*_digits(whole, v < 0), pick(_DECIMALS, frac)]


def _number_cells(values: np.ndarray, present: np.ndarray, kind: str) -> list[Cells]:
    """Cells of a number slice, empty where a value is missing. Floats: the shortest text that
    reads back as the same double (Python's repr; numpy's float-to-bytes equals it), a whole
    number (ops, cycles) without ".0", as the vendor prints ops. Rates: the vendor's ``{:.1%}``."""
    if kind == "rate":                       # few distinct rates: each formatted once
        codes, uniques = pd.factorize(values)
        parts = [pick(_fixed(np.array([f"{x:.1%}" for x in uniques.tolist()], dtype=bytes)), codes)]
    elif values.dtype.kind in "iu":
        parts = _int_cells(values)
    else:
        v = np.where(present, values, 0.0)
        if np.all(v == np.round(v)) and np.all(np.abs(v) < 2 ** 53):   # also False for inf
            parts = _int_cells(v.astype(np.int64))
        else:
            whole = (v == np.round(v)) & (np.abs(v) < 2 ** 53)
            parts = _decimal_cells(v) or [_fixed(np.where(whole, np.where(whole, v, 0).astype(np.int64)
                                                          .astype("S32"), v.astype("S32")))]
    if not present.all():
        for mat in parts:
            mat[~present] = 0
    return parts


#: a number column of at most this many distinct values is written from a table of its cells
MAX_TABLE_VALUES = 32_767              # int16 codes
#: distinct values in the column's first rows above which it is not even tried
_SAMPLE, _SAMPLE_MAX = 8_192, 1_024


def _value_table(column, kind: str) -> tuple[np.ndarray, Cells] | None:
    """(codes, cells) of a number column with few distinct values (register-like fields, rates,
    bandwidths, ports, engine ids): each distinct value formatted once by :func:`_number_cells`
    (a value's text never depends on its neighbours), then picked per row like a text column's
    cell; code -1 (a missing value) picks the trailing empty cell. Formatting a chunk of such a
    column costs a gather instead of several passes. None for a column of many values."""
    if column is None or len(column) == 0 or kind not in ("int", "float", "rate"):
        return None
    if pd.api.types.is_integer_dtype(column.dtype):
        low, high = column.min(), column.max()          # a nullable column's: NA skipped
        if low is pd.NA or (0 <= low and high < 10_000):
            return None      # one 4-digit group a value: digits() is a single pick already
    if len(pd.unique(column[:_SAMPLE])) > _SAMPLE_MAX:
        return None
    codes, uniques = pd.factorize(column)
    if len(uniques) > MAX_TABLE_VALUES:
        return None
    dtype = np.int64 if kind == "int" else np.float64
    values = np.asarray(uniques.to_numpy(dtype) if hasattr(uniques, "to_numpy") else uniques, dtype)
    parts = _number_cells(values, np.ones(len(values), bool), kind)
    # one byte a code below 255 distinct values (missing: -1 -> 255, an empty row), else two
    small = len(values) < 255
    table = np.zeros((256 if small else len(values) + 1, sum(m.shape[1] for m in parts)), np.uint8)
    at = 0
    for mat in parts:
        table[:len(values), at:at + mat.shape[1]] = mat
        at += mat.shape[1]
    return codes.astype(np.uint8 if small else np.int16), table


def _plain(dtype) -> bool:
    """A numpy number dtype (its missing values, if any, are NaN)."""
    return isinstance(dtype, np.dtype) and dtype.kind in "iufb"


class _Source:
    """The command frame's columns as the writer reads them: numbers sliced per chunk, text as
    codes into a table of finished cells (built once)."""

    def __init__(self, c: pd.DataFrame) -> None:
        self.c = c
        self.engine_id = engine_ids(c["engine"])
        start, end = c["start_ns"].to_numpy(np.int64), c["end_ns"].to_numpy(np.int64)
        self.concurrency = concurrency(c["core"].to_numpy(np.int64), start, end)
        self.text = {name: _text_table(c[name]) for _, name, kind in COLUMNS
                     if kind == "text" and name in c}
        self.start, self.end = start, end
        # the number columns as arrays, no copies: a numpy column itself, a nullable one's
        # extension array (sliced by its own take: no Series, no index per chunk)
        self.numbers = {name: (c[name].to_numpy() if _plain(c[name].dtype) else c[name].array)
                        for _, name, kind in COLUMNS if kind in ("int", "float", "rate") and name in c}
        derived = {"engine_id": self.engine_id, "concurrency": self.concurrency}
        self.tables = {name: t for _, name, kind in COLUMNS
                       if (t := _value_table(derived[name] if name in derived else self.numbers.get(name),
                                             "int" if name in derived else kind)) is not None}

    def cells(self, name: str, kind: str, rows: np.ndarray) -> list[Cells]:
        """Column ``name`` of the given rows as one or more parts written side by side (every
        cell empty for a column the frame lacks)."""
        c = self.c
        if name in self.tables:
            codes, table = self.tables[name]
            return [pick(table, codes[rows])]         # code -1 (missing): the trailing empty cell
        if kind == "derived":
            if name == "engine_id":
                return _int_cells(self.engine_id[rows])
            if name == "concurrency":
                return _int_cells(self.concurrency[rows])
            return _int_cells(self.end[rows] - self.start[rows])
        if name not in c:
            return [np.zeros((len(rows), 1), np.uint8)]
        if kind == "text":
            codes, table = self.text[name]
            return [pick(table, codes[rows])]         # code -1: the trailing empty cell
        dtype = np.int64 if kind == "int" else np.float64
        column = self.numbers[name]
        if isinstance(column, np.ndarray):      # the slice only: never a copy of the column
            values = column[rows]
            present = ~np.isnan(values) if values.dtype.kind == "f" else np.ones(len(rows), bool)
            values = np.where(present, values, 0).astype(dtype, copy=False) if not present.all() \
                else values.astype(dtype, copy=False)
        else:
            part = column.take(rows)
            present = ~np.asarray(part.isna(), bool)
            values = part.to_numpy(dtype, na_value=0)
        return _number_cells(values, present, kind)


def rows_bytes(source: _Source, rows: np.ndarray) -> bytes:
    """The CSV lines of ``rows``: every column's NUL-padded cells side by side in one byte
    matrix with the separators; its non-NUL bytes, read row by row, are the lines in order
    (one selection, no loop per row)."""
    n = len(rows)
    comma, newline = const(b",", n), const(b"\n", n)
    parts = []
    for i, (_, name, kind) in enumerate(COLUMNS):
        parts += source.cells(name, kind, rows)
        parts.append(comma if i < len(COLUMNS) - 1 else newline)
    return lines(parts, n)


def write(profile: Profile, out_dir) -> Path:
    """Write ``out_dir/PerfDoc/instr_world.csv`` (atomically) and return its path."""
    target = Path(out_dir) / FILE
    c = profile.commands
    source = _Source(c)
    order = sort_order(c, source.engine_id)
    try:
        with atomic_open(target, "wb") as fh:
            fh.write((",".join(csv_cell(h) for h in HEADER) + "\n").encode("utf-8"))
            for lo in range(0, len(order), CHUNK):
                fh.write(rows_bytes(source, order[lo:lo + CHUNK]))
    except OSError as err:
        raise OutputError(f"{target}: cannot write the Instr World CSV ({err.strerror or err})") from None
    return target
