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

from reportgen.model import Profile
from reportgen.writers.xlsx import xlsxwriter_private as private
from reportgen.writers.xlsx.columns import CELL_MAX_CHARS, Column, column_from_series
from reportgen.writers.xlsx.workbook import Book

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
            if counts.get(key) is not None:
                ws.write_number(row, c, counts[key], book.num("#,##0"))
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
