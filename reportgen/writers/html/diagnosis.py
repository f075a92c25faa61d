"""The Diagnosis tab of result.html and the uArch-rate-over-time charts of the core tabs.

Everything shown comes from ``profile.diagnosis`` (analysis/diagnosis.py) and
:mod:`reportgen.analysis.uarch_timeline`; nothing is recomputed here, values are only laid out:

* per-core breakdown: one small chart per engine, a bar per core, stacked by Function Type (busy
  time, the union of that type's commands); system commands are drawn as *waiting* (grey,
  hatched, "waiting: <type>" in the legend), never as work;
* kernels: one row per kernel name and the longest calls, each row a link that opens the core's
  timeline (all cores for host kernels) zoomed to the call;
* uArch rate over time per core: the ops of each TIU command of the timeline payload (or, when
  the commands have too many distinct ops, fine bins of them) as a compact binary block
  (``rg-diag-urate``, :func:`urate_block`); ``templates/diagnosis.js`` re-bins them to the
  window each core timeline shows (the rule of ``uarch_timeline.rate_bins``) and draws the curve
  under the timeline.

:func:`parts` returns what the page needs: the tab, the chart, the template rows, the JSON data
(raw numbers, for the script and the tests) and the binary block.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis import timeline
from reportgen.analysis.uarch_timeline import modelled, modelled_tiu, rate_bins
from reportgen.model import ENGINES, Profile
from reportgen.writers.html.charts import _BASE_LAYOUT, _esc, _typed
from reportgen.writers.html.palette import SYSTEM_COLOR, UNKNOWN_COLOR
from reportgen.writers.html.payload import BinaryBlock, _item_order, _narrow

#: kernel calls listed in the table (the longest; every call is in the workbook and Perfetto)
CALLS_SHOWN = 300
#: buckets of the uArch rate curve across the visible window
URATE_BUCKETS = 400
#: the uArch rate block stays exact (a float64 table of pairs) up to this many distinct
#: (Alg Ops, uArch Ops) pairs (a 256 KB table); above, it holds fine bins (:func:`urate_block`)
PAIRS_EXACT_MAX = 16384
#: fine bins of the uArch rate block over all cores (8 bytes each: at most 512 KB)
FINE_BINS_TOTAL = 2 ** 16


@dataclass
class DiagnosisParts:
    tab: dict[str, Any]
    charts: dict[str, Any]
    template: dict[str, Any]
    data: dict[str, Any]
    urate_blob: bytes     # gzip'd, written into the page by text7 (rg-diag-urate)


def breakdown_chart(breakdown: pd.DataFrame, types: list[dict[str, Any]]) -> dict[str, Any]:
    """Small multiples: per engine, a horizontal bar per core stacked by Function Type busy time."""
    rows = breakdown[breakdown["core"].astype(str) != "Overall"]
    if rows.empty:
        return {"empty": "No TIU, GDMA, SDMA or CDMA commands in this profile."}
    engines = [e for e in ENGINES if (rows["engine"] == e).any()]
    cores = [f"core {k}" for k in sorted({int(k) for k in rows["core"]})]
    color = {t["name"]: t["color"] for t in types if t["group"] == "device"}
    gap = 0.03
    data, layout = [], dict(_BASE_LAYOUT, barmode="stack", height=max(240, 110 + 26 * len(cores)),
                            legend={"orientation": "h", "y": -0.25}, annotations=[])
    seen = set()
    for i, engine in enumerate(engines):
        axis = "" if i == 0 else str(i + 1)
        mine = rows[rows["engine"] == engine]
        groups = mine.groupby(["func_type", "category"], sort=True, observed=True)
        # work first, waiting last: every bar ends with its waiting time
        for (ftype, category), g in sorted(groups, key=lambda kv: kv[0][1] == "waiting"):
            waiting = category == "waiting"
            label = ("waiting: " if waiting else "") + _esc(ftype)
            busy = g.set_index(g["core"].map(lambda k: f"core {int(k)}"))
            x = busy["busy_ns"].reindex(cores).fillna(0).to_numpy(float) / 1e3
            custom = np.column_stack([busy[c].reindex(cores).to_numpy(float)
                                      for c in ("count", "share_busy", "uarch_rate")])
            marker = ({"color": SYSTEM_COLOR, "pattern": {"shape": "/", "fillmode": "overlay",
                                                         "fgcolor": "#555555", "size": 6, "solidity": 0.25}}
                      if waiting else {"color": color.get(str(ftype), UNKNOWN_COLOR)})
            data.append({"type": "bar", "orientation": "h", "name": label, "legendgroup": label,
                         "showlegend": label not in seen, "y": cores, "x": _typed(x, "f8"),
                         "customdata": custom.tolist(), "marker": marker,
                         "xaxis": f"x{axis}", "yaxis": f"y{axis}",
                         "hovertemplate": f"%{{y}} {engine} {label}: %{{x:,.3f}} µs busy, "
                                          "%{customdata[0]:,} commands, %{customdata[1]:.1%} of the "
                                          "engine's busy time<extra></extra>"})
            seen.add(label)
        lo, hi = i / len(engines) + (gap if i else 0), (i + 1) / len(engines) - gap
        layout[f"xaxis{axis}"] = {"domain": [lo, hi], "anchor": f"y{axis}", "gridcolor": "#e3e7ea",
                                  "title": {"text": "busy (µs)"}, "rangemode": "tozero"}
        layout[f"yaxis{axis}"] = {"anchor": f"x{axis}", "autorange": "reversed", "type": "category",
                                  **({"matches": "y", "showticklabels": False} if i else {})}
        layout["annotations"].append({"text": f"<b>{engine}</b>", "xref": "paper", "yref": "paper",
                                      "x": (lo + hi) / 2, "y": 1.0, "yanchor": "bottom",
                                      "showarrow": False})
    layout["margin"] = dict(_BASE_LAYOUT["margin"], t=26)
    return {"data": data, "layout": layout}


def _num(v) -> float | None:
    return None if v is None or pd.isna(v) else float(v)


def _link(source: str, core, start: int, end: int, t0: int) -> dict[str, Any]:
    """Where a kernel row leads: the core's timeline (host kernels: all cores), the call's window."""
    view = "all" if source == "host" or pd.isna(core) else f"core-{int(core)}"
    return {"view": view, "a": int(start) - t0, "b": int(end) - t0}


def kernel_rows(kernels: pd.DataFrame, calls: pd.DataFrame, t0: int):
    """(per-name rows, longest-call rows): raw numbers plus the link of each row."""
    names = []
    if not calls.empty:
        longest = calls.loc[calls.groupby(["source", "name"], sort=False)["wall_ns"].idxmax()]
        longest = longest.set_index(["source", "name"])
    for r in kernels.itertuples(index=False):
        top = longest.loc[(r.source, r.name)]
        names.append({"source": r.source, "name": str(r.name), "calls": int(r.calls),
                      "total_ns": int(r.total_ns), "mean_ns": _num(r.mean_ns), "max_ns": int(r.max_ns),
                      "share_wall": _num(r.share_wall), "share_kernels": _num(r.share_kernels),
                      "link": _link(r.source, top["core"], top["start_ns"], top["end_ns"], t0)})
    shown = calls.sort_values(["wall_ns", "start_ns"], ascending=[False, True], kind="stable").head(CALLS_SHOWN)
    rows = []
    for r in shown.itertuples(index=False):
        rows.append({"source": r.source, "name": str(r.name),
                     "core": None if pd.isna(r.core) else int(r.core),
                     "start_ns": int(r.start_ns) - t0, "wall_ns": int(r.wall_ns), "commands": int(r.commands),
                     **{k: _num(getattr(r, k)) for k in ("tiu_busy_ns", "gdma_busy_ns", "sdma_busy_ns",
                                                         "tiu_util", "uarch_rate", "bytes", "ddr_bw", "l2m_bw")},
                     "link": _link(r.source, r.core, r.start_ns, r.end_ns, t0)})
    return names, rows


def _fine_series(profile: Profile, t0: int, cores: list[int]
                 ) -> dict[int, tuple[float, float, np.ndarray, np.ndarray]]:
    """Per core: (lo, hi, Σ Alg Ops, Σ uArch Ops) in ``FINE_BINS_TOTAL // len(cores)`` equal bins
    of [lo, hi) (the core's modelled commands' extent, ns since ``t0``), by the rule of
    ``uarch_timeline.rate_bins``."""
    per_core = modelled_tiu(profile)
    bins = max(FINE_BINS_TOTAL // max(len(cores), 1), 1)
    out = {}
    for core in cores:
        start, end, alg, uarch = per_core[core]
        lo = float(start.min() - t0)
        hi = float(max(end.max(), start.max() + 1) - t0)     # a 0 ns command at the end counts too
        fine_alg, fine_uarch = rate_bins(start - t0, end - t0, alg, uarch, lo, hi, bins)
        out[core] = (lo, hi, fine_alg, fine_uarch)
    return out


def urate_block(profile: Profile, lanes: timeline.Lanes, t0: int) -> tuple[dict[str, Any], bytes]:
    """What the uArch rate charts need beyond the timeline payload (which already holds every
    command's start and end), in one of two encodings (docs/metrics.md "uArch rate over time"):

    * exact (at most ``PAIRS_EXACT_MAX`` distinct (Alg Ops, uArch Ops) pairs, the usual case: a
      capture repeats a few op shapes, 30-80 pairs on the shared and synthetic dumps): per TIU
      lane one code per item in the payload's order (0: not a modelled work command; k + 1: the
      k-th pair) and the table of pairs as float64, so the sums are the model's; about a byte per
      TIU command before gzip;
    * fine bins (more pairs, e.g. every command with its own ops): per core, Σ Alg Ops and
      Σ uArch Ops in ``FINE_BINS_TOTAL // cores`` equal bins of the core's extent as float32,
      which the page re-bins as if each bin were a command; at most 8 bytes per bin
      whatever the number of commands.

    Also each core's whole-span rate (the engine summary's)."""
    c = profile.commands
    summary = profile.summary
    rate = ({str(k): v for k, v in zip(summary["core"], summary["tiu_uarch_rate"])}
            if summary is not None and "tiu_uarch_rate" in summary else {})
    mask = modelled(c)
    # distinct (alg, uarch) pairs: each column hashed, then the pair of codes (fast, no sort)
    alg_code, alg_values = pd.factorize(c["alg_ops"].to_numpy(np.float64)[mask])
    uarch_code, uarch_values = pd.factorize(c["uarch_ops"].to_numpy(np.float64)[mask])
    pair, keys = pd.factorize(alg_code.astype(np.int64) * max(len(uarch_values), 1) + uarch_code)
    exact = len(keys) <= PAIRS_EXACT_MAX
    code = np.zeros(len(c), np.int64)
    code[mask] = pair + 1
    # the payload's item order: by lane, then start, then end (payload.encode_items)
    order = _item_order(lanes.of_command, c["start_ns"].to_numpy(np.int64), c["end_ns"].to_numpy(np.int64))
    # None: in that order already (a PMU capture), no sort
    bounds = np.searchsorted(lanes.of_command if order is None else lanes.of_command[order],
                             np.arange(len(lanes.names) + 1))
    packed = BinaryBlock()
    put = packed.put

    lanes_shown = []
    for lane, (engine, cores) in enumerate(zip(lanes.engines, lanes.cores)):
        rows = slice(bounds[lane], bounds[lane + 1])
        codes = code[rows] if order is None else code[order[rows]]
        if engine == "TIU" and len(cores) == 1 and codes.any():
            lanes_shown.append((lane, int(cores[0]), codes))
    heads = [{"core": core, "lane": lane, "span_rate": _num(rate.get(str(core)))}
             for lane, core, _ in lanes_shown]
    if exact:
        for head, (_, _, codes) in zip(heads, lanes_shown):
            head["codes"] = put(_narrow(codes))
        width = max(len(uarch_values), 1)
        table = np.column_stack([alg_values[keys // width], uarch_values[keys % width]]).reshape(-1, 2)
        block = {"cores": heads, "pairs": {"alg": put(np.ascontiguousarray(table[:, 0], "<f8")),
                                           "uarch": put(np.ascontiguousarray(table[:, 1], "<f8"))}}
    else:
        fine = _fine_series(profile, t0, [head["core"] for head in heads])
        for head in heads:
            lo, hi, fine_alg, fine_uarch = fine[head["core"]]
            head["fine"] = {"lo": lo, "hi": hi, "alg": put(fine_alg.astype("<f4")),
                            "uarch": put(fine_uarch.astype("<f4"))}
        block = {"cores": heads}
    return block, packed.gzipped()


def parts(profile: Profile, t0: int, types: list[dict[str, Any]], lanes: timeline.Lanes
          ) -> DiagnosisParts | None:
    """Everything the page shows of the diagnosis; None when the profile has none."""
    d = profile.diagnosis
    if d is None:
        return None
    names, calls = kernel_rows(d.kernels, d.kernel_calls, t0)
    heads, blob = urate_block(profile, lanes, t0)
    data = {"kernels": names, "calls": calls, "calls_total": int(len(d.kernel_calls)),
            "urate": {"buckets": URATE_BUCKETS, **heads}}
    return DiagnosisParts(
        tab={"id": "diagnosis", "title": "Diagnosis", "charts": ["breakdown"], "views": []},
        charts={"breakdown": breakdown_chart(d.breakdown, types)},
        template={"kernels": names, "calls": calls, "calls_total": int(len(d.kernel_calls)),
                  "calls_shown": CALLS_SHOWN},
        data=data, urate_blob=blob)
