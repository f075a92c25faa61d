"""Every use of xlsxwriter's internals, behind one version check, with the public-API way
beside each.

The fast workbook path needs five things xlsxwriter has no public API for:

* rows appended as sheet XML (``sheet_xml``) to a constant_memory sheet's row file
  (``row_data_fh``), with the bookkeeping xlsxwriter relies on (``_write_single_row``,
  ``_check_dimensions``, ``previous_row``) and the cells' ``s`` = a format's
  ``_get_xf_index()``;
* a finished row file moved into the sheet XML as bytes (``_write_optimized_sheet_data``
  replaced on the sheet): xlsxwriter decodes and re-encodes it in 64 kB text pieces;
* the zip written with a chosen zlib level (3, not 6: the ``ZipFile`` name in
  ``xlsxwriter.workbook`` swapped for the duration of ``close()``);
* rows another process built moved into a sheet (``append_rows_file``);
* hyperlinks stored for cells the fast path writes later (``link_cells_ahead``: ``write_url``
  with ``ignore_write_string`` set, as xlsxwriter's own ``add_table`` does).

They were read against the source of xlsxwriter 3.1.0 and 3.3.1 (:data:`VERIFIED`, the range
setup.cfg allows). With any other version :data:`USABLE` is False and the workbook is written
through the public API only: every cell by ``write_string``/``write_number``/..., xlsxwriter's
own zip level, no helper process. Same cells, about 7x slower on 100k synthetic commands
(``benchmarks/bench_xlsx.py --paths xml,cells``); ``tests/test_xlsx.py`` checks both read
back the same.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import types
import zipfile
from pathlib import Path
from typing import Any, Callable

import xlsxwriter
import xlsxwriter.workbook

from reportgen.errors import OutputError
from reportgen.writers.xlsx import deflate, rowzip, sheet_bytes, sheet_xml
from reportgen.writers.xlsx.columns import Column

#: xlsxwriter versions whose internals this module was checked against: >=3.1,<4
VERIFIED = ((3, 1), (4, 0))


def verified(version: str) -> bool:
    """Whether xlsxwriter ``version`` ("3.3.1") is in the :data:`VERIFIED` range."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return bool(m) and VERIFIED[0] <= (int(m[1]), int(m[2])) < VERIFIED[1]


#: the one switch: False writes through xlsxwriter's public API only (tests and
#: ``benchmarks/bench_xlsx.py --paths cells`` set it to compare the two)
USABLE = verified(getattr(xlsxwriter, "__version__", ""))

#: a number format (or None) -> the xlsxwriter Format cells of that format carry (or None)
Formats = Callable[[str | None], Any]


def check(rc: int, sheet: str, row: int) -> None:
    """Raise for an xlsxwriter return code that means a cell was not written."""
    if rc == -1:
        raise OutputError(f"xlsx: sheet {sheet!r} refused row {row + 1} (past the sheet's row "
                          "limit); the workbook was not written")
    if rc < 0:
        raise OutputError(f"xlsx: sheet {sheet!r} row {row + 1}: xlsxwriter error code {rc}")


def style_index(fmt) -> int:
    """The ``s`` (xf index) a cell of xlsxwriter Format ``fmt`` carries; 0 for None.
    Only with :data:`USABLE`."""
    return fmt._get_xf_index() if fmt is not None else 0


def prepare_sheet(ws) -> None:
    """A new constant_memory sheet: at close, its row file is copied into the sheet as bytes."""
    if USABLE and ws.constant_memory:
        ws._write_optimized_sheet_data = types.MethodType(_copy_sheet_data, ws)


#: while a workbook is written with rows streamed (:func:`zip_level`, rowzip.usable): the
#: sheets' RowStreams by worksheet id, and, once a sheet's XML file is assembled, its file
#: name -> (RowStream, byte offset of its rows) for the zip
_streams: dict[int, rowzip.RowStream] | None = None
_splices: dict[str, tuple[rowzip.RowStream, int]] = {}


def streaming() -> bool:
    """Whether command-sheet rows are deflated as they are made (inside :func:`zip_level`)."""
    return _streams is not None


def _row_stream(ws) -> rowzip.RowStream | None:
    """The sheet's RowStream (made on first use) when rows are streamed, with what xlsxwriter
    wrote to the row file so far (the header row) moved into it first; else None."""
    if _streams is None:
        return None
    stream = _streams.get(id(ws))
    if stream is None:
        stream = _streams[id(ws)] = rowzip.RowStream(Path(ws.row_data_filename).parent)
    _drain_row_file(ws, stream)
    return stream


