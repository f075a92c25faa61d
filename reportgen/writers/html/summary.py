"""The engine summary table of a PMU profile's overview: which columns it shows and how each
value is printed. The numbers are ``engine_summary``'s, their names, units and definitions the
metric catalogue's (analysis/catalogue.py); only the layout is decided here."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from reportgen.analysis import catalogue, thresholds
from reportgen.analysis.chip import ChipPeaks
from reportgen.model import ENGINES
from reportgen.writers.html.palette import engine_color
from reportgen.writers.html.units import fmt_duration, time_unit

#: (label, engine_summary column prefix) of the PMU engines, in display order.
ENGINE_KEYS = [("TIU", "tiu"), ("GDMA", "gdma"), ("SDMA", "sdma"), ("CDMA", "cdma")]


def engines_with_commands(summary: pd.DataFrame) -> list[tuple[str, str]]:
    """The ENGINE_KEYS that have commands in ``summary`` (framework traces have none of them)."""
    return [(label, key) for label, key in ENGINE_KEYS
            if f"{key}_cmds" in summary and summary[f"{key}_cmds"].fillna(0).sum() > 0]


#: engine-summary columns the table shows, per engine group (names, units and definitions come
#: from analysis/catalogue.py). The span is the same on every row: it is said once above the table.
CORE_COLUMNS = ["core", "parallelism", "compute_ratio"]
ENGINE_COLUMNS = {"tiu": ["cmds", "busy_ns", "util", "uarch_rate"],
                  "dma": ["cmds", "busy_ns", "util", "ddr_bw_busy", "l2m_bw_busy"]}
#: the second table under it: idle time, bandwidth in every direction (mode 0 too), DDR read and
#: write (what the vendor's README promises per core and engine; one table would not fit a screen)
MORE_COLUMNS = {"tiu": ["idle_ns"], "dma": ["idle_ns", "bw_busy", "ddr_read_bw_busy", "ddr_write_bw_busy"]}

#: metric kind -> value -> text; a time column ("ns") gets one unit for the whole column
HTML_FORMATS = {
    "id": str,
    "count": lambda v: f"{int(v):,}",
    "fraction": lambda v: f"{float(v) * 100:.1f}%",
    "gbps": lambda v: f"{float(v):.2f}",
    "ratio": lambda v: f"{float(v):.3f}",
}
UNIT_SUFFIX = {"gbps": "GB/s"}


@dataclass
class SummaryColumn:
    group: str       # engine header above the column ("" for core-wide columns)
    label: str
    column: str      # engine_summary column
    kind: str        # metric kind (HTML_FORMATS, or "ns")
    help: str
    scale: float = 1.0   # ns per shown unit (time columns)


def _column(entry: catalogue.SummaryMetric, values: pd.Series) -> SummaryColumn:
    m = entry.metric
    if m.kind == "ns":
        unit, scale = time_unit(pd.to_numeric(values, errors="coerce"))
        return SummaryColumn(entry.group, f"{m.name} ({unit})", entry.column, m.kind, m.definition, scale)
    unit = UNIT_SUFFIX.get(m.kind)
    return SummaryColumn(entry.group, f"{m.name} ({unit})" if unit else m.name, entry.column, m.kind,
                         m.definition)


def summary_columns(summary: pd.DataFrame, per_engine: dict[str, list[str]] = ENGINE_COLUMNS,
                    core: list[str] = CORE_COLUMNS) -> list[SummaryColumn]:
    """The columns of ``summary`` the table shows; TIU, GDMA and SDMA always, CDMA when it has
    commands."""
    names = list(core)
    engines = ENGINE_KEYS[:3] + [k for k in engines_with_commands(summary) if k[1] == "cdma"]
    for _, key in engines:
        names += [f"{key}_{c}" for c in per_engine["tiu" if key == "tiu" else "dma"]]
    return [_column(catalogue.lookup(c), summary[c]) for c in names if c in summary.columns]


#: Printed under the table.
SUMMARY_NOTE = ("Busy = union of the non-system commands of an engine; util = busy / span. "
                "Overall: busy summed over cores (CDMA: over the cores that submitted), util over "
                "span x cores, bandwidths over all cores. Same numbers as summary.txt and the "
                "Engine Summary sheet.")


def format_value(value: Any, col: SummaryColumn) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "n/a"
    if col.kind == "ns":
        return f"{float(value) / col.scale:,.0f}" if col.scale == 1.0 else f"{float(value) / col.scale:,.3f}"
    return HTML_FORMATS[col.kind](value)


def summary_table(summary: pd.DataFrame, peaks: ChipPeaks | None = None,
                  columns: list[SummaryColumn] | None = None) -> dict[str, Any]:
    """The table as the template draws it: column headers grouped by engine, formatted rows with
    each cell's rating against the thresholds of analysis/thresholds.py; ``more``: the second
    table (MORE_COLUMNS) in the same form."""
    cols = columns if columns is not None else summary_columns(summary)
    groups: list[list[Any]] = []
    for c in cols:
        if groups and groups[-1][0] == c.group:
            groups[-1][1] += 1
        else:
            groups.append([c.group, 1])
    rows = []
    for rec in summary.to_dict("records"):
        rows.append({"overall": str(rec.get("core")) == "Overall",
                     "cells": [{"text": format_value(rec.get(c.column), c),
                                "rate": thresholds.rate(c.column, rec.get(c.column), peaks)} for c in cols]})
    span = summary["span_ns"].iloc[0] if "span_ns" in summary and len(summary) else None
    return {"columns": [{"label": c.label, "help": c.help} for c in cols], "groups": groups,
            "group_colors": {e: engine_color(e) for e in ENGINES}, "rows": rows, "note": SUMMARY_NOTE,
            "span": fmt_duration(float(span)) if span is not None and span == span else "n/a",
            "thresholds": thresholds.describe(peaks),
            "more": None if columns is not None else summary_table(
                summary, peaks, summary_columns(summary, MORE_COLUMNS, ["core"]))}
