"""The vendor's "Overlap Analysis" lanes of an Ascend trace view (Computing, Communication,
Communication(Not Overlapped), Free) as slices under each rank's "Overlap Analysis" group."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.intervals import first_fit_lanes
from reportgen.model import Profile
from reportgen.writers.perfetto.device import Device
from reportgen.writers.perfetto.slices import slice_plan
from reportgen.writers.perfetto.trace import Plan

LEVEL = "Overlap Analysis"


def overlap_plan(device: Device, profile: Profile) -> Plan | None:
    parts = [v.overlap_lanes for v in profile.vendor_outputs.values()
             if v.overlap_lanes is not None and len(v.overlap_lanes)]
    if not parts:
        return None
    o = pd.concat(parts, ignore_index=True)
    t = device.t
    start, end = o["start_ns"].to_numpy(np.int64), o["end_ns"].to_numpy(np.int64)
    lane_code, lane_names = pd.factorize(o["core"].astype(str) + "\x1f" + o["lane"].astype(str))
    sub = first_fit_lanes(lane_code, start, end)
    track_code, keys = pd.factorize(pd.Series(lane_code.astype(np.int64) * 1024 + sub))
    uuid_of = np.zeros(len(keys), np.int64)
    for k, key in enumerate(keys.to_numpy()):
        code, ln = divmod(int(key), 1024)
        core, lane = lane_names[code].split("\x1f", 1)
        uuid_of[k] = t.track(f"device/core/{core}/overlap/{lane}/{ln}", lane + ("" if ln == 0 else f" #{ln + 1}"),
                             device.level_track(int(core), LEVEL), rank=code * 64 + ln)
    name_iid = t.names.codes(o["lane"].astype(str))
    return slice_plan(device, (track_code, t.sequences(len(keys)), uuid_of), start, end, name_iid, [], [])
