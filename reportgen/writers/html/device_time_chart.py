"""The framework Overview's stacked bar of device time: one bar per device (and per step of it,
when the trace has steps), split into the exclusive parts of analysis/device_time.py (compute,
exposed communication, memory, idle by cause). Values as computed, only scaled to one unit."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis.device_time import PARTS
from reportgen.analysis.fw_diagnosis import FrameworkDiagnosis
from reportgen.analysis.step_variation import PART_NAMES
from reportgen.writers.html.charts import _BASE_LAYOUT, LEGEND_ON_TOP, _typed
from reportgen.writers.html.units import time_unit

TITLE = "Device time per device and step"
NOTE = ("Each instant of a device's span counted once: compute, then communication no compute "
        "overlaps, then memory copies, then idle by cause (docs/metrics.md \"Device time of "
        "framework traces\"). Tables: Device Time, Device Time per Step.")
#: part -> colour: work in full colours, idle causes in greys and warm tints
COLORS = {"compute_ns": "#4E79A7", "comm_ns": "#E15759", "memory_ns": "#59A14F",
          "idle_host_ns": "#F28E2B", "idle_launch_ns": "#EDC948", "idle_sync_ns": "#B07AA1",
          "idle_other_ns": "#BAB0AC"}
#: bars drawn at most (the steps of many devices); the tables hold every row
MAX_BARS = 200


def _bars(diag: FrameworkDiagnosis) -> tuple[list[str], pd.DataFrame]:
    steps = diag.device_time.steps
    devices = diag.device_time.devices
    with_steps = steps[steps["step"].notna()] if len(steps) else steps
    if len(with_steps) and len(with_steps) <= MAX_BARS:
        rows = steps.sort_values(["device", "start_ns"], kind="stable", na_position="last")
        labels = [f"device {d}" + (f" step {s}" if s is not None and s == s else "")
                  for d, s in zip(rows["device"], rows["step"])]
        return labels, rows
    return [f"device {d}" for d in devices["device"]], devices


def device_time_chart(diag: FrameworkDiagnosis) -> dict[str, Any] | None:
    if diag.device_time.devices.empty:
        return None
    labels, rows = _bars(diag)
    unit, scale = time_unit(rows["span_ns"].to_numpy(np.float64))
    data = [{"type": "bar", "name": PART_NAMES[p], "x": labels,
             "y": _typed(rows[p].to_numpy(np.float64) / scale, "f8"),
             "marker": {"color": COLORS[p]},
             "hovertemplate": f"%{{x}} {PART_NAMES[p]}: %{{y:,.3f}} {unit}<extra></extra>"}
            for p in PARTS if rows[p].to_numpy().any()]
    layout = dict(_BASE_LAYOUT, barmode="stack", legend=dict(LEGEND_ON_TOP, traceorder="normal"),
                  yaxis={"title": {"text": unit}, "gridcolor": "#e3e7ea"})
    return {"data": data, "layout": layout}
