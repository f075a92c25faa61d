"""The roofline block of the Diagnosis tab and the local-memory chart of each core tab
(``Diagnosis.roofline`` and ``Diagnosis.lmem`` as computed; docs/metrics.md "Roofline",
"Local memory"; drawn by ``templates/hardware.js``).

* Roofline: a log-log chart, x = ops per DDR byte, y = achieved TOPS; one roof per data type
  and memory level (min(peak of the type, intensity × peak of the level)); one point per kernel,
  call, layer, Function Type and core with DDR bytes and ops, sized by time; a click opens the
  timeline at the scope's window. Under it the table ranked by time under the roof.
* Local memory: per core the occupancy step functions of the analysis (exact up to
  ``lmem.MAX_STEPS`` points, else reduced to that many by the maximum per bucket), as one gzip'd
  binary block: times (ns since the page's t0), total bytes, 16 banks' bytes. The page draws
  the window shown at one bucket per pixel (maximum), so the detail follows the zoom.
"""
from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis.chip import peaks_for
from reportgen.analysis.lmem_access import BANK_BYTES, BANKS, LANE_BYTES
from reportgen.analysis.roofline import input_dtype, peak_ops_per_ns
from reportgen.model import Profile
from reportgen.writers.html.charts import _esc
from reportgen.writers.html.payload import BinaryBlock

#: rows of the roofline table on the page (all rows are in the workbook and summary.json)
ROWS_SHOWN = 200
SCOPE_COLORS = {"kernel": "#1565C0", "call": "#90CAF9", "layer": "#6A1B9A", "function_type": "#EF6C00",
                "core": "#2E7D32"}
ROOF_COLORS = {"ddr": "#455A64", "l2m": "#8D6E63"}
COLUMNS = ("scope", "name", "core", "commands", "dtype", "ops", "ddr_bytes", "l2m_bytes", "ns",
           "intensity", "ops_per_s", "util_compute", "util_ddr", "util_l2m", "roof_ops_per_s",
           "bound_by", "efficiency", "under_roof_ns")


def _num(v):
    if v is None or (isinstance(v, float) and not np.isfinite(v)) or pd.isna(v):
        return None
    return float(v) if isinstance(v, (float, np.floating)) else (int(v) if isinstance(v, (int, np.integer)) else v)


def _view(core, views: list[str], cores: list[int]) -> str:
    if core is not None and not pd.isna(core):
        return f"core-{int(core)}"
    if "all" in views:
        return "all"
    return f"core-{cores[0]}" if cores else "all"


def roofline_rows(table: pd.DataFrame, t0: int, views: list[str], cores: list[int]) -> list[dict]:
    rows = []
    for r in table.head(ROWS_SHOWN).to_dict("records"):
        row = {k: _num(r[k]) if k not in ("scope", "name", "bound_by", "dtype") else
               (None if r[k] is None or (isinstance(r[k], float) and r[k] != r[k]) else r[k]) for k in COLUMNS}
        row["name"] = str(row["name"])
        row["link"] = {"view": _view(r["core"], views, cores), "a": int(r["start_ns"]) - t0,
                       "b": int(r["end_ns"]) - t0}
        rows.append(row)
    return rows


