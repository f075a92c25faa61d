"""The diagnosis of a framework trace (PyTorch/Kineto, DeepLink, Ascend, MindSpore), computed
once by ``analysis.derive``: device time per device and step, launch statistics, step
variation and the ranked findings (docs/metrics.md "Device time of framework traces").

Its tables are also put in ``Profile.tables`` (workbook sheets, HTML tables, CSV files) under
:data:`TABLE_NAMES`; the findings have their own sheet and the summary keys ``findings`` and
``device_time``."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.analysis import fw_findings as ff
from reportgen.analysis.device_time import KEYS, DeviceTime, device_time
from reportgen.analysis.findings import fold
from reportgen.analysis.launch_stats import launch_arrays, launch_stats, launch_totals
from reportgen.analysis.step_variation import step_variation
from reportgen.model import Profile

#: Profile.tables names of the diagnosis tables, with their definitions
TABLE_NAMES = {
    "Device Time": "Per device: its span (first to last device slice) split exclusively into "
                   "compute, exposed communication, memory copies and idle by cause (host, launch, "
                   "sync, other); comm total = union of all communication (ns).",
    "Device Time per Step": "The same split inside each step's device window (first device start "
                            "of the step to that of the next step) (ns).",
    "Launch Statistics": "Per device and kernel name: launches, kernel and launch-call time, launch "
                         "delay (kernel start - launch start), kernels shorter than their launch, "
                         "delay outliers (above Q3 + 3 IQR of the device's delays) (ns).",
    "Step Variation": "Per device: step times, their spread, the slowest step and the part of its "
                      "device time that grew most against the median step (ns).",
}


@dataclass
class FrameworkDiagnosis:
    device_time: DeviceTime
    launch: pd.DataFrame
    variation: pd.DataFrame
    #: ranked, model.FINDING_COLUMNS + gain_ns, gain_share, gain_scenario
    findings: pd.DataFrame


def _kernels(profile: Profile) -> pd.DataFrame:
    """Per (device, kernel name): calls and summed time of the work slices."""
    c = profile.commands
    if c.empty:
        return pd.DataFrame(columns=["device", "name", "calls", "total_ns"])
    w = ~c["is_sys"].to_numpy(bool)
    t = pd.DataFrame({"device": c["core"].astype(np.int64).to_numpy()[w],
                      "name": c["func_name"].astype(str).to_numpy()[w],
                      "dur": (c["end_ns"] - c["start_ns"]).to_numpy(np.int64)[w]})
    return t.groupby(["device", "name"], sort=False)["dur"].agg(calls="size", total_ns="sum").reset_index()


def _memory_peaks(profile: Profile) -> dict:
    """device -> peak reserved (else allocated) bytes, from the Memory Peak table."""
    t = profile.tables.get("Memory Peak")
    if t is None or "Device" not in t.columns:
        return {}
    out = {}
    for r in t.to_dict("records"):
        m = re.search(r"(\d+)$", str(r["Device"]))
        values = [pd.to_numeric(r.get(k), errors="coerce")
                  for k in ("Peak Reserved (bytes)", "Peak Allocated (bytes)")]
        peak = next((float(v) for v in values if v == v and v > 0), None)
        if m and peak:
            out[int(m.group(1))] = peak
    return out


def diagnose_framework(profile: Profile) -> FrameworkDiagnosis:
    dt = device_time(profile)
    launches = launch_arrays(profile)
    launch, totals = launch_stats(launches), launch_totals(launches)
    variation = step_variation(dt.steps)
    short = {int(d): float(s) for d, s in zip(totals["device"], totals["short_share"])}
    # what the trace states each device holds (bytes), when a parser records it
    capacity = {int(k): float(v) for k, v in (profile.meta.arch.get("device_memory_bytes") or {}).items()}
    found = (ff.device_findings(dt.devices, short) + ff.straggler_findings(dt.devices)
             + ff.step_findings(variation) + ff.kernel_findings(_kernels(profile))
             + ff.operator_findings(profile.tables.get("Operators"))
             + ff.memory_findings(_memory_peaks(profile), capacity))
    spans = dict(zip(dt.devices["device"], dt.devices["span_ns"]))
    found = fold(found, len(spans), ff.FOLDED_HEADLINES, "device")   # as PMU findings fold
    diag = FrameworkDiagnosis(dt, launch, variation, ff.ranked(found, spans))
    tables = {"Device Time": dt.devices, "Device Time per Step": dt.steps,
              "Launch Statistics": launch, "Step Variation": variation}
    profile.tables.update({k: v for k, v in tables.items() if len(v)})
    return diag


def device_time_document(diag: FrameworkDiagnosis) -> dict:
    """summary.json ``device_time``: per device (its number as a string) the KEYS in ns."""
    return {str(int(r["device"])): {k: int(r[k]) for k in KEYS}
            for r in diag.device_time.devices.to_dict("records")}
