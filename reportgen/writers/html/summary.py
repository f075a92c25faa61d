"""The engine summary table of a PMU profile's overview: which columns, their labels, units and
definitions (all in :func:`summary_columns`), and how each value is printed. The numbers are
``engine_summary``'s, only formatted here."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from reportgen.model import ENGINES
from reportgen.writers.html.palette import engine_color

#: (label, engine_summary column prefix) of the PMU engines, in display order.
ENGINE_KEYS = [("TIU", "tiu"), ("GDMA", "gdma"), ("SDMA", "sdma"), ("CDMA", "cdma")]


def engines_with_commands(summary: pd.DataFrame) -> list[tuple[str, str]]:
    """The ENGINE_KEYS that have commands in ``summary`` (framework traces have none of them)."""
    return [(label, key) for label, key in ENGINE_KEYS
            if f"{key}_cmds" in summary and summary[f"{key}_cmds"].fillna(0).sum() > 0]


@dataclass
class SummaryColumn:
    group: str       # engine header above the column ("" for core-wide columns)
    label: str
    column: str      # engine_summary column
    fmt: str         # int | us | pct | gbps | ratio | text
    help: str


def summary_columns(summary: pd.DataFrame) -> list[SummaryColumn]:
    """The columns of ``summary`` the table shows; TIU, GDMA and SDMA always, CDMA when it has
    commands."""
    cols = [SummaryColumn("", "Core", "core", "text", "core id; Overall = all cores"),
            SummaryColumn("", "Span (µs)", "span_ns", "us", "first command start to last command end, whole profile"),
            SummaryColumn("", "Parallelism", "parallelism", "pct",
                          "(TIU + GDMA + SDMA busy) / span; above 100% when engines overlap"),
            SummaryColumn("", "Compute ratio", "compute_ratio", "ratio", "TIU busy / (GDMA + SDMA busy)")]
    engines = ENGINE_KEYS[:3] + [k for k in engines_with_commands(summary) if k[1] == "cdma"]
    for label, key in engines:
        cols += [SummaryColumn(label, "cmds", f"{key}_cmds", "int", "commands shown, system commands included"),
                 SummaryColumn(label, "busy (µs)", f"{key}_busy_ns", "us",
                               "union of the non-system commands' intervals"),
                 SummaryColumn(label, "util", f"{key}_util", "pct", "busy / span")]
        if key == "tiu":
            cols.append(SummaryColumn(label, "uArch rate", "tiu_uarch_rate", "pct",
                                      "sum of algorithmic ops / sum of uArch ops (n/a when not modelled)"))
        else:
            cols += [SummaryColumn(label, "DDR GB/s", f"{key}_ddr_bw_busy", "gbps",
                                   "DDR bytes / summed duration of the DDR commands"),
                     SummaryColumn(label, "L2M GB/s", f"{key}_l2m_bw_busy", "gbps",
                                   "L2M bytes / summed duration of the L2M commands (DDR<->L2M counts as DDR)")]
    return [c for c in cols if c.column in summary.columns]


#: Printed under the table.
SUMMARY_NOTE = ("Busy = union of the non-system commands of an engine; util = busy / span. "
                "Overall: busy summed over cores, util over span x cores, bandwidths over all cores. "
                "Same numbers as summary.txt and the Engine Summary sheet.")


def format_value(value: Any, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "n/a"
    if fmt == "text":
        return str(value)
    if fmt == "int":
        return f"{int(value):,}"
    if fmt == "us":
        return f"{float(value) / 1e3:,.3f}"
    if fmt == "pct":
        return f"{float(value) * 100:.2f}%"
    if fmt == "gbps":
        return f"{float(value):.2f}"
    if fmt == "ratio":
        return f"{float(value):.3f}"
    raise ValueError(fmt)


def summary_table(summary: pd.DataFrame) -> dict[str, Any]:
    """The table as the template draws it: column headers grouped by engine, formatted rows."""
    cols = summary_columns(summary)
    groups: list[list[Any]] = []
    for c in cols:
        if groups and groups[-1][0] == c.group:
            groups[-1][1] += 1
        else:
            groups.append([c.group, 1])
    rows = []
    for rec in summary.to_dict("records"):
        rows.append({"overall": str(rec.get("core")) == "Overall",
                     "cells": [format_value(rec.get(c.column), c.fmt) for c in cols]})
    return {"columns": [{"label": c.label, "help": c.help} for c in cols], "groups": groups,
            "group_colors": {e: engine_color(e) for e in ENGINES}, "rows": rows, "note": SUMMARY_NOTE}
