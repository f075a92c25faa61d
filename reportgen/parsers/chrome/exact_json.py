"""Trace JSON decoded with its long decimal numbers kept as written.

A float64 holds 15-16 significant digits: ``1712195495520835.103`` µs (an HTA
``ns_resolution_trace`` timestamp) comes out of a float decoder as ``...835.125`` and the
nanoseconds are gone before any time arithmetic.  msgspec's decoder hands every float literal
to a hook as its text; a literal short enough to convert exactly (see SHORT) becomes a plain
float, a longer one an :class:`ExactFloat`, a float that also carries its text.  It behaves as
a float everywhere (args shown, summed, written), and the time parser
(:func:`exact_texts`, then :mod:`reportgen.parsers.times`) reads its text instead.
"""
from __future__ import annotations

import json
from typing import Any

import msgspec
import numpy as np


class ExactFloat(float):
    """A decoded float literal with the text it was written as."""

    __slots__ = ("text",)


#: literals of at most this many characters convert exactly: with a decimal point they hold at
#: most 11 digits (< 1e11 µs), so float(text) is within 1e-5 ns and x1000 within 0.02 ns of
#: the true ns value (< 2^53): rounding gives it exactly
SHORT = 12


def _float_literal(text: str) -> float:
    if len(text) <= SHORT:
        return float(text)
    x = ExactFloat(text)
    x.text = text
    return x


_DECODER = msgspec.json.Decoder(float_hook=_float_literal)
#: what the decoder raises on text that is not JSON
DECODE_ERRORS = (msgspec.DecodeError, ValueError, RecursionError)


def loads(data: bytes | bytearray) -> Any:
    """Decode JSON text; float literals longer than SHORT keep their text (ExactFloat).
    Text msgspec refuses (``NaN``/``Infinity`` literals, which real writers emit and the
    stdlib accepts) is decoded again by the stdlib decoder with the same float rule."""
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError:
        return json.loads(data, parse_float=_float_literal)


def exact_texts(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Object array of decoded values with every ExactFloat replaced by its text (which the
    time parser reads digit by digit), and how many there were."""
    exact = np.fromiter((type(v) is ExactFloat for v in values), bool, len(values))
    n = int(exact.sum())
    if n:
        values = values.copy()
        values[exact] = [v.text for v in values[exact]]
    return values, n
