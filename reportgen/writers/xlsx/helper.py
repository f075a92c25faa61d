"""A forked helper process that builds the row XML of the last command sheets.

The workbook is the longest output and xlsxwriter is single-threaded; from
:data:`HELPER_MIN_ROWS` commands on, a helper puts its biggest part (building ~20 XML cells
per command) on a second core: it writes the rows of the last sheets (about
:data:`HELPER_SHARE` of the rows) to files while this process writes the first sheets, and
this process then moves them into the workbook as bytes. The result is byte-identical to a
single-process run (``tests/test_xlsx.py``).
"""
from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from reportgen.parallel import die_with_parent
from reportgen.writers.xlsx import rowzip, sheet_bytes, workbook
from reportgen.writers.xlsx import xlsxwriter_private as private
from reportgen.writers.xlsx.columns import Column, cut_count
from reportgen.writers.xlsx.sheet_columns import COMMAND_FORMATS, FREEZE_COLS

#: from this many command rows on, a helper process builds the XML of the last sheets while
#: this one writes the first (below, the fork costs more than it saves)
HELPER_MIN_ROWS = 150_000
#: share of the rows the helper takes: this process also zips the workbook at the end
HELPER_SHARE = 0.45


class SheetHelper:
    """A forked process that builds the row XML of the last command sheets into files while
    this process writes the first ones; ``write(i, ...)`` then moves sheet ``i``'s rows into
    the workbook from the file (or returns None: the caller writes the sheet itself).

    Anything unusual (no fork, xlsxwriter internals not usable, a sheet past Excel's row
    limit, a column the direct XML path cannot write, a failed helper) means the sheets are
    simply written here, as without a helper.
    """

    def __init__(self, book: workbook.Book, sheets: list[tuple[str, np.ndarray]],
                 columns: Callable[[str, np.ndarray], list[Column]]):
        self.book, self.pid, self.heads, self.workdir = book, None, None, None
        sizes = [len(pos) for _, pos in sheets]
        self.first = len(sheets)
        if (not hasattr(os, "fork") or not private.USABLE or sum(sizes) < HELPER_MIN_ROWS
                or max(sizes, default=0) > workbook.SHEET_MAX_ROWS - 1):
            return
        taken = 0
        while self.first > 1 and taken < HELPER_SHARE * sum(sizes):
            self.first -= 1
            taken += sizes[self.first]
        # beside the workbook, i.e. in the run's stage: removed with it even if we are killed
        self.workdir = Path(tempfile.mkdtemp(prefix=".reportgen-xlsx-",
                                             dir=Path(book.wb.filename).parent))
        # the helper needs every cell style now: formats created after the fork would be
        # unknown here
        styles = {fmt: private.style_index(book.num(fmt)) for fmt in COMMAND_FORMATS}
        writer_pid = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:                                   # the helper
            status = 1
            try:
                die_with_parent(writer_pid)
                heads = [build_rows_file(columns(name, pos), styles, self.workdir / f"{i}.xml")
                         for i, (name, pos) in enumerate(sheets) if i >= self.first]
                with open(self.workdir / "heads.pkl", "wb") as fh:
                    pickle.dump(heads, fh)
                status = 0
            except BaseException:      # noqa: BLE001 - any failure: the parent writes the sheets
                pass
            finally:
                os._exit(status)

    def write(self, i: int, name: str, tab: str | None) -> tuple[list[str], int] | None:
        """Sheet ``i`` from the helper's file: ([its sheet name], cut texts), or None."""
        if self.pid is None or i < self.first or not self._joined():
            return None
        heads, rows, cut, deflated = self.heads[i - self.first]
        ws, sheet = self.book.sheet_head(name, heads, rows, tab, FREEZE_COLS)
        private.append_rows_file(ws, sheet, self.workdir / f"{i}.xml", rows, len(heads), deflated)
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

    def __enter__(self) -> "SheetHelper":
        return self

    def __exit__(self, *exc) -> None:
        if self.pid is not None and self.heads is None:     # an error before the helper's sheets
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)


def build_rows_file(cols: list[Column], styles: dict[str | None, int],
                    path: Path) -> tuple[workbook.Heads, int, int, tuple[int, int] | None]:
    """Write a command sheet's rows (from sheet row 1 on) to ``path``; returns what the sheet
    head needs: ([(header, note, width)], rows, cut texts, deflated). While the workbook's rows
    are streamed (``private.streaming()``) the file holds them deflated (a rowzip.RowStream:
    deflated = (CRC-32, length of the XML)), else as sheet XML (deflated = None)."""
    if any(c.kind == "mixed" or c.num_format not in styles for c in cols):
        raise ValueError("a column the helper cannot write")
    n = len(cols[0]) if cols else 0
    chunks = sheet_bytes.row_chunks(cols, 0, n, 1, [styles[c.num_format] for c in cols])
    deflated = None
    if private.streaming():
        stream = rowzip.RowStream(path.parent, path)
        for _, _, xml in chunks:
            stream.write(xml)
        stream.finish()
        stream.fh.close()
        deflated = (stream.crc, stream.size)
    else:
        with open(path, "wb") as fh:
            for _, _, xml in chunks:
                fh.write(xml)
    return workbook.heads_of(cols), n, cut_count(cols), deflated
