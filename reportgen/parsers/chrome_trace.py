"""Chrome Trace Event JSON (PyTorch/Kineto of every era, ROCm, MTIA, DeepLink, tpudnn, Ascend
trace_view.json, CANN msprof and MindSpore timelines, generic Chrome traces) -> Profile.

Reading (``read_trace``): sniff the container (gzip, zip, plain; never the file name), accept the
array and the object form and an array whose closing ``]`` is missing, turn ``ts``/``dur``
(µs as int, float or decimal string) into integer nanoseconds, and pair ``B``/``E`` slices into
complete slices.  Building (``build_profile``): classify every event by category (era-aware,
case-insensitive) and, where categories say nothing, by its process (Ascend "Ascend Hardware",
a "GPU n" label), put device work into ``commands`` and host slices into ``host`` with their
per-thread call tree, and link both ways (correlation, then flows, then External id).

Everything after JSON decoding is vectorised; the only per-event Python work is pulling the
fields out of the decoded dicts, which the JSON decoder itself already costs.
"""
from __future__ import annotations

import gzip
import io
import json
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from reportgen.errors import InputError
from reportgen.model import HOST_COLUMNS, Meta, Profile, empty_commands, finalize_commands

try:  # orjson decodes big traces 3-5x faster; the stdlib decoder gives the same objects
    import orjson as _orjson

    # before 3.9 orjson had no nesting limit and crashed the process on deep input
    if tuple(int(x) for x in _orjson.__version__.split(".")[:2]) < (3, 9):
        _orjson = None
except (ImportError, ValueError):  # pragma: no cover - optional speed-up
    _orjson = None

#: traces nest 3-5 levels (array, event, args, a list of shapes); anything far deeper is not a
#: trace and would exhaust a recursive JSON decoder
MAX_JSON_DEPTH = 256

# -- category roles (framework-traces.md §2.3); matched lower-case --------------------------
OP_CATS = {"cpu_op", "operator"}
ANNOTATION_CATS = {"user_annotation"}
PYTHON_CATS = {"python_function"}
RUNTIME_CATS = {"cuda_runtime", "runtime", "cuda_driver", "mtia_runtime", "xpu_runtime",
                "privateuse1_runtime", "hip_runtime"}
