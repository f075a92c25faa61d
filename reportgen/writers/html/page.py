"""Assembling result.html: the template environment, the inlined assets (report.js,
report.css, the vendored plotly.js), the tabs and views, and :func:`render` that puts the parts together.

Templates and assets load through ``jinja2.PackageLoader`` from the ``reportgen.templates``
package (the top-level ``templates/`` folder, see setup.cfg), so an editable and a regular
install read them the same way.
"""
from __future__ import annotations

import base64
import functools
import importlib.resources
import re
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
import numpy as np
import pandas as pd

from reportgen.heap import release_free_memory
from reportgen.version import __version__
from reportgen.analysis import timeline
from reportgen.analysis.chip import peaks_for
from reportgen.model import Profile
from reportgen.writers.html import charts, device_time_chart, diagnosis, hardware, tables
from reportgen.writers.html import lazy, overlap, template_cache, text7
from reportgen.writers.html import why as why_html
from reportgen.writers.html.jsonsafe import json_for_script
from reportgen.writers.html.layers import layer_lanes
from reportgen.writers.html.palette import engine_color
from reportgen.writers.html.launch_links import launch_column
from reportgen.writers.html.payload import URATE_SCALE, collect_items, encode_items
from reportgen.writers.html.summary import summary_table
from reportgen.writers.html.units import fmt_duration

