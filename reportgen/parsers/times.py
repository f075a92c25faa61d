"""Times read from trace files (JSON numbers, decimal strings, CSV cells; all in µs) as
validated integer nanoseconds: the one place where such a value becomes a time.

The window (docs/formats.md): every kept start and end lies strictly inside ±``TIME_LIMIT_NS``
(2^62 ns, about ±146 years around the trace's zero, so Unix-epoch µs clocks fit) and every
duration is >= 0.  The difference of any two kept times, a time plus a duration and the sum of
two times then all fit in int64, so nothing downstream (spans, unions, shifts to a common base,
the perfetto writer's offset) can overflow.  A value that is missing, is not a number (bool,
list, object, text that is no number) or does not fit the window is never guessed at: the
event is dropped and counted in one warning per kind.
"""
from __future__ import annotations

from typing import Any, Iterable, NamedTuple

import numpy as np
import pandas as pd

TIME_LIMIT_NS = 1 << 62
#: largest |µs| whose ns value can be computed in int64 without overflow (then window-checked)
_US_BOUND = TIME_LIMIT_NS // 1000 + 1

#: status of each value
OK, MISSING, NOT_A_NUMBER, OUT_OF_WINDOW = 0, 1, 2, 3
_WHY = {MISSING: "missing", NOT_A_NUMBER: "not a number",
        OUT_OF_WINDOW: "not finite or beyond ±2^62 ns"}


class Times(NamedTuple):
    ns: np.ndarray       # int64 ns; 0 where the status is not OK
    status: np.ndarray   # int8 per value: OK, MISSING, NOT_A_NUMBER or OUT_OF_WINDOW
    strings: int         # how many were given as strings


def parse_us(values: Iterable[Any]) -> Times:
    """µs values (int, float, decimal string; None/NaN = missing) -> validated int64 ns.

    Integers are multiplied exactly; strings are split at the decimal point so the ns digits
    survive (Ascend writes ``"1704161511420306.491"`` for that reason); floats are rounded.
    Bools, lists and objects are not numbers.
    """
    if isinstance(values, np.ndarray):
        vals = values
    else:  # one object per value, lists included
        items = list(values)
        vals = np.fromiter(items, dtype=object, count=len(items))
    n = len(vals)
    ns = np.zeros(n, np.int64)
    status = np.full(n, MISSING, np.int8)
    if n == 0:
        return Times(ns, status, 0)
    kind = _kinds(vals)
    status[kind == 4] = NOT_A_NUMBER
    idx = np.flatnonzero(kind == 1)
    if len(idx):
        _put(ns, status, idx, *_from_ints(vals[idx]))
    idx = np.flatnonzero(kind == 2)
    if len(idx):
        _put(ns, status, idx, *_from_floats(vals[idx].astype(np.float64)))
    idx = np.flatnonzero(kind == 3)
    if len(idx):
        _put(ns, status, idx, *_from_strings(vals[idx]))
    return Times(ns, status, len(idx))


def shifted(times: Times, offset_ns: int) -> Times:
    """``times`` moved by ``offset_ns`` (|offset| < TIME_LIMIT_NS: no overflow), window re-checked."""
    ok = times.status == OK
    ns = np.where(ok, times.ns + np.int64(offset_ns), 0)
    out = np.abs(ns) >= TIME_LIMIT_NS
    return Times(np.where(out, 0, ns), np.where(out, OUT_OF_WINDOW, times.status).astype(np.int8),
                 times.strings)


class Spans(NamedTuple):
    start: np.ndarray    # int64 ns of the kept rows
    dur: np.ndarray      # int64 ns >= 0 of the kept rows; start + dur inside the window
    keep: np.ndarray     # bool per input row
    warnings: list       # (code, message): one per kind of problem, counted


def points(ts: Times, position: np.ndarray, unit: str = "event", noun: str = "events",
           field: str = "ts") -> tuple[np.ndarray, list]:
    """(keep mask, warnings) of rows with one time: a row whose time is unusable is dropped.
    ``position[i]`` names row i in the file (``unit`` "event" or "row") for the warning."""
    bad = ts.status != OK
    warnings = _counted("bad-ts", bad, position, unit, noun,
                        f"have no usable '{field}' ({_breakdown(ts.status[bad])}); dropped")
    return ~bad, warnings


