"""Host slices (``profile.host``): process and thread tracks, nested slices as begin/end
events, "thread T #k" lanes for events that overlap without nesting, top-level args typed."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from reportgen.intervals import lanes as nesting_lanes, nest
from reportgen.writers.perfetto.device import Device
from reportgen.writers.perfetto.trace import Plan, Trace
from reportgen.writers.perfetto.launch_flows import flow_id, launches
from reportgen.writers.perfetto.wire import (FLOW_IDS, INSTANT, SLICE_BEGIN, SLICE_END, Rows, annotations,
                                             packet)

MAX_HOST_ARGS = 32                  # host arg keys written: the most common ones


def host_plan(device: Device, h: pd.DataFrame, commands: pd.DataFrame | None = None) -> Plan:
    """Every host event on its process/thread (lane) track; a launch starts a flow to each
    device slice of ``commands`` it launched (launch_flows)."""
    t = device.t
    pid_s, tid_s = h["pid"].astype(str), h["tid"].astype(str)
    pid_num = pd.to_numeric(h["pid"], errors="coerce")
    tid_num = pd.to_numeric(h["tid"], errors="coerce")
    numeric = (pid_num.notna().all() and tid_num.notna().all()
               and pid_num.abs().max() < 2**31 and tid_num.abs().max() < 2**31
               and (pid_num % 1 == 0).all() and (tid_num % 1 == 0).all())
    proc_code, procs = pd.factorize(pid_s)
    thread_code, threads = pd.factorize(pid_s + "\x1f" + tid_s)
    start, end = h["start_ns"].to_numpy(np.int64), h["end_ns"].to_numpy(np.int64)
    lane = nesting_lanes(thread_code, start, end)
    # real process/thread tracks (numeric ids) or stand-in ids named after the originals
    pid_of = (pid_num.astype("int64").to_numpy() if numeric else proc_code + 1)
    tid_of = (tid_num.astype("int64").to_numpy() if numeric else thread_code + 1)
    proc_uuid = {}
    for k, name in enumerate(procs):
        row = int(np.flatnonzero(proc_code == k)[0])
        label = f"{h['level'].iloc[row]} (pid {name})" if "level" in h.columns else f"host {name}"
        proc_uuid[k] = t.track(f"host/{name}", "", process=(int(pid_of[row]), label))
    lane_code, lane_keys = pd.factorize(pd.Series(thread_code.astype(np.int64) * 1024 + lane))
    uuid_of = np.zeros(len(lane_keys), np.int64)
    for k, key in enumerate(lane_keys.to_numpy()):
        th, ln = divmod(int(key), 1024)
        row = int(np.flatnonzero(thread_code == th)[0])
        label = f"{tid_s.iloc[row]}"
        named = h["thread_name"].iloc[row] if "thread_name" in h.columns else None
        if ln == 0:
            uuid_of[k] = t.track(f"host/{threads[th]}/0", "", thread=(
                int(pid_of[row]), int(tid_of[row]),
                named if isinstance(named, str) and named else f"thread {label}"))
        else:
            uuid_of[k] = t.track(f"host/{threads[th]}/{ln}", f"thread {label} #{ln + 1}",
                                 proc_uuid[int(proc_code[row])], rank=ln)
    seq_ids = t.sequences(len(lane_keys))
    # events: B at start, E at end (I for zero-length); at equal times ends first (deepest
    # first), then begins/instants in nesting order, which keeps every lane balanced
    n = len(h)
    zero = start == end
    depth = nest(lane_code, start, end)[0].astype(np.int64)   # depth within its lane
    ev_row = np.concatenate([np.arange(n), np.flatnonzero(~zero)])
    ev_ts = np.concatenate([start, end[~zero]])
    ev_type = np.concatenate([np.where(zero, INSTANT, SLICE_BEGIN), np.full((~zero).sum(), SLICE_END)])
    pre = np.empty(n, np.int64)
    pre[np.lexsort((np.arange(n), -end, start, lane_code))] = np.arange(n)
    ev_class = (ev_type == SLICE_END).astype(np.int64) ^ 1          # 0 = end, 1 = begin
    ev_tie = np.where(ev_type == SLICE_END, -depth[ev_row], pre[ev_row])
    ev_lane = lane_code[ev_row]
    o = np.lexsort((ev_tie, ev_class, ev_ts, ev_lane))
    ev_row, ev_ts, ev_type, ev_lane = ev_row[o], ev_ts[o], ev_type[o], ev_lane[o]
    # flow starts on the opening event of each launching slice, in event order
    launched, launcher = launches(commands)
    opening = np.empty(n, np.int64)
    opening[ev_row[ev_type != SLICE_END]] = np.flatnonzero(ev_type != SLICE_END)
    fo = np.argsort(opening[launcher], kind="stable") if len(launcher) else np.zeros(0, np.int64)
    flow_pos, flow_ids = opening[launcher][fo], flow_id(launched)[fo]
    name_iid = t.names.codes(h["name"].astype(object))
    cat_iid = t.cats.codes(h["category"].astype(object))
    host_args = _host_args(t, h["args"].to_numpy(object))
    seq = seq_ids[ev_lane]
    base = device.base

    def encode(lo: int, hi: int) -> bytes:
        rows, typ = ev_row[lo:hi], ev_type[lo:hi]
        m = hi - lo
        opens = typ != SLICE_END
        te = Rows(m).varint(9, typ)
        te.varint(10, name_iid[rows], opens).varint(3, cat_iid[rows], opens & (cat_iid[rows] > 0))
        annotations(te, t.arg_iid, [(a, kind, v[rows], ok[rows] & opens) for a, kind, v, ok in host_args])
        i, j = np.searchsorted(flow_pos, [lo, hi])
        if j > i:
            te.repeated(FLOW_IDS, flow_pos[i:j] - lo, flow_ids[i:j])
        return Rows(m).message(1, packet(m, t.deltas(seq[lo:hi], ev_ts[lo:hi] + base), seq[lo:hi], te)).tobytes()

    first_ts = np.full(len(lane_keys), np.iinfo(np.int64).max)
    np.minimum.at(first_ts, lane_code, start + base)
    row_seq = seq_ids[lane_code]
    arg_seq = np.concatenate([row_seq[ok] for *_, ok in host_args] or [np.zeros(0, np.int64)])
    arg_iid = np.concatenate([np.full(ok.sum(), t.arg_iid[a]) for a, _, _, ok in host_args]
                             or [np.zeros(0, np.int64)])
    str_args = [(v, ok) for _, kind, v, ok in host_args if kind == "string"]
    return Plan(len(ev_ts), seq_ids, uuid_of, first_ts, encode,
                {"names": (row_seq, name_iid), "cats": (row_seq, cat_iid), "args": (arg_seq, arg_iid),
                 "strings": (np.concatenate([row_seq[ok] for _, ok in str_args] or [np.zeros(0, np.int64)]),
                             np.concatenate([v[ok] for v, ok in str_args] or [np.zeros(0, np.int64)]))})


def _host_args(t: Trace, args: np.ndarray) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """Top-level host args as typed annotations (nested values as JSON text), most common keys.

    The dicts are read once into a long (event, key, value) table; typing and encoding
    are then done per key on whole columns.
    """
    n = len(args)
    items = [(i, k, v) for i, a in enumerate(args) if isinstance(a, dict) for k, v in a.items()]
    if not items:
        return []
    row, key, val = zip(*items)
    long = pd.DataFrame({"row": np.asarray(row, np.int64), "key": pd.Series(key, dtype=object).astype(str),
                         "val": pd.Series(val, dtype=object)})
    top = long["key"].value_counts().index[: MAX_HOST_ARGS]
    long = long[long["key"].isin(top)]
    long["typ"] = long["val"].map(type)
    out = []
    for k, g in long.groupby("key", sort=False):
        if k not in t.arg_iid:
            t.arg_iid[k] = t.arg_names.get(k)
        typ, vals, rows = g["typ"], g["val"], g["row"].to_numpy()
        is_text = np.ones(len(g), bool)
        for kind, pytype, dtype in (("bool", bool, bool), ("int", int, np.int64), ("double", float, np.float64)):
            sel = (typ == pytype).to_numpy()
            if not sel.any():
                continue
            try:
                values = np.array(vals[sel].tolist(), dtype)
            except OverflowError:                # an int beyond int64: keep its digits as text
                continue
            ok = np.isfinite(values) if kind == "double" else np.ones(len(values), bool)
            full, present = np.zeros(n, dtype), np.zeros(n, bool)
            full[rows[sel][ok]], present[rows[sel][ok]] = values[ok], True
            out.append((k, kind, full, present))
            is_text[np.flatnonzero(sel)[ok]] = False
        is_text &= vals.notna().to_numpy() | (typ == float).to_numpy()   # None: no arg
        if is_text.any():
            text = [v if isinstance(v, str) else json.dumps(v, default=str) for v in vals[is_text]]
            full = np.zeros(n, np.int64)
            full[rows[is_text]] = t.strings.codes(text)
            out.append((k, "string", full, full > 0))
    return out
