"""Test oracle: the exact local-memory sweep over address segments that analysis/lmem.py used
before the interval sweep (analysis/lmem_sweep.py), kept verbatim to check that the new one gives
identical live pieces and occupancy events. It expands every access into the (access, segment)
pairs it covers: fine for test captures, too big for a million commands.

The lane is cut into segments at every access boundary and bank boundary; per segment, accesses in
time order form values (each write starts one; reads before the first write use a value written
before the capture); every read of a value, wherever on it, extends the whole value; adjacent
segments with the same value part are one piece; occupancy is per segment the union of its values'
[start, end) as +/- events.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.lmem import PIECE_COLUMNS, STATUS, SWEEP_COLUMNS, sweep_columns
from reportgen.analysis.lmem_access import BANK_BYTES, BANKS, LANE_BYTES

_SEG_BITS = 20                   # key = core << 20 | lane offset (offsets < 2^19 after clipping)
_OFF_MASK = (1 << _SEG_BITS) - 1


def _as_columns(acc) -> dict[str, np.ndarray]:
    return acc if isinstance(acc, dict) else sweep_columns(acc)


def _time_order(acc: dict) -> np.ndarray:
    """By core and start; at equal starts reads before writes (so a command's reads come before
    its writes), then command row."""
    return np.lexsort((acc["row"], acc["write"], acc["start_ns"], acc["core"]))


def _segments(core, lo, hi):
    """Sorted segment boundaries (keys) and, per access, its first and past-last segment."""
    base = core.astype(np.int64) << _SEG_BITS
    cores = np.unique(core)
    banks = (cores.astype(np.int64)[:, None] << _SEG_BITS) + np.arange(BANKS + 1) * BANK_BYTES
    bp = np.unique(np.concatenate([base + lo, base + hi, banks.ravel()]))
    return bp, np.searchsorted(bp, base + lo), np.searchsorted(bp, base + hi)


def pair_count(acc) -> int:
    """How many (access, segment) pairs :func:`live_values` expands ``acc`` (a frame or
    :func:`sweep_columns`) into."""
    acc = _as_columns(acc)
    lo = acc["lane_offset"]
    hi = np.minimum(lo + acc["extent_bytes"], LANE_BYTES)
    _, s0, s1 = _segments(acc["core"], lo, hi)
    return int((s1 - s0).sum())


def live_values(acc) -> dict[str, np.ndarray]:
    """Columns of one row per value on one segment (see the module text), grouped by segment
    (core, then offset) with non-decreasing starts inside a segment (``acc``: a frame of
    accesses or :func:`sweep_columns`)."""
    acc = _as_columns(acc)
    o = _time_order(acc)
    a = {k: acc[k][o] for k in (*SWEEP_COLUMNS, "write")}
    core = a["core"].astype(np.int64, copy=False)
    lo = a["lane_offset"].astype(np.int64, copy=False)
    hi = np.minimum(lo + a["extent_bytes"].astype(np.int64, copy=False), LANE_BYTES)
    bp, s0, s1 = _segments(core, lo, hi)
    # per-pair arrays in 32 bits (indices below 2^31: MAX_PAIRS): half the memory traffic
    count = s1 - s0
    rep = np.repeat(np.arange(len(core), dtype=np.int32), count)
    seg = np.repeat((s0 - (np.cumsum(count) - count)).astype(np.int32), count) + np.arange(len(rep), dtype=np.int32)
    # accesses stay in time order inside a segment (a stable radix sort)
    order = stable_order(seg)
    rep_major = rep                                  # pairs access by access, in time order
    seg, rep = seg[order], rep[order]
    write = a["write"][rep]
    start_a, end_a, row_a = (a[k].astype(np.int64, copy=False) for k in ("start_ns", "end_ns", "row"))
    new_seg = np.r_[True, seg[1:] != seg[:-1]]
    first = np.flatnonzero(new_seg | write)          # each write starts a value on its segment
    val = np.cumsum(new_seg | write, dtype=np.int32) - 1
    n = len(core)
    # a value is identified by the access that made it: its write, or the first read of bytes
    # holding nothing (a value written before the capture)
    rep_first = rep[first]                           # command fields taken per value, not per pair
    vid = rep_first.astype(np.int64)
    # every read of a value, wherever on the value, extends the whole value: the reads of each
    # value once per access, in time order (taken in access order, so one stable sort by value
    # keeps time order inside a value), with their running maximum end
    vid_major = np.empty(len(seg), np.int32)
    vid_major[order] = rep_first[val]
    reads = ~a["write"][rep_major]
    rv, rr = vid_major[reads], rep_major[reads]
    once = np.r_[True, (rv[1:] != rv[:-1]) | (rr[1:] != rr[:-1])]
    rv, rr = rv[once], rr[once]
    srt = stable_order(rv)
    rv, rr = rv[srt], rr[srt]
    once = np.r_[True, (rv[1:] != rv[:-1]) | (rr[1:] != rr[:-1])]
    rvid, rrep = rv[once].astype(np.int64), rr[once]
    rkey = rvid * n + rrep
    has_reads = len(rkey) > 0
    rmax = _running_max(rvid, end_a[rrep])
    rrow = row_a[rrep]
    # a segment's value ends when the next write on that segment comes (order ``over_o``)
    nxt = np.r_[first[1:], len(seg)]
    over = np.r_[~new_seg[nxt[:-1]], False]
    at = np.minimum(nxt, len(seg) - 1)
    over_o = np.where(over, rep[at], n)
    rep_at = rep[at]
    ow_row, ow_start = np.where(over, row_a[rep_at], -1), np.where(over, start_a[rep_at], 0)
    j = np.searchsorted(rkey, vid * n + over_o, side="left") - 1     # last read before that
    valid = (j >= 0) & (rvid[np.maximum(j, 0)] == vid) if has_reads else np.zeros(len(vid), bool)
    last_read = np.where(valid, rmax[np.maximum(j, 0)] if has_reads else 0, np.iinfo(np.int64).min)
    group_first = np.zeros(n, np.int64)              # per value: index of its first read in rkey
    starts = np.flatnonzero(np.r_[True, rvid[1:] != rvid[:-1]]) if has_reads else np.zeros(0, np.int64)
    group_first[rvid[starts]] = starts
    readers = np.where(valid, j - group_first[vid] + 1, 0)
    made_by_write = write[first]
    writer_end = np.where(made_by_write, end_a[rep_first], np.iinfo(np.int64).min)
    # a race: the overwriting command X starts while a reader other than X, or the old writer,
    # still runs; X's own reads (in-place) are the last reads before its write: step over them
    k, ok = j.copy(), valid.copy()
    # only the values whose last read is the overwriting command's own step back (few rows)
    mine = np.flatnonzero(ok & (rrow[np.maximum(k, 0)] == ow_row)) if has_reads else np.zeros(0, np.int64)
    for _ in range(8):                                 # a command has a handful of operands
        if not len(mine):
            break
        km = k[mine] - 1
        okm = (km >= 0) & (rvid[np.maximum(km, 0)] == vid[mine])
        k[mine], ok[mine] = km, okm
        mine = mine[okm & (rrow[np.maximum(km, 0)] == ow_row[mine])]
    others = np.where(ok, rmax[np.maximum(k, 0)] if has_reads else 0, np.iinfo(np.int64).min)
    busy = np.maximum(others, np.where(row_a[rep_first] != ow_row, writer_end, np.iinfo(np.int64).min))
    core_first = start_a[np.searchsorted(core, core)]   # in time order: a core's first start
    seg_v = seg[first]
    return {
        "core": bp[seg_v] >> _SEG_BITS, "seg": seg_v, "lo": bp[seg_v] & _OFF_MASK,
        "hi": bp[seg_v + 1] & _OFF_MASK, "writer": np.where(made_by_write, row_a[rep_first], -1),
        "value": vid, "start_ns": np.where(made_by_write, start_a[rep_first], core_first[rep_first]),
        "end_ns": np.maximum(writer_end, last_read), "readers": readers,
        "status": np.where(~made_by_write, 2, np.where(readers > 0, 0, 1)),   # STATUS codes
        "overwritten_by": ow_row, "overlap_ns": np.where(over, np.maximum(busy, ow_start) - ow_start, 0)}


def stable_order(key: np.ndarray) -> np.ndarray:
    """``np.argsort(key, kind="stable")`` for keys in [0, 2^32): one or two passes of numpy's
    radix sort of 16-bit keys (low half, then high half), linear instead of a comparison sort."""
    key = np.asarray(key)
    top = int(key.max()) if len(key) else 0
    if len(key) and (int(key.min()) < 0 or top >= 1 << 32):
        return np.argsort(key, kind="stable")
    if top < 1 << 16:
        return np.argsort(key.astype(np.uint16), kind="stable")
    low = np.argsort((key & 0xFFFF).astype(np.uint16), kind="stable")
    return low[np.argsort((key[low] >> 16).astype(np.uint16), kind="stable")]


def _running_max(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarting at each new ``group`` (rows grouped): one
    accumulate, each group lifted above the previous ones."""
    if len(values) == 0:
        return values
    rank = np.cumsum(np.r_[True, group[1:] != group[:-1]])
    lo = int(values.min())
    stride = int(values.max()) - lo + 1
    if stride * (int(rank[-1]) + 1) < 1 << 62:
        lift = rank * stride
        return np.maximum.accumulate(values - lo + lift) - lift + lo
    return pd.Series(values).groupby(group).cummax().to_numpy()


