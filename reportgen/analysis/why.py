"""Why is it slow, and what would help (docs/metrics.md "Dependency graph and critical path"):
the dependency graph, its critical path, every wait explained, the what-if table, and each
finding's estimated gain.  Called once by ``analysis.diagnosis``; every output reads
``Diagnosis.why``."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen import heap
from reportgen.analysis.critical_path import CLASSES, CriticalPath, critical_path
from reportgen.analysis.depgraph import DepGraph, build_graph
from reportgen.analysis.waits import Waits, waits
from reportgen.analysis.whatif import Retimer, label_groups, scenarios, what_if
from reportgen.model import Profile


@dataclass
class Why:
    graph: DepGraph
    path: CriticalPath
    waits: Waits
    what_if: pd.DataFrame     # whatif.WHAT_IF_COLUMNS, largest gain first
    retimer: Retimer | None   # None after drop_working_state
    labels: dict              # kind -> (None, names) of the labels scenarios may target ({} after it)
    path_by_layer: pd.DataFrame | None = None   # layer captures: the path's time per layer

    @property
    def span_ns(self) -> int:
        return self.path.span_ns

    def drop_working_state(self) -> None:
        """Free what only the analysis reads (the re-timing layout, the label codes, the graph's
        working arrays) once the findings' gains are known: no output reads them, and the
        forked writers would inherit them (about 160 bytes per command)."""
        self.retimer, self.labels, self.graph = None, {}, self.graph.for_outputs()

    def scenario(self, kind: str, target=None, core=None) -> dict | None:
        """The what-if row of a scenario (None when it was not evaluated)."""
        t = self.what_if
        m = (t["kind"] == kind) & _eq(t["target"], target) & _eq(t["core"], core)
        return t[m].iloc[0].to_dict() if m.any() else None


def _eq(col: pd.Series, v) -> np.ndarray:
    if v is None:
        return col.isna().to_numpy()
    return (col.astype(object) == v).to_numpy()


def _layers(profile: Profile):
    lv = profile.layer_view
    if lv is None or lv.layers is None or lv.layers.empty:
        return None, None
    t = lv.layers
    names = [f"line {int(a)} {b}" for a, b in zip(t["file_line"], t["opcode"])]
    return np.asarray(lv.command_layer, np.int64), names


def explain(profile: Profile) -> Why:
    """The analysis in the order that frees each part's working state before the next one
    builds its own (the largest is the re-timing layout, beside the graph it is laid out from):
    the path and the waits walk the graph; the re-timing needs only its edges and times; the
    what-if passes only the layout."""
    c = profile.commands
    g = build_graph(c)
    path = critical_path(g, c)
    waited = waits(g, c)
    g = g.for_retiming()
    heap.release_free_memory()     # the walk's freed temporaries: not to be reused in pieces
    layer_of, layer_names = _layers(profile)
    labels = label_groups(c, layer_of)
    rt = Retimer(g, labels)
    scens = scenarios(g, rt, labels, layer_names)
    g, labels = g.for_outputs(), _names_only(labels)
    heap.release_free_memory()
    table = what_if(rt, scens)
    return Why(graph=g, path=path, waits=waited, what_if=table, retimer=rt, labels=labels,
               path_by_layer=_path_by_layer(path, layer_of, layer_names))


def _names_only(labels: dict) -> dict:
    """The label names without their per-command codes (laid out in the Retimer by then):
    what finding_gains reads to name a scenario outside the standard table."""
    return {kind: (None, names) for kind, (_, names) in labels.items()}


def _path_by_layer(path: CriticalPath, layer_of, names) -> pd.DataFrame | None:
    """The path's ns per layer and class (a stretch counts for its command's layer; commands
    without a layer under "(no layer)"), longest first."""
    if layer_of is None or path.stretches.empty:
        return None
    st = path.stretches
    k = layer_of[st["row"].to_numpy(np.int64)]
    label = np.array(list(names) + ["(no layer)"], object)[np.where(k >= 0, k, len(names))]
    t = st.assign(layer=label).pivot_table(index="layer", columns="class", values="ns", aggfunc="sum",
                                           fill_value=0, observed=True)
    t = t.reindex(columns=list(CLASSES), fill_value=0)
    t["ns"] = t.sum(axis=1)
    t["share"] = t["ns"] / max(path.span_ns, 1)
    return t.reset_index().sort_values("ns", ascending=False, kind="stable").reset_index(drop=True)