def _drain_row_file(ws, stream: rowzip.RowStream) -> None:
    """Move what xlsxwriter wrote to the sheet's row file (its own rows) into ``stream``."""
    fh = ws.row_data_fh
    fh.flush()
    fh.seek(0)
    text = fh.read()
    fh.seek(0)
    fh.truncate()
    if text:
        stream.write(text.encode("utf-8"))


def _copy_sheet_data(ws) -> None:
    """xlsxwriter's ``_write_optimized_sheet_data`` (moves a constant_memory sheet's row file
    into the sheet XML at close), copying bytes: the original decodes and re-encodes the
    hundreds of MB of a large sheet in 64 kB text pieces. A sheet whose rows were streamed
    gets them at zip time instead (rowzip): here only their place is noted."""
    stream = _streams.get(id(ws)) if _streams is not None else None
    if stream is not None:
        _drain_row_file(ws, stream)
        stream.finish()
        ws._xml_start_tag("sheetData")
        ws.fh.flush()
        _splices[ws.fh.name] = (stream, ws.fh.buffer.tell())
        ws._xml_end_tag("sheetData")
        ws.row_data_fh.close()
        os.unlink(ws.row_data_filename)
        return
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


def write_rows(ws, sheet: str, columns: list[Column], lo: int, hi: int, first_row: int,
               formats: Formats, progress: Callable[[int], None] | None = None,
               after_row: Callable[[int, int], None] | None = None) -> None:
    """Write rows ``lo:hi`` of ``columns`` to ``ws`` from row ``first_row`` on, in row order:
    as sheet XML when :data:`USABLE` (and the sheet streams rows to a file), else cell by cell.
    ``formats`` gives the Format of a number format. ``after_row(sheet row, data row)``, when
    given, is called after each row's cells (cell by cell, so it may add to that row: links)."""
    if USABLE and ws.constant_memory and after_row is None and all(c.kind != "mixed" for c in columns):
        _write_rows_xml(ws, sheet, columns, lo, hi, first_row, formats, progress)
    else:
        _write_rows_cellwise(ws, sheet, columns, lo, hi, first_row, formats, progress, after_row)


def link_cells_ahead(ws, sheet: str, links: list[tuple[int, int, str, str]]) -> bool:
    """Hyperlinks ``(row, col, url, tip)`` on cells of rows not yet written, which the fast
    path writes afterwards (their values stay as written: numbers stay numbers). xlsxwriter's
    ``write_url`` with its ``ignore_write_string`` switch (what its ``add_table`` uses) stores
    the link without writing a cell. False when the fast path is not usable: the caller then
    writes the links with the rows through :func:`write_rows`'s ``after_row``."""
    if not (USABLE and ws.constant_memory):
        return False
    ws.ignore_write_string = True
    try:
        for row, col, url, tip in links:
            check(ws.write_url(row, col, url, None, None, tip), sheet, row)
    finally:
        ws.ignore_write_string = False
    return True


def _write_rows_cellwise(ws, sheet: str, columns: list[Column], lo: int, hi: int,
                         first_row: int, formats: Formats,
                         progress: Callable[[int], None] | None,
                         after_row: Callable[[int, int], None] | None = None) -> None:
    """xlsxwriter's public cell API: one checked call per non-empty cell (~220k cells/s)."""
    puts = {"text": ws.write_string, "bool": ws.write_boolean, "mixed": ws.write,
            "number": ws.write_number}
    chunk = sheet_xml.rows_per_chunk(len(columns))
    row = first_row
    for start in range(lo, hi, chunk):
        stop = min(start + chunk, hi)
        plan = [(c, col.values(start, stop), puts[col.kind], formats(col.num_format))
                for c, col in enumerate(columns)]
        for i in range(stop - start):
            for c, values, put, fmt in plan:
                v = values[i]
                if v is not None:
                    rc = put(row, c, v, fmt)
                    if rc:
                        check(rc, sheet, row)
            if after_row is not None:
                after_row(row, start + i)
            row += 1
        if progress is not None:
            progress(stop - start)


