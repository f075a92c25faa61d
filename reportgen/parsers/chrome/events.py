"""Trace events as a frame: integer-ns times, opaque pid/tid keys, B/E pairs turned into
complete slices, metadata events turned into process/thread names.

Everything after JSON decoding is vectorised; the only per-event Python work is pulling the
fields out of the decoded dicts, which the JSON decoder itself already costs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from reportgen.parsers.chrome.reader import read_events


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
# time conversion
# ============================================================================================
def to_ns(values: Iterable[Any]) -> tuple[np.ndarray, np.ndarray, int]:
    """µs values (int, float, decimal string, None) -> (int64 ns, valid mask, #strings).

    Integers are multiplied exactly; strings are split at the decimal point so the ns digits
    survive (Ascend writes ``"1704161511420306.491"`` for that reason); floats are rounded.
    """
    vals = values if isinstance(values, np.ndarray) else np.asarray(list(values), dtype=object)
    n = len(vals)
    out = np.zeros(n, np.int64)
    valid = np.zeros(n, bool)
    if n == 0:
        return out, valid, 0
    kind = _kinds(vals)
    m = kind == 1
    if m.any():
        out[m] = vals[m].astype(np.int64) * 1000
        valid[m] = True
    m = kind == 2
    if m.any():
        f = vals[m].astype(np.float64) * 1000.0
        ok = np.isfinite(f) & (np.abs(f) < 9.2e18)      # beyond int64 ns is not a time
        out[np.flatnonzero(m)[ok]] = np.rint(f[ok]).astype(np.int64)
        valid[np.flatnonzero(m)[ok]] = True
    m = kind == 3
    nstr = int(m.sum())
    if nstr:
        s = pd.Series(vals[m]).str.strip()
        neg = s.str.startswith("-").to_numpy()
        s = s.str.lstrip("+-")
        parts = s.str.partition(".")
        ip = pd.to_numeric(parts[0].where(parts[0] != "", "0"), errors="coerce")
        frac = parts[2].str.ljust(4, "0").str[:4]
        fr = pd.to_numeric(frac, errors="coerce")
        ok = (ip.notna() & fr.notna() & s.str.fullmatch(r"\d*\.?\d*") & (s != "")).to_numpy()
        ns = ip.fillna(0).astype(np.int64).to_numpy() * 1000 + (fr.fillna(0).astype(np.int64).to_numpy() + 5) // 10
        ns = np.where(neg, -ns, ns)
        idx = np.flatnonzero(m)
        out[idx[ok]] = ns[ok]
        valid[idx[ok]] = True
        if not ok.all():  # exponent notation ("4.2e-05") and the like: float precision
            f = pd.to_numeric(pd.Series(vals[m][~ok]).str.strip(),
                              errors="coerce").to_numpy(float) * 1000.0
            good = np.isfinite(f)
            out[idx[~ok][good]] = np.rint(f[good]).astype(np.int64)
            valid[idx[~ok][good]] = True
    m = kind == 4  # bool or other: try numeric
    if m.any():
        f = pd.to_numeric(pd.Series(vals[m]), errors="coerce").to_numpy(float) * 1000.0
        ok = np.isfinite(f)
        out[np.flatnonzero(m)[ok]] = np.rint(f[ok]).astype(np.int64)
        valid[np.flatnonzero(m)[ok]] = True
    return out, valid, nstr


#: pandas' inferred type of a column that holds one kind of value -> that kind's code
_HOMOGENEOUS = {"integer": 1, "floating": 2, "string": 3, "empty": 0}


def _kinds(vals: np.ndarray) -> np.ndarray:
    """Per value: 0 None/NaN, 1 int, 2 float, 3 str, 4 anything else. A column of one kind (the
    usual case: every timestamp a float, or every one a string) is classified in C; only a
    mixed one is visited value by value."""
    common = _HOMOGENEOUS.get(pd.api.types.infer_dtype(vals, skipna=True))
    if common is not None:
        return np.where(pd.isna(vals), 0, common).astype(np.int8)
    return np.fromiter((0 if v is None else 1 if type(v) is int else 2 if type(v) is float
                        else 3 if type(v) is str else 4 for v in vals), np.int8, len(vals))


def _key(v: Any) -> str:
    """pid/tid as an opaque string key (Kineto mixes ``"25738"`` and ``25738`` for one thread)."""
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def _keys(values: np.ndarray) -> np.ndarray:
    """``_key`` over an array, once per distinct value."""
    if not len(values):
        return np.empty(0, object)
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), sort=False, use_na_sentinel=False)
    return np.array([_key(u) for u in uniq], dtype=object)[codes]


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
    ts_ns, ts_ok, nstr = to_ns(raw["ts"][keep])
    dur_vals = raw["dur"][keep]
    dur_ns, dur_ok, _ = to_ns(dur_vals)
    if nstr:
        warnings.append(("string-ts", f"{nstr} events give 'ts' as a decimal string; read exactly "
                                      "to the nanosecond"))
    base = metadata.get("baseTimeNanoseconds")
    if isinstance(base, (int, float)) and base:
        # Kineto writes ts relative to a base floored to a 3-month boundary (libkineto ChromeTraceBaseTime)
        ts_ns = ts_ns + np.int64(int(base))
    ev = pd.DataFrame({
        "ph": ph[keep].to_numpy(),
        "cat": raw["cat"][keep],
        "name": raw["name"][keep],
        "pid": _keys(raw["pid"][keep]),
        "tid": _keys(raw["tid"][keep]),
        "ts_ns": ts_ns,
        "dur_ns": np.where(dur_ok, np.maximum(dur_ns, 0), 0),
        "args": raw["args"][keep],
        "id": raw["id"][keep],
        "bp": raw["bp"][keep],
        "s": raw["s"][keep],
    })
    bad_ts = ~ts_ok
    if bad_ts.any():
        warnings.append(("bad-ts", f"{int(bad_ts.sum())} events have no usable 'ts'; ignored"))
        ev = ev[~bad_ts]
    neg_dur = (dur_ok & (dur_ns < 0))[~bad_ts]
    if neg_dur.any():
        warnings.append(("negative-dur", f"{int(neg_dur.sum())} events have a negative 'dur'; "
                                         "taken as 0"))
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


