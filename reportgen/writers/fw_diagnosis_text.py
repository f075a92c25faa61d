"""The framework diagnosis in summary.txt (findings, device time per device) and its summary.json
keys (``findings`` in the PMU form plus ``gain_ns``, ``device_time`` per device, and the tables
``device_time_steps``, ``launch_stats``, ``step_variation``): Profile.framework_diagnosis as
computed, nothing recomputed here."""
from __future__ import annotations

from reportgen.analysis.device_time import KEYS
from reportgen.analysis.fw_diagnosis import FrameworkDiagnosis, device_time_document
from reportgen.writers.diagnosis_text import _records, _table, findings_lines

#: (column, header, kind) of the device-time text table
DEVICE_TIME_COLUMNS = [("device", "Device", "id"), ("span_ns", "span", "ns")] + [
    (k, label, "ns") for k, label in zip(KEYS, ("compute", "comm", "memory", "idle host",
                                                "launch", "sync", "other", "exposed",
                                                "comm total"))]


def framework_text(diag: FrameworkDiagnosis) -> str:
    """The summary.txt section under the device lanes: findings, then the device time."""
    parts = ["\n".join(findings_lines(diag.findings))]
    devices = diag.device_time.devices
    if len(devices):
        parts.append(_table("Device time per device (exclusive parts add up to the span; "
                            "docs/metrics.md \"Device time of framework traces\")", devices,
                            DEVICE_TIME_COLUMNS))
    return "\n\n".join(parts)


def framework_document(diag: FrameworkDiagnosis) -> dict:
    return {"findings": _records(diag.findings), "device_time": device_time_document(diag),
            "device_time_steps": _records(diag.device_time.steps),
            "launch_stats": _records(diag.launch), "step_variation": _records(diag.variation)}
