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
codes of the columns written from a table (text, and rates of few values: one or two bytes
each) are held for the whole file; the rows are then written :data:`CHUNK` at a time: each
column's slice into a :class:`reportgen.writers.csv_lines.Chunk` (numbers as they are, text as
codes into one table of already quoted, formula-safe cells, rates of many values formatted per
chunk), whose lines one compiled loop writes into a reused buffer: no Python loop per row, and
a million commands never exist twice as a frame or as one string.

Cells are inert (:func:`reportgen.writers.csv_tables.inert_cells`: a name starting with ``=``
opens as text) and quoted as RFC 4180 says (a comma, quote or line break inside a name).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from numba import njit

from reportgen.errors import OutputError
from reportgen.model import ENGINE_IDS, Profile
from reportgen.writers.atomic import atomic_open
from reportgen.writers.csv_lines import Chunk, Texts, percent_cells
from reportgen.writers.csv_lines import compile_loops as compile_loops_csv
from reportgen.writers.csv_tables import inert_cells

FILE = Path("PerfDoc") / "instr_world.csv"
#: rows formatted and written at a time: the chunk's buffers are ~6 MB (its values 25 x 8 B a
#: row, its text 100-150 B a row); 8k rows measured ~10 % more CPU (Python's share per chunk)
CHUNK = 16_384

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


def concurrency(core: np.ndarray, start: np.ndarray, end: np.ndarray,
                by_start: np.ndarray | None = None) -> np.ndarray:
    """Per command: how many commands of its core (any engine) are in flight at its start
    (``start_j <= start_i < end_j``), itself always included: an integer >= 1.

    #(start_j <= s) minus #(end_j <= s) of the core is the number in flight at s (end_j <= s
    implies start_j <= s); a command of zero duration is not in flight at its own start, so it
    is added once more. Both counts are running counts per core, in one compiled pass over the
    commands by start (``by_start``, e.g. :func:`sort_order`'s rows) merged with the commands
    by end (a stable sort: the commands come as a few runs already in time order)."""
    if by_start is None:
        by_start = np.argsort(start, kind="stable")
    low = int(core.min()) if len(core) else 0
    # every array read-only (pandas hands out read-only views, or not) and of one dtype: one
    # machine-code signature whatever the caller passes; cores as int32 (4 B a command)
    arrays = [np.asarray(a, t).view() for a, t in ((core - low, np.int32), (start, np.int64), (end, np.int64),
                                                   (by_start, np.int64), (np.argsort(end, kind="stable"), np.int64))]
    for a in arrays:
        a.flags.writeable = False
    return _in_flight(*arrays, int(core.max()) - low + 1 if len(core) else 0)


@njit(cache=True)
def _in_flight(core, start, end, by_start, by_end, cores):
    """:func:`concurrency`'s counts: the starts of each group of equal start counted first, the
    ends up to that start next, then the group's commands read their core's two counts."""
    started, ended = np.zeros(cores, np.int64), np.zeros(cores, np.int64)
    out = np.empty(len(start), np.int32)
    n, k, e = len(by_start), 0, 0
    while k < n:
        s = start[by_start[k]]
        g = k
        while g < n and start[by_start[g]] == s:
            started[core[by_start[g]]] += 1
            g += 1
        while e < n and end[by_end[e]] <= s:
            ended[core[by_end[e]]] += 1
            e += 1
        for q in range(k, g):
            i = by_start[q]
            out[i] = started[core[i]] - ended[core[i]] + (1 if end[i] <= s else 0)
        k = g
    return out


def compile_loops() -> None:
    """Load (or compile) the machine code of the writer's loops (:func:`csv_lines.compile_loops`
    and the Concurrency count) with the argument types a write passes: once, in a process that
    forks the writer, before the fork."""
    compile_loops_csv()
    one = np.zeros(1, np.int64)
    concurrency(one.astype(np.int16), one, one, one)


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


def _text_table(column: pd.Series) -> tuple[np.ndarray, list[bytes]]:
    """(codes, cells): a text column as category codes (-1: the empty cell) and its quoted,
    inert UTF-8 cells."""
    cat = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    names = np.array([str(x) for x in cat.cat.categories], object)
    safe = inert_cells(names)
    names = names if safe is None else safe
    return cat.cat.codes.to_numpy(), [csv_cell(x).encode("utf-8") for x in names]


#: a rate column of at most this many distinct values is written from a table of its cells
MAX_TABLE_VALUES = 32_767
#: distinct values in the column's first rows above which it is not even tried
_SAMPLE, _SAMPLE_MAX = 8_192, 1_024


