"""Plotly figure dicts for the overview and cross-core tabs.

PMU profiles: engine utilisation, time per Function Type, busy/idle per engine and DMA
bandwidth over time, from ``engine_summary`` and ``analysis.timeline``. Framework traces: top
operators, kernel share, ranks and memory over time, from ``profile.tables`` (values as stored,
only formatted). Nothing is recomputed here.
"""
from __future__ import annotations

import base64
import html as html_lib
from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis import timeline
from reportgen.analysis.chip import ChipPeaks, peaks_for
from reportgen.model import Profile
from reportgen.writers.html.jsonsafe import clean
from reportgen.writers.html.palette import PALETTE, SYSTEM_COLOR, UNKNOWN_COLOR, engine_color
from reportgen.writers.html.units import fmt_duration, time_unit
from reportgen.writers.html.summary import engines_with_commands

def _typed(values: np.ndarray, dtype: str = "f4") -> dict[str, str]:
    """A plotly.js typed array ({dtype, bdata}): compact, no float-to-text round trip."""
    arr = np.ascontiguousarray(np.asarray(values, dtype="<" + dtype))
    return {"dtype": dtype, "bdata": base64.b64encode(arr.tobytes()).decode("ascii")}


def _esc(text: Any) -> str:
    """Input text shown by Plotly (which reads a few HTML tags): escape it, Plotly decodes entities."""
    return html_lib.escape(str(text), quote=False)


