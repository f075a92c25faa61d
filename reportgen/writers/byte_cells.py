"""Cells as NUL-padded byte matrices: many values formatted at once, no Python loop per value.

A column part is an (n, width) uint8 matrix, each row one cell's UTF-8 bytes with NUL bytes
where there is nothing (padding, an empty cell). Parts side by side, with the separators, make
one matrix whose non-NUL bytes, read row by row, are the rows' text: the workbook's sheet XML
builds its rows so (the text holds no NUL: sheet XML escapes it). ``instr_world.csv`` is
written by ``csv_lines`` instead.
"""
from __future__ import annotations

import numpy as np

#: a column part (see the module docstring)
Cells = np.ndarray


def fixed(strings: np.ndarray) -> Cells:
    """Cells from a numpy bytes (``S``) array (NUL-padded already), trimmed to the longest."""
    n = len(strings)
    width = max(int(np.char.str_len(strings).max()) if n else 0, 1)
    return strings.view(np.uint8).reshape(n, strings.dtype.itemsize)[:, :width]


def matrix(n: int, width: int) -> tuple[np.ndarray, bytearray]:
    """An uninitialised (n, width) byte matrix and the bytearray it lives in: the lines are then
    ``buf.translate(None, b"\\0")``, with no ``tobytes`` copy of the matrix first."""
    buf = bytearray(n * width)
    return np.frombuffer(buf, np.uint8).reshape(n, width), buf


def const(text: bytes, n: int) -> Cells:
    """A part holding ``text`` in each of ``n`` rows (a tag, a separator): a broadcast view,
    which :func:`lines` writes once (made directly: ``np.broadcast_to`` costs ~10x more)."""
    return np.ndarray((n, len(text)), np.uint8, text, strides=(0, 1))


def lines(parts: list[Cells], n: int) -> bytes:
    """The text of ``n`` rows made of ``parts`` side by side: the non-NUL bytes of their matrix,
    row by row. The parts made by :func:`const` (the same bytes in every row: half the parts
    of a sheet's XML) are written once into a template row that fills the matrix in one pass;
    only the others are copied into it, part by part (~20 % less CPU for the workbook's rows
    than copying every part)."""
    width = sum(p.shape[1] for p in parts)
    template = np.zeros(width, np.uint8)
    varying, at = [], 0
    for p in parts:
        if p.strides[0] == 0 and n:
            template[at:at + p.shape[1]] = p[0]
        else:
            varying.append((at, p))
        at += p.shape[1]
    out, buf = matrix(n, width)
    out[:] = template
    for at, p in varying:
        out[:, at:at + p.shape[1]] = p
    return buf.translate(None, b"\0")     # faster than a boolean mask of the matrix


def pick(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``table[codes]`` (code -1: the last row), through ``take``: about twice as fast as fancy
    indexing for the few-byte rows of a cell table (no bounds check: codes come from the table)."""
    return table.take(codes, axis=0, mode="wrap")


def group_table(lead: bool, zero: bytes) -> np.ndarray:
    """The 4 bytes of every group 0..9999: zero-padded ("0042"), or, for the leading group of a
    number, NUL-padded with ``zero`` for 0 (b"" above the last group, b"0" in it)."""
    texts = [b"%04d" % k if not lead else (b"%d" % k if k else zero).rjust(4, b"\0")
             for k in range(10_000)]
    return np.frombuffer(b"".join(texts), np.uint8).reshape(10_000, 4)


#: digit groups, indexed by (group value + 10,000 x kind): kind 0 inside a number, 1 a leading
#: group above the last, 2 a leading last group (so 0 is "0")
GROUPS = np.concatenate([group_table(False, b""), group_table(True, b""), group_table(True, b"0")])
#: the same groups as little-endian 32-bit words: one word per group is picked and stored
GROUP_WORDS = GROUPS.view("<u4").ravel()


def digits(a: np.ndarray, neg: np.ndarray) -> list[Cells]:
    """Decimal cells of ``-a`` where ``neg`` else ``a`` (``a`` >= 0, int64): 4-digit groups
    picked from :data:`GROUPS` (as whole 32-bit words), 4 digits per division, and a column
    for the minus sign only when some value is negative (NUL bytes are dropped from the lines,
    so the sign may stand apart from the digits' padding)."""
    n = len(a)
    top = int(a.max()) if n else 0
    groups = max(1, (len(str(top)) + 3) // 4)
    words = np.empty((n, groups), "<u4")
    for g in range(groups - 1, -1, -1):         # least significant group first
        a, low = np.divmod(a, 10_000)
        leading = (a == 0) * (2 if g == groups - 1 else 1)     # nothing above: NUL-padded
        low += 10_000 * leading
        words[:, g] = GROUP_WORDS.take(low, mode="wrap")
    mat = words.view(np.uint8).reshape(n, 4 * groups)
    if not neg.any():
        return [mat]
    return [np.where(neg, np.uint8(ord("-")), np.uint8(0))[:, None], mat]


