"""Sheet XML rows as bytes, built as NUL-padded byte matrices (writers/byte_cells.py).

The same XML as :func:`sheet_xml.row_chunks` (tests/test_xlsx_bytes.py compares them), without
a Python string per cell: a text, bool or repeating integer cell is picked from a table of its
column's finished cells, other integers are written as digit groups between constant tags,
floats keep Python's repr (the one loop per value left, as in the string path). A chunk whose
text cells are too wide for a matrix (a cell of kilobytes would widen every row of the chunk)
is built the string way, so the bytes are the same whichever way a chunk goes.
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from reportgen.writers.byte_cells import const as _const, digits, fixed, lines, pick
from reportgen.writers.xlsx import sheet_xml
from reportgen.writers.xlsx.columns import Column

#: a text table wider than this (bytes per cell) or larger (bytes in all) is left to strings
MAX_CELL_BYTES = 512
MAX_TABLE_BYTES = 16 << 20
_ROW_OPEN, _ROW_MID, _ROW_CLOSE = b'<row r="', b'">', b"</row>"


def _table(cells: list[str]) -> np.ndarray:
    return fixed(np.array([c.encode("utf-8") for c in cells], dtype=bytes))


def _text_table(col: Column, style: int) -> np.ndarray | None:
    """The column's finished cells per style (last: the empty cell), built once; None when
    too wide for a matrix."""
    key = ("bytes", style)
    if key not in col.xml_cells:
        sheet_xml.cell_parts(col, 0, 0, style)            # fills col.xml_cells[style]
        texts = col.xml_cells[style].tolist()
        widest = max((len(t) for t in texts), default=0) * 4         # UTF-8: <= 4 bytes a char
        col.xml_cells[key] = None if widest > MAX_CELL_BYTES or widest * len(texts) > MAX_TABLE_BYTES \
            else _table(texts)
    return col.xml_cells[key]


#: ".dddd" of 0..9999 ten-thousandths as repr writes them after the integer part: trailing
#: zeros dropped, and ".0" for none (repr(5.0) is "5.0")
_REPR_DECIMALS = np.frombuffer(b"".join((b"." + ((b"%04d" % k).rstrip(b"0") or b"0")).ljust(5, b"\0")
                                        for k in range(10_000)), np.uint8).reshape(10_000, 5)


def _float_reprs(v: np.ndarray, empty: np.ndarray | None) -> list[np.ndarray] | None:
    """Python's repr of every float of a chunk without a loop, when each present value is whole
    (below 1e16: repr writes "123.0") or has at most 4 decimals (1e-4 <= |v| < 1e11: repr's
    positional form, shortest = the 4 decimals without trailing zeros); None otherwise."""
    size = np.abs(v)
    with np.errstate(invalid="ignore"):
        whole = (v == np.round(v)) & (size < 1e16)
        fours = (np.round(v, 4) == v) & (size >= 1e-4) & (size < 1e11)
    ok = whole | fours
    if empty is not None:
        ok |= empty
    if not ok.all():
        return None
    usable = ~empty if empty is not None else np.ones(len(v), bool)
    size = np.where(usable, size, 0.0)
    ten_thousandths = np.where(whole, 0, np.round(size * 10_000)).astype(np.int64)
    integer = np.where(whole, size, 0).astype(np.int64) + ten_thousandths // 10_000
    return [*digits(integer, np.signbit(v) & usable), pick(_REPR_DECIMALS, ten_thousandths % 10_000)]


def _float_table_reprs(chunk: np.ndarray) -> np.ndarray:
    """Python's repr (:func:`sheet_xml.float_texts`) of floats beyond :func:`_float_reprs`:
    ratios such as uArch Rate repeat a few values, so each distinct value is formatted once
    and picked per row (NaN: no text). Not with a -0.0 (factorize takes it for 0.0)."""
    codes, uniques = pd.factorize(chunk)
    if len(uniques) * 4 > len(chunk) or (np.signbit(chunk) & (chunk == 0)).any():
        return fixed(np.array(sheet_xml.float_texts(chunk), dtype="S"))
    return pick(fixed(np.array(sheet_xml.float_texts(uniques) + [""], dtype="S")), codes)


@functools.lru_cache(maxsize=None)
def _number_tags(s_attr: str) -> tuple[np.ndarray, np.ndarray]:
    """A number cell's opening and closing tags, then the empty cell's (built once a style)."""
    return _table([f"<c{s_attr}><v>", sheet_xml.EMPTY_CELL]), _table(["</v></c>", ""])


def _number(col: Column, lo: int, hi: int, s_attr: str) -> list[np.ndarray]:
    chunk = col.data[lo:hi]
    n = len(chunk)
    empty = col.missing[lo:hi] if col.missing is not None else None
    opening, closing = _number_tags(s_attr)
    if chunk.dtype.kind in "iu":
        v = chunk.astype(np.int64)
        if n and v[0] == v.min() == v.max() and (empty is None or not empty.any()):
            # one value in every row (a command sheet's Engine Id and Core Id): one constant
            # cell, which byte_cells.lines writes once
            return [_const(b"".join((opening[0].tobytes().rstrip(b"\0"), b"%d" % v[0],
                                     closing[0].tobytes().rstrip(b"\0"))), n)]
        values = digits(np.abs(v), v < 0)
    else:
        values = _float_reprs(chunk, empty)
    if values is None:
        values = [_float_table_reprs(chunk)] if n else [np.zeros((0, 1), np.uint8)]
    if empty is None or not empty.any():
        return [_const(opening[0].tobytes(), n), *values, _const(closing[0].tobytes(), n)]
    blank = empty.astype(np.int8)
    values = [np.where(empty[:, None], np.uint8(0), m) for m in values]
    return [pick(opening, blank), *values, pick(closing, blank)]


def _column(col: Column, lo: int, hi: int, style: int) -> list[np.ndarray] | None:
    s_attr = f' s="{style}"' if style else ""
    if col.kind == "text":
        table = _text_table(col, style)
        return None if table is None else [pick(table, col.data[lo:hi])]
    if col.kind == "bool":
        table = _table([f'<c{s_attr} t="b"><v>0</v></c>', f'<c{s_attr} t="b"><v>1</v></c>',
                        sheet_xml.EMPTY_CELL])
        picks = col.data[lo:hi].astype(np.int8)
        if col.missing is not None:
            picks[col.missing[lo:hi]] = 2
        return [pick(table, picks)]
    if col.kind != "number":
        raise TypeError(f"column {col.header!r}: kind {col.kind!r} has no direct XML form")
    return _number(col, lo, hi, s_attr)


def chunk_bytes(columns: list[Column], start: int, stop: int, r0: int, styles: list[int]) -> bytes | None:
    """The ``<row>`` elements of rows start:stop (sheet rows from ``r0 + 1``) as UTF-8 bytes;
    None when a text column is too wide for the matrix way."""
    n = stop - start
    parts = [_const(_ROW_OPEN, n), *digits(np.arange(r0 + 1, r0 + 1 + n, dtype=np.int64),
                                           np.zeros(n, bool)), _const(_ROW_MID, n)]
    for col, style in zip(columns, styles):
        cells = _column(col, start, stop, style)
        if cells is None:
            return None
        parts += cells
    parts.append(_const(_ROW_CLOSE, n))
    return lines(parts, n)


def row_chunks(columns: list[Column], lo: int, hi: int, first_row: int, styles: list[int]):
    """:func:`sheet_xml.row_chunks` as bytes: (start, stop, xml bytes) per chunk."""
    chunk = sheet_xml.rows_per_chunk(len(columns))
    for start in range(lo, hi, chunk):
        stop = min(start + chunk, hi)
        r0 = first_row + start - lo
        xml = chunk_bytes(columns, start, stop, r0, styles)
        if xml is None:
            _, _, text = next(sheet_xml.row_chunks(columns, start, stop, r0, styles))
            xml = text.encode("utf-8")
        yield start, stop, xml
