"""The workbook being written: its shared formats, legal sheet names, sheet heads, and tables
split over as many sheets as Excel's row limit needs."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import xlsxwriter

from reportgen.progress import bar as progress_bar
from reportgen.writers.xlsx import xlsxwriter_private as private
from reportgen.writers.xlsx.columns import Column

#: Excel's rows per sheet, header row included (tests inject a small value to test splitting).
SHEET_MAX_ROWS = 1_048_576
SHEET_NAME_MAX = 31
#: a sheet whose XML may pass 4 GB needs zip64 (estimated at a generous 64 bytes per cell).
#: Only then: Excel may offer to "repair" a zip64 file written by Python's zipfile.
_ZIP64_CELLS = (4 * 2**30 - 2**28) // 64

#: (header, note, width, printed) of each column of a sheet
Heads = list[tuple[str, str, float, bool]]

#: a table sheet printing at most this many columns prints one page wide; a wider one prints
#: in page-wide strips, each repeating the header row and the frozen columns
PRINT_FIT_COLUMNS = 24


def heads_of(columns: list[Column]) -> Heads:
    return [(c.header, c.note, c.width(), c.printed) for c in columns]
#: every printed page: the sheet's name on the left, "Page n of N" on the right
PRINT_FOOTER = "&L&A&RPage &P of &N"


def print_setup(ws, header_rows: tuple[int, int], fit_width: bool, key_columns: int) -> None:
    """Print setup of a sheet holding a table: landscape, its ``header_rows`` (first, last) on
    every page, one page wide if ``fit_width`` (else the ``key_columns`` on every page),
    gridlines printed, the sheet name and page number in the footer."""
    ws.set_landscape()
    ws.repeat_rows(*header_rows)
    if fit_width:
        ws.fit_to_pages(1, 0)
    elif key_columns:
        ws.repeat_columns(0, key_columns - 1)
    ws.hide_gridlines(0)
    ws.set_footer(PRINT_FOOTER)


def _print_table(ws, heads: Heads, rows: int, freeze_cols: int) -> None:
    """A table sheet's print setup. Only its leading printed columns are in the print area:
    a command sheet prints its command columns one page wide, its register fields (dozens of
    columns, hundreds of pages) stay on screen."""
    printed = sum(1 for h in heads if h[3])
    if printed < len(heads):
        ws.print_area(0, 0, max(rows, 1), max(printed, 1) - 1)
    print_setup(ws, (0, 0), printed <= PRINT_FIT_COLUMNS, min(freeze_cols, printed))


class Book:
    """One xlsxwriter workbook in constant_memory mode (rows stream to disk, flat memory)
    plus the formats it shares."""

    def __init__(self, path: Path) -> None:
        self.wb = xlsxwriter.Workbook(str(path), {
            "constant_memory": True, "strings_to_numbers": False, "strings_to_urls": False,
            "strings_to_formulas": False,
            # its temporary files beside the workbook (in the run's stage): a killed run
            # leaves nothing in TMPDIR, the next run's recovery removes the stage
            "tmpdir": str(Path(path).parent)})
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
        """The shared Format of number format ``fmt`` (None for none)."""
        if fmt not in self._num:
            self._num[fmt] = self.wb.add_format({"num_format": fmt})
        return self._num[fmt]

    def sheet(self, name: str, tab: str | None = None):
        ws = self.wb.add_worksheet(name)
        private.prepare_sheet(ws)
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

    def sheet_head(self, base: str, heads: Heads, rows: int, tab: str | None, freeze_cols: int):
        """A new sheet with its header row (texts, notes, widths), frozen panes and autofilter
        over ``rows`` data rows; returns (worksheet, its name)."""
        name = self.unique_name(base)
        ws = self.sheet(name, tab)
        if rows * len(heads) > _ZIP64_CELLS:
            self.wb.use_zip64()
        for c, (header, note, width, _) in enumerate(heads):
            ws.set_column(c, c, width)
            private.check(ws.write_string(0, c, header, self.header), name, 0)
            if note:
                ws.write_comment(0, c, note, {"x_scale": 2, "y_scale": 1.2})
        ws.freeze_panes(1, min(freeze_cols, len(heads)))
        if heads:
            ws.autofilter(0, 0, max(rows, 0), len(heads) - 1)
        _print_table(ws, heads, rows, freeze_cols)
        return ws, name

    def table_sheets(self, base: str, columns: list[Column], n: int, tab: str | None,
                     quiet: bool, freeze_cols: int) -> list[str]:
        """Write a table on as many sheets as Excel's row limit needs (``NAME``, ``NAME (2)``
        ...); return their names."""
        per_sheet = SHEET_MAX_ROWS - 1
        parts = max(1, math.ceil(n / per_sheet))
        names = []
        heads = heads_of(columns)
        with progress_bar(n, f"xlsx {base}", "row", quiet) as bar:
            for part in range(parts):
                suffix = "" if part == 0 else f" ({part + 1})"
                lo, hi = part * per_sheet, min((part + 1) * per_sheet, n)
                ws, name = self.sheet_head(base[:SHEET_NAME_MAX - len(suffix)] + suffix, heads,
                                           hi - lo, tab, freeze_cols)
                private.write_rows(ws, name, columns, lo, hi, 1, self.num, bar.update)
                names.append(name)
        return names
