"""Layer slices of a bmodel capture: one per record with commands (a global op on a core, or one
time step of a layer-group member), on per-core "Layers" tracks (extra lanes where they overlap)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.intervals import first_fit_lanes
from reportgen.model_layers import LayerView
from reportgen.writers.perfetto.device import Device
from reportgen.writers.perfetto.trace import Plan
from reportgen.writers.perfetto.wire import SLICE_BEGIN, SLICE_END, Rows, annotations, packet

ARGS = ("Layer Id", "Group Line", "Commands")


def layers_plan(device: Device, view: LayerView) -> Plan | None:
    spans = view.spans
    if spans.empty:
        return None
    t = device.t
    for a in ARGS:
        if a not in t.arg_iid:
            t.arg_iid[a] = t.arg_names.get(a)
    start, end = spans["start_ns"].to_numpy(np.int64), spans["end_ns"].to_numpy(np.int64)
    core = spans["core"].to_numpy(np.int64)
    lane = first_fit_lanes(core, start, end)
    track_code, keys = pd.factorize(pd.Series(core * 1024 + lane))
    uuid_of = np.array([t.track(f"device/core/{k // 1024}/layers/{k % 1024}",
                                "Layers" + ("" if k % 1024 == 0 else f" #{k % 1024 + 1}"),
                                device.core_track(int(k // 1024)), rank=1000 + k % 1024)
                        for k in keys.to_numpy()], np.int64)
    seq_ids = t.sequences(len(keys))
    seq = seq_ids[track_code]
    line = spans["file_line"].to_numpy(np.int64)
    name_iid = t.names.codes(spans["name"].astype(str) + " L" + spans["file_line"].astype(str))
    group = spans["group_line"].astype("Int64")
    group_v, group_ok = group.fillna(0).to_numpy(np.int64), group.notna().to_numpy(bool)
    count = spans["cmds"].to_numpy(np.int64)
    order = np.lexsort((end, start, track_code))
    base = device.base

    def encode(lo: int, hi: int) -> bytes:
        rows = order[lo:hi]
        n = len(rows)
        te = Rows(n).const(9, SLICE_BEGIN)
        te.varint(10, name_iid[rows])
        annotations(te, t.arg_iid, [("Layer Id", "int", line[rows], np.ones(n, bool)),
                                    ("Group Line", "int", group_v[rows], group_ok[rows]),
                                    ("Commands", "int", count[rows], np.ones(n, bool))])
        rec = Rows(n).message(1, packet(n, start[rows] + base, seq[rows], te))
        rec.message(1, packet(n, end[rows] + base, seq[rows], Rows(n).const(9, SLICE_END)))
        return rec.tobytes()

    first_ts = np.full(len(keys), np.iinfo(np.int64).max)
    np.minimum.at(first_ts, track_code, start + base)
    args = [t.arg_iid[a] for a in ARGS]
    return Plan(len(spans), seq_ids, uuid_of, first_ts, encode,
                {"names": (seq, name_iid), "args": (np.repeat(seq_ids, len(ARGS)), np.tile(args, len(seq_ids)))})
