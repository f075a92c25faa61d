"""PerfDoc/PerfAI_output.xlsx: the workbook people filter, sort and search by Global Idx.

Layout
------
* ``Engine Summary`` first: capture facts and warnings from ``profile.meta``, then the
  :func:`reportgen.analysis.metrics.engine_summary` table (one row per core plus Overall) as
  typed numbers with number formats, then a definitions block.
* One sheet per ``profile.sheets()`` name (``TIU_0``, ``GDMA_0``, ``SDMA_0``, ``CDMA_1`` ...):
  header in row 1 (frozen together with columns A:C), autofilter over the whole table, columns
  Engine Id, Core Id, **Global Idx** (column C, the ``global_idx`` every output shows), Cmd Id,
  Kernel, Function Type/Name, Cycles, Start/End/Duration (ns), the engine's own columns, then
  the register fields of ``profile.registers[engine]`` when they are written.
* One sheet per ``profile.tables`` entry, written generically (framework analyses).

Cell conventions: numbers are numeric cells with a number format (ratios are fractions shown
with a ``0.0%`` format); missing values (NaN, ``<NA>``, None, "") are empty cells; integer
register fields, addresses included, are decimal numbers with format ``0`` so they sort and
filter numerically (``=DEC2HEX(cell)`` shows hex); integers beyond 2**53, which a spreadsheet
cannot hold exactly, are written as ``0x...`` text instead.

A table longer than Excel's 1,048,576 rows continues on ``NAME (2)``, ``NAME (3)`` ... sheets,
each with its own header; every xlsxwriter return code is checked so nothing is dropped.

Speed: xlsxwriter in ``constant_memory`` mode (rows stream to disk, flat memory). Each column
is converted once, vectorised, into typed numpy data (texts as codes into their distinct
values). Command sheets are then written as sheet XML built column by column for a chunk of
rows at a time (:func:`write_rows_xml`): cells without the optional ``r`` reference (a missing
value is an empty ``<c/>`` placeholder), constant tags once per column. That XML is about half
the size of xlsxwriter's, and the zip uses zlib level :data:`ZIP_LEVEL` (3, not 6): ~110k
rows/s at 19 columns for 640k-1.28M synthetic commands, ~145k on decoded 8-core dumps of
0.68M and 1.1M commands (before: ~52k and ~58k; xlsxwriter's cell API: ~13k). The small
Engine Summary, and any xlsxwriter version without the internals that path needs, use the
cell API (:func:`write_rows_cellwise`). A test checks both give the same workbook. Integer
chunks with few distinct values (register fields) build each distinct cell once. From
:data:`HELPER_MIN_ROWS` commands on, a forked helper builds the row XML of the last sheets
while this process writes the first (:class:`_SheetHelper`). At close, row files are copied
into the sheet XML as bytes. Decoded 8-core dumps of 0.68M and 1.1M commands: 2.8–3.4 s and
5.5 s (~200k rows/s).

Other backends: the Rust-backed ``rustpy-xlsxwriter`` (0.8.0) was evaluated and not adopted.
It writes one table per sheet (a header row, then rows from a DataFrame or dicts; merged
cells only above that header), so the Engine Summary's facts, group band, table and
definitions below it cannot be laid out, and one workbook cannot come from two libraries. On
the command sheets alone it measured 51-64k rows/s without pyarrow (72-87k with pyarrow and
categorical texts) against this path's 106-125k; ``benchmarks/bench_xlsx.py --paths
xml,cells,rust`` repeats the comparison.
"""
from __future__ import annotations

import contextlib
import math
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import types
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd
import xlsxwriter
import xlsxwriter.workbook
import xlsxwriter.worksheet
from tqdm import tqdm
from xlsxwriter.exceptions import XlsxWriterException

from reportgen.errors import OutputError
from reportgen.model import COMMAND_COLUMNS, ENGINE_IDS, Profile
from reportgen.writers.atomic import atomic_path

FILE_NAME = "PerfAI_output.xlsx"
#: Excel's rows per sheet, header row included (tests inject a small value to test splitting).
SHEET_MAX_ROWS = 1_048_576
#: registers="auto" writes register fields only below this many commands: they multiply the
#: cell count 3-4x and with it the time to write and open the workbook.
REGISTER_AUTO_LIMIT = 200_000
#: Excel's limit for the characters in one cell.
CELL_MAX_CHARS = 32_767
SHEET_NAME_MAX = 31
#: a sheet whose XML may pass 4 GB needs zip64 (estimated at a generous 64 bytes per cell).
#: Only then: Excel may offer to "repair" a zip64 file written by Python's zipfile.
_ZIP64_CELLS = (4 * 2**30 - 2**28) // 64

#: zlib level of the workbook's zip. xlsxwriter uses zlib's default 6; 3 writes a 640k-command
#: workbook ~20% faster (compression is a third of the time) for a file ~15% larger.
#: None keeps xlsxwriter's own setting.
ZIP_LEVEL: int | None = 3

TAB_COLORS = {"TIU": "#008000", "GDMA": "#FFA500", "SDMA": "#A6A6A6", "CDMA": "#C0504D"}
FREEZE_COLS = 3  # Engine Id, Core Id, Global Idx stay visible while scrolling right


# ---------------------------------------------------------------------------------------
# Columns: a header, typed numpy data, and how to turn a slice of it into cells
# ---------------------------------------------------------------------------------------

_RE_ESCAPE_LIKE = re.compile(r"(_x[0-9a-fA-F]{4}_)")
_RE_CONTROL = re.compile(r"([\x00-\x08\x0b-\x1f])")


def xml_text(text: str) -> str:
    """A string as an OOXML cell text, escaped the way Excel (and xlsxwriter) escape it."""
    text = _RE_ESCAPE_LIKE.sub(r"_x005F\1", text)          # a literal "_x0041_" stays literal
    text = _RE_CONTROL.sub(lambda m: f"_x{ord(m.group(1)):04X}_", text)
    text = text.replace("\ufffe", "_xFFFE_").replace("\uffff", "_xFFFF_")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass
class Column:
    """One column of a sheet.

    ``kind`` "number": ``data`` int64 or float64; "bool": bool; "text": ``data`` holds int codes
    into ``categories`` (strings, -1 = empty); "mixed": an object array of Python values (small
    tables only). ``missing`` marks empty cells of number and bool columns.
    """

    header: str
    kind: str
    data: np.ndarray
    missing: np.ndarray | None = None
    categories: np.ndarray | None = None
    num_format: str | None = None
    note: str = ""          # shown as a comment on the header cell
    cut: int = 0            # texts cut to Excel's cell limit
    # per distinct text, prepared once (not per chunk: a column can have a million of them)
    _lookup: np.ndarray | None = field(default=None, repr=False)
    _tails: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.data)

    def values(self, lo: int = 0, hi: int | None = None) -> list:
        """Python cell values of rows lo:hi, None for an empty cell."""
        if self.kind == "text":
            if self._lookup is None:
                self._lookup = np.append(self.categories, None).astype(object)
            return self._lookup[self.data[lo:hi]].tolist()   # code -1 picks the trailing None
        out = self.data[lo:hi].astype(object)
        if self.missing is not None:
            out[self.missing[lo:hi]] = None
        return out.tolist()

    def xml_parts(self, lo: int, hi: int, style: int) -> list:
        """The ``<c>`` elements of rows lo:hi as a few slots, each a string or an array.

        Joined slot after slot, row by row, they are the cells in XML. Cells carry no ``r``
        reference (it is optional: a cell without one is the next column), so a missing value
        is written as the placeholder ``<c/>``, an empty cell that keeps the columns aligned.
        Constant parts are one string per column, not one per cell; only the values vary.
        """
        s_attr = f' s="{style}"' if style else ""
        if self.kind == "text":
            if style not in self._tails:
                self._tails[style] = np.array(
                    [f'<c{s_attr} t="inlineStr"><is><t{_space(t)}>{xml_text(t)}</t></is></c>'
                     for t in self.categories.tolist()] + [EMPTY_CELL], dtype=object)
            return [self._tails[style][self.data[lo:hi]]]   # code -1 picks the trailing <c/>
        if self.kind == "bool":
            tails = np.array([f'<c{s_attr} t="b"><v>0</v></c>', f'<c{s_attr} t="b"><v>1</v></c>',
                              EMPTY_CELL], dtype=object)
            picks = self.data[lo:hi].astype(np.int8)
            if self.missing is not None:
                picks[self.missing[lo:hi]] = 2
            return [tails[picks]]
        if self.kind != "number":
            raise TypeError(f"column {self.header!r}: kind {self.kind!r} has no direct XML form")
        chunk = self.data[lo:hi]
        empty = self.missing[lo:hi] if self.missing is not None else None
        if chunk.dtype.kind in "iu":
            # most integer columns (register fields, types, sizes) repeat a few values: build
            # each distinct cell once and pick it per row, as for texts
            codes, uniques = pd.factorize(chunk)
            if len(uniques) * 4 <= len(chunk):
                cells = np.array([f"<c{s_attr}><v>{v}</v></c>" for v in uniques.tolist()]
                                 + [EMPTY_CELL], dtype=object)
                if empty is not None:
                    codes[empty] = -1                     # -1 picks the trailing <c/>
                return [cells[codes]]
            texts = list(map(str, chunk.tolist()))
        else:
            # Python's shortest round-trip repr; Excel wants an upper-case exponent (1E+20).
            # repr writes one for magnitudes >= 1e16 or < 1e-4 (only those need upper())
            texts = list(map(repr, chunk.tolist()))
            size = np.abs(chunk)
            with np.errstate(invalid="ignore"):
                sci = np.flatnonzero((size >= 1e16) | ((size < 1e-4) & (size > 0)))
            for i in sci.tolist():
                texts[i] = texts[i].upper()
        if empty is None or not empty.any():
            return [f"<c{s_attr}><v>", texts, "</v></c>"]
        opens = np.full(hi - lo, f"<c{s_attr}><v>", dtype=object)
        closes = np.full(hi - lo, "</v></c>", dtype=object)
        vals = np.array(texts, dtype=object)
        opens[empty], vals[empty], closes[empty] = EMPTY_CELL, "", ""
        return [opens, vals, closes]

    def width(self) -> float:
        """Display width from the header and the first rows (autofit would be too slow)."""
        sample = slice(0, 300)
        if self.kind == "text":
            codes = self.data[sample]
            used = np.unique(codes[codes >= 0])
            longest = max((len(t) for t in self.categories[used].tolist()), default=0)
        elif self.kind == "number":
            data = self.data[sample]
            if self.missing is not None:
                data = data[~self.missing[sample]]
            top = float(np.abs(data.astype(np.float64)).max()) if len(data) else 0.0
            digits = len(str(int(top))) + (1 if (data < 0).any() else 0)
            if self.num_format not in ("0", None):
                digits += (digits - 1) // 3          # thousands separators
            longest = digits + (3 if data.dtype.kind == "f" else 0)
        elif self.kind == "bool":
            longest = 5
        else:
            longest = max((len(str(v)) for v in self.values(0, 300) if v is not None), default=0)
        return float(min(max(len(self.header) + 2, longest + 2, 6), 60))


#: a cell with no value: holds the place of a missing value in a row of unreferenced cells
EMPTY_CELL = "<c/>"


def _space(text: str) -> str:
    return ' xml:space="preserve"' if text[:1].isspace() or text[-1:].isspace() else ""


def column_from_series(header: str, series: pd.Series, num_format: str | None = None,
                       note: str = "") -> Column:
    """Convert one pandas column to a typed Column, vectorised; missing values become empty."""
    s = series
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _text_column(header, s, note)
    if pd.api.types.is_bool_dtype(dtype):
        missing = s.isna().to_numpy(bool)
        data = s.to_numpy(dtype=bool, na_value=False)
        return Column(header, "bool", data, missing if missing.any() else None, note=note)
    if pd.api.types.is_integer_dtype(dtype):
        return _integer_column(header, s, num_format or "0", note)
    if dtype == object:
        typed = _typed_objects(s)
        if typed is not None:
            return column_from_series(header, typed, num_format, note)
    if pd.api.types.is_float_dtype(dtype):
        data = s.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = ~np.isfinite(data)  # inf has no cell value either (e.g. a zero-length rate)
        if num_format is None:
            # whole numbers stored as float (register tables with NaN gaps): integers with
            # format "0", so a 40-bit address shows all its digits instead of 1.09951E+12
            ok = data[~missing]
            if len(ok) and (ok == np.round(ok)).all() and (np.abs(ok) <= 2**53).all():
                return Column(header, "number", np.where(missing, 0, data).astype(np.int64),
                              missing if missing.any() else None, num_format="0", note=note)
        return Column(header, "number", data, missing if missing.any() else None,
                      num_format=num_format, note=note)
    return _text_column(header, s, note)


def _typed_objects(s: pd.Series) -> pd.Series | None:
    """An object column that holds only numbers or only booleans, as a typed column.

    Register tables and framework tables often carry Python ints with None; written as text
    they could not be sorted or summed.
    """
    kind = pd.api.types.infer_dtype(s, skipna=True)
    try:
        if kind == "integer":
            return s.astype("Int64")
        if kind in ("floating", "mixed-integer-float", "decimal"):
            return pd.to_numeric(s).astype(np.float64)
        if kind == "boolean":
            return s.astype("boolean")
    except (OverflowError, TypeError, ValueError):
        return None  # e.g. integers beyond 64 bits: written as text
    return None


