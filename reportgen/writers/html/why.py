"""Why it is slow and what would help, in result.html (``Diagnosis.why`` as computed; nothing is
recomputed here):

* Overview: the critical path as one stacked bar (share of the span per class), beside the
  findings, with the top what-if scenarios;
* Diagnosis tab: the ranked what-if table and the longest waits, each explained;
* timelines (``templates/why.js``): a "critical path" toggle outlines the path's commands on
  the per-core and all-cores timelines; clicking a waiting command shows what it waited for,
  with a link to that command.

:func:`parts` returns the template dict and the JSON data the script reads (``data["why"]``).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis.critical_path import CLASSES
from reportgen.analysis.waits import describe, describe_all
from reportgen.writers.html.palette import ENGINE_COLORS, SYSTEM_COLOR
from reportgen.writers.why_text import class_words

CLASS_COLORS = {"compute": ENGINE_COLORS["TIU"], "transfer": ENGINE_COLORS["GDMA"],
                "dependency": "#8E24AA", "barrier": "#F9A825", "gap": SYSTEM_COLOR}
WHAT_IF_SHOWN = 30
WAITS_SHOWN = 30
#: waits a click can explain (the longest); every wait is in summary.json (up to its cap)
WAITS_CLICKABLE = 20000
#: path commands outlined on the timelines (the path's longest stretches beyond this are kept)
PATH_SHOWN = 200000


def _us(ns) -> str:
    return f"{ns / 1000.0:,.3f}"


def finding_gain(r: dict) -> str:
    """A finding's estimated gain in words ("" without one), as the overview lists it."""
    g = r.get("gain_ns")
    if g is None or g != g:
        return ""
    return f"est. gain {_us(g)} µs = {100 * r['gain_share']:.1f} % of the span ({r['gain_scenario']})"


def parts(profile) -> tuple[dict[str, Any], dict[str, Any]] | tuple[None, None]:
    d = getattr(profile, "diagnosis", None)
    why = getattr(d, "why", None)
    if why is None or why.path.span_ns <= 0:
        return None, None
    c = profile.commands
    p, w = why.path, why.waits
    segments = [{"cls": cls, "words": class_words(cls), "color": CLASS_COLORS[cls], "ns": int(ns),
                 "us": _us(ns), "pct": f"{100 * share:.1f}", "share": float(share)}
                for cls, ns, share in zip(p.by_class["class"], p.by_class["ns"], p.by_class["share"])]
    wi = why.what_if.head(WHAT_IF_SHOWN)
    what_if = [{"rank": int(r["rank"]), "scenario": r["scenario"], "kind": r["kind"],
                "span_us": _us(r["predicted_span_ns"]), "gain_us": _us(r["gain_ns"]),
                "gain_pct": f"{100 * r['gain_share']:.1f}"} for r in wi.to_dict("records")]
    waits = [{"text": describe(r), "kind": r["kind"], "us": _us(r["ns"])}
             for r in w.table.head(WAITS_SHOWN).to_dict("records")]
    template = {
        "span_us": _us(p.span_ns), "segments": segments, "what_if": what_if,
        "what_if_total": len(why.what_if), "top_what_if": what_if[:3], "waits": waits,
        "waits_total": len(w.table), "waits_total_us": _us(w.total_ns),
        "unattributed_us": _us(w.unattributed_ns), "unattributed_pct": f"{100 * w.unattributed_share:.1f}",
        "main_cause": w.main_cause, "dependency_ids": why.graph.has_dependency_ids,
        "barriers": int(len(why.graph.release_row)),
    }
    return template, _script_data(c, why)


def _script_data(c: pd.DataFrame, why) -> dict[str, Any]:
    """The path's commands per sheet (ascending global_idx as steps: the first, then the
    differences; why.js sums them back) and the clickable waits."""
    column = c["sheet"]
    gidx = c["global_idx"].to_numpy(np.int64)
    rows = why.path.rows
    if len(rows) > PATH_SHOWN:                  # the longest stretches' commands
        st = why.path.stretches
        rows = np.unique(st.nlargest(PATH_SHOWN, "ns")["row"].to_numpy(np.int64))
    # per sheet, the global_idx in ascending order as steps (the first one, then differences):
    # a path runs through consecutive commands, so the steps are mostly 1 and gzip to almost
    # nothing (at 3.3M commands 411 KB of gzip'd JSON as plain numbers, a few KB as steps)
    path_sheet = column.iloc[rows].astype(str).to_numpy()      # only the rows shown, as text
    order = np.lexsort((gidx[rows], path_sheet))
    path_sheet, path_gidx = path_sheet[order], gidx[rows][order]
    cuts = np.flatnonzero(path_sheet[1:] != path_sheet[:-1]) + 1
    path = {str(s[0]): np.diff(g, prepend=0).tolist()
            for s, g in zip(np.split(path_sheet, cuts), np.split(path_gidx, cuts)) if len(s)}
    t = why.waits.table.head(WAITS_CLICKABLE)
    shown = np.concatenate([t["row"].to_numpy(np.int64), t["waited_for_row"].to_numpy(np.int64)])
    sheet = dict(zip(shown.tolist(), column.iloc[np.maximum(shown, 0)].astype(str).tolist()))
    waits = [[sheet[row], int(gidx[row]), text, sheet[other] if other >= 0 else None,
              int(gidx[other]) if other >= 0 else None]
             for row, other, text in zip(t["row"].tolist(), t["waited_for_row"].tolist(), describe_all(t))]
    return {"path": path, "waits": waits, "classes": list(CLASSES),
            "colors": [CLASS_COLORS[k] for k in CLASSES]}
