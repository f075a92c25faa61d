"""Trace events as a frame: integer-ns times, opaque pid/tid keys, B/E pairs turned into
complete slices, metadata events turned into process/thread names.

Times are validated once, here (:mod:`reportgen.parsers.times`: the ±2^62 ns window, numbers
only): an event whose time cannot be represented is dropped and counted, never guessed at.

Everything after JSON decoding is vectorised; the only per-event Python work is pulling the
fields out of the decoded dicts, which the JSON decoder itself already costs, and a type test
per value of a column that mixes types (ints and strings, or odd values).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from reportgen.parsers.chrome.exact_json import exact_texts
from reportgen.parsers.chrome.reader import read_events
from reportgen.parsers.times import OK, TIME_LIMIT_NS, parse_us, shifted, spans


@dataclass
class TraceData:
    """One decoded trace file: events (no ``M``), metadata and what was tolerated."""

    path: str
    events: pd.DataFrame
    metadata: dict[str, Any]
    process_names: dict[str, str]
    process_labels: dict[str, str]
    thread_names: dict[tuple[str, str], str]
    warnings: list[tuple[str, str]] = field(default_factory=list)


# ============================================================================================
# times and keys
# ============================================================================================
def to_ns(values: Iterable[Any]) -> tuple[np.ndarray, np.ndarray, int]:
    """µs values -> (int64 ns, valid mask, #decimal strings); the rules are
    :func:`reportgen.parsers.times.parse_us`'s (the time window included)."""
    t = parse_us(values)
    return t.ns, t.status == OK, t.strings


def _key(v: Any) -> str:
    """pid/tid as an opaque string key (Kineto mixes ``"25738"`` and ``25738`` for one thread)."""
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


#: pandas' inferred types of a pid/tid column that holds nothing but numbers, text and None
_PLAIN_KEY_COLUMNS = {"integer", "floating", "mixed-integer-float", "string", "empty"}
_PLAIN_KEY_TYPES = {int, float, str, type(None)}


def plain_ids(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pid/tid-like values with the odd ones (true/false, lists, objects) replaced by their
    text (hashable, and ``true`` is not pid 1), and the mask of those."""
    odd = np.zeros(len(values), bool)
    if pd.api.types.infer_dtype(values, skipna=True) in _PLAIN_KEY_COLUMNS:
        return values, odd
    # ints mixed with text (Kineto's "25738" and 25738) land here too: one pass over types
    odd = np.fromiter((type(v) not in _PLAIN_KEY_TYPES for v in values), bool, len(values))
    if odd.any():
        values = values.copy()
        values[odd] = [_key(v) for v in values[odd]]
    return values, odd


def _keys(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_key`` over an array, once per distinct value; and the mask of odd values (plain_ids)."""
    if not len(values):
        return np.empty(0, object), np.zeros(0, bool)
    values, odd = plain_ids(values)
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), sort=False, use_na_sentinel=False)
    return np.array([_key(u) for u in uniq], dtype=object)[codes], odd


# ============================================================================================
# reading
# ============================================================================================
_EVENT_FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp", "s")


