"""Step variation of framework traces (docs/metrics.md "Step variation"): per device, the step
times (the per-step windows of analysis/device_time.py), their spread, the slowest step and the
part of the device time that grew most in it against the median step."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.device_time import PARTS

COLUMNS = ["device", "steps", "mean_ns", "median_ns", "min_ns", "max_ns", "std_ns", "cv",
           "slowest_step", "slowest_ns", "slowest_vs_median", "grew_most", "grew_by_ns"]
#: the plain names of the device-time parts, for sentences
PART_NAMES = {"compute_ns": "compute", "comm_ns": "exposed communication", "memory_ns": "memory copies",
              "idle_host_ns": "idle waiting for the host", "idle_launch_ns": "idle on kernel launches",
              "idle_sync_ns": "idle in synchronisation", "idle_other_ns": "other idle"}


def step_variation(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per device with at least two steps (``steps``: DeviceTime.steps)."""
    rows = []
    if steps.empty:
        return pd.DataFrame(columns=COLUMNS)
    for device, t in steps[steps["step"].notna()].groupby("device", sort=True):
        if len(t) < 2:
            continue
        span = t["span_ns"].to_numpy(np.int64)
        slow = int(np.argmax(span))
        median = float(np.median(span))
        typical = t[list(PARTS)].median()
        delta = t[list(PARTS)].iloc[slow] - typical
        grew = str(delta.idxmax())
        rows.append({"device": int(device), "steps": len(t), "mean_ns": float(span.mean()),
                     "median_ns": median, "min_ns": int(span.min()), "max_ns": int(span.max()),
                     "std_ns": float(span.std()), "cv": float(span.std() / span.mean()) if span.mean() else np.nan,
                     "slowest_step": t["step"].iloc[slow], "slowest_ns": int(span[slow]),
                     "slowest_vs_median": span[slow] / median if median else np.nan,
                     "grew_most": PART_NAMES[grew], "grew_by_ns": float(delta[grew])})
    return pd.DataFrame(rows, columns=COLUMNS)