def roofline_chart(profile: Profile, table: pd.DataFrame, t0: int, views, cores) -> dict[str, Any]:
    """Plotly traces and layout: roofs first, then one trace of points per scope kind."""
    peaks = peaks_for(profile.meta)
    pts = table[(table["ops"] > 0) & (table["ddr_bytes"] > 0) & (table["ns"] > 0)]
    if peaks is None or pts.empty:
        return {"empty": "No scope with both TIU ops and DDR bytes: nothing to place on the roofline "
                         "(the table below lists every scope)."}
    x = pts["intensity"].to_numpy(float)
    _, names = input_dtype(profile.commands["dtype"])
    names = [n for n in names if n in set(table["dtype"].dropna())] or ["INT8"]
    peak = dict(zip(names, peak_ops_per_ns(peaks, names) * 1e9 / 1e12))     # TOPS
    bws = {"ddr": peaks.ddr_gbps_per_core, "l2m": peaks.l2_gbps}
    lo = float(min(x.min(), min(p / b for p in peak.values() for b in bws.values())) / 10)
    hi = float(max(x.max(), max(p / b for p in peak.values() for b in bws.values())) * 10)
    data = []
    for level, bw in bws.items():
        for dtype, top in peak.items():
            knee = top * 1e3 / bw                                  # ops per byte where the roofs meet
            data.append({"type": "scatter", "mode": "lines", "x": [lo, knee, hi],
                         "y": [lo * bw / 1e3, top, top], "name": f"roof {dtype} · {level.upper()}",
                         "line": {"color": ROOF_COLORS[level], "width": 1.4,
                                  "dash": "solid" if level == "ddr" else "dash"},
                         "hovertemplate": f"{dtype} peak {top:,.3f} TOPS, {level.upper()} {bw:g} GB/s per core"
                                          "<extra></extra>"})
    size = np.sqrt(pts["ns"].to_numpy(float) / pts["ns"].max()) * 36 + 6
    for scope, color in SCOPE_COLORS.items():
        m = (pts["scope"] == scope).to_numpy()
        if not m.any():
            continue
        sub = pts[m]
        links = [[_view(c, views, cores), int(s) - t0, int(e) - t0]
                 for c, s, e in zip(sub["core"], sub["start_ns"], sub["end_ns"])]
        custom = [[_esc(str(r.name)), "all" if r.core is None else int(r.core), r.bound_by,
                   100 * r.efficiency, r.under_roof_ns / 1e3, r.ns / 1e3,
                   r.dtype if isinstance(r.dtype, str) else "n/a",
                   100 * r.util_compute, 100 * r.util_ddr, 100 * r.util_l2m, *link]
                  for r, link in zip(sub.itertuples(index=False), links)]
        data.append({"type": "scatter", "mode": "markers", "name": scope.replace("_", " "),
                     "x": sub["intensity"].tolist(), "y": (sub["ops_per_s"] / 1e12).tolist(),
                     "marker": {"size": size[m].tolist(), "color": color, "opacity": 0.75,
                                "line": {"width": 0.5, "color": "#263238"}},
                     "customdata": custom,
                     "hovertemplate": f"<b>{scope.replace('_', ' ')} %{{customdata[0]}}</b> (core %{{customdata[1]}})<br>"
                                      "%{x:,.3f} ops per DDR byte, %{y:,.4f} TOPS (%{customdata[6]})<br>"
                                      "bound by %{customdata[2]}, %{customdata[3]:.1f}% of its roof<br>"
                                      "%{customdata[4]:,.3f} µs under the roof of %{customdata[5]:,.3f} µs<br>"
                                      "compute %{customdata[7]:.1f}%, DDR %{customdata[8]:.1f}%, "
                                      "L2M %{customdata[9]:.1f}% of peak<extra></extra>"})
    tops = max(peak.values())
    layout = {"height": 460, "margin": {"l": 70, "r": 20, "t": 10, "b": 50}, "plot_bgcolor": "#fafbfc",
              "hovermode": "closest", "legend": {"orientation": "h", "y": -0.18},
              "xaxis": {"type": "log", "title": {"text": "arithmetic intensity (ops per DDR byte)"},
                        "range": [np.log10(lo), np.log10(hi)], "gridcolor": "#e3e7ea"},
              "yaxis": {"type": "log", "title": {"text": "achieved TOPS (per core)"}, "gridcolor": "#e3e7ea",
                        "range": [np.log10(max(float((pts["ops_per_s"] / 1e12).min()) / 10, 1e-9)),
                                  np.log10(tops * 2)]}}
    return {"data": data, "layout": layout}


def lmem_block(lm, t0: int) -> tuple[list[dict], str]:
    """Per core: the step functions' columns in one gzip'd, byte-shuffled block (base64)."""
    heads, packed = [], BinaryBlock()
    put = packed.put

    for c in lm.cores.to_dict("records"):
        core = int(c["core"])
        steps = lm.steps.get(core)
        if steps is None or len(steps["t"]) == 0:
            continue
        banks = lm.banks[lm.banks["core"] == core]
        heads.append({
            "core": core, "peak_bytes": int(c["peak_bytes"]), "peak_at_ns": _num(c["peak_at_ns"] - t0),
            "accesses": int(c["accesses"]), "undecoded": int(c["undecoded"]),
            "conflicts": int(c["conflict_candidates"]), "races": int(c["races"]),
            "bank_peaks": banks["peak_bytes"].astype(int).tolist(),
            "t": put((steps["t"] - t0).astype("<f8")), "total": put(steps["total"].astype("<u4")),
            "banks": put(np.ascontiguousarray(steps["banks"].ravel().astype("<u2")))})
    blob = packed.gzipped()
    return heads, base64.b64encode(blob).decode("ascii")


def attach(parts, profile: Profile, t0: int, views: list[dict]) -> None:
    """Add the roofline block and the local-memory data to the Diagnosis tab's ``parts``."""
    d = profile.diagnosis
    ids = [v["id"] for v in views]
    cores = sorted(int(k) for k in np.unique(profile.commands["core"].to_numpy())) if len(profile.commands) else []
    table = d.roofline if d.roofline is not None else pd.DataFrame()
    rows = roofline_rows(table, t0, ids, cores) if len(table) else []
    chart = roofline_chart(profile, table, t0, ids, cores) if len(table) else {"empty": "No chip peaks for this capture."}
    parts.template["roofline"] = {"rows": rows, "total": int(len(table)), "shown": ROWS_SHOWN}
    parts.data["roofline"] = {"rows": rows, "chart": chart}
    if d.lmem is not None:
        heads, b64 = lmem_block(d.lmem, t0)
        parts.data["lmem"] = {"cores": heads, "b64": b64, "banks": BANKS, "bank_bytes": BANK_BYTES,
                              "lane_bytes": LANE_BYTES}