def read_trace(path: str | Path) -> TraceData:
    """Decode one trace file into a TraceData (events with integer-ns times, B/E paired)."""
    path = Path(path)
    dict_events, metadata, warnings = read_events(path)
    # one pass per field is ~2.5x faster than building a tuple per event and transposing;
    # np.fromiter keeps list-valued fields (id, args) as single objects
    n_ev = len(dict_events)
    raw = {f: np.fromiter([e.get(f) for e in dict_events], dtype=object, count=n_ev)
           for f in _EVENT_FIELDS}
    ph = pd.Series(raw["ph"], dtype=object).fillna("").astype(str)

    # metadata events -> names
    is_m = (ph == "M").to_numpy()
    process_names: dict[str, str] = {}
    process_labels: dict[str, str] = {}
    thread_names: dict[tuple[str, str], str] = {}
    for name, pid, tid, args in zip(raw["name"][is_m], raw["pid"][is_m], raw["tid"][is_m],
                                    raw["args"][is_m]):
        if not isinstance(args, dict):
            continue
        if name == "process_name" and "name" in args:
            process_names[_key(pid)] = str(args["name"])
        elif name == "process_labels" and "labels" in args:
            process_labels[_key(pid)] = str(args["labels"])
        elif name == "thread_name" and "name" in args:
            thread_names[(_key(pid), _key(tid))] = str(args["name"]).strip()

    keep = ~is_m
    position = np.flatnonzero(keep)              # index in the file's event list
    # long decimal literals are read from their text, digit by digit (exact_json)
    ts_values, n_exact = exact_texts(raw["ts"][keep])
    dur_values, _ = exact_texts(raw["dur"][keep])
    ts = parse_us(ts_values)
    json_strings = ts.strings - n_exact
    if json_strings:
        warnings.append(("string-ts", f"{json_strings} events give 'ts' as a decimal string; read "
                                      "exactly to the nanosecond"))
    base = metadata.get("baseTimeNanoseconds")
    if type(base) in (int, float) and base:
        if abs(base) < TIME_LIMIT_NS:  # (false for NaN)
            # Kineto writes ts relative to a base floored to a 3-month boundary (libkineto ChromeTraceBaseTime)
            ts = shifted(ts, int(base))
        else:
            warnings.append(("bad-base-time", f"'baseTimeNanoseconds' {base!r} is not a time "
                                              "within ±2^62 ns; not added"))
    times = spans(ts, parse_us(dur_values), position)
    warnings += times.warnings
    pid, odd_pid = _keys(raw["pid"][keep])
    tid, odd_tid = _keys(raw["tid"][keep])
    odd = (odd_pid | odd_tid)[times.keep]
    if odd.any():
        warnings.append(("odd-pid-tid", f"{int(odd.sum())} events have a 'pid' or 'tid' that is "
                                        "neither a number nor text; keyed by its text (first: "
                                        f"event {int(position[times.keep][np.argmax(odd)])})"))
    kept = keep.copy()
    kept[keep] = times.keep
    ev = pd.DataFrame({
        "ph": ph[kept].to_numpy(),
        "cat": raw["cat"][kept],
        "name": raw["name"][kept],
        "pid": pid[times.keep],
        "tid": tid[times.keep],
        "ts_ns": times.start,
        "dur_ns": times.dur,
        "args": raw["args"][kept],
        "id": raw["id"][kept],
        "bp": raw["bp"][kept],
        "s": raw["s"][kept],
    })
    ev["cat"] = ev["cat"].where(ev["cat"].notna(), "")
    ev["name"] = ev["name"].where(ev["name"].notna(), "")
    tid_num = pd.to_numeric(ev["tid"], errors="coerce")
    nneg = int((tid_num < 0).sum())
    if nneg:
        warnings.append(("negative-tid", f"{nneg} events have negative thread ids (truncated "
                                         "64-bit ids); kept as opaque thread keys"))
    ev = _pair_begin_end(ev, warnings)
    ev = ev.reset_index(drop=True)
    return TraceData(str(path), ev, metadata, process_names, process_labels, thread_names, warnings)