def _write_rows_xml(ws, sheet: str, columns: list[Column], lo: int, hi: int, first_row: int,
                    formats: Formats, progress: Callable[[int], None] | None) -> None:
    """Append rows as ``<row>`` XML (``sheet_xml.row_chunks``) to the row file of a
    constant_memory sheet, keeping the bookkeeping xlsxwriter relies on (:func:`_rows_written`)."""
    styles = [style_index(formats(col.num_format)) for col in columns]
    _start_rows(ws, first_row)
    ws.row_data_fh.flush()
    stream = _row_stream(ws)
    put = ws.row_data_fh.buffer.write if stream is None else stream.write
    for start, stop, xml in sheet_bytes.row_chunks(columns, lo, hi, first_row, styles):
        put(xml)                # bytes: sheet_xml's XML, built faster
        _rows_written(ws, sheet, first_row + start - lo, first_row + stop - 1 - lo, len(columns))
        if progress is not None:
            progress(stop - start)


def append_rows_file(ws, sheet: str, path: Path, rows: int, ncols: int,
                     deflated: tuple[int, int] | None = None) -> None:
    """Move sheet rows 1..``rows`` of ``ncols`` columns, written to ``path`` by another process,
    into ``ws`` below its header row: as sheet XML, or, with ``deflated`` = (CRC-32, length of
    the XML), as a finished rowzip.RowStream file (only while :func:`streaming`). Only with
    :data:`USABLE`."""
    _start_rows(ws, 1)
    if rows:
        ws.row_data_fh.flush()
        stream = _row_stream(ws)
        if deflated is not None:
            stream.splice(path, *deflated)
            _rows_written(ws, sheet, 1, rows, ncols)
            return
        with open(path, "rb") as src:                 # bytes: nothing to re-encode
            if stream is None:
                shutil.copyfileobj(src, ws.row_data_fh.buffer, 1 << 20)
            else:
                while piece := src.read(rowzip.COPY_BYTES):
                    stream.write(piece)
        _rows_written(ws, sheet, 1, rows, ncols)


def _start_rows(ws, first_row: int) -> None:
    """Flush what xlsxwriter still holds (the header row) before our rows follow it."""
    ws._write_single_row(first_row)


def _rows_written(ws, sheet: str, r0: int, r1: int, ncols: int) -> None:
    """Tell xlsxwriter rows r0..r1 are on disk: the sheet dimensions go through its own
    ``_check_dimensions`` (which also enforces the row limit, so nothing is silently dropped)
    and ``previous_row`` keeps it from starting those rows again."""
    for r in (r0, r1):
        check(ws._check_dimensions(r, 0), sheet, r)
        check(ws._check_dimensions(r, max(ncols - 1, 0)), sheet, r)
    ws.previous_row = r1


@contextlib.contextmanager
def zip_level(level: int | None):
    """Have xlsxwriter's ``close()`` zip with zlib level ``level`` (None: its own default).

    xlsxwriter has no option for it: it creates ``ZipFile(...)`` by that module-level name in
    ``xlsxwriter.workbook``, which is swapped for a subclass with ``compresslevel`` for the
    duration of the close only (restored even on error). The subclass also keeps a zip that a
    failed close left open (a full disk) from printing "Exception ignored in ZipFile.__del__"
    when it is collected: the error has already been reported as one line.
    """
    global _streams
    if not USABLE:
        yield
        return
    original = xlsxwriter.workbook.ZipFile
    streamed = rowzip.usable(level)

    class LeveledZipFile(zipfile.ZipFile):
        def __init__(self, *args, **kwargs):
            if level is not None:
                kwargs.setdefault("compresslevel", level)
            super().__init__(*args, **kwargs)

        def __del__(self):
            with contextlib.suppress(OSError):
                self.close()

        def write(self, filename, arcname=None, *args, **kwargs):
            if args or kwargs or filename not in _splices:
                return super().write(filename, arcname, *args, **kwargs)
            stream, at = _splices.pop(filename)
            rowzip.write_member(self, filename, arcname, stream, at)
            stream.discard()

    xlsxwriter.workbook.ZipFile = LeveledZipFile
    _streams = {} if streamed else None
    try:
        with deflate.isal_deflate(level):      # ISA-L's deflate where installed (deflate.py)
            yield
    finally:
        xlsxwriter.workbook.ZipFile = original
        for stream in (_streams or {}).values():
            stream.discard()
        _streams = None
        _splices.clear()