def _integer_column(header: str, s: pd.Series, num_format: str, note: str) -> Column:
    """Integers as numbers; a column holding values a double cannot represent becomes hex text."""
    missing = s.isna().to_numpy(bool)
    if str(s.dtype).lower() == "uint64":
        raw = s.to_numpy(dtype=np.uint64, na_value=0)
        big = bool((raw > 2**53).any())
        data = raw if big else raw.astype(np.int64)
    else:
        data = s.to_numpy(dtype=np.int64, na_value=0)
        big = bool(((data > 2**53) | (data < -(2**53))).any())
    if big:
        text = pd.Series([hex(int(v)) if v >= 0 else "-" + hex(-int(v)) for v in data.tolist()],
                         dtype=object).where(~missing, None)
        return _text_column(header, text, (note + " " if note else "") +
                            "Values beyond 2**53 are written as hex text.")
    return Column(header, "number", data, missing if missing.any() else None,
                  num_format=num_format, note=note)


def _text_column(header: str, series: pd.Series, note: str) -> Column:
    """Texts as codes into their distinct values, so each distinct text is prepared once."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy().astype(np.int64)
        cats = pd.Series(series.cat.categories.astype(str), dtype=object)
    else:
        s = series.astype(object)
        s = s.where(s.notna(), None)
        if pd.api.types.infer_dtype(s, skipna=True) not in ("string", "empty"):
            s = s.map(lambda v: v if v is None or type(v) is str else str(v))
        codes, uniques = pd.factorize(s, use_na_sentinel=True)
        codes = codes.astype(np.int64)
        cats = pd.Series(uniques, dtype=object)
    cats, long = _safe_texts(cats)
    cats = cats.to_numpy(dtype=object)
    empty = np.flatnonzero(cats == "")
    if len(empty):
        codes = np.where(np.isin(codes, empty), -1, codes)  # "" is an empty cell, not a text
    cut = int(np.isin(codes, np.flatnonzero(long)).sum()) if long.any() else 0
    return Column(header, "text", codes, None, cats, None, note, cut)


def _safe_texts(texts: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """Cut over-long texts to Excel's cell limit; defuse xlsxwriter's raw rich-string path.

    xlsxwriter writes a string of the form ``<r>...</r>`` into the XML unescaped (it takes it
    for a pre-built rich string), which would corrupt the sheet; a trailing space keeps such a
    value visible as typed while sending it through the escaping path. Returns the texts and
    which of them were cut.
    """
    if texts.empty:
        return texts, np.zeros(0, bool)
    long = (texts.str.len() > CELL_MAX_CHARS).to_numpy(bool)
    rich = (texts.str.startswith("<r>") & texts.str.endswith("</r>")).to_numpy(bool)
    if not (long.any() or rich.any()):
        return texts, long
    texts = texts.copy()
    texts[long] = texts[long].str.slice(0, CELL_MAX_CHARS - 1) + "…"
    texts[rich] = texts[rich] + " "
    return texts, long


# ---------------------------------------------------------------------------------------
# Command sheets: which model columns each engine shows
# ---------------------------------------------------------------------------------------

#: (header, model column, number format, note); shown on every command sheet in this order
COMMON_SPEC = [
    ("Core Id", "core", "0", "CDMA sheets: the core that submitted the command."),
    ("Global Idx", "global_idx", "0",
     "0-based position of the command in this sheet's list; the same global_idx the HTML "
     "report and perfetto.pftrace show."),
    ("Cmd Id", "cmd_id", "0", "Hardware command id as the vendor tools show it."),
    ("Kernel", "kernel", None, "Kernel / layer function the command belongs to; empty if unknown."),
    ("Function Type", "func_type", None, ""),
    ("Function Name", "func_name", None, ""),
    ("Cycles", "cycles", "#,##0", "end - start + 1 in the engine's own clock cycles."),
    ("Start Time(ns)", "start_ns", "#,##0", "Aligned across cores; 0 = earliest record."),
    ("End Time(ns)", "end_ns", "#,##0", ""),
]
TIU_SPEC = [
    ("Alg Ops", "alg_ops", "#,##0", "Algorithmic operations; empty where no op model exists."),
    ("uArch Ops", "uarch_ops", "#,##0", "Operations after hardware alignment."),
    ("uArch Rate", "uarch_rate", "0.0%", "Alg Ops / uArch Ops (a fraction shown as %)."),
    ("Alg Cycle", "alg_cycle", "#,##0", "Ideal cycles for Alg Ops at peak rate."),
    ("Data Type", "dtype", None, "Operand precision -> result precision."),
    ("Dep Cmd Id", "dep_cmd_id", "0", "Command id this command waits for (cmd_id_dep)."),
]
DMA_SPEC = [
    ("DMA data size(B)", "bytes", "#,##0", ""),
    ("Direction", "direction", None, "Source -> destination memory; empty if unknown."),
    ("Data Type", "dtype", None, ""),
    ("Stall Cycle", "stall_cycles", "#,##0",
     "Cycles the DMA waited because TIU and DMA accessed the same memory bank."),
    ("DDR Bandwidth(GB/s)", "ddr_bw", "0.00", "Bytes / duration, for commands touching DDR."),
    ("L2M Bandwidth(GB/s)", "l2m_bw", "0.00", "Bytes / duration, for commands touching L2M "
     "(and not DDR)."),
    ("GMEM Xact", "gmem_xact", "#,##0", "AXI transactions of the command."),
    ("Dep Cmd Id", "dep_cmd_id", "0", "Command id this command waits for (cmd_id_dep)."),
]
#: model columns shown only when they hold data for the sheet
OPTIONAL_SPEC = [
    ("Batch", "batch", "0", "Batch index of the command."),
]
ENGINE_SPECS = {"TIU": TIU_SPEC, "GDMA": DMA_SPEC, "SDMA": DMA_SPEC, "CDMA": DMA_SPEC}


def _spec_columns(frame: pd.DataFrame, spec: Iterable[tuple], only_if_data: bool) -> list[Column]:
    cols = []
    for header, name, fmt, note in spec:
        if name not in frame.columns:
            continue
        if only_if_data and not frame[name].notna().any():
            continue
        cols.append(column_from_series(header, frame[name], fmt, note))
    return cols


def command_columns(frame: pd.DataFrame, engine: str, registers: pd.DataFrame | None) -> list[Column]:
    """The columns of one command sheet (``frame``: that sheet's commands in global_idx order)."""
    n = len(frame)
    eid = ENGINE_IDS.get(engine)
    cols = [Column("Engine Id", "number", np.full(n, -1 if eid is None else eid, np.int64),
                   np.ones(n, bool) if eid is None else None, num_format="0",
                   note="0 TIU, 1 GDMA, 3 SDMA, 4 CDMA (the vendor's engine ids).")]
    cols += _spec_columns(frame, COMMON_SPEC, only_if_data=False)
    dur = (frame["end_ns"].to_numpy(np.int64) - frame["start_ns"].to_numpy(np.int64))
    cols.append(Column("Duration(ns)", "number", dur, num_format="#,##0", note="End - Start."))
    if engine in ENGINE_SPECS:
        cols += _spec_columns(frame, ENGINE_SPECS[engine], only_if_data=False)
    else:
        # an engine the PMU model does not know (a framework stream): show what has data
        seen: set[str] = set()
        spec = [s for s in TIU_SPEC + DMA_SPEC if not (s[1] in seen or seen.add(s[1]))]
        cols += _spec_columns(frame, spec, only_if_data=True)
    cols += _spec_columns(frame, OPTIONAL_SPEC, only_if_data=True)
    extra = [c for c in frame.columns if c not in COMMAND_COLUMNS and frame[c].notna().any()]
    cols += [column_from_series(str(c), frame[c]) for c in extra]
    if registers is not None and len(registers.columns):
        regs = registers.reindex(frame.index)
        taken = {c.header for c in cols}
        for name in regs.columns:
            s = regs[name]
            if not s.notna().any():
                continue  # this engine's table covers other cores too
            header = str(name) if str(name) not in taken else f"{name} (reg)"
            note = "decimal address; =DEC2HEX(cell) shows hex" if "addr" in str(name) else ""
            cols.append(column_from_series(header, s, None, note))
    return cols


def table_columns(table: pd.DataFrame) -> list[Column]:
    """Columns of a generic extra table (``profile.tables``): its index too when it is named."""
    if not isinstance(table.index, pd.RangeIndex) or table.index.name is not None:
        table = table.reset_index()
    return [column_from_series(str(c), table[c]) for c in table.columns]


# ---------------------------------------------------------------------------------------
# Engine Summary sheet
# ---------------------------------------------------------------------------------------

_NS, _INT, _PCT, _BW, _RATIO = "#,##0", "#,##0", "0.0%", "0.00", "0.00"
ENGINE_LABELS = {"tiu": "TIU", "gdma": "GDMA", "sdma": "SDMA", "cdma": "CDMA"}


def _summary_spec() -> list[tuple[str, str, str | None, str, str, str]]:
    """(summary column, header, number format, group label, definition name, definition).

    Each engine's columns are adjacent so one band above the header can label them.
    """
    spec = [("core", "Core", "0", "", "Core", "Core index; Overall = all cores (CDMA: all ports)."),
            ("span_ns", "Span (ns)", _NS, "", "Span (ns)",
             "First command start to last command end over the whole profile; same on every row.")]
    for key, label in ENGINE_LABELS.items():
        common = [
            ("cmds", "cmds", _INT,
             "Commands shown, system commands included (CDMA per core: commands it submitted)."),
            ("busy_ns", "busy (ns)", _NS,
             "Union of the intervals of the engine's non-system commands; Overall adds the "
             "per-core unions (CDMA: union over all ports)."),
            ("idle_ns", "idle (ns)", _NS,
             "Span - busy (Overall: span x cores - busy; CDMA Overall: span - busy)."),
            ("util", "util", _PCT,
             "Busy / span (Overall: busy / (span x cores); CDMA Overall: busy / span)."),
        ]
        spec += [(f"{key}_{k}", f"{label} {h}", f, label, f"<engine> {h}", d) for k, h, f, d in common]
        if key == "tiu":
            spec += [
                ("tiu_alg_ops", "TIU Alg Ops", _INT, label, "TIU Alg Ops",
                 "Sum of Alg Ops over modelled TIU commands."),
                ("tiu_uarch_ops", "TIU uArch Ops", _INT, label, "TIU uArch Ops",
                 "Sum of uArch Ops over the same commands."),
                ("tiu_modelled_cmds", "TIU modelled cmds", _INT, label, "TIU modelled cmds",
                 "TIU commands with an op model (Alg and uArch Ops known)."),
                ("tiu_uarch_rate", "TIU uArch rate", _PCT, label, "TIU uArch rate",
                 "Alg Ops / uArch Ops; empty when no command is modelled."),
            ]
            continue
        dma = [
            ("ddr_bytes", "DDR bytes (B)", _INT,
             "Bytes of non-system commands whose direction touches DDR."),
            ("ddr_read_bytes", "DDR read (B)", _INT, "Bytes with DDR as the source."),
            ("ddr_write_bytes", "DDR write (B)", _INT, "Bytes with DDR as the destination."),
            ("ddr_busy_ns", "DDR time (ns)", _NS, "Summed duration of the commands moving DDR bytes."),
            ("ddr_bw_busy", "DDR BW busy (GB/s)", _BW,
             "DDR bytes / DDR time: bandwidth while transferring."),
            ("ddr_bw_wall", "DDR BW wall (GB/s)", _BW, "DDR bytes / span: average over the whole run."),
            ("l2m_bytes", "L2M bytes (B)", _INT,
             "Bytes of non-system commands touching L2M but not DDR."),
            ("l2m_busy_ns", "L2M time (ns)", _NS, "Summed duration of the commands moving L2M bytes."),
            ("l2m_bw_busy", "L2M BW busy (GB/s)", _BW, "L2M bytes / L2M time."),
            ("l2m_bw_wall", "L2M BW wall (GB/s)", _BW, "L2M bytes / span."),
            ("stall_cycles", "stall (cycles)", _INT,
             "Summed stall counter (TIU and DMA on the same memory bank)."),
        ]
        spec += [(f"{key}_{k}", f"{label} {h}", f, label, f"<DMA> {h}", d) for k, h, f, d in dma]
    spec += [
        ("parallelism", "Parallelism", _PCT, "All engines", "Parallelism",
         "(TIU + GDMA + SDMA busy) / span (Overall: / (span x cores)); above 100% when "
         "engines overlap."),
        ("compute_ratio", "Compute ratio", _RATIO, "All engines", "Compute ratio",
         "TIU busy / (GDMA + SDMA busy); empty without data movement."),
    ]
    return spec


def _summary_columns(summary: pd.DataFrame) -> tuple[list[Column], list[str], list[tuple[str, str]]]:
    """Columns, their group labels and the definitions of the summary table."""
    spec = _summary_spec()
    known = {s[0] for s in spec}
    cols: list[Column] = []
    groups: list[str] = []
    definitions: list[tuple[str, str]] = []
    for key, header, fmt, group, defined, definition in spec:
        if key not in summary.columns:
            continue
        if key == "core":
            values = [v if isinstance(v, str) else int(v) for v in summary["core"].tolist()]
            cols.append(Column(header, "mixed", np.array(values, dtype=object), num_format="0"))
        else:
            cols.append(column_from_series(header, pd.to_numeric(summary[key], errors="coerce"), fmt))
        groups.append(group)
        if all(defined != d[0] for d in definitions):
            definitions.append((defined, definition))
    for key in summary.columns:  # metrics added to the contract later: shown, not lost
        if key not in known:
            fmt = _PCT if key.endswith(("_util", "_rate")) else None
            cols.append(column_from_series(str(key), pd.to_numeric(summary[key], errors="coerce"), fmt))
            groups.append("")
    return cols, groups, definitions


# ---------------------------------------------------------------------------------------
# The workbook
# ---------------------------------------------------------------------------------------

class _Book:
    """One xlsxwriter workbook in constant_memory mode plus the formats it shares."""

    def __init__(self, path: Path) -> None:
        self.wb = xlsxwriter.Workbook(str(path), {
            "constant_memory": True, "strings_to_numbers": False, "strings_to_urls": False,
            "strings_to_formulas": False})
        self.header = self.wb.add_format({"bold": True, "bg_color": "#305496", "font_color": "#FFFFFF",
                                          "text_wrap": True, "valign": "top", "border": 1})
        self.title = self.wb.add_format({"bold": True, "font_size": 14})
        self.key = self.wb.add_format({"bold": True})
        self.warn = self.wb.add_format({"font_color": "#9C0006"})
        self.group = self.wb.add_format({"bold": True, "align": "center", "bg_color": "#D9E1F2",
                                         "border": 1})
        self._num: dict[str | None, Any] = {None: None}
        self.names: set[str] = set()

    def num(self, fmt: str | None):
        if fmt not in self._num:
            self._num[fmt] = self.wb.add_format({"num_format": fmt})
        return self._num[fmt]

    def style(self, fmt: str | None) -> int:
        """The ``s`` (xf index) a cell of number format ``fmt`` carries; 0 for none."""
        f = self.num(fmt)
        return f._get_xf_index() if f is not None else 0

    def sheet(self, name: str, tab: str | None = None):
        ws = self.wb.add_worksheet(name)
        if DIRECT_XML and getattr(ws, "constant_memory", False) and \
                hasattr(type(ws), "_write_optimized_sheet_data"):
            ws._write_optimized_sheet_data = types.MethodType(_copy_sheet_data, ws)
        self.names.add(name.lower())
        if tab:
            ws.set_tab_color(tab)
        return ws

    def unique_name(self, base: str) -> str:
        """A legal, unused sheet name (Excel: <= 31 chars, no []:*?/\\, case-insensitive)."""
        name = re.sub(r"[\[\]:*?/\\]", "_", str(base)).strip("'") or "Sheet"
        name = name[:SHEET_NAME_MAX]
        k = 1
        candidate = name
        while candidate.lower() in self.names:
            k += 1
            suffix = f"~{k}"
            candidate = name[:SHEET_NAME_MAX - len(suffix)] + suffix
        return candidate


def _check(rc: int, sheet: str, row: int) -> None:
    if rc == -1:
        raise OutputError(f"xlsx: sheet {sheet!r} refused row {row + 1} (past the sheet's row "
                          "limit); the workbook was not written")
    if rc < 0:
        raise OutputError(f"xlsx: sheet {sheet!r} row {row + 1}: xlsxwriter error code {rc}")


#: write rows as sheet XML directly (see write_rows_xml); False forces xlsxwriter's cell API
DIRECT_XML = True
_DIRECT_XML_NEEDS = ("constant_memory", "row_data_fh", "previous_row", "table",
                     "_write_single_row", "_check_dimensions")


#: cells prepared at once: bounds the memory of a chunk (~100 B per prepared cell)
CHUNK_CELLS = 400_000


def write_rows(ws, sheet: str, columns: list[Column], lo: int, hi: int, first_row: int,
               book: _Book, progress: Callable[[int], None] | None = None,
               chunk: int | None = None) -> None:
    """Write rows ``lo:hi`` of ``columns`` to ``ws`` from row ``first_row`` on, in row order."""
    chunk = chunk or max(1, CHUNK_CELLS // max(len(columns), 1))
    direct = (DIRECT_XML and all(getattr(ws, a, None) is not None for a in _DIRECT_XML_NEEDS)
              and ws.constant_memory and all(c.kind != "mixed" for c in columns))
    if direct:
        write_rows_xml(ws, sheet, columns, lo, hi, first_row, book, progress, chunk)
    else:
        write_rows_cellwise(ws, sheet, columns, lo, hi, first_row, book, progress, chunk)


def write_rows_cellwise(ws, sheet: str, columns: list[Column], lo: int, hi: int, first_row: int,
                        book: _Book, progress: Callable[[int], None] | None = None,
                        chunk: int = 20_000) -> None:
    """xlsxwriter's public cell API: one checked call per non-empty cell (~220k cells/s)."""
    puts = {"text": ws.write_string, "bool": ws.write_boolean, "mixed": ws.write,
            "number": ws.write_number}
    row = first_row
    for start in range(lo, hi, chunk):
        stop = min(start + chunk, hi)
        plan = [(c, col.values(start, stop), puts[col.kind], book.num(col.num_format))
                for c, col in enumerate(columns)]
        for i in range(stop - start):
            for c, values, put, fmt in plan:
                v = values[i]
                if v is not None:
                    rc = put(row, c, v, fmt)
                    if rc:
                        _check(rc, sheet, row)
            row += 1
        if progress is not None:
            progress(stop - start)


def write_rows_xml(ws, sheet: str, columns: list[Column], lo: int, hi: int, first_row: int,
                   book: _Book, progress: Callable[[int], None] | None = None,
                   chunk: int = 20_000) -> None:
    """Append rows as ``<row>`` XML to the constant_memory row file of an xlsxwriter sheet.

    Why: xlsxwriter spends ~5 us per cell in Python (argument checks, a tuple per cell,
    attribute escaping); building the same XML column by column with numpy object arrays is
    several times faster. The XML is what xlsxwriter writes itself in constant_memory mode
    (inline strings, ``s`` = the format's xf index) minus the optional ``r`` cell references
    (a missing value is an empty ``<c/>`` instead of a gap), which makes the sheet about a
    third smaller and so faster to write and to compress. The bookkeeping xlsxwriter relies
    on is kept (:func:`_rows_written`). ``test_xlsx`` checks that both paths give identical
    sheets.
    """
    styles = [book.style(col.num_format) for col in columns]
    _start_rows(ws, first_row)
    for start, stop, xml in xml_row_chunks(columns, lo, hi, first_row, styles, chunk):
        ws.row_data_fh.write(xml)
        _rows_written(ws, sheet, first_row + start - lo, first_row + stop - 1 - lo, len(columns))
        if progress is not None:
            progress(stop - start)


def _copy_sheet_data(ws) -> None:
    """xlsxwriter's ``_write_optimized_sheet_data`` (moves a constant_memory sheet's row file
    into the sheet XML at close), copying bytes: the original decodes and re-encodes the
    hundreds of MB of a large sheet in 64 kB text pieces."""
    if ws.dim_rowmin is None or not hasattr(ws.fh, "buffer") or ws.row_data_fh is None:
        return type(ws)._write_optimized_sheet_data(ws)
    ws._xml_start_tag("sheetData")
    ws.row_data_fh.flush()
    ws.fh.flush()
    with open(ws.row_data_filename, "rb") as src:
        shutil.copyfileobj(src, ws.fh.buffer, 1 << 20)
    ws.row_data_fh.close()
    os.unlink(ws.row_data_filename)
    ws._xml_end_tag("sheetData")


def _start_rows(ws, first_row: int) -> None:
    """Flush what xlsxwriter still holds (the header row) before our rows follow it."""
    ws._write_single_row(first_row)


def _rows_written(ws, sheet: str, r0: int, r1: int, ncols: int) -> None:
    """Tell xlsxwriter rows r0..r1 are on disk: the sheet dimensions go through its own
    ``_check_dimensions`` (which also enforces the row limit, so nothing is silently dropped)
    and ``previous_row`` keeps it from starting those rows again."""
    for r in (r0, r1):
        _check(ws._check_dimensions(r, 0), sheet, r)
        _check(ws._check_dimensions(r, max(ncols - 1, 0)), sheet, r)
    ws.previous_row = r1


def xml_row_chunks(columns: list[Column], lo: int, hi: int, first_row: int, styles: list[int],
                   chunk: int):
    """(start, stop, xml) for rows lo:hi in chunks: the ``<row>`` elements of sheet rows
    ``first_row + start - lo`` on. One matrix of fragments, row tags in the first and last
    slots: flattened row by row it is the chunk's XML in order, joined once (adding strings
    column by column would copy each growing row once per column)."""
    for start in range(lo, hi, chunk):
        stop = min(start + chunk, hi)
        r0 = first_row + start - lo
        slots: list = ['<row r="', list(map(str, range(r0 + 1, r0 + 1 + stop - start))), '">']
        for c, col in enumerate(columns):
            slots += col.xml_parts(start, stop, styles[c])
        slots.append("</row>")
        parts = np.empty((stop - start, len(slots)), dtype=object)
        for j, slot in enumerate(slots):
            parts[:, j] = slot
        yield start, stop, "".join(parts.ravel().tolist())


def _write_table_sheets(book: _Book, base: str, columns: list[Column], n: int,
                        tab: str | None, quiet: bool, freeze_cols: int) -> list[str]:
    """Write a table on as many sheets as Excel's row limit needs; return their names."""
    per_sheet = SHEET_MAX_ROWS - 1
    parts = max(1, math.ceil(n / per_sheet))
    names = []
    heads = [(c.header, c.note, c.width()) for c in columns]
    with tqdm(total=n, desc=f"xlsx {base}", unit="row", file=sys.stderr, disable=quiet,
              leave=False, dynamic_ncols=True) as bar:
        for part in range(parts):
            suffix = "" if part == 0 else f" ({part + 1})"
            lo, hi = part * per_sheet, min((part + 1) * per_sheet, n)
            ws, name = _sheet_head(book, base[:SHEET_NAME_MAX - len(suffix)] + suffix, heads,
                                   hi - lo, tab, freeze_cols)
            write_rows(ws, name, columns, lo, hi, 1, book, bar.update)
            names.append(name)
    return names


def _sheet_head(book: _Book, base: str, heads: list[tuple[str, str, float]], rows: int,
                tab: str | None, freeze_cols: int):
    """A new sheet with its header row (texts, notes, widths), frozen panes and autofilter
    over ``rows`` data rows; returns (worksheet, its name)."""
    name = book.unique_name(base)
    ws = book.sheet(name, tab)
    if rows * len(heads) > _ZIP64_CELLS:
        book.wb.use_zip64()
    for c, (header, note, width) in enumerate(heads):
        ws.set_column(c, c, width)
        _check(ws.write_string(0, c, header, book.header), name, 0)
        if note:
            ws.write_comment(0, c, note, {"x_scale": 2, "y_scale": 1.2})
    ws.freeze_panes(1, min(freeze_cols, len(heads)))
    if heads:
        ws.autofilter(0, 0, max(rows, 0), len(heads) - 1)
    return ws, name


def _registers_decision(profile: Profile, registers: Any) -> tuple[bool, str]:
    """Whether register columns go in, and the sentence the Engine Summary shows about it."""
    if registers not in ("auto", True, False):
        raise ValueError(f"registers must be 'auto', True or False, not {registers!r}")
    present = profile.has_registers()
    n = len(profile.commands)
    if not present:
        return False, "none in this capture"
    if registers is False:
        return False, "left out (switched off)"
    if registers is True:
        return True, "included (forced on)"
    if n >= REGISTER_AUTO_LIMIT:
        return False, (f"left out: {n:,} commands (they are written automatically below "
                       f"{REGISTER_AUTO_LIMIT:,}); --registers on includes them")
    return True, "included"


def _grouped_warnings(profile: Profile) -> list[str]:
    """One line per warning code (a dump can repeat the same oddity per core or per record)."""
    groups: dict[str, list] = {}
    for w in profile.meta.warnings:
        groups.setdefault(w.code, []).append(w)
    lines = []
    for code, ws in groups.items():
        more = f" (and {len(ws) - 1} more like it)" if len(ws) > 1 else ""
        lines.append(f"[{code}] {ws[0]}{more}")
    return lines


def _write_summary_sheet(book: _Book, profile: Profile, summary: pd.DataFrame,
                         register_note: str):
    """Engine Summary: facts, warnings, the metrics table, definitions. Returns (ws, next_row)."""
    ws = book.sheet("Engine Summary", "#FFC7CE")
    meta = profile.meta
    row = 0
    ws.write_string(row, 0, "PerfAI output: engine summary", book.title)
    row += 1
    chip = meta.chip + (f" ({meta.chip_alias})" if meta.chip_alias else "")
    facts: list[tuple[str, Any, str | None]] = [
        ("Chip", chip or None, None),
        ("Source", f"{meta.source}: {meta.input_path}" if meta.input_path else meta.source, None),
        ("Cores", meta.num_cores, "0"),
        ("CDMA ports", ", ".join(str(p) for p in meta.cdma_ports) or None, None),
        ("TIU clock (MHz)", meta.tiu_freq_mhz, "0.###"),
        ("DMA clock (MHz)", meta.dma_freq_mhz, "0.###"),
        ("Capture mode", meta.mode or None, None),
        ("Commands", len(profile.commands), "#,##0"),
        ("Register fields", register_note, None),
    ]
    for key, value, fmt in facts:
        ws.write_string(row, 0, key, book.key)
        if isinstance(value, str):
            ws.write_string(row, 1, value)
        elif value is not None:
            ws.write_number(row, 1, value, book.num(fmt))
        row += 1
    warnings = _grouped_warnings(profile)
    ws.write_string(row, 0, "Warnings", book.key)
    ws.write_number(row, 1, len(meta.warnings), book.num("0"))
    row += 1
    for line in warnings:
        ws.write_string(row, 1, line, book.warn)
        row += 1
    row += 1

    cols, groups, definitions = _summary_columns(summary)
    # group band (TIU / GDMA / ...) over the columns of each engine
    c = 0
    while c < len(groups):
        end = c
        while end + 1 < len(groups) and groups[end + 1] == groups[c]:
            end += 1
        if groups[c]:
            if end > c:
                ws.merge_range(row, c, row, end, groups[c], book.group)
            else:
                ws.write_string(row, c, groups[c], book.group)
        c = end + 1
    row += 1
    header_row = row
    for c, col in enumerate(cols):
        ws.write_string(row, c, col.header, book.header)
        # column A also holds the fact and definition labels above and below the table
        ws.set_column(c, c, max(12.0, min(col.width(), 16.0)) if c else 24.0)
    ws.set_row(header_row, 45)
    row += 1
    n = len(summary)
    write_rows(ws, "Engine Summary", cols, 0, n, row, book)
    ws.autofilter(header_row, 0, header_row + n, len(cols) - 1)
    ws.freeze_panes(header_row + 1, 1)
    row += n + 1

    ws.write_string(row, 0, "Definitions", book.key)
    row += 1
    for header, text in definitions:
        ws.write_string(row, 0, header, book.key)
        ws.write_string(row, 1, text)
        row += 1
    ws.write_string(row, 0, "Cells", book.key)
    ws.write_string(row, 1, "Empty cells are unknown values, never zero. Ratios are fractions "
                            "shown with a % format. Times are ns on one aligned clock.")
    row += 1
    ws.write_string(row, 0, "Command sheets", book.key)
    ws.write_string(row, 1, "One sheet per engine and core (CDMA: per port), one row per command; "
                            "column C Global Idx is the id the HTML report and perfetto show. "
                            "Integer register fields (addresses too) are decimal numbers.")
    row += 2
    row = _write_accounting(book, ws, row, meta.accounting)
    return ws, row


def _write_accounting(book: _Book, ws, row: int, accounting: dict[str, dict[str, int]]) -> int:
    """Records read / shown / dropped per sheet, as the parser counted them."""
    if not accounting:
        return row
    keys: list[str] = []
    for counts in accounting.values():
        keys += [k for k in counts if k not in keys]
    ws.write_string(row, 0, "Records per sheet", book.key)
    row += 1
    for c, key in enumerate(["Sheet"] + keys):
        ws.write_string(row, c, key, book.header)
    row += 1
    for sheet, counts in accounting.items():
        ws.write_string(row, 0, str(sheet))
        for c, key in enumerate(keys, 1):
            if counts.get(key) is not None:
                ws.write_number(row, c, counts[key], book.num("#,##0"))
        row += 1
    return row + 1


def write(profile: Profile, summary: pd.DataFrame, out_dir, *, registers: Any = "auto",
          quiet: bool = False) -> Path:
    """Write ``out_dir/PerfDoc/PerfAI_output.xlsx`` atomically and return its path.

    ``summary`` is ``engine_summary(profile)``; ``registers`` is "auto" (register fields only
    below :data:`REGISTER_AUTO_LIMIT` commands), True or False.
    """
    final = Path(out_dir) / "PerfDoc" / FILE_NAME
    with_registers, register_note = _registers_decision(profile, registers)
    try:
        with atomic_path(final) as tmp:
            book = _Book(tmp)
            try:
                _write_workbook(book, profile, summary, with_registers, register_note, quiet)
            except BaseException:
                # still close: xlsxwriter's temp files go away; the half-made file is then
                # removed by atomic_path and the error that stopped us is the one raised
                with contextlib.suppress(Exception):
                    book.wb.close()
                raise
            with _zip_level(ZIP_LEVEL):
                book.wb.close()
    except OutputError:
        raise
    except (OSError, XlsxWriterException) as err:
        raise OutputError(f"cannot write {final}: {err}") from err
    return final


@contextlib.contextmanager
def _zip_level(level: int | None):
    """Have xlsxwriter's ``close()`` zip with zlib level ``level``.

    xlsxwriter has no option for it: it creates ``ZipFile(...)`` by that module-level name in
    ``xlsxwriter.workbook``, which is swapped for a subclass with ``compresslevel`` for the
    duration of the close only (restored even on error). An xlsxwriter that zips differently
    is left alone.
    """
    original = getattr(xlsxwriter.workbook, "ZipFile", None)
    if level is None or original is not zipfile.ZipFile:
        yield
        return

    class LeveledZipFile(zipfile.ZipFile):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("compresslevel", level)
            super().__init__(*args, **kwargs)

    xlsxwriter.workbook.ZipFile = LeveledZipFile
    try:
        yield
    finally:
        xlsxwriter.workbook.ZipFile = original


def _write_workbook(book: _Book, profile: Profile, summary: pd.DataFrame, with_registers: bool,
                    register_note: str, quiet: bool) -> None:
    summary_ws, note_row = _write_summary_sheet(book, profile, summary, register_note)
    commands = profile.commands
    positions = commands.groupby("sheet", observed=True, sort=False).indices
    sheets = [(name, positions[name]) for name in profile.sheets()]
    if with_registers:
        list(profile.registers.values())      # assembled once, before a helper forks
    columns = lambda name, pos: _sheet_columns(profile, pos, with_registers)  # noqa: E731
    with _SheetHelper(book, sheets, columns) as helper:
        notes: list[str] = []
        cut = 0
        for i, (name, pos) in enumerate(sheets):
            engine = str(commands["engine"].iloc[pos[0]])
            done = helper.write(i, name, TAB_COLORS.get(engine))
            if done is not None:
                names, sheet_cut = done
            else:
                cols = columns(name, pos)
                sheet_cut = _count_cut(cols)
                names = _write_table_sheets(book, name, cols, len(pos), TAB_COLORS.get(engine),
                                            quiet, FREEZE_COLS)
            cut += sheet_cut
            if names[0] != name:
                notes.append(f"Sheet {name!r} is written as {names[0]!r} (Excel sheet names have at "
                             "most 31 characters and none of []:*?/\\).")
            if len(names) > 1:
                notes.append(f"{name} continues on {', '.join(names[1:])} "
                             f"(a sheet holds at most {SHEET_MAX_ROWS - 1:,} rows).")
    for name, table in profile.tables.items():
        cols = table_columns(table)
        cut += _count_cut(cols)
        names = _write_table_sheets(book, name, cols, len(table), "#31869B", quiet, 1)
        if names[0] != name:
            notes.append(f"Table {name!r} is on sheet {names[0]!r}.")
    if cut:
        notes.append(f"{cut:,} text cells were longer than Excel's {CELL_MAX_CHARS:,} characters "
                     "and were cut (ending in …).")
    for note in notes:  # known only now; the summary sheet's rows so far are all above
        summary_ws.write_string(note_row, 0, "Note", book.key)
        summary_ws.write_string(note_row, 1, note)
        note_row += 1
    summary_ws.activate()


def _sheet_columns(profile: Profile, pos: np.ndarray, with_registers: bool) -> list[Column]:
    """The columns of the command sheet holding the commands at rows ``pos``."""
    frame = profile.commands.iloc[pos]
    frame = frame.iloc[np.argsort(frame["global_idx"].to_numpy(), kind="stable")]
    engine = str(frame["engine"].iloc[0])
    regs = profile.registers.get(engine) if with_registers else None
    return command_columns(frame, engine, regs)


#: from this many command rows on, a helper process builds the XML of the last sheets while
#: this one writes the first (below, the fork costs more than it saves)
HELPER_MIN_ROWS = 150_000
#: share of the rows the helper takes: this process also zips the workbook at the end
HELPER_SHARE = 0.45


class _SheetHelper:
    """A forked process that builds the row XML of the last command sheets into files while
    this process writes the first ones; ``write(i, ...)`` then moves sheet ``i``'s rows into
    the workbook from the file (or returns None: the caller writes the sheet itself).

    The workbook is the longest output and xlsxwriter is single-threaded; this puts its
    biggest part (building ~20 XML cells per command) on a second core. Anything unusual (no
    fork, a sheet past Excel's row limit, a column the direct XML path cannot write, a failed
    helper) means the sheets are simply written here, as without a helper.
    """

    def __init__(self, book: _Book, sheets: list[tuple[str, np.ndarray]],
                 columns: Callable[[str, np.ndarray], list[Column]]):
        self.book, self.pid, self.heads, self.workdir = book, None, None, None
        sizes = [len(pos) for _, pos in sheets]
        self.first = len(sheets)
        internals = all(hasattr(xlsxwriter.worksheet.Worksheet, m)
                        for m in ("_write_single_row", "_check_dimensions"))
        if (not hasattr(os, "fork") or not DIRECT_XML or not internals
                or sum(sizes) < HELPER_MIN_ROWS or max(sizes, default=0) > SHEET_MAX_ROWS - 1):
            return
        taken = 0
        while self.first > 1 and taken < HELPER_SHARE * sum(sizes):
            self.first -= 1
            taken += sizes[self.first]
        self.workdir = Path(tempfile.mkdtemp(prefix="reportgen-xlsx-"))
        # the helper needs every cell style now: formats created after the fork would be
        # unknown here
        styles = {fmt: book.style(fmt) for fmt in _COMMAND_FORMATS}
        self.pid = os.fork()
        if self.pid == 0:                                   # the helper
            status = 1
            try:
                heads = [_sheet_xml(columns(name, pos), styles, self.workdir / f"{i}.xml")
                         for i, (name, pos) in enumerate(sheets) if i >= self.first]
                with open(self.workdir / "heads.pkl", "wb") as fh:
                    pickle.dump(heads, fh)
                status = 0
            except BaseException:      # noqa: BLE001 - any failure: the parent writes the sheets
                pass
            finally:
                os._exit(status)

    def write(self, i: int, name: str, tab: str | None) -> tuple[list[str], int] | None:
        if self.pid is None or i < self.first or not self._joined():
            return None
        heads, rows, cut = self.heads[i - self.first]
        ws, sheet = _sheet_head(self.book, name, heads, rows, tab, FREEZE_COLS)
        _start_rows(ws, 1)
        if rows:
            ws.row_data_fh.flush()
            with open(self.workdir / f"{i}.xml", "rb") as src:     # bytes: nothing to re-encode
                shutil.copyfileobj(src, ws.row_data_fh.buffer, 1 << 20)
            _rows_written(ws, sheet, 1, rows, len(heads))
        return [sheet], cut

    def _joined(self) -> bool:
        """Wait for the helper once; True if it succeeded."""
        if self.heads is None:
            _, status = os.waitpid(self.pid, 0)
            self.heads = []
            if status == 0:
                with open(self.workdir / "heads.pkl", "rb") as fh:
                    self.heads = pickle.load(fh)
            if not self.heads:
                self.pid = None                 # failed: write the remaining sheets here
        return bool(self.heads)

    def __enter__(self) -> "_SheetHelper":
        return self

    def __exit__(self, *exc) -> None:
        if self.pid is not None and self.heads is None:     # an error before the helper's sheets
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)


#: every number format a command sheet can use (specs, integers, register fields, none)
_COMMAND_FORMATS = sorted({fmt for spec in (COMMON_SPEC, TIU_SPEC, DMA_SPEC, OPTIONAL_SPEC)
                           for _, _, fmt, _ in spec if fmt} | {"0", "#,##0"}) + [None]


def _sheet_xml(cols: list[Column], styles: dict[str | None, int], path: Path):
    """Write a command sheet's row XML (rows from sheet row 1 on) to ``path``; returns what the
    sheet head needs: ([(header, note, width)], rows, cut texts)."""
    if any(c.kind == "mixed" or c.num_format not in styles for c in cols):
        raise ValueError("a column the helper cannot write")
    n = len(cols[0]) if cols else 0
    chunk = max(1, CHUNK_CELLS // max(len(cols), 1))
    with open(path, "w", encoding="utf-8") as fh:
        for _, _, xml in xml_row_chunks(cols, 0, n, 1, [styles[c.num_format] for c in cols], chunk):
            fh.write(xml)
    return [(c.header, c.note, c.width()) for c in cols], n, _count_cut(cols)


def _count_cut(columns: list[Column]) -> int:
    return sum(col.cut for col in columns)