def _merge_adjacent(raw) -> pd.DataFrame:
    """One piece per run of adjacent segments holding the same value part (same value, times,
    readers, status and overwrite)."""
    # core, writer and start are functions of the value (the access that made it); end, readers,
    # status and overlap of the value and the command that overwrites the part (the reads before
    # it: a command's writes are adjacent in time order, no read between them): compare only
    # value and overwriting command
    key = ["value", "overwritten_by"]
    per_value = ["core", "writer", "start_ns", "end_ns", "readers", "status", "overlap_ns"]
    cols = {k: np.asarray(raw[k], np.int64) for k in key}
    lo, hi = np.asarray(raw["lo"], np.int64), np.asarray(raw["hi"], np.int64)
    core = np.asarray(raw["core"], np.int64)
    # a value's parts by offset: the rows come by segment (offset order) for one core, so a
    # stable sort by value alone orders them by (value, lo)
    if len(lo) and (core == core[0]).all() and (np.diff(lo) >= 0).all():
        order = stable_order(cols["value"])
    else:
        order = np.lexsort((lo, cols["value"], core))
    lo, hi = lo[order], hi[order]
    same = lo[1:] == hi[:-1]
    for k in key:
        v = cols[k] = cols[k][order]
        same &= v[1:] == v[:-1]
    first = np.flatnonzero(np.r_[True, ~same]) if len(lo) else np.zeros(0, np.int64)
    last = np.r_[first[1:] - 1, len(lo) - 1] if len(lo) else first
    out = pd.DataFrame({k: cols[k][first] for k in key})
    for k in per_value:
        out[k] = np.asarray(raw[k], np.int64)[order[first]]
    out["lo"], out["hi"] = lo[first], hi[last]
    out["first_bank"], out["last_bank"] = out["lo"] // BANK_BYTES, (out["hi"] - 1) // BANK_BYTES
    out["status"] = np.array(STATUS, object)[out["status"].to_numpy()]
    out = out.iloc[np.lexsort((out["lo"].to_numpy(), out["start_ns"].to_numpy(), out["core"].to_numpy()))]
    return out[list(PIECE_COLUMNS)].reset_index(drop=True)


