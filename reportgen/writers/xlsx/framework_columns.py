"""Framework-trace command sheets: times as typed ns numbers and honest names.

A trace's clock is epoch ns (beyond 2^53: a spreadsheet number cannot hold them, the generic
writer would fall back to hex text), and its slices have no cycle counter.  So the sheets show
Start/End as ns since the trace's first event (exact numbers; the epoch ns of that first event
is in the note) and no "Asic Cycle" column (Duration (ns) says what the slice lasted)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.model import Profile
from reportgen.writers.xlsx.columns import Column

#: PMU headers replaced on framework sheets
_DROP = {"Asic Cycle"}
_TIMES = {"Start Time(ns)": "start_ns", "End Time(ns)": "end_ns"}


def trace_t0(profile: Profile) -> int:
    """The first time of the trace (device commands and host slices), ns."""
    starts = [int(profile.commands["start_ns"].min())] if len(profile.commands) else []
    if len(profile.host):
        starts.append(int(profile.host["start_ns"].min()))
    return min(starts) if starts else 0


def framework_columns(profile: Profile, frame: pd.DataFrame, columns: list[Column]) -> list[Column]:
    """``columns`` of a framework command sheet with typed relative times, no cycle column."""
    t0 = trace_t0(profile)
    out = []
    for col in columns:
        if col.header in _DROP:
            continue
        if col.header in _TIMES:
            rel = frame[_TIMES[col.header]].to_numpy(np.int64) - t0
            what = "Start" if col.header.startswith("Start") else "End"
            col = Column(f"{what} (ns since trace start)", "number", rel, None, num_format="#,##0",
                         note=f"ns since the trace's first event (epoch ns {t0}).")
        out.append(col)
    return out
