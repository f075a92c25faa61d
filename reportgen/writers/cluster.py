"""The cluster report of a batch run: OUT/index.html, OUT/cluster.xlsx and OUT/cluster.json.

index.html is one self-contained page (inline CSS, no script, no network: it can be mailed):
devices with their status, span and busy per engine and a link to each device's own report;
stragglers with the rule; the device x core x engine utilisation heat map; the spread of every
kernel across devices; the calls of one device side by side. A run is a PMU dump (its engines)
or a framework trace (its ``device`` lane: the union of the device's streams). Dump folders are named by whoever
made them: names are shown as text (escaped by the template) and links are built by
:func:`reportgen.textsafe.relative_href` only.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from reportgen.analysis.cluster import KIND_LANES, Cluster, DeviceRun
from reportgen.textsafe import clean_text, relative_href
from reportgen.writers.atomic import atomic_open, atomic_path
from reportgen.writers.html.page import environment   # the one Jinja environment of the package

INDEX, WORKBOOK, DOCUMENT = "index.html", "cluster.xlsx", "cluster.json"


def _link(out: Path, report: Path, *inside: str) -> str:
    """The href of a file of one dump's report, relative to OUT ("" when there is none, or the
    report is not inside OUT: only relative links are ever emitted)."""
    out, report = Path(out).resolve(), Path(report).resolve()
    if not report.is_relative_to(out) or not report.joinpath(*inside).exists():
        return ""
    return relative_href(*report.relative_to(out).parts, *inside)


def _us(ns) -> str:
    return "n/a" if ns is None or (isinstance(ns, float) and math.isnan(ns)) else f"{ns / 1000:,.1f}"


def _pct(v) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}%"


#: heat map shades: class ``hK`` for utilisation in [K/10, (K+1)/10), ``h10`` = 100 %, ``hn`` unknown
HEAT_LEVELS = 11


def _heat_class(util) -> str:
    """The cell's shade class (a class, not a style per cell: 4,096 devices x 32 cells)."""
    if util is None or (isinstance(util, float) and math.isnan(util)):
        return "hn"
    return f"h{min(max(int(float(util) * 10), 0), HEAT_LEVELS - 1)}"


def heat_styles() -> list[tuple[str, str]]:
    """(class, colour) of every shade: white (idle) to deep blue (busy), grey unknown."""
    return [(f"h{k}", f"hsl(214, 80%, {97 - 6.2 * k:.0f}%)") for k in range(HEAT_LEVELS)] + \
        [("hn", "#e5e7eb")]


def _page_rows(out: Path, cluster: Cluster, runs: list[DeviceRun]) -> dict:
    by_name = {r.name: r for r in runs}
    d, lanes = cluster.devices, cluster.lanes
    longest = float(d["span_ns"].max()) if d["span_ns"].notna().any() else 0.0
    straggling = set(cluster.stragglers["name"])
    devices = []
    for row in d.to_dict("records"):
        r = by_name[row["name"]]
        span = row["span_ns"]
        devices.append({
            "name": clean_text(row["name"]), "status": clean_text(row["status"]), "ok": r.ok,
            "straggler": row["name"] in straggling,
            "cores": "" if pd.isna(row["cores"]) else int(row["cores"]),
            "commands": "" if pd.isna(row["commands"]) else f"{int(row['commands']):,}",
            "span_us": _us(span),
            "span_bar": 0 if not longest or pd.isna(span) else round(160 * span / longest),
            "busy": [(_us(row[f"{e.lower()}_busy_ns"]), _pct(row[f"{e.lower()}_util"])) for e in lanes],
            "html": _link(out, Path(r.output), "PerfWeb", "result.html") if r.ok else "",
            "xlsx": _link(out, Path(r.output), "PerfDoc", "PerfAI_output.xlsx") if r.ok else "",
        })
    heat = cluster.heat
    columns = sorted({(int(c), e) for c, e in zip(heat["core"], heat["engine"])},
                     key=lambda ce: (ce[0], lanes.index(ce[1])))
    cells = {(n, int(c), e): u for n, c, e, u in heat.itertuples(index=False)}
    heat_rows = [{"name": clean_text(n),
                  "cells": [(_heat_class(cells.get((n, c, e))), f"core {c} {e}: {_pct(cells.get((n, c, e)))}")
                            for c, e in columns]}
                 for n in dict.fromkeys(heat["name"])]
    # a core's number heads its first column
    heat_columns = [(c, e, c if i == 0 or columns[i - 1][0] != c else "") for i, (c, e) in enumerate(columns)]
    return {"devices": devices, "heat_columns": heat_columns, "heat_rows": heat_rows}


def _frame_rows(frame: pd.DataFrame, formats: dict) -> list[list[str]]:
    return [[clean_text(str(formats.get(c, str)(v))) if not pd.isna(v) else "n/a"
             for c, v in row.items()] for row in frame.to_dict("records")]


