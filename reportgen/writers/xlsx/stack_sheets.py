"""The Operators by Stack sheet with each row's Stack Id linked to the first frame of its call
tree on the Call Stacks sheet (written right after it, generically, as every framework table).

The links are internal hyperlinks to a cell (no formula: outputs hold no live formulas); the
Stack Id cell keeps its number so the column still sorts and filters as numbers.  Excel keeps
at most 65,530 links per sheet: rows past that, or whose frames lie beyond the first Call
Stacks sheet, keep their number without a link (the Stack Id still finds them)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.progress import bar as progress_bar
from reportgen.writers.xlsx import xlsxwriter_private as private
from reportgen.writers.xlsx.sheet_columns import table_columns
from reportgen.writers.xlsx.workbook import SHEET_MAX_ROWS, Book, heads_of

TABLE, FRAMES = "Operators by Stack", "Call Stacks"
#: Excel's limit of hyperlinks per worksheet
MAX_LINKS = 65_530


def linked(tables: dict[str, pd.DataFrame], name: str) -> bool:
    """Whether table ``name`` is the Operators by Stack table written with links: its Call
    Stacks table comes right after it and one sheet holds it."""
    names = list(tables)
    return (name == TABLE and FRAMES in tables and names.index(FRAMES) == names.index(TABLE) + 1
            and "Stack Id" in tables[name].columns and len(tables[name]) < SHEET_MAX_ROWS)


def frame_rows(table: pd.DataFrame, frames: pd.DataFrame) -> np.ndarray:
    """Per row of ``table``, the 0-based sheet row (header = 0) of its first frame on the
    Call Stacks sheet; -1 when it has no stack or that row is past the sheet."""
    first = pd.Series(np.arange(len(frames)) + 1, index=frames["Stack Id"].to_numpy()) \
        .groupby(level=0).min()
    ids = table["Stack Id"].astype("Float64").to_numpy(np.float64, na_value=np.nan)
    rows = pd.Series(ids).map(first).to_numpy(np.float64, na_value=np.nan)
    out = np.where(np.isfinite(rows), rows, -1).astype(np.int64)
    out[out >= SHEET_MAX_ROWS] = -1
    return out


def write_stack_table(book: Book, table: pd.DataFrame, frames: pd.DataFrame, tab: str,
                      quiet: bool) -> list[str]:
    """Write ``table`` (Operators by Stack) on one sheet, its Stack Id cells linked into the
    Call Stacks sheet that comes next; returns the sheet names (one)."""
    cols = table_columns(table)
    target = book.unique_name(FRAMES)   # the name the next sheet will get
    link_col = [c.header for c in cols].index("Stack Id")
    ids = cols[link_col]
    ids.note = f"A click opens this row's call stack: its frames on the {target} sheet."
    rows = frame_rows(table, frames)
    linked = np.flatnonzero(rows >= 0)[:MAX_LINKS]
    links = {int(i): (f"internal:'{target}'!A{rows[i] + 1}", f"its call stack: {target} row {rows[i] + 1}")
             for i in linked}
    ws, name = book.sheet_head(TABLE, heads_of(cols), len(table), tab, 1)
    # links stored ahead, the rows then written by the fast path; else cell by cell with them
    ahead = private.link_cells_ahead(ws, name, [(i + 1, link_col, url, tip)
                                                for i, (url, tip) in links.items()])
    fmt = book.wb.add_format({"font_color": "#0563C1", "underline": 1, "num_format": "0"})

    def link(row: int, i: int) -> None:
        if i in links:
            url, tip = links[i]
            private.check(ws.write_url(row, link_col, url, fmt, str(ids.data[i]), tip), name, row)
            # the cell keeps its number (write_url wrote text): the link is on the cell
            private.check(ws.write_number(row, link_col, int(ids.data[i]), fmt), name, row)

    with progress_bar(len(table), f"xlsx {TABLE}", "row", quiet) as bar:
        private.write_rows(ws, name, cols, 0, len(table), 1, book.num, bar.update,
                           None if ahead else link)
    return [name]