def occupancy(values) -> tuple[np.ndarray, ...]:
    """Covered bytes as +/- events: per segment the union of its values' [start, end), then
    (core, bank, t, delta) of every merged piece's start and end (``values``: live_values' columns)."""
    keep = np.flatnonzero(np.asarray(values["end_ns"]) > np.asarray(values["start_ns"]))
    key, start, end = (np.asarray(values[k], np.int64)[keep] for k in ("seg", "start_ns", "end_ns"))
    if len(key) == 0:
        return tuple(np.zeros(0, np.int64) for _ in range(4))
    t0 = int(start.min())
    lift = (key - key.min()) * (int(end.max()) - t0 + 1)       # one running max for all segments
    run_end = np.maximum.accumulate(end - t0 + lift) - lift + t0
    new = np.r_[True, (key[1:] != key[:-1]) | (start[1:] > run_end[:-1])]
    last = np.r_[np.flatnonzero(new)[1:] - 1, len(key) - 1]
    at = keep[new]                                  # core, lo, hi only where a union starts
    core, lo = np.asarray(values["core"], np.int64)[at], np.asarray(values["lo"], np.int64)[at]
    size = np.asarray(values["hi"], np.int64)[at] - lo
    return (np.r_[core, core], np.r_[lo, lo] // BANK_BYTES, np.r_[start[new], run_end[last]],
            np.r_[size, -size])


def core_pieces(sub) -> tuple[pd.DataFrame, tuple]:
    """One core's live pieces and occupancy events (core, bank, t, delta) the old way."""
    values = live_values(sub)
    return _merge_adjacent(values), occupancy(values)