QUEUE_CATS = {"enqueue", "dequeue"}
DEVICE_CATS = {"kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "cuda_sync"}
DEVICE_ANNOTATION_CATS = {"gpu_user_annotation"}
#: device categories that are waits rather than work (model: is_sys / sys_wait)
DEVICE_WAIT_CATS = {"cuda_sync"}
#: Ascend task types that only synchronise streams
ASCEND_SYNC_TASKS = {"EVENT_RECORD", "EVENT_WAIT", "NOTIFY_RECORD", "NOTIFY_WAIT",
                     "STREAM_WAIT", "WRITE_VALUE", "CAPTURE_RECORD", "CAPTURE_WAIT"}
#: process names (Ascend/CANN/MindSpore timelines) whose X events are device work
DEVICE_PROCESSES = {"ascend hardware", "hccl"}
#: process names whose events are derived summaries, neither host work nor device work
DERIVED_PROCESSES = {"overlap analysis", "step trace", "ai core freq", "hbm", "llc", "npu mem",
                     "qos", "acc_pmu", "stars soc info", "stars chip trans", "sio", "ddr"}
HOST_ROLES = ("op", "annotation", "python", "runtime", "queue", "host")

_PID_DEVICE_LABEL = re.compile(r"^\s*(?:GPU|NPU|TPU|XPU|MTIA|Device)\s*(\d+)?", re.I)
#: a process *named* like a device ("TPU 0", "gpu1"): tpudnn/DeepLink-style traces
_DEVICE_PROCESS_NAME = re.compile(r"^\s*(?:gpu|npu|tpu|xpu|mtia|device)\s*\d*\s*$", re.I)
_DEVICE_PROCESS_NAME_NUM = re.compile(r"^\s*(?:gpu|npu|tpu|xpu|mtia|device)\s*(\d+)\s*$", re.I)


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
# container and JSON
# ============================================================================================
def read_bytes(path: str | Path) -> bytes:
    """The JSON text of a trace file, decompressed by content (gzip or zip), not by name."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), f"cannot read the file ({exc.strerror or exc})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            # a truncated gzip still yields a usable prefix (like an unterminated array)
            try:
                prefix = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw)
            except zlib.error:
                prefix = b""
            if prefix:
                return prefix
            raise InputError(str(path), f"gzip data is corrupt ({exc})") from None
    if raw[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(raw)) as zf:
                names = [n for n in zf.namelist() if not n.endswith("/")]
                pick = [n for n in names if n.lower().endswith(".json")] or names
                if not pick:
                    raise InputError(str(path), "zip archive is empty; expected a trace JSON inside")
                return zf.read(pick[0])
        except zipfile.BadZipFile as exc:
            raise InputError(str(path), f"zip archive is corrupt ({exc})") from None
    return raw


def _nesting(data: bytes) -> tuple[int, int]:
    """(deepest bracket nesting, byte offset where it is reached); brackets inside strings
    count too, which can only overstate the depth."""
    b = np.frombuffer(data, np.uint8)
    step = (np.isin(b, (0x5B, 0x7B)).astype(np.int32) - np.isin(b, (0x5D, 0x7D)))
    depth = np.cumsum(step, dtype=np.int32)
    if not len(depth):
        return 0, 0
    at = int(np.argmax(depth))
    return int(depth[at]), at


def _loads(data: bytes) -> Any:
    if _orjson is not None:
        return _orjson.loads(data)
    return json.loads(data)


def decode_json(path: str | Path, data: bytes, warnings: list) -> Any:
    """Decode trace JSON; repair an array whose closing ``]`` (or last events) is missing."""
    text = data.lstrip()
    if text[:3] == b"\xef\xbb\xbf":
        text = text[3:].lstrip()
    if not text[:1] in (b"[", b"{"):
        kind = "SQLite database" if text.startswith(b"SQLite format 3") else "not JSON"
        raise InputError(str(path), f"not a Chrome trace ({kind}); expected a JSON array of "
                                    "trace events or an object with 'traceEvents'")
    depth, at = _nesting(text)
    if depth > MAX_JSON_DEPTH:
        raise InputError(str(path), f"JSON nested {depth} levels deep; a trace nests a few levels, "
                                    "so this is not a trace", offset=at)
    try:
        return _loads(text)
    except (ValueError, RecursionError) as exc:
        error = exc
    if text[:1] == b"[":
        # streamed writers stop mid-array: cut after the last complete event and close it
        body = text.rstrip()
        for _ in range(8):
            cut = body.rfind(b"}")
            if cut < 0:
                break
            body = body[:cut + 1]
            try:
                obj = _loads(body + b"]")
            except ValueError:
                body = body[:cut]
                continue
            warnings.append(("unterminated-json", "trace array is not terminated (writer stopped "
                                                  "early); read the complete events before the end"))
            return obj
    raise InputError(str(path), f"invalid JSON ({error})")


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
    warnings: list[tuple[str, str]] = []
    obj = decode_json(path, read_bytes(path), warnings)
    if isinstance(obj, dict):
        if "traceEvents" not in obj:
            if "nodes" in obj and ("schema" in obj or "pid" in obj):
                raise InputError(str(path), "this is a PyTorch execution trace (a graph of 'nodes'), "
                                            "not a timeline trace; pass the Kineto trace recorded with it")
            keys = ", ".join(list(obj)[:6])
            raise InputError(str(path), "JSON object without 'traceEvents': not a Chrome trace "
                                        f"(top-level keys: {keys})")
        events = obj.get("traceEvents")
        if not isinstance(events, list):
            raise InputError(str(path), "'traceEvents' is not a list of events")
        metadata = {k: v for k, v in obj.items() if k != "traceEvents"}
    elif isinstance(obj, list):
        events, metadata = obj, {}
    else:
        raise InputError(str(path), "JSON is neither an event array nor a trace object")
    dict_events = [e for e in events if type(e) is dict]
    if events and len(dict_events) < len(events) // 2:
        hint = ""
        if events and isinstance(events[0], list):
            hint = " (looks like a torch memory_timeline export: lists of numbers)"
        raise InputError(str(path), "JSON array does not hold trace event objects" + hint)
    if len(dict_events) < len(events):
        warnings.append(("bad-event", f"{len(events) - len(dict_events)} array entries are not "
                                      "event objects; ignored"))
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


# ============================================================================================
# call tree (framework-traces.md §6.2), vectorised per thread
# ============================================================================================
def _last_open_before(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """For each i, the largest j < i with ``e[j] > s[i]`` (still open at i's start), or -1.

    Vectorised binary lifting over a sparse table of range maxima of ``e``: from j = i-1,
    skip blocks of 2^k slices that all ended by ``s[i]``, largest blocks first.
    """
    n = len(s)
    levels = [e]
    k = 1
    while (1 << k) <= n:
        prev = levels[-1]
        half = 1 << (k - 1)
        levels.append(np.maximum(prev[:-half], prev[half:]))
        k += 1
    pos = np.arange(n, dtype=np.int64) - 1
    for k in range(len(levels) - 1, -1, -1):
        size = 1 << k
        lo = pos - size + 1
        ok = lo >= 0
        table = levels[k]
        ok[ok] &= table[lo[ok]] <= s[ok]
        pos[ok] -= size
    ok = pos >= 0
    ok[ok] &= e[pos[ok]] > s[ok]
    return np.where(ok, pos, -1)


def _forest_one_track(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Depth (1 = top level) and parent (position, -1) of slices sorted by (start, -dur).

    This is the stack walk of framework-traces.md §6.2 without the Python loop: a slice's
    parent is the latest earlier slice still open at its start (open = ends strictly after
    it; the walk pops while ``end(top) <= start``), and a slice that outlives its parent is
    clipped to the parent's end.  Clipped ends feed back into "still open", so iterate to the
    fixed point (parents always come earlier, so it is reached in at most depth rounds).
    Returns the number of slices that end after their parent's recorded end.
    """
    n = len(s)
    clip = e.copy()
    for _ in range(n + 1):
        parent = _last_open_before(s, clip)
        has = parent >= 0
        new = e.copy()
        new[has] = np.minimum(e[has], clip[parent[has]])
        if np.array_equal(new, clip):
            break
        clip = new
    depth = np.ones(n, np.int32)
    cur = parent.copy()
    while True:
        ok = cur >= 0
        if not ok.any():
            break
        depth[ok] += 1
        cur = np.where(ok, parent[np.maximum(cur, 0)], -1)
    improper = int((has & (e > e[np.maximum(parent, 0)])).sum())
    return depth, parent, improper


def call_forest(track: np.ndarray, start: np.ndarray, end: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Order slices by (track, start, -duration) and build each track's call tree.

    Returns ``order`` (permutation into the input), ``depth`` and ``parent`` (positions in
    the ordered sequence), and the number of improperly nested slices that were clipped.
    """
    n = len(start)
    order = np.lexsort((np.arange(n), -(end - start), start, track))
    tr, s, e = track[order], start[order], end[order]
    depth = np.zeros(n, np.int32)
    parent = np.full(n, -1, np.int64)
    bounds = np.flatnonzero(np.diff(tr)) + 1 if n else np.array([], int)
    lo_list = np.concatenate([[0], bounds]) if n else []
    hi_list = np.concatenate([bounds, [n]]) if n else []
    clipped = 0
    for lo, hi in zip(lo_list, hi_list):
        d, p, c = _forest_one_track(s[lo:hi], e[lo:hi])
        depth[lo:hi] = d
        parent[lo:hi] = np.where(p >= 0, p + lo, -1)
        clipped += c
    return order, depth, parent, clipped


def enclosing_slice(track: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
                    q_track: np.ndarray, q_ts: np.ndarray, next_if_none: np.ndarray | None = None
                    ) -> np.ndarray:
    """Innermost slice (position) of the ordered forest containing ``q_ts`` on ``q_track``.

    ``track``/``start`` are sorted as ``call_forest`` orders them.  Start from the last slice
    starting at or before the point and climb parents until one still covers it; where
    ``next_if_none`` is set, fall back to the next slice starting at/after the point (flow
    binding without ``bp: "e"``).  -1 when nothing fits.
    """
    nq = len(q_ts)
    out = np.full(nq, -1, np.int64)
    if nq == 0 or len(start) == 0:
        return out
    t_lo = np.searchsorted(track, q_track, "left")
    t_hi = np.searchsorted(track, q_track, "right")
    # per-track search with a key that keeps tracks apart: sort is (track, start)
    cand = np.full(nq, -1, np.int64)
    for tcode in np.unique(q_track[t_hi > t_lo]):
        m = q_track == tcode
        lo, hi = t_lo[m][0], t_hi[m][0]
        pos = np.searchsorted(start[lo:hi], q_ts[m], "right") - 1
        cand[m] = np.where(pos >= 0, pos + lo, -1)
    cur = cand.copy()
    for _ in range(4096):
        bad = (cur >= 0) & (end[np.maximum(cur, 0)] < q_ts)
        if not bad.any():
            break
        cur[bad] = parent[cur[bad]]
    out[:] = cur
    if next_if_none is not None:
        need = (out < 0) & next_if_none
        nxt = cand + 1
        ok = need & (nxt < t_hi) & (nxt >= t_lo)
        out[ok] = nxt[ok]
    return out


# ============================================================================================
# building a Profile
# ============================================================================================
def _arg_column(args: pd.Series, *keys: str) -> pd.Series:
    """First present key of each args dict (alternative spellings tried in order only where
    the earlier ones are missing).  Inline comprehensions: this runs once per event."""
    arr = args.to_numpy()
    first = keys[0]
    out = [a.get(first) if type(a) is dict else None for a in arr]
    for k in keys[1:]:
        miss = [i for i, v in enumerate(out) if v is None]
        if not miss:
            break
        for i in miss:
            a = arr[i]
            if type(a) is dict:
                out[i] = a.get(k)
    return pd.Series(out, index=args.index, dtype=object)


def _int_ids(s: pd.Series) -> pd.Series:
    """Link ids (correlation, External id, flow id) as Int64; strings of digits accepted."""
    return pd.to_numeric(s, errors="coerce").astype("Float64").round().astype("Int64")


def per_unique(values: pd.Series | np.ndarray, fn) -> np.ndarray:
    """Apply a scalar function once per distinct value (categories, names, pids repeat a lot)."""
    codes, uniq = pd.factorize(pd.Series(values, dtype=object).astype(str), sort=False)
    mapped = np.array([fn(u) for u in uniq], dtype=object)
    return mapped[codes] if len(codes) else np.empty(0, object)


def role_category(cat: str) -> str:
    """First entry of a comma-separated category list, lower case (the role key)."""
    return cat.split(",")[0].strip().lower()


def event_role(ph: str, cat: str, pname: str, dev_label: bool, tname: str, name: str) -> str:
    """Role of one kind of event (see :func:`classify`); ``cat`` is the lower-case first category."""
    if ph in ("s", "t", "f"):
        return "flow"
    if ph == "C":
        return "counter"
    if ph in ("i", "I", "n"):
        return "memory" if name == "[memory]" or cat == "cpu_instant_event" else "instant"
    if ph != "X":
        return "other"
    if cat in OP_CATS:
        return "op"
    if cat in ANNOTATION_CATS:
        return "annotation"
    if cat in PYTHON_CATS:
        return "python"
    if cat in RUNTIME_CATS:
        return "runtime"
    if cat in QUEUE_CATS:
        return "queue"
    if cat in DEVICE_CATS:
        return "device"
    if cat in DEVICE_ANNOTATION_CATS:
        return "device_annotation"
    if cat == "trace":  # the Kineto window span
        return "derived"
    if pname in DERIVED_PROCESSES:
        return "derived"
    if pname == "ascend hardware":
        # Ascend Hardware also carries "Step Trace" lanes; only "Stream n" lanes are tasks
        return "device" if tname.startswith("stream") or tname == "" else "derived"
    if pname in DEVICE_PROCESSES or dev_label or _DEVICE_PROCESS_NAME.match(pname):
        return "device"
    if pname == "cann":
        return "runtime"
    return "host"


def classify(data: TraceData) -> pd.Series:
    """Role of each event: op, annotation, python, runtime, queue, host, device,
    device_annotation, derived, memory, flow, counter, instant, other.

    Categories decide first (era-aware, case-insensitive, framework-traces.md §2.3); where they
    say nothing, the process does (Ascend/CANN process names, a "GPU n"/"NPU" label).  The
    decision is made once per distinct (phase, category, process, thread, name) combination.
    """
    ev = data.events
    tnames = {f"{p}\x1f{t}": v.lower() for (p, t), v in data.thread_names.items()}
    parts = {
        "ph": ev["ph"].astype(object).to_numpy(),
        "cat": per_unique(ev["cat"], role_category),
        "pname": per_unique(ev["pid"], lambda p: data.process_names.get(p, "").lower().strip()),
        "dev": per_unique(ev["pid"], lambda p: bool(_PID_DEVICE_LABEL.match(
            data.process_labels.get(p, "")))),
        "tname": per_unique(ev["pid"].astype(str) + "\x1f" + ev["tid"].astype(str),
                            lambda k: tnames.get(k, "")),
        # only "[memory]" matters among names; keep the key small
        "name": np.where(ev["name"].astype(object).to_numpy() == "[memory]", "[memory]", ""),
    }
    key = np.zeros(len(ev), np.int64)
    for v in parts.values():
        codes, uniq = pd.factorize(pd.Series(v, dtype=object), sort=False)
        key = key * (len(uniq) + 1) + codes
    ukey, first, inv = np.unique(key, return_index=True, return_inverse=True)
    roles = np.array([event_role(*(parts[c][i] for c in ("ph", "cat", "pname", "dev", "tname", "name")))
                      for i in first], dtype=object)
    return pd.Series(roles[inv] if len(ev) else np.empty(0, object), index=ev.index)


def rank_of(data: TraceData) -> int | None:
    """Rank from distributedInfo, else from the file name (rank-N, rank_N, rankN)."""
    info = data.metadata.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), (int, float)):
        return int(info["rank"])
    m = re.search(r"rank[-_]?(\d+)", Path(data.path).name, re.I)
    return int(m.group(1)) if m else None


def build_profile(traces: list[TraceData], cores: list[int | None] | None = None,
                  source: str = "chrome", input_path: str = "") -> Profile:
    """Profile from one or several decoded traces; trace i's device work goes to ``cores[i]``
    (a rank) or, when None, to the device index the trace gives."""
    meta = Meta(source=source, input_path=input_path or (traces[0].path if traces else ""))
    cores = cores if cores is not None else [None] * len(traces)
    host_parts, dev_parts, mem_parts = [], [], []
    for fi, (data, core) in enumerate(zip(traces, cores)):
        for code, msg in data.warnings:
            meta.warn(code, msg, data.path)
        h, d, m, counts = _split_trace(data, fi, core)
        meta.accounting[Path(data.path).name if len(traces) == 1 else f"{fi}:{Path(data.path).name}"] = counts
        host_parts.append(h)
        dev_parts.append(d)
        mem_parts.append(m)
    host = pd.concat(host_parts, ignore_index=True) if host_parts else pd.DataFrame()
    dev = pd.concat(dev_parts, ignore_index=True) if dev_parts else pd.DataFrame()
    flows = pd.concat([_flows(t, fi) for fi, t in enumerate(traces)], ignore_index=True) \
        if traces else pd.DataFrame()
    mem = pd.concat(mem_parts, ignore_index=True) if mem_parts else pd.DataFrame()

    host, forest = _host_tree(host, meta)
    dev = _link(host, dev, flows, forest, meta)
    commands = _commands(dev, host)
    host_out = host.drop(columns=["_track", "_file"])
    profile = Profile(commands=commands, host=host_out, meta=meta)
    if len(mem):
        profile.memory_events = _memory(mem, host, forest)
    steps = _step_trace(traces)
    if len(steps):
        profile.tables["Step Trace"] = steps
    meta.num_cores = int(commands["core"].nunique()) if len(commands) else 0
    if not len(commands) and not len(host_out) and not len(steps):
        meta.warn("empty-trace", "no slices found in the trace", meta.input_path)
    return profile


def _split_trace(data: TraceData, fi: int, core: int | None):
    ev = data.events
    role = classify(data)
    x = (ev["ph"] == "X").to_numpy()
    hmask = x & role.isin(HOST_ROLES).to_numpy()
    dmask = x & (role == "device").to_numpy()
    args = ev["args"]

    h = ev.loc[hmask, ["name", "cat", "pid", "tid", "ts_ns", "dur_ns", "args"]].copy()
    h["role"] = role[hmask].to_numpy()
    h["_file"] = fi
    h["correlation"] = _int_ids(_arg_column(args[hmask], "correlation", "correlation_id"))
    h["external_id"] = _int_ids(_arg_column(args[hmask], "External id", "external id"))
    h["rank"] = core if core is not None else 0

    d = ev.loc[dmask, ["name", "cat", "pid", "tid", "ts_ns", "dur_ns", "args"]].copy()
    d["_file"] = fi
    da = args[dmask]
    d["correlation"] = _int_ids(_arg_column(da, "correlation"))
    d["external_id"] = _int_ids(_arg_column(da, "External id", "external id"))
    tn = pd.Series([data.thread_names.get(k) for k in zip(d["pid"], d["tid"])], index=d.index,
                   dtype=object)
    stream = _arg_column(da, "stream", "Stream Id")
    engine = tn.where(tn.notna() & (tn != ""),
                      ("stream " + stream.astype(str)).where(stream.notna(), "tid " + d["tid"].astype(str)))
    pname = d["pid"].map(data.process_names).astype(object).fillna("").astype(str)
    hccl = pname.str.lower() == "hccl"
    engine = engine.where(~hccl, "HCCL " + engine.astype(str))
    d["engine"] = engine.astype(str).str.strip()
    d["stream"] = stream
    if core is None:
        devid = pd.to_numeric(_arg_column(da, "device"), errors="coerce")
        label = d["pid"].map(data.process_labels).astype(object).fillna("").astype(str).str.extract(
            _PID_DEVICE_LABEL)[0]
        # a process named "TPU 1" says its device too
        named = pname.str.extract(_DEVICE_PROCESS_NAME_NUM)[0]
        label = label.fillna(named)
        pid_num = pd.to_numeric(d["pid"], errors="coerce")
        small_pid = pid_num.where(pid_num.between(0, 4095))
        # Ascend/CANN pids are synthetic; a device label or the args say which device
        is_ascend = pname.str.lower().isin(DEVICE_PROCESSES)
        small_pid = small_pid.where(~is_ascend)
        d["core"] = devid.fillna(pd.to_numeric(label, errors="coerce")).fillna(small_pid).fillna(0)
    else:
        d["core"] = core
    cat = pd.Series(per_unique(d["cat"], role_category), index=d.index)
    task = _arg_column(da, "Task Type", "task type").astype(object)
    d["func_type"] = task.where(task.notna() & cat.isin(["", "none"]), d["cat"].where(d["cat"] != "", pname))
    d["is_sys"] = cat.isin(DEVICE_WAIT_CATS).to_numpy() | task.isin(ASCEND_SYNC_TASKS).to_numpy()
    d["sys_wait"] = cat.isin(DEVICE_WAIT_CATS).to_numpy() | \
        task.astype(str).str.contains("WAIT").to_numpy()
    nbytes = pd.to_numeric(_arg_column(da, "bytes", "size"), errors="coerce")
    d["bytes"] = nbytes.where(cat.isin(["gpu_memcpy", "memcpy", "gpu_memset", "memset"]))
    d["grid"] = _dims(_arg_column(da, "grid"))
    d["block"] = _dims(_arg_column(da, "block"))

    mmask = (role == "memory").to_numpy()
    m = ev.loc[mmask, ["pid", "tid", "ts_ns", "args"]].copy()
    m["_file"] = fi
    m["rank"] = core if core is not None else 0
    # records line of the summary: every event is shown as a slice or says why not
    vc = role.value_counts()
    counts = {"read": int(len(ev)), "shown": int(hmask.sum() + dmask.sum())}
    why = {"flow": "flow points (used as links)", "memory": "memory events (memory tables)",
           "counter": "counters", "instant": "instant markers", "derived": "derived/summary lanes",
           "device_annotation": "device copies of annotations", "other": "async/object/sample events"}
    for r, label in why.items():
        if vc.get(r, 0):
            counts[f"dropped: {label}"] = int(vc[r])
    return h, d, m, counts


def _step_trace(traces: list[TraceData]) -> pd.DataFrame:
    """CANN/MindSpore "Step Trace" lanes (iteration, FP/BP, refresh, reduce slices) as a table."""
    parts = []
    for data in traces:
        ev = data.events
        names = list(data.thread_names.values()) + list(data.process_names.values())
        if ev.empty or not any(n.startswith("Step Trace") for n in names):
            continue
        tnames = {f"{p}\x1f{t}": v for (p, t), v in data.thread_names.items()}
        lane = pd.Series(per_unique(ev["pid"].astype(str) + "\x1f" + ev["tid"].astype(str),
                                    lambda k: tnames.get(k, "")), index=ev.index)
        pname = pd.Series(per_unique(ev["pid"], lambda p: data.process_names.get(p, "")), index=ev.index)
        m = (ev["ph"] == "X").to_numpy() & (lane.str.startswith("Step Trace") |
                                            pname.str.startswith("Step Trace")).to_numpy()
        if m.any():
            parts.append(pd.DataFrame({"Name": ev["name"][m].to_numpy(), "Category": ev["cat"][m].to_numpy(),
                                       "Start (ns)": ev["ts_ns"][m].to_numpy(),
                                       "Duration (us)": ev["dur_ns"][m].to_numpy() / 1e3}))
    return pd.concat(parts, ignore_index=True).sort_values("Start (ns)", kind="stable") \
        .reset_index(drop=True) if parts else pd.DataFrame()


def _dims(values: pd.Series) -> pd.Series:
    """Kernel grid/block lists as text ("[32, 1, 1]"), other values unchanged."""
    return pd.Series([str(v) if type(v) is list else v for v in values.to_numpy()],
                     index=values.index, dtype=object)


def _flows(data: TraceData, fi: int) -> pd.DataFrame:
    ev = data.events
    f = ev[np.isin(ev["ph"].to_numpy(), ["s", "t", "f"])]
    out = f[["ph", "cat", "pid", "tid", "ts_ns", "id", "bp"]].copy()
    out["_file"] = fi
    out["flow_id"] = out["id"].astype(str)
    return out


@dataclass
class _Forest:
    track_codes: dict
    track: np.ndarray
    start: np.ndarray
    end: np.ndarray
    parent: np.ndarray


def _track_code(host_like: pd.DataFrame, codes: dict) -> np.ndarray:
    keys = host_like["_file"].astype(str) + "\x1f" + host_like["pid"].astype(str) + "\x1f" + \
        host_like["tid"].astype(str)
    return keys.map(codes).fillna(-1).astype(np.int64).to_numpy()


def _host_tree(host: pd.DataFrame, meta: Meta) -> tuple[pd.DataFrame, _Forest]:
    if host.empty:
        host = pd.DataFrame({c: pd.Series(dtype=t) for c, t in HOST_COLUMNS.items()})
        for c, t in (("role", object), ("_file", int), ("correlation", "Int64"),
                     ("external_id", "Int64"), ("rank", int), ("_track", int)):
            host[c] = pd.Series(dtype=t)
        host["op_row"] = pd.Series(dtype=np.int64)
        return host, _Forest({}, np.zeros(0, np.int64), np.zeros(0, np.int64),
                             np.zeros(0, np.int64), np.zeros(0, np.int64))
    keys = host["_file"].astype(str) + "\x1f" + host["pid"].astype(str) + "\x1f" + host["tid"].astype(str)
    uniq = sorted(keys.unique())
    codes = {k: i for i, k in enumerate(uniq)}
    track = keys.map(codes).to_numpy(np.int64)
    start = host["ts_ns"].to_numpy(np.int64)
    end = start + host["dur_ns"].to_numpy(np.int64)
    order, depth, parent, clipped = call_forest(track, start, end)
    host = host.iloc[order].reset_index(drop=True)
    if clipped:
        meta.warn("improper-nesting", f"{clipped} host slices start inside another slice of their "
                                      "thread but end after it; nested under it (clipped) for call trees")
    out = pd.DataFrame({
        "name": host["name"].astype(str).to_numpy(),
        "category": host["cat"].astype(str).to_numpy(),
        "pid": host["pid"].to_numpy(),
        "tid": host["tid"].to_numpy(),
        "start_ns": start[order],
        "end_ns": end[order],
        "depth": depth,
        "parent": parent,
        "args": host["args"].to_numpy(),
    })
    for c in HOST_COLUMNS:
        out[c] = out[c].astype(HOST_COLUMNS[c]) if HOST_COLUMNS[c] != "object" else out[c]
    out["role"] = host["role"].to_numpy()
    out["rank"] = host["rank"].to_numpy()
    out["correlation"] = host["correlation"].to_numpy()
    out["external_id"] = host["external_id"].to_numpy()
    out["_file"] = host["_file"].to_numpy()
    out["_track"] = track[order]
    forest = _Forest(codes, track[order], start[order], end[order], parent)
    out["op_row"] = _op_rows(out)
    return out, forest


def _op_rows(host: pd.DataFrame) -> np.ndarray:
    """For each host slice, the framework op (cpu_op / user_annotation) it belongs to:
    the op with the same External id in the same trace and process (exact, survives threads),
    else the innermost op enclosing it on its thread; the op itself for ops; -1 if none."""
    n = len(host)
    role = host["role"].to_numpy()
    is_op = np.isin(role, ["op", "annotation"])
    if not is_op.any():
        # traces without framework categories (MindSpore 2.x, tpudnn, generic): their plain
        # host slices are the operators
        is_op = role == "host"
    result = np.where(is_op, np.arange(n), -1)
    # External id first
    ext = host["external_id"]
    ops = host[is_op & ext.notna().to_numpy() & (ext.fillna(0) != 0).to_numpy()]
    # cpu_op wins over a user_annotation with the same id; the innermost (deepest) wins
    ops = ops.assign(_r=np.where(ops["role"] == "op", 0, 1), _row=ops.index)
    ops = ops.sort_values(["_r", "depth"], ascending=[True, False]).drop_duplicates(
        ["_file", "pid", "external_id"])
    need = ~is_op & ext.notna().to_numpy() & (ext.fillna(0) != 0).to_numpy()
    if need.any() and len(ops):
        q = host.loc[need, ["_file", "pid", "external_id"]].reset_index()
        mm = q.merge(ops[["_file", "pid", "external_id", "_row"]], how="left",
                     on=["_file", "pid", "external_id"])
        got = mm["_row"].notna().to_numpy()
        result[mm["index"].to_numpy()[got]] = mm["_row"].to_numpy()[got].astype(np.int64)
    # containment: climb parents to the nearest op
    parent = host["parent"].to_numpy()
    todo = np.flatnonzero(result < 0)
    cur = parent[todo]
    for _ in range(4096):
        if not len(todo):
            break
        hit = (cur >= 0) & is_op[np.maximum(cur, 0)]
        result[todo[hit]] = cur[hit]
        keep = (cur >= 0) & ~hit
        todo, cur = todo[keep], parent[cur[keep]]
    return result


def _link(host: pd.DataFrame, dev: pd.DataFrame, flows: pd.DataFrame, forest: _Forest,
          meta: Meta) -> pd.DataFrame:
    """launch_row (host slice that issued each device slice) and op_row (its framework op).

    Priority (framework-traces.md §9.4): correlation between a runtime call and the device
    slice; else a flow whose start binds to a host slice and whose end binds to the device
    slice (Ascend async_npu, ac2g without correlation args); else External id -> op.
    """
    dev = dev.reset_index(drop=True)
    n = len(dev)
    launch = np.full(n, -1, np.int64)
    if n == 0:
        dev["launch_row"] = launch
        dev["op_row"] = launch
        return dev
    # 1. correlation
    rt = host[(host["role"] == "runtime") & host["correlation"].notna()
              & (host["correlation"].fillna(0) != 0)]
    if len(rt):
        rt = rt.assign(_row=rt.index).drop_duplicates(["_file", "correlation"])
        q = dev[["_file", "correlation"]].reset_index()
        q = q[q["correlation"].notna() & (q["correlation"].fillna(0) != 0)]
        mm = q.merge(rt[["_file", "correlation", "_row"]], on=["_file", "correlation"], how="inner")
        launch[mm["index"].to_numpy()] = mm["_row"].to_numpy(np.int64)
    # 2. flows: start bound to a host slice, end bound to this device slice
    if (launch < 0).any() and len(flows):
        starts = flows[flows["ph"] == "s"]
        ends = flows[flows["ph"] == "f"]
        if len(starts) and len(ends):
            qt = _track_code(starts, forest.track_codes)
            bound = enclosing_slice(forest.track, forest.start, forest.end, forest.parent,
                                    qt, starts["ts_ns"].to_numpy(np.int64))
            starts = starts.assign(_host=bound)
            starts = starts[starts["_host"] >= 0].drop_duplicates(["_file", "cat", "flow_id"])
            # device side: a flow end binds to the device slice starting at its ts on that lane
            dkey = dev[["_file", "pid", "tid", "ts_ns"]].reset_index()
            ek = ends[["_file", "cat", "flow_id", "pid", "tid", "ts_ns"]]
            mm = ek.merge(dkey, on=["_file", "pid", "tid", "ts_ns"], how="inner")
            mm = mm.merge(starts[["_file", "cat", "flow_id", "_host"]], on=["_file", "cat", "flow_id"])
            # several flows may end on one task (Ascend: async_npu from the framework op and
            # HostToDevice from the CANN call); prefer the one whose host side has an op
            has_op = host["op_row"].to_numpy()[mm["_host"].to_numpy(np.int64)] >= 0
            mm = mm.assign(_pref=~has_op).sort_values(["index", "_pref"], kind="stable")
            mm = mm.drop_duplicates("index")
            sel = launch[mm["index"].to_numpy()] < 0
            launch[mm["index"].to_numpy()[sel]] = mm["_host"].to_numpy(np.int64)[sel]
    dev["launch_row"] = launch
    op_row = np.full(n, -1, np.int64)
    has = launch >= 0
    if has.any():
        op_row[has] = host["op_row"].to_numpy()[launch[has]]
    # 3. External id of the device slice -> op of the same trace
    need = (op_row < 0) & dev["external_id"].notna().to_numpy() & (dev["external_id"].fillna(0) != 0).to_numpy()
    if need.any():
        ops = host[np.isin(host["role"].to_numpy(), ["op", "annotation"]) & host["external_id"].notna().to_numpy()]
        ops = ops.assign(_row=ops.index, _r=np.where(ops["role"] == "op", 0, 1))
        ops = ops.sort_values(["_r", "depth"], ascending=[True, False]).drop_duplicates(["_file", "external_id"])
        q = dev.loc[need, ["_file", "external_id"]].reset_index()
        mm = q.merge(ops[["_file", "external_id", "_row"]], on=["_file", "external_id"], how="inner")
        op_row[mm["index"].to_numpy()] = mm["_row"].to_numpy(np.int64)
    dev["op_row"] = op_row
    work = ~dev["is_sys"].to_numpy(bool)
    orphan = int(((launch < 0) & (op_row < 0) & work).sum())
    if orphan and len(host):
        meta.warn("unattributed-device", f"{orphan} of {int(work.sum())} device slices are linked to "
                                         "no host call (launched before the window or by an "
                                         "untraced thread)")
    return dev


def _commands(dev: pd.DataFrame, host: pd.DataFrame) -> pd.DataFrame:
    if dev.empty:
        return empty_commands()
    dev = dev.sort_values(["core", "engine", "ts_ns"], kind="stable").reset_index(drop=True)
    start = dev["ts_ns"].to_numpy(np.int64)
    end = start + dev["dur_ns"].to_numpy(np.int64)
    core = dev["core"].astype(np.int64).to_numpy()
    engine = dev["engine"].astype(str)
    sheet = engine + "_" + pd.Series(core).astype(str)
    gidx = pd.Series(np.arange(len(dev))).groupby(sheet.to_numpy()).cumcount().to_numpy()
    op_row = dev["op_row"].to_numpy(np.int64)
    hnames = host["name"].to_numpy(object) if len(host) else np.empty(0, object)
    kernel = np.where(op_row >= 0, hnames[np.maximum(op_row, 0)] if len(hnames) else None, None)
    frame = pd.DataFrame({
        "core": core, "engine": engine.to_numpy(), "sheet": sheet.to_numpy(),
        "global_idx": gidx, "cmd_id": gidx + 1, "start_ns": start, "end_ns": end,
        # traces carry no cycle counter: the trace clock is 1 GHz (ns)
        "cycles": end - start,
        "func_type": dev["func_type"].astype(object).to_numpy(),
        "func_name": dev["name"].astype(str).to_numpy(),
        "is_sys": dev["is_sys"].to_numpy(bool), "sys_wait": dev["sys_wait"].to_numpy(bool),
        "kernel": kernel, "bytes": dev["bytes"].to_numpy(),
    })
    out = finalize_commands(frame)
    out["correlation"] = dev["correlation"].to_numpy()
    out["external_id"] = dev["external_id"].to_numpy()
    out["launch_row"] = dev["launch_row"].to_numpy(np.int64)
    out["op_row"] = op_row
    out["stream"] = dev["stream"].to_numpy()
    out["grid"] = dev["grid"].to_numpy()
    out["block"] = dev["block"].to_numpy()
    out["args"] = dev["args"].to_numpy()
    for extra in ("core_type", "op_type", "block_dim", "input_shapes"):
        if extra in dev.columns:
            out[extra] = dev[extra].to_numpy()
    return out


def _memory(mem: pd.DataFrame, host: pd.DataFrame, forest: _Forest) -> pd.DataFrame:
    """``[memory]`` instants with the op (innermost framework op on its thread) they happened in."""
    a = mem["args"]
    out = pd.DataFrame({
        "rank": mem["rank"].to_numpy(),
        "ts_ns": mem["ts_ns"].to_numpy(np.int64),
        "device_type": pd.to_numeric(_arg_column(a, "Device Type"), errors="coerce").to_numpy(),
        "device_id": pd.to_numeric(_arg_column(a, "Device Id"), errors="coerce").to_numpy(),
        "addr": pd.to_numeric(_arg_column(a, "Addr"), errors="coerce").to_numpy(),
        "bytes": pd.to_numeric(_arg_column(a, "Bytes"), errors="coerce").to_numpy(),
        "total_allocated": pd.to_numeric(_arg_column(a, "Total Allocated"), errors="coerce").to_numpy(),
        "total_reserved": pd.to_numeric(_arg_column(a, "Total Reserved"), errors="coerce").to_numpy(),
    })
    qt = _track_code(mem, forest.track_codes)
    row = enclosing_slice(forest.track, forest.start, forest.end, forest.parent, qt,
                          out["ts_ns"].to_numpy(np.int64))
    op = np.where(row >= 0, host["op_row"].to_numpy()[np.maximum(row, 0)] if len(host) else -1, -1)
    out["op_row"] = op
    return out.sort_values("ts_ns", kind="stable").reset_index(drop=True)


def load_chrome_trace(path: str | Path, **options) -> Profile:
    """One trace file -> Profile (core = device index) with the framework tables attached."""
    data = read_trace(path)
    # a trace_view.json / msprof timeline handed over on its own is still an Ascend profile
    ascend = any(n.strip().lower() in DEVICE_PROCESSES | {"cann"} for n in data.process_names.values())
    profile = build_profile([data], None, "ascend" if ascend else "chrome", str(path))
    rank = rank_of(data)
    if rank is not None:
        profile.meta.rank = rank
    from reportgen.analysis.ops import attach_tables
    attach_tables(profile, **options)
    return profile


def _host_pids(data: TraceData) -> frozenset:
    """Processes that ran framework ops (the identity of a worker across its window files)."""
    ev = data.events
    cat = pd.Series(per_unique(ev["cat"], role_category), index=ev.index)
    return frozenset(ev["pid"][cat.isin(OP_CATS | ANNOTATION_CATS)].unique())


def load_chrome_traces(paths: list[Path], input_path: str, **options) -> Profile:
    """Several trace files of one run (one per rank) -> one Profile, core = rank."""
    datas, rejected = [], []
    for p in paths:
        try:
            datas.append(read_trace(p))
        except InputError as exc:  # e.g. an execution trace stored next to its Kineto trace
            rejected.append(str(exc))
    if not datas:
        raise InputError(input_path, "no readable trace in the folder: " + "; ".join(rejected))
    ranks = [rank_of(d) for d in datas]
    warn = None
    if any(r is None for r in ranks) or len(set(ranks)) != len(ranks):
        pids = [_host_pids(d) for d in datas]
        if len(datas) > 1 and pids[0] and all(p == pids[0] for p in pids):
            # schedule(repeat=N) writes one file per active window of the same process
            common = ranks[0] if ranks[0] is not None and len(set(ranks)) == 1 else 0
            ranks = [common] * len(datas)
            warn = (f"{len(datas)} trace files come from the same process (profiling windows); "
                    f"merged as rank {common}")
        else:
            warn = (f"rank ids are missing or repeated across {len(paths)} trace files; "
                    "ranks numbered by sorted file name instead")
            ranks = list(range(len(datas)))
    profile = build_profile(datas, ranks, "chrome", input_path)
    if warn:
        profile.meta.warn("rank-ids", warn, input_path)
    for r in rejected:
        profile.meta.warn("skipped-file", "not a timeline trace, skipped: " + r, input_path)
    from reportgen.analysis.ops import attach_tables
    attach_tables(profile, **options)
    return profile
