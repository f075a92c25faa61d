"""The one table of diagnosis rules: what each finding measures and when it fires.

docs/metrics.md "Findings" shows this table (a test checks the two agree). ``compare`` says how
the value is tested: ``>=`` fires at or above the threshold, ``<=`` at or below, ``away``
when the value is at least ``threshold`` times away from 1 (above it, or at most its inverse,
0 included).
``severe`` is the same test's bound for severity "high" (else "medium").
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    name: str
    compare: str       # ">=", "<=" or "away"
    threshold: float
    severe: float
    unit: str          # "%" (a fraction shown as percent) or "x" (a ratio)
    measures: str      # what the value is, one sentence
    min_share: float = 0.0   # subjects below this share of their whole are not judged

    def fires(self, value: float, bound: float | None = None) -> bool:
        t = self.threshold if bound is None else bound
        if value != value:                       # NaN: nothing to judge
            return False
        if self.compare == ">=":
            return value >= t
        if self.compare == "<=":
            return value <= t
        return value >= t or value <= 1 / t

    def severity(self, value: float) -> str:
        return "high" if self.fires(value, self.severe) else "medium"

    def excess(self, value: float) -> float:
        """How far past the threshold (1 = at it): ranks findings of equal severity."""
        if self.compare == ">=":
            return value / self.threshold
        if self.compare == "<=":
            return self.threshold / value if value > 0 else float("inf")
        return (max(value, 1 / value) if value > 0 else float("inf")) / self.threshold


RULES = {r.name: r for r in (
    Rule("core_imbalance", "away", 2.0, 4.0, "x",
         "A core's engine utilisation divided by the median over the cores (TIU, GDMA, SDMA; "
         "2 cores or more, median above 0)."),
    Rule("dma_bound_stretch", ">=", 0.05, 0.20, "%",
         "Length of a stretch where GDMA or SDMA works and TIU does not, as a share of the span."),
    Rule("ddr_bandwidth_peak", ">=", 0.80, 0.95, "%",
         "A core's DDR bandwidth while transferring (GDMA + SDMA DDR bytes / their summed time) "
         "divided by the chip's DDR peak per core (analysis/chip.py)."),
    Rule("waiting_share", ">=", 0.20, 0.50, "%",
         "Time an engine of a core spends in system (send/wait/sync) commands, as a share of the "
         "span."),
    Rule("low_uarch_rate", "<=", 0.60, 0.30, "%",
         "uArch rate (Alg Ops / uArch Ops) of a TIU Function Type over all cores, for types with "
         "at least min_share of the TIU busy time.", min_share=0.05),
    Rule("kernel_dominates", ">=", 0.50, 0.80, "%",
         "One kernel name's share of the total time of all kernel calls (2 names or more)."),
    # framework traces (analysis/fw_findings.py; docs/metrics.md "Findings of framework traces")
    Rule("fw_device_idle", ">=", 0.20, 0.50, "%",
         "A device's idle time (no work slice runs) as a share of its span."),
    Rule("fw_host_bound", ">=", 0.05, 0.20, "%",
         "Idle time before the next slice's launch call started, as a share of the device span."),
    Rule("fw_launch_bound", ">=", 0.03, 0.15, "%",
         "Idle time while the next slice's launch call was running, as a share of the span."),
    Rule("fw_sync_bound", ">=", 0.05, 0.20, "%",
         "Idle time under a device wait or a host synchronising call, as a share of the span."),
    Rule("fw_exposed_comm", ">=", 0.03, 0.15, "%",
         "Communication time that no compute overlaps, as a share of the device span."),
    Rule("fw_operator_dominates", ">=", 0.50, 0.80, "%",
         "One operator's self device time as a share of all operators' (2 operators or more)."),
    Rule("fw_uneven_steps", ">=", 1.25, 2.0, "x",
         "The slowest step's device time divided by the median step's (3 steps or more)."),
    Rule("fw_memory_capacity", ">=", 0.85, 0.95, "%",
         "Peak reserved (else allocated) device memory divided by the capacity the trace states."),
    Rule("fw_straggler", ">=", 1.10, 1.25, "x",
         "A device's compute time divided by the median over the devices (2 devices or more)."),
    Rule("far_under_roof", "<=", 0.50, 0.20, "%",
         "Efficiency (achieved / roof at its intensity) of a kernel bound by DDR, L2M or latency, "
         "for kernels with at least min_share of all kernels' roofline time (analysis/roofline.py).",
         min_share=0.05),
    Rule("lmem_pressure", ">=", 0.90, 0.98, "%",
         "A core's peak local-memory occupancy (live bytes per lane) over the 256 KiB lane "
         "(analysis/lmem.py)."),
)}