def _rate_table(column) -> tuple[np.ndarray, list[bytes]] | None:
    """(codes, cells) of a rate column of few distinct values (each formatted once; code -1, a
    missing value, is the empty cell); None for a column of many values (formatted per chunk)."""
    if len(pd.unique(column[:_SAMPLE])) > _SAMPLE_MAX:
        return None
    codes, uniques = pd.factorize(column)
    if len(uniques) > MAX_TABLE_VALUES:
        return None
    return codes.astype(np.int8 if len(uniques) <= 127 else np.int16), percent_cells(uniques)


def _plain(dtype) -> bool:
    """A numpy number dtype (its missing values, if any, are NaN)."""
    return isinstance(dtype, np.dtype) and dtype.kind in "iufb"


class _Source:
    """The command frame's columns as the writer reads them: numbers sliced per chunk, text
    (and rates of few values) as codes into one table of finished cells (built once)."""

    def __init__(self, c: pd.DataFrame) -> None:
        self.c = c
        self.engine_id = engine_ids(c["engine"])
        start, end = c["start_ns"].to_numpy(np.int64), c["end_ns"].to_numpy(np.int64)
        self.order = sort_order(c, self.engine_id)
        self.concurrency = concurrency(c["core"].to_numpy(), start, end, self.order)
        self.start, self.end = start, end
        # the number columns as arrays, no copies: a numpy column itself, a nullable one's
        # extension array (sliced by its own take: no Series, no index per chunk)
        self.numbers = {name: (c[name].to_numpy() if _plain(c[name].dtype) else c[name].array)
                        for _, name, kind in COLUMNS if kind in ("int", "float", "rate") and name in c}
        tables = {name: _text_table(c[name]) for _, name, kind in COLUMNS if kind == "text" and name in c}
        tables |= {name: t for _, name, kind in COLUMNS
                   if kind == "rate" and name in c and (t := _rate_table(self.numbers[name])) is not None}
        # one table of every column's cells: (codes, first entry, widest cell) per column
        cells, self.tables = [], {}
        for name, (codes, column_cells) in tables.items():
            self.tables[name] = (codes, len(cells), max(map(len, column_cells), default=0))
            cells += column_cells
        self.table = Texts(cells)

    def fill(self, chunk: Chunk, j: int, name: str, kind: str, rows: np.ndarray) -> None:
        """Column ``name`` of the given rows into column ``j`` of ``chunk`` (every cell empty
        for a column the frame lacks)."""
        c = self.c
        if name in self.tables:
            codes, base, width = self.tables[name]
            chunk.codes(j, codes[rows], self.table, base, width)
        elif kind == "derived":
            chunk.ints(j, self.engine_id[rows] if name == "engine_id" else self.concurrency[rows]
                       if name == "concurrency" else self.end[rows] - self.start[rows])
        elif name not in c:
            chunk.empty(j, len(rows))
        else:
            column = self.numbers[name]
            if isinstance(column, np.ndarray):      # the slice only: never a copy of the column
                values, present = column[rows], None
                if kind != "float" and values.dtype.kind == "f":
                    present = ~np.isnan(values)
                    values = np.where(present, values, 0)
            else:
                part = column.take(rows)
                present = ~np.asarray(part.isna(), bool)
                values = part.to_numpy(np.int64 if kind == "int" else np.float64, na_value=0)
            if kind == "rate":
                chunk.rates(j, values, ~np.isnan(values) if present is None else present)
            elif kind == "float":
                chunk.floats(j, values, present)
            else:
                chunk.ints(j, values.astype(np.int64, copy=False), present)


def write(profile: Profile, out_dir) -> Path:
    """Write ``out_dir/PerfDoc/instr_world.csv`` (atomically) and return its path."""
    target = Path(out_dir) / FILE
    c = profile.commands
    source = _Source(c)
    order = source.order
    chunk = Chunk(len(COLUMNS), min(CHUNK, len(order)) or 1)
    try:
        with atomic_open(target, "wb") as fh:
            fh.write((",".join(csv_cell(h) for h in HEADER) + "\n").encode("utf-8"))
            for lo in range(0, len(order), CHUNK):
                rows = order[lo:lo + CHUNK]
                for j, (_, name, kind) in enumerate(COLUMNS):
                    source.fill(chunk, j, name, kind, rows)
                fh.write(chunk.text(len(rows), source.table))
    except OSError as err:
        raise OutputError(f"{target}: cannot write the Instr World CSV ({err.strerror or err})") from None
    return target
