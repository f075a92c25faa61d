"""CSV lines of a chunk of rows written by one compiled (numba) loop, cell by cell, straight into
one byte buffer: no Python loop per row or per cell, no intermediate text per column.

A :class:`Chunk` holds every column of up to ``rows`` rows as one row of two matrices: ``values``
(int64) and ``how`` (uint8), the way each cell is written:

* ``INT``: the integer, as Python's ``str`` writes it (``-`` sign, no padding);
* ``DECIMAL``: ``value / 10_000`` with its decimals, trailing zeros dropped (``12.5``, ``-0.0001``);
* ``TABLE``: entry ``value`` of the column's part of the shared :class:`Texts` (finished cells:
  names already quoted, numbers already formatted); ``-1`` is an empty cell;
* ``TEXT``: entry ``value`` of this chunk's own texts (the few cells formatted outside the loop);
* ``EMPTY``: nothing;
* ``FLOAT`` and ``FLOAT_OR_MISSING``: the float64 whose bits ``values`` holds, written as Python's
  ``repr`` writes it, except a whole number below 2**53 without ``.0``. :func:`_classify` makes
  such a cell ``INT`` (whole), ``DECIMAL`` (a value whose repr is positional with at most four
  decimals: bandwidths, rates, times), ``EMPTY`` (NaN, for ``FLOAT_OR_MISSING``) or, for the rest
  (other fractions, huge or tiny magnitudes, inf, NaN), ``TEXT`` formatted by numpy (its
  float-to-bytes conversion is the shortest round-trip repr too) for those cells alone;
* ``RATE``: the float64 whose bits ``values`` holds, as ``f"{x:.1%}"`` writes it (``x * 100``
  rounded to one decimal, half to even on its exact binary value, then ``%``): :func:`_classify`
  makes it ``PERCENT`` (``values`` = 2 x the tenths of a percent + 1 if negative, -0.0 too),
  and leaves for Python's own formatting a value whose tenths lie within a few units in the
  last place of a half (where the rounding of ``x * 100 * 10`` could decide), a magnitude from
  1e15 % on, inf and NaN.

Why a DECIMAL cell is the value's repr: it is a value that ``numpy.round(x, 4)`` leaves unchanged
(``rint(x * 1e4) / 1e4 == x``: the double nearest to a decimal ``k / 10**4``) with
``1e-4 <= |x| < 1e11``. That decimal has at most 15 significant digits, and two such decimals
never round to one double, so no shorter text reads back as ``x``: repr's shortest round-trip
text is that decimal, positional in that range.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

#: how a cell is written (see the module's docstring); TEXT_PENDING, PERCENT_PENDING: a FLOAT,
#: a RATE cell that :func:`_classify` leaves for numpy's repr, for Python's ``{:.1%}``
(INT, DECIMAL, TABLE, TEXT, EMPTY, FLOAT, FLOAT_OR_MISSING, TEXT_PENDING, RATE, PERCENT,
 PERCENT_PENDING) = range(11)
#: bytes of the longest INT, DECIMAL or whole FLOAT cell ("-9223372036854775808")
NUMBER_WIDTH = 20
_COMMA, _NEWLINE, _MINUS, _POINT, _ZERO, _PERCENT = b",\n-.0%"


class Texts:
    """Byte strings end to end: string ``k`` is ``blob[at[k]:at[k + 1]]``."""

    def __init__(self, strings: list[bytes]) -> None:
        self.blob = np.frombuffer(b"".join(strings), np.uint8).copy()   # writable: one signature
        self.at = np.zeros(len(strings) + 1, np.int64)
        np.cumsum([len(s) for s in strings], out=self.at[1:])
        self.widest = int(np.diff(self.at).max()) if strings else 0


class Chunk:
    """The cells of up to ``rows`` rows of ``columns`` columns (see the module's docstring),
    filled column by column, then written as lines by :meth:`text`. The buffers are reused from
    chunk to chunk: their size is bounded by ``rows``, not by the table."""

    def __init__(self, columns: int, rows: int) -> None:
        self.values = np.zeros((columns, rows), np.int64)
        self.how = np.zeros((columns, rows), np.uint8)
        self.kind = np.zeros(columns, np.uint8)          # how a column's cells were filled
        self.base = np.zeros(columns, np.int64)          # a TABLE column's first entry
        self.width = np.zeros(columns, np.int64)         # its widest cell but TEXT ones
        self.out = np.empty(0, np.uint8)

    def ints(self, j: int, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """Column ``j``: integers, empty where ``present`` is False."""
        self._fill(j, values, INT, NUMBER_WIDTH, present)

    def floats(self, j: int, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """Column ``j``: floats; NaN is an empty cell unless ``present`` is given (then it is
        the empty cells, and a NaN it keeps is written ``nan``)."""
        self._fill(j, values.astype(np.float64, copy=False).view(np.int64),
                   FLOAT_OR_MISSING if present is None else FLOAT, NUMBER_WIDTH, present)

    def rates(self, j: int, values: np.ndarray, present: np.ndarray) -> None:
        """Column ``j``: rates written as ``{:.1%}``, empty where ``present`` is False."""
        self._fill(j, values.astype(np.float64, copy=False).view(np.int64), RATE, NUMBER_WIDTH, present)

    def codes(self, j: int, codes: np.ndarray, table: Texts, base: int, width: int) -> None:
        """Column ``j``: entries ``base + code`` of ``table`` (code -1: empty), at most
        ``width`` bytes each."""
        self._fill(j, codes, TABLE, width, None)
        self.base[j] = base

    def empty(self, j: int, n: int) -> None:
        """Column ``j``: every cell empty."""
        self.how[j, :n] = EMPTY
        self.kind[j], self.width[j] = EMPTY, 0

    def _fill(self, j, values, how, width, present) -> None:
        n = len(values)
        self.values[j, :n] = values
        self.how[j, :n] = how
        if present is not None and not present.all():
            self.how[j, :n][~present] = EMPTY
        self.kind[j], self.width[j] = how, width

    def text(self, n: int, table: Texts) -> memoryview:
        """The CSV lines of the first ``n`` rows (a view of a buffer the next chunk reuses).

        ``table`` holds the TABLE cells of every column."""
        values, how = self.values, self.how
        texts: list[bytes] = []
        if _classify(values, how, self.kind, n):      # cells left for numpy's or Python's text
            for pending, formatted in ((TEXT_PENDING, lambda x: x.astype("S32").tolist()),
                                       (PERCENT_PENDING, percent_cells)):
                jj, ii = np.nonzero(how[:, :n] == pending)
                cells = formatted(values[jj, ii].view(np.float64))
                values[jj, ii] = np.arange(len(texts), len(texts) + len(jj))
                texts += cells
                how[jj, ii] = TEXT
        own = Texts(texts)
        bound = n * (int(self.width.sum()) + len(self.width) * (own.widest + 1))
        if len(self.out) < bound:
            self.out = np.empty(bound, np.uint8)
        end = _lines(values, how, n, self.base, table.blob, table.at, own.blob, own.at, self.out)
        return self.out[:end].data


def percent_cells(values) -> list[bytes]:
    """Python's ``{:.1%}`` of each value (the vendor's rate cells)."""
    return [f"{x:.1%}".encode() for x in np.asarray(values, np.float64).tolist()]


def compile_loops() -> None:
    """Load (or compile) the machine code of both loops, with the argument types a chunk
    passes: a process that forks writers does it once, before the fork, for all of them."""
    chunk = Chunk(3, 1)
    chunk.ints(0, np.zeros(1, np.int64))
    chunk.floats(1, np.full(1, 0.5))
    chunk.rates(2, np.full(1, 0.5), np.ones(1, bool))
    chunk.text(1, Texts([]))


@njit(cache=True)
def _classify(values, how, kind, n):
    """FLOAT / FLOAT_OR_MISSING cells of the first ``n`` rows made INT, DECIMAL, EMPTY or
    TEXT_PENDING in place (see the module's docstring); returns how many are TEXT_PENDING.
    ``np.rint`` rounds as ``numpy.round`` does (half to even), on the same products."""
    floats = values.view(np.float64)
    pending = 0
    for j in range(values.shape[0]):
        if kind[j] == RATE:
            pending += _classify_rates(values[j], how[j], n)
        if kind[j] != FLOAT and kind[j] != FLOAT_OR_MISSING:
            continue
        for i in range(n):
            h = how[j, i]
            if h != FLOAT and h != FLOAT_OR_MISSING:
                continue
            x = floats[j, i]
            if x != x and h == FLOAT_OR_MISSING:
                how[j, i] = EMPTY
                continue
            size = abs(x)
            if np.rint(x) == x and size < 2.0 ** 53:
                values[j, i] = np.int64(x)
                how[j, i] = INT
                continue
            scaled = np.rint(x * 10_000.0)
            if scaled / 10_000.0 == x and size < 1e11 and size >= 1e-4:
                values[j, i] = np.int64(scaled)
                how[j, i] = DECIMAL
            else:
                how[j, i] = TEXT_PENDING
                pending += 1
    return pending


@njit(cache=True, inline="always")
def _classify_rates(values, how, n):
    """RATE cells made PERCENT or PERCENT_PENDING (see the module's docstring)."""
    floats = values.view(np.float64)
    pending = 0
    for i in range(n):
        if how[i] != RATE:
            continue
        y = floats[i] * 100.0                 # as Python's "%" format multiplies
        tenths = abs(y) * 10.0
        if tenths < 1e16:                     # False for inf and NaN
            whole = np.floor(tenths)
            if abs(tenths - whole - 0.5) > tenths * 2.0 ** -50:   # > 4 ulp from a half
                negative = y < 0 or (y == 0 and math.copysign(1.0, y) < 0)
                values[i] = 2 * np.int64(np.rint(tenths)) + (1 if negative else 0)
                how[i] = PERCENT
                continue
        how[i] = PERCENT_PENDING
        pending += 1
    return pending


@njit(cache=True)
def _lines(values, how, n, base, table, table_at, texts, texts_at, out):
    """The first ``n`` rows' cells as CSV lines into ``out`` (large enough); returns the length."""
    p = 0
    for i in range(n):
        for j in range(values.shape[0]):
            if j:
                out[p] = _COMMA
                p += 1
            h = how[j, i]
            v = values[j, i]
            if h == INT:
                p = _integer(v, out, p)
            elif h == TABLE:
                if v >= 0:
                    k = base[j] + v
                    p = _copy(table, table_at[k], table_at[k + 1], out, p)
            elif h == TEXT:
                p = _copy(texts, texts_at[v], texts_at[v + 1], out, p)
            elif h == DECIMAL:
                p = _decimal(v, out, p)
            elif h == PERCENT:
                p = _percent(v, out, p)
        out[p] = _NEWLINE
        p += 1
    return p


@njit(cache=True, inline="always")
def _copy(source, start, end, out, p):
    for k in range(start, end):
        out[p] = source[k]
        p += 1
    return p


#: "00" to "99": two digits written per division
_PAIRS = np.frombuffer(b"".join(b"%02d" % k for k in range(100)), np.uint8)
#: 10**k, k < 20 (10**19 < 2**64)
_POWERS = np.array([10 ** k for k in range(20)], np.uint64)


@njit(cache=True, inline="always")
def _integer(v, out, p):
    """``str(v)`` at ``out[p:]``; returns the end. Unsigned arithmetic: -2**63 has no positive
    int64."""
    if v < 0:
        out[p] = _MINUS
        p += 1
        u = np.uint64(-(v + 1)) + np.uint64(1)
    else:
        u = np.uint64(v)
    digits = 1
    while digits < 20 and u >= _POWERS[digits]:
        digits += 1
    end = p + digits
    k = end
    hundred = np.uint64(100)
    while u >= hundred:
        pair = 2 * (u % hundred)
        u //= hundred
        k -= 2
        out[k] = _PAIRS[pair]
        out[k + 1] = _PAIRS[pair + 1]
    if u >= np.uint64(10):
        out[p] = _PAIRS[2 * u]
        out[p + 1] = _PAIRS[2 * u + 1]
    else:
        out[p] = _ZERO + np.uint8(u)
    return end


@njit(cache=True, inline="always")
def _decimal(v, out, p):
    """``v / 10_000`` at ``out[p:]``: the integer part, then "." and the decimals without
    trailing zeros when there are any; returns the end."""
    if v < 0:
        out[p] = _MINUS
        p += 1
        v = -v
    p = _integer(v // 10_000, out, p)
    fraction = v % 10_000
    if fraction:
        out[p] = _POINT
        places = 4
        while fraction % 10 == 0:
            fraction //= 10
            places -= 1
        for k in range(p + places, p, -1):
            out[k] = _ZERO + fraction % 10
            fraction //= 10
        p += places + 1
    return p


@njit(cache=True, inline="always")
def _percent(v, out, p):
    """A PERCENT cell (2 x tenths + sign) at ``out[p:]``: "12.5%", "-0.0%"; returns the end."""
    if v & 1:
        out[p] = _MINUS
        p += 1
    tenths = v >> 1
    p = _integer(tenths // 10, out, p)
    out[p] = _POINT
    out[p + 1] = _ZERO + tenths % 10
    out[p + 2] = _PERCENT
    return p + 3