def spans(ts: Times, dur: Times, position: np.ndarray, unit: str = "event",
          noun: str = "events", fields: tuple[str, str] = ("ts", "dur")) -> Spans:
    """Rows with a start and a duration: a missing duration is 0, a negative one is taken as 0;
    a row whose start or duration is unusable, or that would end beyond the window, is dropped
    (one warning per kind, as :func:`points`)."""
    f_ts, f_dur = fields
    good_ts, warnings = points(ts, position, unit, noun, f_ts)
    bad_dur = good_ts & (dur.status != OK) & (dur.status != MISSING)
    warnings += _counted("bad-dur", bad_dur, position, unit, noun, f"have an unusable '{f_dur}' "
                         f"({_breakdown(dur.status[bad_dur])}); dropped")
    negative = good_ts & ~bad_dur & (dur.ns < 0)
    warnings += _counted("negative-dur", negative, position, unit, noun,
                         f"have a negative '{f_dur}'; taken as 0")
    d = np.maximum(dur.ns, 0)
    # both terms are inside the window, so the sum cannot overflow int64
    late = good_ts & ~bad_dur & (ts.ns + d >= TIME_LIMIT_NS)
    warnings += _counted("bad-end", late, position, unit, noun,
                         f"would end ('{f_ts}' + '{f_dur}') at or beyond 2^62 ns; dropped")
    keep = good_ts & ~bad_dur & ~late
    return Spans(ts.ns[keep], d[keep], keep, warnings)


def _counted(code: str, bad: np.ndarray, position: np.ndarray, unit: str, noun: str,
             what: str) -> list[tuple[str, str]]:
    """One warning for every row in ``bad``: how many, what, and the first one's position."""
    if not bad.any():
        return []
    return [(code, f"{int(bad.sum())} {noun} {what} (first: {unit} {int(position[np.argmax(bad)])})")]


def _breakdown(status: np.ndarray) -> str:
    counts = np.bincount(status, minlength=len(_WHY) + 1)
    return ", ".join(f"{int(counts[s])} {why}" for s, why in _WHY.items() if counts[s])


def _put(ns: np.ndarray, status: np.ndarray, idx: np.ndarray, got: np.ndarray,
         st: np.ndarray) -> None:
    ns[idx] = np.where(st == OK, got, 0)
    status[idx] = st


