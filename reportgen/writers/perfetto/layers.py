"""Layer slices of a bmodel capture: one per record with commands (a global op on a core, or one
time step of a layer-group member), on per-core "Layers" tracks (extra lanes where they overlap)."""
from __future__ import annotations

import numpy as np

from reportgen.model_layers import LayerView
from reportgen.writers.perfetto.device import Device
from reportgen.writers.perfetto.trace import Plan
from reportgen.writers.perfetto.slices import lane_tracks, slice_plan

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
    tracks = lane_tracks(device, spans["core"].to_numpy(np.int64), start, end, "layers", "Layers",
                         rank=1000)
    name_iid = t.names.codes(spans["name"].astype(str) + " L" + spans["file_line"].astype(str))
    group = spans["group_line"].astype("Int64")
    every = np.ones(len(spans), bool)
    args = [("Layer Id", "int", spans["file_line"].to_numpy(np.int64), every),
            ("Group Line", "int", group.fillna(0).to_numpy(np.int64), group.notna().to_numpy(bool)),
            ("Commands", "int", spans["cmds"].to_numpy(np.int64), every)]
    return slice_plan(device, tracks, start, end, name_iid, args, list(ARGS))