#: legends sit above the plot (never over it, whatever the width): plotly grows the top margin
LEGEND_ON_TOP = {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"}
_BASE_LAYOUT = {"margin": {"l": 60, "r": 20, "t": 10, "b": 50}, "height": 340,
                "legend": LEGEND_ON_TOP, "plot_bgcolor": "#fafbfc", "font": {"size": 12}}

NO_ENGINES = {"empty": "No TIU, GDMA, SDMA or CDMA commands in this profile."}


def engine_charts(profile: Profile, summary: pd.DataFrame, types: list[dict[str, Any]]) -> dict[str, Any]:
    """The PMU charts: utilisation and Function Type time (overview), busy/idle and bandwidth
    (all cores). ``types`` are the payload's type entries, for the Function Type colours."""
    return {
        "util": utilisation_chart(summary),
        "functype": functype_chart(timeline.time_by_func_type(profile), types),
        "busyidle": busy_idle_chart(summary),
        "bandwidth": bandwidth_spec(summary, peaks_for(profile.meta)),
    }


def utilisation_chart(summary: pd.DataFrame) -> dict[str, Any]:
    if not engines_with_commands(summary):
        return NO_ENGINES
    per_core = summary[summary["core"].astype(str) != "Overall"]
    x = [f"core {k}" for k in per_core["core"]]
    data = [{"type": "bar", "name": label, "x": x, "y": _typed(per_core[f"{key}_util"].to_numpy(float) * 100),
             "marker": {"color": engine_color(label)},
             "hovertemplate": f"%{{x}} {label}: %{{y:.2f}}%<extra></extra>"}
            for label, key in engines_with_commands(summary)]
    layout = dict(_BASE_LAYOUT, barmode="group",
                  yaxis={"title": {"text": "busy / span (%)"}, "rangemode": "tozero", "gridcolor": "#e3e7ea"})
    return {"data": data, "layout": layout}


#: the one legend entry of every system (send/wait) Function Type: time spent waiting
WAITING = "waiting (system)"


def functype_chart(by_type: pd.DataFrame, types: list[dict[str, Any]]) -> dict[str, Any]:
    """Stacked summed durations per engine and Function Type. System types (``SYS``, ``sys``,
    ...) are one series, "waiting (system)", hidden until its legend entry is clicked: they are
    waiting, not work."""
    if by_type.empty:
        return {"empty": "No commands in this profile."}
    engines = list(dict.fromkeys(by_type["engine"]))
    color = {t["name"]: t["color"] for t in types if t["group"] == "device"}
    by_type = by_type.assign(series=np.where(by_type["is_sys"].to_numpy(bool), WAITING,
                                             by_type["func_type"].astype(str)))
    grouped = by_type.groupby(["series", "engine"], sort=False, observed=True)[["total_ns", "cmds"]].sum()
    unit, scale = time_unit(by_type.groupby("engine", observed=True)["total_ns"].sum())
    data = []
    for series in dict.fromkeys(by_type["series"]):
        rows = grouped.loc[series]
        total = rows["total_ns"].reindex(engines).fillna(0).to_numpy(float) / scale
        cmds = rows["cmds"].reindex(engines).fillna(0).to_numpy(float)
        name = _esc(series)
        waiting = series == WAITING
        data.append({"type": "bar", "orientation": "h", "name": name, "y": [_esc(e) for e in engines],
                     "x": _typed(total, "f8"), "customdata": _typed(cmds, "f8"),
                     "marker": {"color": SYSTEM_COLOR if waiting else color.get(series, UNKNOWN_COLOR)},
                     **({"visible": "legendonly"} if waiting else {}),
                     "hovertemplate": f"%{{y}} {name}: %{{x:,.3f}} {unit} in %{{customdata:,}} commands<extra></extra>"})
    layout = dict(_BASE_LAYOUT, barmode="stack",
                  height=max(260, 120 + 40 * len(engines)),
                  xaxis={"title": {"text": f"summed duration ({unit})"}, "gridcolor": "#e3e7ea"},
                  yaxis={"autorange": "reversed"}, legend=dict(LEGEND_ON_TOP))
    layout["margin"] = dict(_BASE_LAYOUT["margin"], l=70)
    return {"data": data, "layout": layout}


def busy_idle_chart(summary: pd.DataFrame) -> dict[str, Any]:
    """Busy (solid) and idle (white, hatched) time per engine and core. An engine without
    commands on a core has no bars there (a core that submitted no CDMA command has no CDMA
    "idle" time to show)."""
    if not engines_with_commands(summary):
        return NO_ENGINES
    per_core = summary[summary["core"].astype(str) != "Overall"]
    x = [f"core {k}" for k in per_core["core"]]
    unit, scale = time_unit(per_core["span_ns"])
    data = []
    for label, key in engines_with_commands(summary):
        present = per_core[f"{key}_cmds"].fillna(0).to_numpy(float) > 0
        busy = np.where(present, per_core[f"{key}_busy_ns"].to_numpy(float) / scale, np.nan)
        idle = np.where(present, per_core[f"{key}_idle_ns"].to_numpy(float) / scale, np.nan)
        colour = engine_color(label)
        data.append({"type": "bar", "name": f"{label} busy", "x": x, "y": _typed(busy, "f8"),
                     "offsetgroup": label, "legendgroup": label, "marker": {"color": colour},
                     "hovertemplate": f"%{{x}} {label} busy %{{y:,.3f}} {unit}<extra></extra>"})
        data.append({"type": "bar", "name": f"{label} idle", "x": x, "y": _typed(idle, "f8"),
                     "base": _typed(busy, "f8"), "offsetgroup": label, "legendgroup": label,
                     "marker": {"color": "#ffffff", "line": {"color": colour, "width": 1},
                                "pattern": {"shape": "/", "fgcolor": colour, "size": 6, "solidity": 0.2}},
                     "hovertemplate": f"%{{x}} {label} idle %{{y:,.3f}} {unit}<extra></extra>"})
    layout = dict(_BASE_LAYOUT, barmode="group", legend=dict(LEGEND_ON_TOP),
                  yaxis={"title": {"text": f"{unit} (busy + idle = span)"}, "gridcolor": "#e3e7ea"})
    return {"data": data, "layout": layout}


def bandwidth_spec(summary: pd.DataFrame, peaks: ChipPeaks | None) -> dict[str, Any]:
    """What the page needs to draw "DMA bandwidth over time" itself (``BandwidthChart`` in
    report.js bins the commands of the visible window, so zooming in shows the bursts): the DMA
    engines that moved DDR or L2M bytes and the chip's peaks (analysis/chip.py)."""
    overall = summary[summary["core"].astype(str) == "Overall"]

    def moved(key: str) -> float:
        return float(sum(overall[f"{key}_{k}_bytes"].fillna(0).sum() for k in ("ddr", "l2m")
                         if f"{key}_{k}_bytes" in overall))

    engines = [label for label, key in engines_with_commands(summary) if key != "tiu" and moved(key) > 0]
    if not engines:
        return {"empty": "No DMA traffic with a known size and direction in this profile."}
    spec: dict[str, Any] = {"dynamic": "bandwidth", "engines": engines, "peaks": {}}
    if peaks is not None:
        spec["peaks"] = {"DDR": {"gbps": peaks.ddr_gbps_per_core, "label": "DDR peak per core"},
                         "L2M": {"gbps": peaks.l2_gbps, "label": "L2M peak"}}
        # a peak the vendor gives as 0 (BM1688, CV84X6: no L2 SRAM figure) is unknown, not drawn
        spec["peaks"] = {k: v for k, v in spec["peaks"].items() if v["gbps"]}
    return spec


# --------------------------------------------------------------------------------------------
# Framework charts: drawn from the analysis tables (profile.tables)
# --------------------------------------------------------------------------------------------

TOP_OPERATORS = 20
TOP_KERNELS = 15
LABEL_CHARS = 60          # chart axis labels are shortened to about this (hover shows the whole name)


def short_labels(names: list[Any], limit: int = LABEL_CHARS) -> list[str]:
    """Names shortened to about ``limit`` characters that stay distinct: the start and the end
    are kept around a "…" (templated names differ at the end: ``...<float, 512, true>``), and
    names that would still read the same keep more characters until they differ."""
    full = [str(n) for n in names]

    def cut(text: str, keep: int) -> str:
        if len(text) <= keep:
            return text
        tail = keep // 3
        return text[:keep - tail - 1] + "…" + text[len(text) - tail:]

    keep = [limit] * len(full)
    while True:
        out = [cut(t, k) for t, k in zip(full, keep)]
        seen: dict[str, list[int]] = {}
        for i, label in enumerate(out):
            seen.setdefault(label, []).append(i)
        clash = [i for group in seen.values() if len(group) > 1 for i in group
                 if len(out[i]) < len(full[i])]
        if not clash:
            return [_esc(t) for t in out]
        for i in clash:
            keep[i] += 12


def _numeric(df: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(df[col], errors="coerce").to_numpy(np.float64)


def _hbar_layout(n: int, x_title: str) -> dict[str, Any]:
    layout = dict(_BASE_LAYOUT, height=max(260, 70 + 22 * n), showlegend=False,
                  xaxis={"title": {"text": x_title}, "gridcolor": "#e3e7ea", "rangemode": "tozero"},
                  yaxis={"autorange": "reversed", "tickvals": list(range(n)), "automargin": True,
                         "tickfont": {"size": 11}})
    layout["margin"] = dict(_BASE_LAYOUT["margin"], l=10)
    return layout


def operators_chart(tables: dict[str, pd.DataFrame]) -> dict[str, Any] | None:
    """The 20 operators with the largest self device time (self CPU time when no operator ran
    on the device), as the "Operators" table has them."""
    ops = tables.get("Operators")
    if ops is not None and "Device Type" in ops:     # torch's tables: its CPU events are the operators
        ops = ops[ops["Device Type"] == "CPU"]
    if ops is None or ops.empty or "Name" not in ops:
        return None
    metric = next((c for c in ("Self Device (us)", "Self CPU (us)")
                   if c in ops and np.nansum(_numeric(ops, c)) > 0), None)
    if metric is None:
        return {"empty": "No operator has a self device or self CPU time."}
    values = _numeric(ops, metric)
    top = ops.iloc[np.argsort(-np.nan_to_num(values, nan=-np.inf), kind="stable")[:TOP_OPERATORS]]
    share = metric.replace(" (us)", " %")                  # "Self Device %" / "Self CPU %"
    shares = _numeric(top, share) if share in top else np.full(len(top), np.nan)
    calls = top["# of Calls"].tolist() if "# of Calls" in top else [None] * len(top)
    custom = [[_esc(n), clean(float(s)), None if c is None else int(c)]
              for n, s, c in zip(top["Name"], shares, calls)]
    what = "self device" if metric.startswith("Self Device") else "self CPU"
    unit, scale = time_unit(_numeric(top, metric) * 1e3)          # the table stores µs
    trace = {"type": "bar", "orientation": "h", "y": list(range(len(top))),
             "x": _typed(_numeric(top, metric) * 1e3 / scale, "f8"), "customdata": custom,
             "marker": {"color": "#4E79A7" if what == "self device" else "#59A14F"},
             "hovertemplate": f"%{{customdata[0]}}<br>{what} %{{x:,.3f}} {unit}"
                              + (" (%{customdata[1]:.2f}%)" if share in top else "")
                              + (" in %{customdata[2]:,} calls" if "# of Calls" in top else "") + "<extra></extra>"}
    layout = _hbar_layout(len(top), f"{what} time ({unit})")
    layout["yaxis"]["ticktext"] = short_labels(top["Name"].tolist())
    return {"data": [trace], "layout": layout, "metric": metric}


def kernels_chart(tables: dict[str, pd.DataFrame]) -> dict[str, Any] | None:
    """Share of all device time of the 15 kernels with the largest share ("Kernels" table)."""
    k = tables.get("Kernels")
    if k is None or k.empty or "Share %" not in k or "Name" not in k:
        return None
    share = _numeric(k, "Share %")
    top = k.iloc[np.argsort(-np.nan_to_num(share, nan=-np.inf), kind="stable")[:TOP_KERNELS]]
    extra = [c for c in ("Grid", "Block", "Accelerator Core", "Block Dim") if c in top]

    def detail(row) -> str:
        return " · ".join(f"{c} {_esc(row[c])}" for c in extra if pd.notna(row[c]))

    custom = [[_esc(row["Name"]), fmt_duration(float(row["Total (us)"]) * 1e3) if "Total (us)" in top else None,
               int(row["Calls"]) if "Calls" in top else None, detail(row)] for _, row in top.iterrows()]
    trace = {"type": "bar", "orientation": "h", "y": list(range(len(top))),
             "x": _typed(_numeric(top, "Share %"), "f8"), "customdata": custom,
             "marker": {"color": "#F28E2B"},
             "hovertemplate": "%{customdata[0]}<br>%{x:.2f}% of device time · %{customdata[1]}"
                              " in %{customdata[2]:,} calls<br>%{customdata[3]}<extra></extra>"}
    layout = _hbar_layout(len(top), "share of all device time (%)")
    layout["yaxis"]["ticktext"] = short_labels(top["Name"].tolist())
    return {"data": [trace], "layout": layout}


def ranks_chart(tables: dict[str, pd.DataFrame]) -> dict[str, Any] | None:
    """Grouped bars per rank: the "Ranks" table's times (µs, upper plot) and percentages (lower)."""
    r = tables.get("Ranks")
    if r is None or r.empty:
        return None
    key = "Rank" if "Rank" in r else r.columns[0]
    x = [f"rank {v}" for v in r[key]]
    times = [c for c in r.columns if str(c).endswith("(us)")]
    pcts = [c for c in r.columns if str(c).endswith("%")]
    data = []
    # one time unit for every time column (the table stores µs), named on the axis and in the legend
    tunit, tscale = time_unit(np.concatenate([_numeric(r, c) * 1e3 for c in times]) if times else [])
    for axis, cols, unit in (("y", times, tunit), ("y2", pcts, "%")):
        for i, col in enumerate(cols):
            fmt = ",.3f" if unit != "%" else ".2f"
            values = _numeric(r, col) * 1e3 / tscale if unit != "%" else _numeric(r, col)
            name = _esc(f"{str(col)[:-len('(us)')].strip()} ({tunit})" if unit != "%" else col)
            data.append({"type": "bar", "name": name, "x": x, "y": _typed(values, "f8"),
                         "yaxis": axis, "xaxis": "x" if axis == "y" else "x2",
                         "marker": {"color": PALETTE[(i + (0 if unit != "%" else len(times))) % len(PALETTE)]},
                         "hovertemplate": f"%{{x}} {name}: %{{y:{fmt}}}<extra></extra>"})
    if not data:
        return {"empty": "The Ranks table has no time or percentage columns."}
    layout = dict(_BASE_LAYOUT, barmode="group", height=520 if times and pcts else 340,
                  legend=dict(LEGEND_ON_TOP))
    if times and pcts:
        layout["yaxis"] = {"title": {"text": tunit}, "domain": [0.45, 1], "gridcolor": "#e3e7ea"}
        layout["yaxis2"] = {"title": {"text": "%"}, "domain": [0, 0.33], "gridcolor": "#e3e7ea"}
        layout["xaxis"] = {"anchor": "y"}
        layout["xaxis2"] = {"anchor": "y2", "matches": "x"}
    else:
        for t in data:
            t["yaxis"], t["xaxis"] = "y", "x"
        layout["yaxis"] = {"title": {"text": tunit if times else "%"}, "gridcolor": "#e3e7ea"}
    return {"data": data, "layout": layout}


def memory_chart(tables: dict[str, pd.DataFrame], t0_ns: int) -> dict[str, Any] | None:
    """Allocated (solid) and reserved (dotted) memory over time per device, from "Memory
    Timeline", with each device's peak from "Memory Peak" marked when it has a time."""
    mt = tables.get("Memory Timeline")
    if mt is None or mt.empty or "Time (ns)" not in mt:
        return None
    allocated = next((c for c in mt.columns if str(c).startswith("Total Allocated")), None)
    reserved = next((c for c in mt.columns if str(c).startswith("Total Reserved")), None)
    if allocated is None:
        return None
    unit = str(allocated)[len("Total Allocated"):].strip(" ()") or "bytes"
    keys = [c for c in ("Rank", "Device", "Component") if c in mt]
    groups = mt.groupby(keys, sort=False, dropna=False) if keys else [((), mt)]
    data = []
    tunit, tscale = time_unit(mt["Time (ns)"].to_numpy(np.int64) - t0_ns)
    for n, (key, g) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        name = _esc(" ".join(f"{k.lower()} {v}" for k, v in zip(keys, key)) or "memory")
        x = (g["Time (ns)"].to_numpy(np.int64) - t0_ns) / tscale
        colour = PALETTE[n % len(PALETTE)]
        for col, dash in ((allocated, "solid"), (reserved, "dot")):
            if col is None:
                continue
            label = "allocated" if col == allocated else "reserved"
            # a short series (Ascend records a few samples per component) shows its samples too
            mode = "lines+markers" if len(g) < 50 else "lines"
            data.append({"type": "scatter", "mode": mode, "name": f"{name} {label}", "legendgroup": name,
                         "x": _typed(x, "f8"), "y": _typed(_numeric(g, col), "f8"),
                         "line": {"color": colour, "dash": dash, "width": 1.4, "shape": "hv"},
                         "hovertemplate": f"{name} {label}: %{{y:,.0f}} {unit} at %{{x:,.3f}} {tunit}<extra></extra>"
                         if unit == "bytes" else
                         f"{name} {label}: %{{y:,.3f}} {unit} at %{{x:,.3f}} {tunit}<extra></extra>"})
    peak = tables.get("Memory Peak")
    pcol = f"Peak Allocated ({unit})"
    if peak is not None and not peak.empty and "Peak Time (ns)" in peak and pcol in peak:
        at = peak["Operator at Peak"].astype("object").fillna("?").map(_esc).tolist() \
            if "Operator at Peak" in peak else [""] * len(peak)
        data.append({"type": "scatter", "mode": "markers", "name": "peak",
                     "x": _typed((peak["Peak Time (ns)"].to_numpy(np.int64) - t0_ns) / tscale, "f8"),
                     "y": _typed(_numeric(peak, pcol), "f8"), "customdata": at,
                     "marker": {"symbol": "triangle-down", "size": 11, "color": "#C62828"},
                     "hovertemplate": f"peak %{{y:,.0f}} {unit} at %{{x:,.3f}} {tunit}<br>%{{customdata}}<extra></extra>"})
    layout = dict(_BASE_LAYOUT, height=360, hovermode="closest",
                  xaxis={"title": {"text": f"time since first event ({tunit})"}, "gridcolor": "#e3e7ea"},
                  yaxis={"title": {"text": unit}, "rangemode": "tozero", "gridcolor": "#e3e7ea",
                         "tickformat": "~s" if unit == "bytes" else ",.0f"})
    return {"data": data, "layout": layout}


#: Framework overview charts: id -> card title (drawn when their table exists).
FRAMEWORK_CHARTS = {
    "operators": "Top operators",
    "kernels": "Kernel share of device time",
    "ranks": "Ranks compared",
    "memory": "Memory over time",
}


def framework_charts(profile: Profile, t0_ns: int) -> dict[str, dict[str, Any]]:
    t = profile.tables
    figs = {"operators": operators_chart(t), "kernels": kernels_chart(t), "ranks": ranks_chart(t),
            "memory": memory_chart(t, t0_ns)}
    return {k: v for k, v in figs.items() if v is not None}


def chart_notes(charts: dict[str, Any]) -> dict[str, str]:
    """One line under each framework chart saying which table and column it shows."""
    notes = {"kernels": "From the Kernels table: Share % of the 15 kernels (name + launch geometry) "
                        "with the largest share.",
             "ranks": "From the Ranks table: the time columns above, the percentages below.",
             "memory": "From the Memory Timeline table (solid: allocated, dotted: reserved)" +
                       ("; triangles: Memory Peak." if any(t.get("name") == "peak"
                                                          for t in charts.get("memory", {}).get("data", []))
                        else ".")}
    ops = charts.get("operators")
    if ops and "metric" in ops:
        notes["operators"] = (f"From the Operators table: the {TOP_OPERATORS} largest {ops['metric']}"
                              + ("" if ops["metric"].startswith("Self Device") else
                                 " (no operator launched device work)") + ".")
    return notes