def write_index(out: Path, cluster: Cluster, runs: list[DeviceRun]) -> Path:
    us = {"span_ns": _us, "median_span_ns": _us, "min_ns": _us, "median_ns": _us, "max_ns": _us,
          **{f"{e.lower()}_busy_ns": _us for e in cluster.lanes}}
    pct = {"excess_pct": "{:+.1f}%".format, "engine_excess_pct": "{:+.1f}%".format,
           "spread_pct": "{:.1f}%".format, "span_vs_first_pct": "{:+.1f}%".format}
    page = environment().get_template("cluster.html.j2").render(
        n=len(runs), failed=cluster.failed, rule=cluster.rule,
        median_us=_us(cluster.median_span_ns), engines=cluster.lanes,
        call_engines=[e for e in cluster.lanes if f"{e.lower()}_busy_ns" in cluster.calls],
        heat_styles=heat_styles(),
        **_page_rows(out, cluster, runs),
        stragglers=_frame_rows(cluster.stragglers, {**us, **pct}),
        kernels=_frame_rows(cluster.kernels, {**us, **pct}),
        calls=_frame_rows(cluster.calls, {**us, **pct}),
        rank_steps_columns=list(cluster.rank_steps.columns),
        rank_steps=_frame_rows(cluster.rank_steps, {c: "{:.3f}".format for c in cluster.rank_steps.columns
                                                    if str(c).endswith("(ms)")}),
        findings=_finding_rows(cluster))
    target = Path(out) / INDEX
    with atomic_open(target, "w", encoding="utf-8") as fh:
        fh.write(page)
    return target


def _finding_rows(cluster: Cluster) -> list[list[str]]:
    """Each run's devices' top findings: run, device, severity, rule, the finding's sentence."""
    f = cluster.findings
    return [[clean_text(str(r["name"])), "" if r["device"] is None else clean_text(str(r["device"])),
             clean_text(str(r["severity"])), clean_text(str(r["rule"])), clean_text(str(r["text"]))]
            for r in f.astype(object).where(f.notna(), None).to_dict("records")]


def _json_rows(frame: pd.DataFrame) -> list[dict]:
    clean = frame.astype(object).where(frame.notna(), None)
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
            for r in clean.to_dict("records")]


def cluster_document(cluster: Cluster) -> dict:
    """cluster.json: devices (busy per lane of the run's kind as an object: engines for a dump,
    ``device`` for a trace), stragglers and their rule, the kernel spread and the per-call
    comparison."""
    devices = []
    for row in _json_rows(cluster.devices):
        busy = {e: row.pop(f"{e.lower()}_busy_ns") for e in cluster.lanes}
        util = {e: row.pop(f"{e.lower()}_util") for e in cluster.lanes}
        row["busy_ns"] = {e: busy[e] for e in KIND_LANES[row["kind"]]}
        row["util"] = {e: util[e] for e in KIND_LANES[row["kind"]]}
        devices.append(row)
    return {"devices": devices, "median_span_ns": cluster.median_span_ns,
            "straggler_rule": cluster.rule, "stragglers": _json_rows(cluster.stragglers),
            "kernels": _json_rows(cluster.kernels), "calls": _json_rows(cluster.calls),
            "heat": _json_rows(cluster.heat), "rank_steps": _json_rows(cluster.rank_steps),
            "findings": _json_rows(cluster.findings)}


def write_workbook(path: Path, cluster: Cluster) -> Path:
    """cluster.xlsx: one sheet per table; text cells stay text (no formula, no link)."""
    import xlsxwriter

    sheets = {"Devices": cluster.devices, "Stragglers": cluster.stragglers,
              "Kernel spread": cluster.kernels, "Calls": cluster.calls, "Heat map": cluster.heat,
              **({"Rank steps": cluster.rank_steps} if len(cluster.rank_steps) else {}),
              "Findings": cluster.findings}
    with atomic_path(path) as tmp:
        wb = xlsxwriter.Workbook(str(tmp), {"strings_to_formulas": False, "strings_to_urls": False,
                                            "strings_to_numbers": False, "nan_inf_to_errors": False})
        bold = wb.add_format({"bold": True})
        for name, frame in sheets.items():
            ws = wb.add_worksheet(name)
            for j, col in enumerate(frame.columns):
                ws.write_string(0, j, str(col), bold)
                ws.set_column(j, j, max(10, min(48, len(str(col)) + 2)))
            for i, row in enumerate(frame.itertuples(index=False), start=1):
                for j, v in enumerate(row):
                    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
                        continue                   # empty = unknown, never zero
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        ws.write_number(i, j, v)
                    else:
                        ws.write_string(i, j, clean_text(str(v)))
            ws.freeze_panes(1, 0)
        ws = wb.add_worksheet("Rule")
        ws.write_string(0, 0, f"Straggler: {cluster.rule}")
        wb.close()
    return path


def write_cluster(out: Path, cluster: Cluster, runs: list[DeviceRun]) -> list[Path]:
    """Every file of the cluster report (index.html first)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    index = write_index(out, cluster, runs)
    doc = out / DOCUMENT
    with atomic_open(doc, "w", encoding="utf-8") as fh:
        json.dump(cluster_document(cluster), fh, indent=1)
    return [index, write_workbook(out / WORKBOOK, cluster), doc]
