"""When an engine-summary value is weak: the thresholds that reports highlight cells with.

Defined in docs/metrics.md ("Highlight thresholds"). The TIU rule and the bandwidth rule follow
the vendor's 0.3.0 web page (reference-tool.md §3.3: TIU working ratio under 15 % red, under 30 %
yellow; DMA average bandwidth under 50 % / 75 % of the per-core peak). Peaks come from
:mod:`reportgen.analysis.chip`; without a known chip the bandwidth cells are not rated.
"""
from __future__ import annotations

from dataclasses import dataclass

from .chip import ChipPeaks

#: rating names, weakest first
LOW, FAIR = "low", "fair"


@dataclass(frozen=True)
class Threshold:
    metric: str        # engine-summary column without the engine prefix
    reference: str     # "fraction" (the value itself) or the peak it is compared with
    low_below: float   # share of the reference under which the value is LOW
    fair_below: float  # ... FAIR


THRESHOLDS = [
    Threshold("tiu_util", "fraction", 0.15, 0.30),
    Threshold("ddr_bw_busy", "ddr_peak_per_core", 0.50, 0.75),
    Threshold("l2m_bw_busy", "l2m_peak", 0.50, 0.75),
]


def reference_value(reference: str, peaks: ChipPeaks | None) -> float | None:
    if reference == "fraction":
        return 1.0
    if peaks is None:
        return None
    return {"ddr_peak_per_core": peaks.ddr_gbps_per_core, "l2m_peak": peaks.l2_gbps}[reference]


def threshold_for(column: str) -> Threshold | None:
    """The threshold of an engine-summary column (``gdma_ddr_bw_busy`` matches ``ddr_bw_busy``)."""
    return next((t for t in THRESHOLDS if column == t.metric or column.endswith("_" + t.metric)), None)


def rate(column: str, value: float | None, peaks: ChipPeaks | None) -> str | None:
    """LOW, FAIR or None (fine, unknown, or a column without a threshold)."""
    t = threshold_for(column)
    if t is None or value is None or value != value:      # NaN: unknown is not weak
        return None
    ref = reference_value(t.reference, peaks)
    if not ref:
        return None
    share = float(value) / ref
    return LOW if share < t.low_below else FAIR if share < t.fair_below else None


def describe(peaks: ChipPeaks | None) -> list[str]:
    """One sentence per threshold, for the legend under a rated table."""
    out = []
    for t in THRESHOLDS:
        ref = reference_value(t.reference, peaks)
        if not ref:                  # no peak, or one the vendor gives as 0 (unknown): no rating
            continue
        what = {"tiu_util": "TIU util", "ddr_bw_busy": "DDR bandwidth", "l2m_bw_busy": "L2M bandwidth"}[t.metric]
        if t.reference == "fraction":
            out.append(f"{what} under {t.low_below:.0%} (low) / {t.fair_below:.0%} (fair)")
        else:
            peak = "the per-core DDR peak" if t.reference == "ddr_peak_per_core" else "the L2M peak"
            out.append(f"{what} under {t.low_below:.0%} / {t.fair_below:.0%} of {peak} ({ref:g} GB/s)")
    return out
