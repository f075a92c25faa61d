"""result.html's "Compare" tab (``--baseline``): static HTML and inline SVG, no script needed.

* busy time per core and engine, baseline and this run as side-by-side bars, with the delta;
* the two runs' timelines (busy fraction per core and engine over time, from the digests)
  drawn on one time axis, aligned at their start;
* the kernels and Function Types with the largest changes (bars), new and gone ones marked;
* both runs with layers: the layers whose busy time changed most (bars), with their status;
* every delta marked "noise" when it is within the run-to-run noise rule (docs/metrics.md).

Every text from the input (paths, kernel names) is escaped here (markupsafe).
"""
from __future__ import annotations

import pandas as pd
from markupsafe import Markup, escape

from reportgen.analysis.compare import NOISE, Comparison

TAB = {"id": "baseline", "title": "Compare", "charts": [], "views": []}
BASE_COLOUR, NEW_COLOUR = "#9aa5b1", "#1e5fa8"
TOP_NAMES = 25          # kernels / Function Types drawn (all are in the workbook and summary.json)
BAR_W = 260             # px of the longest bar


def _us(ns) -> str:
    return "n/a" if ns is None or pd.isna(ns) else f"{ns / 1000:,.1f}"


def _signed_pct(p) -> str:
    return "" if p is None or pd.isna(p) else f"{p:+.1f}%"


def _bars(base: float, new: float, scale: float) -> Markup:
    """Two horizontal bars (baseline above, this run below) in one small SVG."""
    def w(v):
        return 0 if not scale or pd.isna(v) else max(0.0, BAR_W * float(v) / scale)
    return Markup(
        f'<svg width="{BAR_W}" height="14" role="img" aria-label="baseline and this run">'
        f'<rect x="0" y="0" width="{w(base):.1f}" height="6" fill="{BASE_COLOUR}"/>'
        f'<rect x="0" y="7" width="{w(new):.1f}" height="6" fill="{NEW_COLOUR}"/></svg>')


def _delta_cell(delta_ns, pct, noise) -> Markup:
    if delta_ns is None or pd.isna(delta_ns):
        return Markup("<td>n/a</td>")
    mark = ' <span class="muted">(noise)</span>' if noise is True else ""
    return Markup(f"<td>{escape(_us(delta_ns))} {escape(_signed_pct(pct))}{mark}</td>")


def _engine_table(c: Comparison) -> Markup:
    e = c.engines
    if e.empty or "base_busy_ns" not in e:
        return Markup('<p class="muted">No engine summary on one side.</p>')
    scale = float(max(e["base_busy_ns"].max(), e["new_busy_ns"].max(), 1))
    rows = []
    for r in e.to_dict("records"):
        util = "" if pd.isna(r.get("new_util")) else \
            f"{100 * r['base_util']:.1f}% → {100 * r['new_util']:.1f}%" if not pd.isna(r.get("base_util")) else ""
        rows.append(f"<tr><th>{escape(str(r['core']))}</th><td class=\"text\">{escape(r['engine'])}</td>"
                    f"<td>{escape(_us(r['base_busy_ns']))}</td><td>{escape(_us(r['new_busy_ns']))}</td>"
                    f"{_delta_cell(r['delta_busy_ns'], r['pct_busy_ns'], r['noise_busy_ns'])}"
                    f"<td>{escape(util)}</td><td>{_bars(r['base_busy_ns'], r['new_busy_ns'], scale)}</td></tr>")
    return Markup('<div class="table-wrap"><table class="grid small"><thead><tr><th>core</th>'
                  '<th>engine</th><th>baseline busy (µs)</th><th>this run (µs)</th><th>delta (µs, %)</th>'
                  '<th>utilisation</th><th>busy: baseline / this run</th></tr></thead><tbody>'
                  + "".join(rows) + "</tbody></table></div>")


def _name_table(frame: pd.DataFrame, what: str) -> Markup:
    if frame.empty:
        return Markup(f'<p class="muted">No {escape(what)} names on either side.</p>')
    top = frame.head(TOP_NAMES)
    scale = float(max(top["base_total_ns"].max(), top["new_total_ns"].max(), 1))
    rows = []
    for r in top.to_dict("records"):
        status = {"new": " <b>new</b>", "gone": " <b>gone</b>"}.get(r["status"], "")
        rows.append(f"<tr><th title=\"{escape(r['name'])}\">{escape(r['name'])}{status}</th>"
                    f"<td>{escape(_us(r['base_total_ns']))}</td><td>{escape(_us(r['new_total_ns']))}</td>"
                    f"{_delta_cell(r['delta_total_ns'], r['pct_total_ns'], bool(r['within_noise']))}"
                    f"<td>{_bars(r['base_total_ns'], r['new_total_ns'], scale)}</td></tr>")
    more = "" if len(frame) <= TOP_NAMES else \
        f'<p class="note">The {TOP_NAMES} largest changes of {len(frame)}; all in the Compare sheet and summary.json.</p>'
    return Markup(f'<div class="table-wrap"><table class="grid small"><thead><tr><th>{escape(what)}</th>'
                  '<th>baseline (µs)</th><th>this run (µs)</th><th>delta (µs, %)</th><th>baseline / this run</th>'
                  '</tr></thead><tbody>' + "".join(rows) + f"</tbody></table></div>{more}")


