"""Kernel Function slices: one per func_scope (or run of one kernel on a core), on per-core
"Kernel Function" tracks."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.intervals import first_fit_lanes
from reportgen.writers.perfetto.columns import column_values, engine_is
from reportgen.writers.perfetto.device import Device
from reportgen.writers.perfetto.trace import Plan
from reportgen.writers.perfetto.wire import SLICE_BEGIN, SLICE_END, Rows, annotations, packet


def kernels_plan(device: Device, c: pd.DataFrame) -> Plan | None:
    """One slice per kernel function scope of every core (None when no command names one)."""
    t = device.t
    keep = ~engine_is(c, "CDMA") & (c["kernel"].notna() | c["func_scope"].notna()).to_numpy(bool)
    dev = c.loc[keep, ["core", "start_ns", "end_ns", "kernel", "func_scope"]]   # only what is used
    if dev.empty:
        return None
    dev = dev.sort_values(["core", "start_ns"], kind="stable")
    kernel = dev["kernel"].astype(object)
    scope = dev["func_scope"].astype("Float64")
    # scope key: the func_scope id; without one, a run of the same kernel name on a core
    run = (kernel.ne(kernel.shift()) | dev["core"].ne(dev["core"].shift())).cumsum()
    key = np.where(scope.notna().to_numpy(bool), scope.fillna(0).astype("int64").to_numpy(),
                   -run.to_numpy(np.int64))         # runs get negative keys, scopes are >= 0
    g = dev.assign(_key=key).groupby(["core", "_key"], sort=False, observed=True)
    k = pd.DataFrame({"core": g["core"].first(), "start": g["start_ns"].min(), "end": g["end_ns"].max(),
                      "kernel": g["kernel"].first(), "scope": g["func_scope"].first(),
                      "count": g.size()}).reset_index(drop=True)
    start, end = k["start"].to_numpy(np.int64), k["end"].to_numpy(np.int64)
    core = k["core"].to_numpy(np.int64)
    lane = first_fit_lanes(core, start, end)
    track_code, keys = pd.factorize(pd.Series(core * 1024 + lane))
    uuid_of = np.array([t.track(f"device/core/{kk // 1024}/kernel-function/{kk % 1024}",
                                "Kernel Function" + ("" if kk % 1024 == 0 else f" #{kk % 1024 + 1}"),
                                device.core_track(int(kk // 1024)), rank=kk % 1024)
                        for kk in keys.to_numpy()], np.int64)
    seq_ids = t.sequences(len(keys))
    seq = seq_ids[track_code]
    label = k["kernel"].astype(object).where(k["kernel"].notna(),
                                             "scope " + k["scope"].astype("Float64").fillna(-1).astype("int64").astype(str))
    name_iid = t.names.codes(label)
    kern_iid = t.strings.codes(k["kernel"].astype(object))
    scope_v, scope_ok = column_values(k, "scope", "int")
    count = k["count"].to_numpy(np.int64)
    order = np.lexsort((end, start, track_code))
    base = device.base

    def encode(lo: int, hi: int) -> bytes:
        rows = order[lo:hi]
        n = len(rows)
        te = Rows(n).const(9, SLICE_BEGIN)
        te.varint(10, name_iid[rows])
        annotations(te, t.arg_iid, [("Kernel Function", "string", kern_iid[rows], kern_iid[rows] > 0),
                             ("Func Scope Id", "int", scope_v[rows], scope_ok[rows]),
                             ("Commands", "int", count[rows], np.ones(n, bool))])
        rec = Rows(n).message(1, packet(n, start[rows] + base, seq[rows], te))
        end_ev = Rows(n).const(9, SLICE_END)
        rec.message(1, packet(n, end[rows] + base, seq[rows], end_ev))
        return rec.tobytes()

    first_ts = np.full(len(keys), np.iinfo(np.int64).max)
    np.minimum.at(first_ts, track_code, start + base)
    args = [t.arg_iid[a] for a in ("Kernel Function", "Func Scope Id", "Commands")]
    return Plan(len(k), seq_ids, uuid_of, first_ts, encode,
                {"names": (seq, name_iid), "strings": (seq, kern_iid),
                 "args": (np.repeat(seq_ids, 3), np.tile(args, len(seq_ids)))})
