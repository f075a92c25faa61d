"""The Engine Summary sheet, and every text it shows.

Capture facts and warnings from ``profile.meta``, then the
:func:`reportgen.analysis.metrics.engine_summary` table (one row per core plus Overall) as
typed numbers with number formats under a band naming each engine's columns, then a
definitions block, the records per sheet, and notes about the other sheets (known only once
they are written: :class:`Notes`).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis import catalogue
from reportgen.writers.xlsx.chip_facts import write_chip_facts
from reportgen.model import Profile
from reportgen.writers.xlsx import workbook
from reportgen.writers.xlsx import xlsxwriter_private as private
from reportgen.writers.xlsx.columns import CELL_MAX_CHARS, Column, column_from_series
from reportgen.writers.xlsx.workbook import Book

#: metric kind (analysis/catalogue.py) -> Excel number format
NUMBER_FORMATS = {"id": "0", "ns": "#,##0", "count": "#,##0", "bytes": "#,##0", "cycles": "#,##0",
                  "fraction": "0.0%", "gbps": "0.00", "ratio": "0.00"}


def _header(metric: catalogue.Metric, group: str) -> str:
    """The column header: the catalogue name with its unit (a % format says "%" itself)."""
    name = f"{group} {metric.name}" if group else metric.name
    return f"{name} ({metric.unit})" if metric.unit not in ("", "%") else name


def _definition_name(entry: catalogue.SummaryMetric) -> str:
    """Name of a definition line: one line per metric, shared by the engines that have it."""
    shared = "<engine>" if entry.metric in catalogue.ENGINE else \
        "<DMA>" if entry.metric in catalogue.DMA else entry.group
    return _header(entry.metric, shared)


def _summary_columns(summary: pd.DataFrame) -> tuple[list[Column], list[str], list[tuple[str, str]]]:
    """Columns, their group labels and the definitions of the summary table (every column of the
    catalogue, each engine's adjacent so one band above the header can label them)."""
    cols: list[Column] = []
    groups: list[str] = []
    definitions: dict[str, str] = {}
    for entry in catalogue.summary_metrics():
        if entry.column not in summary.columns:
            continue
        header, fmt = _header(entry.metric, entry.group), NUMBER_FORMATS[entry.metric.kind]
        if entry.column == "core":
            values = [v if isinstance(v, str) else int(v) for v in summary["core"].tolist()]
            cols.append(Column(header, "mixed", np.array(values, dtype=object), num_format=fmt))
        else:
            cols.append(column_from_series(header, pd.to_numeric(summary[entry.column], errors="coerce"), fmt))
        groups.append(entry.group or ("All engines" if entry.metric in catalogue.ALL_ENGINES else ""))
        definitions.setdefault(_definition_name(entry), entry.metric.definition)
    for key in summary.columns:  # metrics added to the contract later: shown, not lost
        if key not in catalogue.BY_COLUMN:
            fmt = NUMBER_FORMATS["fraction"] if key.endswith(("_util", "_rate")) else None
            cols.append(column_from_series(str(key), pd.to_numeric(summary[key], errors="coerce"), fmt))
            groups.append("")
    return cols, groups, list(definitions.items())


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


def write_summary_sheet(book: Book, profile: Profile, summary: pd.DataFrame,
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
    private.write_rows(ws, "Engine Summary", cols, 0, n, row, book.num)
    ws.autofilter(header_row, 0, header_row + n, len(cols) - 1)
    ws.freeze_panes(header_row + 1, 1)
    # one page wide whatever the number of metrics; the engine band and header on every page
    workbook.print_setup(ws, (header_row - 1, header_row), True, 1)
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
                            "Integer register fields (addresses too) are decimal numbers. Printing "
                            "shows the command columns one page wide; register fields stay on "
                            "screen (select them and print the selection).")
    row += 2
    row = write_chip_facts(book, ws, row, meta)
    row = _write_accounting(book, ws, row, meta.accounting)
    return ws, row


def _write_accounting(book: Book, ws, row: int, accounting: dict[str, dict[str, int]]) -> int:
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
            # the parser counts only what happened: a key missing for a sheet is a zero
            ws.write_number(row, c, counts.get(key, 0), book.num("#,##0"))
        row += 1
    return row + 1


def register_note(why: str, commands: int, auto_limit: int) -> str:
    """The "Register fields" fact: whether the command sheets show them and ``why`` ("absent",
    "off", "on", "over-limit" or "auto", as ``reportgen.writers.xlsx`` decided)."""
    if why == "over-limit":
        return (f"left out: {commands:,} commands (they are written automatically below "
                f"{auto_limit:,}); --registers on includes them")
    return {"absent": "none in this capture", "off": "left out (switched off)",
            "on": "included (forced on)", "auto": "included"}[why]


class Notes:
    """Sentences about the other sheets, collected while they are written and then put at the
    bottom of the Engine Summary (whose rows so far are all above)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def command_sheet(self, name: str, names: list[str], per_sheet: int) -> None:
        """Command sheet ``name`` was written as sheets ``names`` of ``per_sheet`` rows at most."""
        if names[0] != name:
            self.lines.append(f"Sheet {name!r} is written as {names[0]!r} (Excel sheet names "
                              "have at most 31 characters and none of []:*?/\\).")
        if len(names) > 1:
            self.lines.append(f"{name} continues on {', '.join(names[1:])} "
                              f"(a sheet holds at most {per_sheet:,} rows).")

    def table(self, name: str, names: list[str]) -> None:
        if names[0] != name:
            self.lines.append(f"Table {name!r} is on sheet {names[0]!r}.")

    def write(self, book: Book, ws, row: int, cut: int) -> None:
        """The notes from ``row`` on, the count of ``cut`` over-long texts last."""
        if cut:
            self.lines.append(f"{cut:,} text cells were longer than Excel's {CELL_MAX_CHARS:,} "
                              "characters and were cut (ending in …).")
        for note in self.lines:
            ws.write_string(row, 0, "Note", book.key)
            ws.write_string(row, 1, note)
            row += 1