def _layer_table(layers: pd.DataFrame) -> Markup:
    """The TOP_NAMES layers with the largest |delta busy| (the comparison's order)."""
    top = layers.head(TOP_NAMES)
    scale = float(max(top["base_busy_ns"].max(), top["new_busy_ns"].max(), 1))
    rows = []
    for r in top.to_dict("records"):
        status = f' <b>{escape(r["status"])}</b>' if r["status"] in ("new", "gone") else ""
        rows.append(f"<tr><th>{escape(str(r['file_line']))}</th><td class=\"text\">{escape(str(r['subnet_id']))}</td>"
                    f"<td class=\"text\">{escape(str(r['opcode']))}{status}</td>"
                    f"<td>{escape(_us(r['base_busy_ns']))}</td><td>{escape(_us(r['new_busy_ns']))}</td>"
                    f"{_delta_cell(r['delta_busy_ns'], r['pct_busy_ns'], r['status'] == 'noise')}"
                    f"<td>{r['base_tiu_cmds']} / {r['new_tiu_cmds']}</td>"
                    f"<td>{r['base_gdma_cmds']} / {r['new_gdma_cmds']}</td>"
                    f"<td>{_bars(r['base_busy_ns'], r['new_busy_ns'], scale)}</td></tr>")
    changed = int((layers["status"] != "noise").sum())
    note = (f'<p class="note">{changed} of {len(layers)} layers outside the noise band; the '
            f'{len(top)} largest changes shown, all in the Compare sheet and summary.json. Line = '
            'final.mlir line (-1: the unattributed commands).</p>')
    return Markup('<div class="table-wrap"><table class="grid small" id="compare-layers"><thead><tr>'
                  '<th>line</th><th>subnet</th><th>op</th><th>baseline busy (µs)</th><th>this run (µs)</th>'
                  '<th>delta (µs, %)</th><th>TIU cmds</th><th>GDMA cmds</th><th>baseline / this run</th>'
                  '</tr></thead><tbody>' + "".join(rows) + f"</tbody></table></div>{note}")


def _timelines(c: Comparison, width: int = 900) -> Markup:
    """Both runs' busy fraction per lane on one time axis starting at 0 (a longer run draws
    further right); each lane shows the baseline strip above this run's strip."""
    base, new = c.timelines
    span = max(base.get("span_ns") or 0, new.get("span_ns") or 0)
    lanes = list(dict.fromkeys(tuple(x) for x in [*base.get("lanes", []), *new.get("lanes", [])]))
    if not span or not lanes:
        return Markup('<p class="muted">No timeline on one side.</p>')
    label_w, strip, gap = 90, 7, 5
    height = len(lanes) * (2 * strip + gap) + 20
    parts = [f'<svg width="{label_w + width}" height="{height}" role="img" '
             'aria-label="both timelines aligned at their start">']
    for i, lane in enumerate(lanes):
        y = i * (2 * strip + gap)
        parts.append(f'<text x="0" y="{y + 2 * strip - 1}" font-size="10">core {escape(str(lane[0]))} '
                     f'{escape(lane[1])}</text>')
        for j, (run, colour) in enumerate(((base, BASE_COLOUR), (new, NEW_COLOUR))):
            index = [tuple(x) for x in run.get("lanes", [])]
            if lane not in index or not run.get("span_ns"):
                continue
            busy = run["busy"][index.index(lane)]
            bucket = width * run["span_ns"] / span / len(busy)
            parts.append(f'<rect x="{label_w}" y="{y + j * strip}" width="{bucket * len(busy):.1f}" '
                         f'height="{strip - 1}" fill="none" stroke="#d9e2ec" stroke-width="0.5"/>')
            parts += [f'<rect x="{label_w + k * bucket:.1f}" y="{y + j * strip}" width="{bucket:.2f}" '
                      f'height="{strip - 1}" fill="{colour}" fill-opacity="{b:.2f}"/>'
                      for k, b in enumerate(busy) if b > 0.005]
    parts.append(f'<text x="{label_w}" y="{height - 4}" font-size="10">0</text>'
                 f'<text x="{label_w + width}" y="{height - 4}" font-size="10" text-anchor="end">'
                 f'{escape(_us(span))} µs</text></svg>')
    return Markup("".join(parts))


def compare_panel(c: Comparison) -> Markup:
    """The inside of the Compare tab's panel."""
    rule = "; ".join(f"{u}: max({r:.0%} of the baseline, {f:g})" for u, (r, f) in NOISE.items())
    legend = (f'<span style="color:{BASE_COLOUR}">■</span> baseline '
              f'<span style="color:{NEW_COLOUR}">■</span> this run')
    return Markup(
        f'<div class="card"><h2>Compared with a baseline</h2><table class="kv">'
        f'<tr><th>this run</th><td>{escape(c.new)}</td></tr>'
        f'<tr><th>baseline</th><td>{escape(c.baseline)}</td></tr></table>'
        f'<p class="note">Deltas are this run − baseline (% of the baseline). "(noise)": the change '
        f'is within run-to-run noise ({escape(rule)}; docs/metrics.md). {legend}</p></div>'
        f'<div class="card"><h2>Busy time per core and engine</h2>{_engine_table(c)}</div>'
        f'<div class="card"><h2>Timelines aligned at their start</h2>{_timelines(c)}'
        f'<p class="note">Per lane: baseline strip above, this run below; darker = busier. {legend}</p></div>'
        f'<div class="card"><h2>Kernels</h2>{_name_table(c.kernels, "kernel")}</div>'
        f'<div class="card"><h2>Function Types</h2>{_name_table(c.function_types, "Function Type")}</div>'
        + (f'<div class="card"><h2>Operators</h2>{_name_table(c.operators, "operator")}</div>'
           if not c.operators.empty else "")
        + (f'<div class="card"><h2>Layers that changed most</h2>{_layer_table(c.layers)}</div>'
           if not c.layers.empty else ""))
