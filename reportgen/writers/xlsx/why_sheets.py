"""The "Critical Path" and "What-if" sheets (``Diagnosis.why`` as computed; definitions in
docs/metrics.md "Dependency graph and critical path" and "What-if scenarios")."""
from __future__ import annotations

import pandas as pd

NS, PCT = "#,##0", "0.0%"

CRITICAL_PATH = [
    ("Class", "class", None, "compute (TIU), transfer (GDMA/SDMA/CDMA), dependency, barrier, gap "
     "(docs/metrics.md \"Dependency graph and critical path\")."),
    ("Core", "core", "0", "Overall = the whole path; else the core whose command (or wait) the stretch is."),
    ("Engine", "engine", None, ""),
    ("On the path (ns)", "ns", NS, "Summed stretches of the critical path."),
    ("Share of span", "share", PCT, "On the path / span; the classes add up to 100 %."),
]
WHAT_IF = [
    ("Rank", "rank", "0", "Largest gain first."),
    ("Scenario", "scenario", None, "Durations scaled, edges and issue gaps kept (docs/metrics.md \"What-if scenarios\")."),
    ("Kind", "kind", None, "engine, kernel, layer, function_type, balance or barrier."),
    ("Target", "target", None, ""), ("Core", "core", "0", "Empty: all cores."),
    ("Factor", "factor", "0.00", "Durations divided by this (empty: barriers removed)."),
    ("Predicted span (ns)", "predicted_span_ns", NS, "Span of the re-timed graph."),
    ("Gain (ns)", "gain_ns", NS, "Span minus predicted span."),
    ("Gain (% of span)", "gain_share", PCT, ""),
]
FINDING_GAINS = [
    ("Est. gain (ns)", "gain_ns", NS, "Span saved by the what-if scenario that removes the finding's cause."),
    ("Est. gain (% of span)", "gain_share", PCT, ""),
    ("Gain scenario", "gain_scenario", None, "That scenario (the What-if sheet lists them all)."),
]


def path_table(why) -> pd.DataFrame:
    """The path's shares: one Overall row per class, then per class x core x engine."""
    total = why.path.by_class.assign(core="Overall", engine=None)
    rows = why.path.shares.astype({"core": object})
    return pd.concat([total[["class", "core", "engine", "ns", "share"]], rows], ignore_index=True)


def why_sheets(why) -> list[tuple[str, pd.DataFrame, list]]:
    if why is None:
        return []
    return [("Critical Path", path_table(why), CRITICAL_PATH), ("What-if", why.what_if, WHAT_IF)]
