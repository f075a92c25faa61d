"""The diagnosis in summary.txt (findings, top Function Types, overlap, kernels) and its
summary.json keys (``findings``, ``breakdown``, ``functions``, ``kernels``, ``overlap``,
``stretches``): the tables of ``Profile.diagnosis`` as computed, nothing recomputed here."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd

from reportgen.model import Diagnosis
from reportgen.writers.fixed_width import TEXT_FORMATS, fixed_width, fmt
from reportgen.writers.hardware_text import hardware_document, roofline_text

MAX_WIDTH = 120          # summary.txt lines of this section fit a terminal
MAX_FINDINGS = 20
TOP_ROWS = 10
NAME_WIDTH = 40

#: (column, header, kind) of each text table (kinds: fixed_width.TEXT_FORMATS)
FUNCTION_TYPE_COLUMNS = [
    ("engine", "Engine", "id"), ("func_type", "Function Type", "id"), ("category", "Category", "id"),
    ("count", "cmds", "count"), ("busy_ns", "busy", "ns"), ("share_busy", "of busy", "fraction"),
    ("mean_ns", "mean", "ns"), ("p95_ns", "p95", "ns"),
    ("uarch_rate", "uArch rate", "fraction"), ("ddr_bw", "DDR BW", "gbps")]
OVERLAP_COLUMNS = [
    ("core", "Core", "id"), ("both_ns", "both", "ns"), ("tiu_only_ns", "TIU only", "ns"),
    ("dma_only_ns", "DMA only", "ns"), ("idle_ns", "idle", "ns"), ("waiting_ns", "waiting", "ns"),
    ("bound", "bound", "id"), ("concurrency", "Concurrency", "fraction"),
    ("alg_cycle_ratio", "Alg/Asic cyc", "fraction")]
KERNEL_COLUMNS = [
    ("source", "Source", "id"), ("name", "Kernel", "id"), ("calls", "calls", "count"),
    ("total_ns", "total", "ns"), ("mean_ns", "mean", "ns"), ("share_wall", "of wall", "fraction"),
    ("share_kernels", "of kernels", "fraction")]


def _cell(value, kind: str) -> str:
    if isinstance(value, str):
        return value if len(value) <= NAME_WIDTH else value[:NAME_WIDTH - 3] + "..."
    return fmt(value, kind)


def _table(title: str, frame: pd.DataFrame, columns) -> str:
    headers = [f"{h}({TEXT_FORMATS[k][0]})" if TEXT_FORMATS[k][0] else h for _, h, k in columns]
    rows = [[_cell(r[c], k) for c, _, k in columns] for r in frame.to_dict("records")]
    return fixed_width(title, headers, rows)


def findings_lines(findings: pd.DataFrame) -> list[str]:
    if findings.empty:
        return ["Findings: none (rules and thresholds: docs/metrics.md \"Findings\")"]
    gains = "gain_ns" in findings
    order = "largest estimated gain first" if gains else "most severe first"
    out = [f"Findings ({len(findings)}, {order}; rules and thresholds: docs/metrics.md "
           "\"Findings\")"]
    for r in findings.head(MAX_FINDINGS).itertuples(index=False):
        gain = (f" (est. gain {r.gain_ns / 1000.0:.3f} us = {100 * r.gain_share:.1f} %: {r.gain_scenario})"
                if gains and r.gain_ns == r.gain_ns else "")
        out += textwrap.wrap(f"{r.rank:>3}. [{r.severity}] {r.rule}: {r.text}{gain}", MAX_WIDTH,
                             subsequent_indent=" " * 6)
    if len(findings) > MAX_FINDINGS:
        out.append(f"  ... and {len(findings) - MAX_FINDINGS} more (summary.json lists all)")
    return out


def diagnosis_text(d: Diagnosis) -> str:
    """The summary.txt section below the engine summary."""
    overall = d.breakdown[d.breakdown["core"] == "Overall"]
    top = overall.sort_values("busy_ns", ascending=False, kind="stable").head(TOP_ROWS)
    parts = ["\n".join(findings_lines(d.findings)),
             _table(f"Top Function Types (all cores, by busy time; {len(overall)} in all)", top,
                    FUNCTION_TYPE_COLUMNS),
             _table("Overlap per core (TIU vs GDMA+SDMA work)", d.overlap, OVERLAP_COLUMNS)]
    if not d.kernels.empty:
        parts.append(_table(f"Top kernels (by total time; {len(d.kernels)} in all)",
                            d.kernels.head(TOP_ROWS), KERNEL_COLUMNS))
    parts += [t for t in (roofline_text(d),) if t]
    return "\n\n".join(parts)


def _jsonable(v):
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if math.isnan(v) else float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{k: _jsonable(v) for k, v in r.items()} for r in frame.to_dict("records")]


def diagnosis_document(d: Diagnosis) -> dict:
    """summary.json's diagnosis keys, every value unformatted (ns, 0..1 shares, GB/s)."""
    return {"findings": _records(d.findings), "breakdown": _records(d.breakdown),
            "functions": _records(d.functions), "kernels": _records(d.kernels),
            "overlap": _records(d.overlap), "stretches": _records(d.stretches),
            **hardware_document(d)}
