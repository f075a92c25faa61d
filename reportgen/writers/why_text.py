"""The critical path, the waits and the what-if table in summary.txt and summary.json
(``critical_path``, ``waits``, ``what_if`` and ``why``): ``Diagnosis.why`` as computed."""
from __future__ import annotations

import pandas as pd

from reportgen.analysis.depgraph import BARRIER_TOLERANCE_NS
from reportgen.analysis.waits import describe
from reportgen.writers.diagnosis_text import _jsonable, _records, _table

#: summary.json lists at most this many waits (the longest); ``why.waits`` counts them all
MAX_WAITS = 5000
TOP_WHAT_IF = 5
WAIT_KEYS = ("core", "engine", "waited_for_core", "waited_for_engine", "ns", "kind", "kernel",
             "start_ns")
WHAT_IF_COLUMNS = [("rank", "#", "count"), ("scenario", "Scenario", "id"),
                   ("predicted_span_ns", "predicted span", "ns"), ("gain_ns", "gain", "ns"),
                   ("gain_share", "gain", "fraction")]
CLASS_COLUMNS = [("class", "Class", "id"), ("ns", "on the path", "ns"), ("share", "of span", "fraction")]


def class_words(cls: str) -> str:
    return {"compute": "compute (TIU)", "transfer": "transfer (GDMA/SDMA/CDMA)",
            "dependency": "waiting on a dependency", "barrier": "waiting at a barrier",
            "gap": "launch / issue gap"}[cls]


def why_document(why) -> dict:
    """summary.json keys of the critical path, waits and what-if (docs/metrics.md)."""
    p, w = why.path, why.waits
    waits = w.table.head(MAX_WAITS)
    return {
        "critical_path": _records(p.shares),
        "waits": [{k: _jsonable(v) if v is not pd.NA else None for k, v in r.items()}
                  for r in waits[list(WAIT_KEYS)].astype(object).where(waits[list(WAIT_KEYS)].notna(), None)
                  .to_dict("records")],
        "what_if": _records(why.what_if),
        "why": {
            "span_ns": p.span_ns,
            "path_by_class": _records(p.by_class),
            "path_by_kernel": _records(p.by_kernel.head(50)),
            "path_top_commands": _records(p.top_commands),
            "path_by_layer": None if why.path_by_layer is None else _records(why.path_by_layer.head(50)),
            "waits_total_ns": w.total_ns, "waits_count": int(len(w.table)),
            "waits_listed": int(len(waits)),
            "waits_unattributed_ns": w.unattributed_ns,
            "waits_unattributed_share": w.unattributed_share,
            "waits_main_cause": w.main_cause,
            "dependency_ids": why.graph.has_dependency_ids,
            "launch_edges": why.graph.has_launch,
            "barriers": int(len(why.graph.release_row)),
            "barrier_tolerance_ns": BARRIER_TOLERANCE_NS,
        },
    }


def why_text(why) -> str:
    """The summary.txt section: path shares, the main waits and the top what-ifs."""
    p, w = why.path, why.waits
    by_class = p.by_class.assign(**{"class": [class_words(c) for c in p.by_class["class"]]})
    parts = [_table(f"Critical path (span {p.span_ns / 1000.0:.3f} us; docs/metrics.md "
                    "\"Dependency graph and critical path\")", by_class, CLASS_COLUMNS)]
    lines = [f"Waiting: {w.total_ns / 1000.0:.3f} us in {len(w.table)} waits"]
    if w.main_cause is not None:
        m = w.main_cause
        lines.append(f"  main cause: core {m['waited_for_core']} {m['waited_for_engine']}"
                     + (f" ({m['kernel']})" if m["kernel"] else "")
                     + f", {m['kind']}: {m['ns'] / 1000.0:.3f} us = {100 * m['share']:.1f} % of all waiting")
    for r in w.table[w.table["kind"] != "unattributed"].head(3).to_dict("records"):
        lines.append("  " + describe(r))
    if w.unattributed_ns:
        lines.append(f"  not attributable (no dependency id or barrier explains it): "
                     f"{w.unattributed_ns / 1000.0:.3f} us = {100 * w.unattributed_share:.1f} % of the waiting")
    parts.append("\n".join(lines))
    if not why.what_if.empty:
        parts.append(_table(f"What would help most (top {TOP_WHAT_IF} of {len(why.what_if)} what-if "
                            "scenarios)", why.what_if.head(TOP_WHAT_IF), WHAT_IF_COLUMNS))
    return "\n\n".join(parts)