def _pair_begin_end(ev: pd.DataFrame, warnings: list) -> pd.DataFrame:
    """Turn B/E pairs into X slices (LIFO per (pid, tid)), vectorised.

    With +1 for B and -1 for E, the stack height floored at zero is ``C - min(0, cummin C)``
    (C = plain cumulative sum); an E that would go below zero closes nothing.  A B opened at
    height h is closed by the next E that brings the height from h back to h-1, so pairing is
    "consecutive B and E with the same (track, level)".
    """
    ph = ev["ph"].to_numpy()
    is_b = ph == "B"
    is_e = ph == "E"
    if not (is_b.any() or is_e.any()):
        return ev
    be = ev[is_b | is_e].copy()
    be["_ord"] = np.arange(len(be))
    be["_track"] = be["pid"].astype(str) + "\x1f" + be["tid"].astype(str)
    # file order within one timestamp, time order overall (events need not be sorted)
    be = be.sort_values(["_track", "ts_ns", "_ord"], kind="stable")
    step = np.where(be["ph"].to_numpy() == "B", 1, -1)
    c = pd.Series(step, index=be.index).groupby(be["_track"], sort=False).cumsum()
    run_min = c.groupby(be["_track"], sort=False).cummin()
    height = c.to_numpy() - np.minimum(run_min.to_numpy(), 0)
    is_b2 = step == 1
    # an unmatched E is one that sets a new minimum below zero
    prev_min = np.minimum(run_min.groupby(be["_track"], sort=False).shift(1).fillna(0).to_numpy(), 0)
    unmatched_e = (~is_b2) & (c.to_numpy() < prev_min)
    be["_seq"] = np.arange(len(be))
    level = np.where(is_b2, height, height + 1)
    be["_level"] = level
    be = be[~unmatched_e]
    if unmatched_e.any():
        warnings.append(("unmatched-end", f"{int(unmatched_e.sum())} 'E' events close no open "
                                          "slice; ignored"))
    be = be.sort_values(["_track", "_level", "_seq"], kind="stable")
    b = be["ph"].to_numpy() == "B"
    nxt_is_e = np.zeros(len(be), bool)
    same = np.zeros(len(be), bool)
    if len(be) > 1:
        nxt_is_e[:-1] = ~b[1:]
        same[:-1] = (be["_track"].to_numpy()[1:] == be["_track"].to_numpy()[:-1]) & \
                    (be["_level"].to_numpy()[1:] == be["_level"].to_numpy()[:-1])
    opened = b & nxt_is_e & same
    bi = np.flatnonzero(opened)
    begins = be.iloc[bi].copy()
    begins["dur_ns"] = be["ts_ns"].to_numpy()[bi + 1] - begins["ts_ns"].to_numpy()
    # an E may carry args (e.g. results); merge them into the slice
    e_args = be["args"].to_numpy()[bi + 1]
    has = np.fromiter((isinstance(a, dict) and bool(a) for a in e_args), bool, len(e_args))
    if has.any():
        merged = begins["args"].to_numpy().copy()
        for i in np.flatnonzero(has):
            merged[i] = {**(merged[i] if isinstance(merged[i], dict) else {}), **e_args[i]}
        begins["args"] = merged
    unclosed = be[b & ~opened].copy()
    if len(unclosed):
        ends = ev["ts_ns"] + ev["dur_ns"]
        last = ends.groupby(ev["pid"].astype(str) + "\x1f" + ev["tid"].astype(str)).max()
        end = unclosed["_track"].map(last).to_numpy(np.int64)
        unclosed["dur_ns"] = np.maximum(end - unclosed["ts_ns"].to_numpy(), 0)
        warnings.append(("unclosed-begin", f"{len(unclosed)} 'B' events are never closed; ended "
                                           "at the last timestamp of their thread"))
    slices = pd.concat([begins, unclosed])
    slices["ph"] = "X"
    slices = slices.drop(columns=["_ord", "_track", "_level", "_seq"])
    rest = ev[~(is_b | is_e)]
    return pd.concat([rest, slices])


def read_trace_events(path: str | Path) -> pd.DataFrame:
    """Raw events of a trace (all phases but ``M``; B/E paired into X) with integer-ns times.

    Columns: ph, cat, name, pid, tid, ts_ns, dur_ns, args, id, bp, s.  ``attrs`` carries the
    top-level metadata, process/thread names and the warnings.
    """
    data = read_trace(path)
    out = data.events.sort_values("ts_ns", kind="stable").reset_index(drop=True)
    out.attrs = {"metadata": data.metadata, "process_names": data.process_names,
                 "thread_names": data.thread_names, "warnings": data.warnings}
    return out