#: Commands visible at once below which the timeline draws real bars with hover.
BAR_LIMIT = 3000
#: Buckets of the full-span occupancy strip in each timeline's range slider.
OVERVIEW_BUCKETS = 600


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja environment of the package (result.html and the batch index.html); the
    compiled templates are kept between runs (:mod:`.template_cache`)."""
    return jinja2.Environment(loader=jinja2.PackageLoader("reportgen.templates", "."),
                              autoescape=True, trim_blocks=False, keep_trailing_newline=True,
                              bytecode_cache=template_cache.for_package("reportgen.templates"))


def _asset(name: str) -> str:
    text, _, _ = environment().loader.get_source(environment(), name)
    if re.search(r"<script|</script|</style|<!--", text, re.IGNORECASE):
        raise RuntimeError(f"templates/{name} is inlined: it must not contain '<script', '</script', "
                           "'</style' or '<!--'")
    return text


#: plotly.js of the page: the official cartesian partial bundle, vendored gzipped (templates/vendor/README.md)
PLOTLY_BUNDLE = "vendor/plotly-cartesian.min.js.gz"
PLOTLY_VERSION = "4.1.1"


@functools.lru_cache(maxsize=1)
def plotly_bundle() -> bytes:
    """The vendored plotly.js bundle, gzipped as stored (inlined as it is: no compression per run)."""
    return importlib.resources.files("reportgen.templates").joinpath(PLOTLY_BUNDLE).read_bytes()


@functools.lru_cache(maxsize=1)
def _plotly_text7() -> markupsafe.Markup:
    return markupsafe.Markup(text7.encode(plotly_bundle()))


def meta_rows(profile: Profile, span_ns: int) -> list[tuple[str, str]]:
    """The capture facts of the page. Clocks, CDMA ports and the capture mode describe a PMU
    dump only; a framework trace shows its source, devices and counts."""
    m = profile.meta
    c = profile.commands
    chip = m.chip + (f" ({m.chip_alias})" if m.chip_alias else "")
    if m.is_pmu:
        rows = [("Chip", chip or "unknown"), ("Source", m.source), ("Input", m.input_path or "-"),
                ("Cores", str(m.num_cores)),
                ("CDMA ports", ", ".join(str(p) for p in m.cdma_ports) or "none"),
                ("TIU clock", f"{m.tiu_freq_mhz:g} MHz"), ("DMA clock", f"{m.dma_freq_mhz:g} MHz"),
                ("Capture mode", m.mode or "unknown"),
                ("Commands", f"{len(c):,}")]
    else:
        devices = int(c["core"].nunique()) if len(c) else 0
        rows = [("Source", m.source), ("Input", m.input_path or "-"),
                *([("Device", chip)] if chip else []),
                ("Devices", str(devices)), ("Device slices", f"{len(c):,}")]
    rows.append(("Span", fmt_duration(span_ns)))
    if len(profile.host):
        rows[-1] = ("Timeline span", f"{fmt_duration(span_ns)} (commands and host events)")
        rows.append(("Host events", f"{len(profile.host):,}"))
    return rows


#: findings shown on the first screen; the others are one click away
FINDINGS_SHOWN = 5


def findings_list(profile: Profile) -> list[dict[str, str]]:
    """The diagnosis findings, ranked (analysis.findings), as the overview lists them."""
    diagnosis = getattr(profile, "diagnosis", None) or getattr(profile, "framework_diagnosis", None)
    table = getattr(diagnosis, "findings", None)
    if table is None or table.empty:
        return []
    ranked = table.sort_values("rank", kind="stable") if "rank" in table else table
    return [{"severity": str(r.get("severity") or ""), "text": str(r.get("text") or ""),
             "gain": why_html.finding_gain(r)}
            for r in ranked.to_dict("records") if r.get("text")]


def accounting_table(profile: Profile) -> dict[str, Any] | None:
    """Records read / shown / dropped per sheet, when the parser counted them."""
    acc = profile.meta.accounting
    if not acc:
        return None
    columns: list[str] = []
    for counts in acc.values():
        columns += [k for k in counts if k not in columns]
    return {"columns": columns,
            "rows": [(sheet, [f"{counts.get(k, 0):,}" for k in columns]) for sheet, counts in acc.items()]}


def _lane_specs(profile: Profile, lanes: timeline.Lanes, hlanes: timeline.HostLanes) -> list[dict[str, Any]]:
    specs = []
    c = profile.commands
    # Ascend trace views: lanes grouped by level (Ascend Hardware, HCCL; host: PTA, CANN)
    level_of = dict(zip(c["engine"].astype(str), c["level"].astype(str))) if "level" in c.columns else {}
    for name, engine, cores in zip(lanes.names, lanes.engines, lanes.cores):
        group = "cdma" if engine == "CDMA" else f"core{cores[0] if cores else ''}"
        if engine in level_of:
            group += f" {level_of[engine]}"
        specs.append({"name": name, "engine": engine, "color": engine_color(engine), "host": False,
                      "group": group, "cores": cores})
    for k, name in enumerate(hlanes.names):
        level = hlanes.levels[k] if hlanes.levels else ""
        specs.append({"name": name, "engine": "host", "color": engine_color("host"), "host": True,
                      "group": f"host {level}" if level else "host", "cores": []})
    return specs


def _views_and_tabs(profile: Profile, lane_specs: list[dict[str, Any]], overview_charts: list[str]):
    """Tabs: Overview, Tables (when the profile has analysis tables), one per core, all cores.

    A PMU profile keeps its engine charts; other sources call a core a device and leave out the
    PMU-only charts (DMA bandwidth, engine busy/idle).
    """
    pmu = profile.meta.is_pmu
    unit = "Core" if pmu else "Device"
    host = [i for i, s in enumerate(lane_specs) if s["host"]]
    device = [i for i, s in enumerate(lane_specs) if not s["host"]]
    cores = sorted({k for i in device for k in lane_specs[i]["cores"]})
    views, tabs = [], [{"id": "overview", "title": "Overview", "charts": overview_charts, "views": []}]
    if profile.tables:
        tabs.append({"id": "tables", "title": "Tables", "charts": [], "views": [], "tables": True})
    for k in cores:
        mine = [i for i in device if k in lane_specs[i]["cores"]]
        own = [i for i in mine if lane_specs[i]["engine"] != "CDMA"]
        ports = [i for i in mine if lane_specs[i]["engine"] == "CDMA"]
        views.append({"id": f"core-{k}", "lanes": host + own + ports})
        tabs.append({"id": f"core-{k}", "title": f"{unit} {k}", "charts": [], "views": [f"core-{k}"],
                     "heading": f"{unit} {k}: one lane per " + ("engine" if pmu else "stream") +
                                (" (plus the CDMA ports it submitted commands to)" if ports else "")})
    if pmu or len(cores) != 1:       # one device: its tab already shows every lane
        views.append({"id": "all", "lanes": host + device})
        tabs.append({"id": "compare", "title": "All cores" if pmu else "All devices",
                     "charts": ["bandwidth", "busyidle"] if pmu else [], "views": ["all"]})
    return views, tabs


def _timeline(profile: Profile, lanes: timeline.Lanes, hlanes: timeline.HostLanes):
    """The timeline payload of every command and host event (its items are freed on return:
    at 3.3M commands ~80 bytes each): (t0, types, ops, kernels, (payload header, payload,
    span, overview strip, lane specs, layer lanes or None))."""
    n_lanes = len(lanes.names) + len(hlanes.names)
    items, t0, types, ops, kernels = collect_items(profile, lanes, hlanes)
    overlap_part = overlap.overlap_lanes(profile, items, t0, types, ops, n_lanes)   # Ascend trace views
    if overlap_part is not None:
        items, n_lanes = overlap_part.items, n_lanes + len(overlap_part.lanes)
    layer_part = layer_lanes(profile, items, t0, types, ops, n_lanes)   # None without layer files
    if layer_part is not None:
        items, n_lanes = layer_part.items, n_lanes + len(layer_part.lanes)
    # bandwidth predictors: bytes / duration, or bytes / (duration + one DMA clock period)
    dma_period = 1e3 / profile.meta.dma_freq_mhz if profile.meta.dma_freq_mhz else 0.0
    extra = {**(layer_part.columns if layer_part else {}), **launch_column(profile, items)}
    header, blob = encode_items(items, n_lanes, pads_ns=(0.0, dma_period), extra=extra or None)
    span = int(items.end.max()) if len(items.end) else 0
    overview = timeline.occupancy(items.start, items.end, items.lane, n_lanes, 0.0, float(max(span, 1)),
                                  OVERVIEW_BUCKETS)
    overview_u1 = np.round(overview * 255).astype(np.uint8)
    lane_specs = (_lane_specs(profile, lanes, hlanes) + (overlap_part.lanes if overlap_part else [])
                  + (layer_part.lanes if layer_part else []))
    return t0, types, ops, kernels, (header, blob, span, overview_u1, lane_specs, layer_part)


def render(profile: Profile, summary: pd.DataFrame, progress=None) -> str:
    """The complete result.html text. ``progress(stage)`` is called as each stage starts.

    PMU profiles get the engine overview (summary table and engine charts). Other sources have
    streams instead of TIU/GDMA/SDMA: their overview shows the Device lanes table and the charts
    drawn from their analysis tables.
    """
    step = progress or (lambda stage: None)
    step("encode commands")
    lanes = timeline.device_lanes(profile)
    hlanes = timeline.host_lanes(profile)
    t0, types, ops, kernels, timeline_parts = _timeline(profile, lanes, hlanes)
    header, blob, span, overview_u1, lane_specs, layer_part = timeline_parts
    release_free_memory()           # the items' freed pages: back to the system, not held to the end
    pmu = profile.meta.is_pmu
    step("charts")
    if pmu:
        figures = charts.engine_charts(profile, summary, types)
        overview_charts = ["util", "functype"]
    else:
        figures = charts.framework_charts(profile, t0)
        overview_charts = list(figures)
    drawn = overview_charts
    if profile.framework_diagnosis is not None:     # its own card, right under the findings
        device_time = device_time_chart.device_time_chart(profile.framework_diagnosis)
        if device_time is not None:
            figures["devicetime"] = device_time
            drawn = ["devicetime"] + overview_charts
    views, tabs = _views_and_tabs(profile, lane_specs, drawn)
    if layer_part is not None:
        layer_part.add_views(views, tabs, lane_specs)
    diag = diagnosis.parts(profile, t0, types, lanes) if pmu else None
    if diag:
        hardware.attach(diag, profile, t0, views)
    if diag:
        tabs.insert(1, diag.tab)
        figures.update(diag.charts)
    compare_html = None
    if profile.comparison is not None:            # --baseline: the Compare tab (writers/html/compare.py)
        from reportgen.writers.html.compare import TAB, compare_panel
        tabs.insert(2 if diag else 1, dict(TAB))      # after the Diagnosis tab
        compare_html = compare_panel(profile.comparison)
    table_heads, table_blob = tables.table_payload(profile) if profile.tables else ([], b"")
    why_template, why_data = why_html.parts(profile) if pmu else (None, None)
    data = {
        "version": __version__, "pmu": pmu, "t0_ns": str(t0), "span_ns": span, "bar_limit": BAR_LIMIT,
        "urate_scale": URATE_SCALE, "types": types, "ops": ops, "kernels": kernels,
        "lanes": lane_specs, "views": views, "tabs": tabs, "charts": figures,
        "payload": header,
        "overview": {"buckets": OVERVIEW_BUCKETS, "b64": base64.b64encode(overview_u1.tobytes()).decode("ascii")},
    }
    if diag:
        data["diagnosis"] = diag.data
    if why_data:
        data["why"] = why_data
    if table_heads:
        data["tables"] = table_heads
        data["table_rows_shown"] = tables.TABLE_ROWS_SHOWN
    if layer_part is not None:
        data["layers"] = layer_part.data
        data["table_rows_shown"] = tables.TABLE_ROWS_SHOWN
    data, lazy_block = lazy.split(data)       # read after the first drawing: one gzip'd block
    release_free_memory()           # the charts' and diagnosis' temporaries
    step("page")
    m = profile.meta
    # the last two path parts name a capture better than "input" alone
    where = "/".join(Path(m.input_path).parts[-2:]) if m.input_path else None
    title = " · ".join(x for x in [m.chip or None, where, f"{len(profile.commands):,} commands"] if x)
    return environment().get_template("result.html.j2").render(
        title=title, version=__version__, css=_asset("report.css"), js=_asset("codec.js") + "\n" + _asset("report.js"),
        meta_rows=meta_rows(profile, span), warnings=m.warnings, accounting=accounting_table(profile),
        summary=summary_table(summary, peaks_for(m)), tabs=tabs, findings=findings_list(profile),
        findings_shown=FINDINGS_SHOWN, has_compare=any(t["id"] == "compare" for t in tabs), input_name=m.input_path or "memory",
        pmu=pmu, lanes_table=None if pmu else tables.static_table(profile, "Device lanes"),
        chart_titles={k: charts.FRAMEWORK_CHARTS.get(k, k) for k in overview_charts},
        chart_notes=charts.chart_notes(figures), tables=table_heads, rows_shown=tables.TABLE_ROWS_SHOWN,
        tables_b64=base64.b64encode(table_blob).decode("ascii") if table_heads else None,
        data_json=json_for_script(data), items_text7=markupsafe.Markup(text7.encode(blob)), items_bytes=len(blob),
        lazy_text7=markupsafe.Markup(text7.encode(lazy_block)) if lazy_block else None, lazy_bytes=len(lazy_block),
        plotly_text7=_plotly_text7(), plotly_bytes=len(plotly_bundle()),
        layers=layer_part,
        diagnosis=diag.template if diag else None,
        diagnosis_js=_asset("diagnosis.js") + "\n" + _asset("hardware.js") if diag else None,
        diag_urate_text7=markupsafe.Markup(text7.encode(diag.urate_blob)) if diag else None,
        diag_urate_bytes=len(diag.urate_blob) if diag else 0,
        compare_html=compare_html, why=why_template, why_js=_asset("why.js") if why_template else None,
        device_time={"title": device_time_chart.TITLE, "note": device_time_chart.NOTE}
        if "devicetime" in figures else None)