def _window(ns: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Status of computed ns values: OK inside the window, OUT_OF_WINDOW otherwise."""
    return np.where(ok & (np.abs(ns) < TIME_LIMIT_NS), OK, OUT_OF_WINDOW).astype(np.int8)


def _from_ints(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    try:
        us = vals.astype(np.int64)
        small = np.abs(us) < _US_BOUND
    except OverflowError:  # some beyond int64: compared as Python ints, outside the window
        small = ((vals < _US_BOUND) & (vals > -_US_BOUND)).astype(bool)
        us = np.where(small, vals, 0).astype(np.int64)
    ns = np.where(small, us, 0) * 1000
    return ns, _window(ns, small)


def _from_floats(us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.rint(us * 1000.0)
        ok = np.isfinite(f) & (np.abs(f) < TIME_LIMIT_NS)   # exact: the limit is a power of 2
    ns = np.where(ok, f, 0).astype(np.int64)
    return ns, np.where(ok, OK, OUT_OF_WINDOW).astype(np.int8)


#: sign, integer digits, fraction digits of a plain decimal (no exponent)
_DECIMAL = r"^([+-]?)(\d*)(?:\.(\d*))?$"


#: widest text the byte-matrix path reads (sign, 16 integer digits, point, fraction)
_FAST_WIDTH = 24


def _plain_decimals(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ns, handled) for texts that are a plain decimal ``[-+]digits[.digits]`` of at most
    _FAST_WIDTH ASCII characters with at most 16 integer digits, read digit by digit (the rules
    are the general path's: 4 fraction digits, half up); ``handled`` False leaves a value to the
    general path.  The texts are a byte matrix; rows of one layout (length, point, sign: a few
    per trace) are read together with one weight vector, no Python step per value."""
    n = len(vals)
    ns = np.zeros(n, np.int64)
    done = np.zeros(n, bool)
    try:
        b = np.array(vals, dtype=f"S{_FAST_WIDTH + 1}")
    except (UnicodeEncodeError, ValueError, TypeError):
        return ns, done
    m = b.view(np.uint8).reshape(n, _FAST_WIDTH + 1)
    length = np.char.str_len(b)
    dot = m == 46
    has_dot = dot.any(axis=1)
    point = np.where(has_dot, np.argmax(dot, axis=1), length)
    signed = (m[:, 0] == 45) | (m[:, 0] == 43)
    layout = (length.astype(np.int64) * 64 + point) * 2 + signed
    keys, inverse = np.unique(layout, return_inverse=True)
    for key, size in zip(keys, np.bincount(inverse)):
        length_k, point_k, sign_k = int(key) // 128, (int(key) // 2) % 64, int(key) % 2
        n_int = point_k - sign_k
        if length_k > _FAST_WIDTH or n_int > 16 or length_k == sign_k + (point_k < length_k):
            continue                                   # too long, or no digit at all
        rows = np.flatnonzero(inverse == np.searchsorted(keys, key))
        cols = np.r_[sign_k:point_k, point_k + 1:length_k]
        digits = m[np.ix_(rows, cols)] - np.uint8(48)   # wraps: a non-digit is > 9
        ok = (digits <= 9).all(axis=1)
        if point_k < length_k:                          # a point: exactly one
            ok &= dot[rows].sum(axis=1) == 1
        weight = np.zeros(len(cols), np.int64)
        weight[:n_int] = 10 ** np.arange(n_int - 1, -1, -1, dtype=np.int64) * 10
        n_frac = min(len(cols) - n_int, 4)
        weight[n_int:n_int + n_frac] = 10 ** np.arange(3, 3 - n_frac, -1, dtype=np.int64)
        whole = digits[:, :n_int].astype(np.int64) @ weight[:n_int] // 10 if n_int else 0
        ok &= whole < _US_BOUND
        frac4 = digits[:, n_int:n_int + n_frac].astype(np.int64) @ weight[n_int:n_int + n_frac] \
            if n_frac else 0
        got = np.where(ok, whole, 0) * 1000 + (np.where(ok, frac4, 0) + 5) // 10
        ns[rows] = np.where(m[rows, 0] == 45, -got, got)
        done[rows] = ok
    return ns, done


def _from_strings(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ns, fast = _plain_decimals(vals)
    if fast.all():
        return ns, _window(ns, fast)
    rest = np.flatnonzero(~fast)
    got, st = _from_strings_general(vals[rest])
    status = _window(ns, fast)
    ns[rest] = got
    status[rest] = st
    return np.where(status == OK, ns, 0), status


def _from_strings_general(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = pd.Series(vals, dtype=object).str.strip()
    parts = s.str.extract(_DECIMAL)
    whole = parts[1].fillna("").str.lstrip("0")
    frac = parts[2].fillna("")
    plain = (parts[1].notna() & ((parts[1] != "") | (frac != ""))).to_numpy()
    # at most 16 integer digits parse into int64; below _US_BOUND, ×1000 cannot overflow
    short = plain & (whole.str.len() <= 16).to_numpy()
    ip = pd.to_numeric(whole.where(short & (whole != "").to_numpy(), "0")).to_numpy(np.int64)
    short &= ip < _US_BOUND
    ip = np.where(short, ip, 0)
    fr = pd.to_numeric(frac.where(short, "").str.ljust(4, "0").str[:4]).to_numpy(np.int64)
    ns = ip * 1000 + (fr + 5) // 10
    ns = np.where((parts[0] == "-").to_numpy(), -ns, ns)
    status = np.where(plain, _window(ns, short), NOT_A_NUMBER).astype(np.int8)
    other = np.flatnonzero(~plain)
    if len(other):  # exponent notation ("4.2e-05"), "inf" and the like: float precision
        f = pd.to_numeric(s.iloc[other], errors="coerce").to_numpy(np.float64)
        got, st = _from_floats(f)
        ns[other] = got
        status[other] = np.where(np.isnan(f), NOT_A_NUMBER, st)
    return np.where(status == OK, ns, 0), status


#: pandas' inferred type of a column that holds one kind of value -> that kind's code
_HOMOGENEOUS = {"integer": 1, "floating": 2, "string": 3, "empty": 0}


def _kinds(vals: np.ndarray) -> np.ndarray:
    """Per value: 0 None/NaN, 1 int, 2 float, 3 str, 4 anything else (bool, list, object). A
    column of one kind (the usual case: every timestamp a float, or every one a string) is
    classified in C; only a mixed one is visited value by value."""
    common = _HOMOGENEOUS.get(pd.api.types.infer_dtype(vals, skipna=True))
    if common is not None:
        return np.where(pd.isna(vals), 0, common).astype(np.int8)
    return np.fromiter((_kind(v) for v in vals), np.int8, len(vals))


def _kind(v: Any) -> int:
    t = type(v)
    if v is None:
        return 0
    if t is int or (t is not bool and isinstance(v, np.integer)):
        return 1
    if t is float or isinstance(v, np.floating):
        return 0 if v != v else 2
    return 3 if t is str else 4
