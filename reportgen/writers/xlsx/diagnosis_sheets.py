"""The diagnosis sheets after the Engine Summary: Findings, Function Types, Function Names,
Kernels and Kernel Calls, each a filterable table of typed cells (``Profile.diagnosis`` as
computed; definitions in docs/metrics.md "Diagnosis", shown as header notes)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.model import Diagnosis
from reportgen.writers.xlsx.columns import Column, column_from_series
from reportgen.writers.xlsx.why_sheets import FINDING_GAINS, why_sheets
from reportgen.writers.xlsx.hardware_sheets import hardware_sheets
from reportgen.writers.xlsx.workbook import Book

TAB_COLOR = "#7030A0"
NS, PCT, INT, GBPS = "#,##0", "0.0%", "#,##0", "0.00"

#: (header, column, number format, note) of each sheet; ``core`` holds numbers and "Overall"
FINDINGS = [
    ("Rank", "rank", "0", "Largest estimated gain first (equal gains: most severe first, then "
     "furthest past the threshold)."),
    ("Rule", "rule", None, "The rule that fired (docs/metrics.md \"Findings\")."),
    ("Severity", "severity", None, "high: past the rule's severe bound; medium: past its threshold."),
    ("Core", "core", "0", ""), ("Engine", "engine", None, ""),
    ("Subject", "subject", None, "Function Type, kernel or stretch (start-end ns) concerned."),
    ("Value", "value", "0.000", "Unit %: a fraction (0.867 = 86.7 %); unit x: a ratio."),
    ("Threshold", "threshold", "0.000", "Where the rule starts to fire, in the same unit."),
    ("Unit", "unit", None, ""), ("Finding", "text", None, ""),
]
BREAKDOWN = [
    ("Core", "core", "0", "Overall = all cores (CDMA: all ports)."),
    ("Engine", "engine", None, ""), ("Function Type", "func_type", None, ""),
    ("Function Name", "func_name", None, ""),
    ("Category", "category", None, "waiting = system commands (send/wait/sync), not work."),
    ("Commands", "count", INT, ""),
    ("Busy (ns)", "busy_ns", NS, "Union of the group's command intervals (Overall: per-core unions added)."),
    ("Summed (ns)", "sum_ns", NS, "Summed command durations."),
    ("Share of engine busy", "share_busy", PCT, "Busy / the engine's busy time (work rows only)."),
    ("Share of span", "share_span", PCT, "Busy / span (Overall: span x cores)."),
    ("Min (ns)", "min_ns", NS, ""), ("Mean (ns)", "mean_ns", "#,##0.0", ""),
    ("P50 (ns)", "p50_ns", "#,##0.0", "Median duration."),
    ("P95 (ns)", "p95_ns", "#,##0.0", "95th percentile duration (linear interpolation)."),
    ("Max (ns)", "max_ns", NS, ""),
    ("Asic Cycles", "cycles", INT, "Summed Asic Cycle."),
    ("Alg Cycles", "alg_cycles", INT, "Summed Alg Cycle of the modelled commands."),
    ("Alg Ops", "alg_ops", INT, "Summed over the modelled commands."),
    ("uArch Ops", "uarch_ops", INT, ""),
    ("uArch Rate", "uarch_rate", PCT, "Alg Ops / uArch Ops."),
    ("Alg Ops per Cycle", "alg_ops_per_cycle", "#,##0.0", "Alg Ops / Asic Cycles of the modelled commands."),
    ("Bytes", "bytes", INT, ""), ("DDR Bytes", "ddr_bytes", INT, ""), ("L2M Bytes", "l2m_bytes", INT, ""),
    ("DDR BW (GB/s)", "ddr_bw", GBPS, "DDR bytes / summed duration of the commands moving them."),
    ("L2M BW (GB/s)", "l2m_bw", GBPS, ""),
]
KERNELS = [
    ("Source", "source", None, "device: PMU kernel functions; host: tpudnn events of --trace_file."),
    ("Kernel", "name", None, ""), ("Calls", "calls", INT, ""),
    ("Total (ns)", "total_ns", NS, "Summed wall time of the calls."),
    ("Mean (ns)", "mean_ns", "#,##0.0", ""), ("Min (ns)", "min_ns", NS, ""), ("Max (ns)", "max_ns", NS, ""),
    ("Share of wall", "share_wall", PCT, "Total / (span x cores) for device kernels, / span for host."),
    ("Share of kernels", "share_kernels", PCT, "Total / all kernels' total (same source)."),
]
KERNEL_CALLS = [
    ("Source", "source", None, ""), ("Kernel", "name", None, ""), ("Core", "core", "0", ""),
    ("Scope", "scope", "0", "Kernel-function scope id."),
    ("Start (ns)", "start_ns", NS, ""), ("End (ns)", "end_ns", NS, ""), ("Wall (ns)", "wall_ns", NS, ""),
    ("Commands", "commands", INT, ""),
    ("TIU busy (ns)", "tiu_busy_ns", NS, ""), ("GDMA busy (ns)", "gdma_busy_ns", NS, ""),
    ("SDMA busy (ns)", "sdma_busy_ns", NS, ""),
    ("TIU util", "tiu_util", PCT, "TIU busy / wall (host: / (wall x cores))."),
    ("uArch Rate", "uarch_rate", PCT, ""), ("Bytes", "bytes", INT, "GDMA + SDMA work bytes."),
    ("DDR Bytes", "ddr_bytes", INT, ""), ("L2M Bytes", "l2m_bytes", INT, ""),
    ("DDR BW (GB/s)", "ddr_bw", GBPS, "DDR bytes / wall."), ("L2M BW (GB/s)", "l2m_bw", GBPS, ""),
]


def _mixed_core(header: str, values: pd.Series, fmt: str, note: str) -> Column:
    """Core indexes as numbers, "Overall" as text, unknown as empty."""
    cells = [None if v is None or (isinstance(v, float) and np.isnan(v)) else
             (v if isinstance(v, str) else int(v)) for v in values.tolist()]
    return Column(header, "mixed", np.array(cells, dtype=object), num_format=fmt, note=note)


def sheet_columns(frame: pd.DataFrame, spec) -> list[Column]:
    cols = []
    for header, name, fmt, note in spec:
        if name not in frame.columns:
            continue
        s = frame[name]
        if name == "core" and s.dtype == object:
            cols.append(_mixed_core(header, s, fmt, note))
        else:
            cols.append(column_from_series(header, s, fmt, note))
    return cols


def sheets(d: Diagnosis) -> list[tuple[str, pd.DataFrame, list]]:
    """(sheet name, table, spec) in workbook order."""
    return [("Findings", d.findings, FINDINGS + FINDING_GAINS), ("Function Types", d.breakdown, BREAKDOWN),
            ("Function Names", d.functions, BREAKDOWN), ("Kernels", d.kernels, KERNELS),
            ("Kernel Calls", d.kernel_calls, KERNEL_CALLS)] + why_sheets(d.why) + hardware_sheets(d)


def write_diagnosis_sheets(book: Book, d: Diagnosis, quiet: bool) -> list[str]:
    """Write every diagnosis sheet; returns the sheet names written."""
    names = []
    for name, table, spec in sheets(d):
        cols = sheet_columns(table, spec)
        names += book.table_sheets(name, cols, len(table), TAB_COLOR, quiet, 1)
    return names
