"""The critical path of a PMU capture (docs/metrics.md "Dependency graph and critical path").

From the command that ends last, walk back through each command's binding predecessor.  Every
stretch of the walk is one class:

* ``compute`` -- a TIU command's own duration; ``transfer`` -- a GDMA / SDMA / CDMA command's;
* ``dependency`` -- between a descriptor dependency's source end and the dependent's start;
* ``barrier`` -- a barrier wait from the last arrival to its release (core c waited for core d);
* ``gap`` -- an issue / launch gap (a lane or launch edge, or nothing in the graph explains the
  start) and the duration of system commands that are not barrier waits.

The stretches tile the span exactly (their sum is the span).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.analysis.depgraph import DEP, DepGraph, labels_of, last_work_engine
from reportgen.analysis.retime import contiguous, walk
from reportgen.model import ENGINES

CLASSES = ("compute", "transfer", "dependency", "barrier", "gap")
#: columns of ``CriticalPath.stretches`` (latest first)
STRETCH_COLUMNS = ("row", "class", "core", "engine", "start_ns", "end_ns", "ns",
                   "waited_for_core", "waited_for_engine")
#: columns of ``CriticalPath.shares`` (summary.json ``critical_path``)
SHARE_COLUMNS = ("class", "core", "engine", "ns", "share")
TOP_COMMANDS = 20


@dataclass
class CriticalPath:
    span_ns: int
    stretches: pd.DataFrame     # STRETCH_COLUMNS, one per stretch, latest first
    by_class: pd.DataFrame      # class, ns, share (every class, in CLASSES order)
    shares: pd.DataFrame        # SHARE_COLUMNS: per class x core x engine
    by_kernel: pd.DataFrame     # kernel, core, scope, class columns (ns), ns, share
    top_commands: pd.DataFrame  # the longest compute/transfer stretches: row, sheet, ...
    rows: np.ndarray            # commands on the path (any stretch), unique


def critical_path(g: DepGraph, c: pd.DataFrame) -> CriticalPath:
    n = g.n
    if n == 0:
        empty = pd.DataFrame(columns=list(STRETCH_COLUMNS))
        return CriticalPath(0, empty, pd.DataFrame({"class": CLASSES, "ns": 0, "share": 0.0}),
                            pd.DataFrame(columns=list(SHARE_COLUMNS)), pd.DataFrame(),
                            pd.DataFrame(), np.zeros(0, np.int64))
    span_start, last = int(g.start.min()), int(np.argmax(g.end))
    span = int(g.end[last]) - span_start
    node, kind, ek, t0, t1, other = walk(last, span_start, *contiguous(
        g.start, g.end, g.bind, g.bind_kind, g.barrier, g.release_cmd, g.release_kind, g.fallback),
        2 * n + 2)
    # class of each stretch
    own = np.where(g.engine[node] == 0, 0, 1)              # compute / transfer
    own = np.where(g.is_sys[node], 4, own)                 # system commands: gap
    cls = np.select([kind == 0, kind == 2, ek == DEP], [own, 3, 2], 4)
    wf = np.full(len(node), -1, np.int64)
    wfe = np.full(len(node), -1, np.int64)
    bar = kind == 2                                        # waited for the releasing core
    by_end = g.release_kind[g.barrier[node[bar]]] == 1
    wf[bar] = g.core[other[bar]]
    wfe[bar] = np.where(by_end, g.engine[other[bar]], last_work_engine(g, other[bar]))
    dep = (kind == 1) & (ek == DEP)
    wf[dep], wfe[dep] = g.core[other[dep]], g.engine[other[dep]]
    names = np.array([*ENGINES, None], object)
    st = pd.DataFrame({"row": node, "class": np.array(CLASSES, object)[cls],
                       "core": g.core[node], "engine": names[g.engine[node]],
                       "start_ns": t0, "end_ns": t1, "ns": t1 - t0,
                       "waited_for_core": pd.array(np.where(wf >= 0, wf, 0), "Int64"),
                       "waited_for_engine": names[wfe]})
    st.loc[wf < 0, "waited_for_core"] = pd.NA
    st = st[st["ns"] > 0].reset_index(drop=True)
    denom = span if span > 0 else 1
    by_class = (st.groupby("class")["ns"].sum().reindex(list(CLASSES), fill_value=0)
                .rename_axis("class").reset_index())
    by_class["share"] = by_class["ns"] / denom
    shares = st.groupby(["class", "core", "engine"], sort=False, dropna=False)["ns"].sum().reset_index()
    shares["share"] = shares["ns"] / denom
    order = {k: i for i, k in enumerate(CLASSES)}
    shares = shares.sort_values(["class", "core", "engine"], key=lambda s: s.map(order) if s.name == "class" else s,
                                kind="stable").reset_index(drop=True)
    return CriticalPath(span, st, by_class, shares[list(SHARE_COLUMNS)], _by_kernel(st, c, denom),
                        _top_commands(st, c, denom), np.unique(st["row"].to_numpy(np.int64)))


def _by_kernel(st: pd.DataFrame, c: pd.DataFrame, denom: int) -> pd.DataFrame:
    rows = st["row"].to_numpy(np.int64)
    scope = (c["func_scope"].astype("Float64").to_numpy(float, na_value=np.nan)[rows]
             if "func_scope" in c else np.full(len(rows), np.nan))
    t = st.assign(kernel=labels_of(c, "kernel", rows, "(no kernel)"), scope=scope)
    p = t.pivot_table(index=["kernel", "core", "scope"], columns="class", values="ns", aggfunc="sum",
                      fill_value=0, dropna=False, observed=True)
    p = p.reindex(columns=list(CLASSES), fill_value=0)
    p = p[p.sum(axis=1) > 0]
    p["ns"] = p[list(CLASSES)].sum(axis=1)
    p["share"] = p["ns"] / denom
    return p.reset_index().sort_values("ns", ascending=False, kind="stable").reset_index(drop=True)


def _top_commands(st: pd.DataFrame, c: pd.DataFrame, denom: int) -> pd.DataFrame:
    own = st[st["class"].isin(["compute", "transfer"])].nlargest(TOP_COMMANDS, "ns")
    rows = own["row"].to_numpy(np.int64)
    out = pd.DataFrame({"row": rows, "sheet": labels_of(c, "sheet", rows),
                        "global_idx": c["global_idx"].to_numpy()[rows],
                        "func_name": labels_of(c, "func_name", rows),
                        "kernel": labels_of(c, "kernel", rows),
                        "class": own["class"].to_numpy(), "start_ns": own["start_ns"].to_numpy(),
                        "ns": own["ns"].to_numpy()})
    out["share"] = out["ns"] / denom
    return out.reset_index(drop=True)
