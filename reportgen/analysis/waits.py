"""Waiting explained: who every system wait and every dependency stall waited for, and how long
(docs/metrics.md "Dependency graph and critical path").

* a **barrier wait** waited from its own start until the last core arrived (the barrier's
  release): ``waited_for_core`` is that core, ``waited_for_engine`` the engine of its last
  command to finish (the command that released the barrier, or the last work before its wait);
* a **dependency stall**: a command whose binding predecessor is its descriptor dependency
  waited from its lane predecessor's end (or its own launch) until the source ended;
* any other system wait is **unattributed** (``waited_for_*`` unknown): nothing in the graph
  says what released it (all system waits of a capture without descriptor ids or barriers).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.analysis.depgraph import DEP, DepGraph, labels_of, last_work_engine
from reportgen.model import ENGINES

WAIT_COLUMNS = ("row", "kind", "core", "engine", "kernel", "start_ns", "ns", "waited_for_core",
                "waited_for_engine", "waited_for_row")


@dataclass
class Waits:
    table: pd.DataFrame        # WAIT_COLUMNS, longest first
    total_ns: int              # all waiting (barrier + dependency + unattributed)
    unattributed_ns: int
    main_cause: dict | None    # the (waited_for_core, waited_for_engine, kernel) with most ns

    @property
    def unattributed_share(self) -> float:
        return self.unattributed_ns / self.total_ns if self.total_ns else 0.0


def waits(g: DepGraph, c: pd.DataFrame) -> Waits:
    names = np.array([*ENGINES, None], object)
    parts = []
    # barrier waits
    b = np.flatnonzero(g.barrier >= 0)
    if len(b):
        grp = g.barrier[b]
        r = g.release_cmd[grp]
        engine = np.where(g.release_kind[grp] == 1, g.engine[r], last_work_engine(g, r))
        parts.append(("barrier", b, np.maximum(g.release_ns[grp] - g.start[b], 0), g.core[r], engine, r))
    # dependency stalls
    d = np.flatnonzero(g.bind_kind == DEP)
    if len(d):
        lp = g.lane_pred[d]
        ready = np.where(lp >= 0, g.end[np.maximum(lp, 0)], g.start[d])
        src = g.bind[d]
        ns = np.maximum(np.minimum(g.end[src], g.start[d]) - ready, 0)
        keep = ns > 0
        d, ns, src = d[keep], ns[keep], src[keep]
        parts.append(("dependency", d, ns, g.core[src], g.engine[src], src))
    # other system waits
    u = np.flatnonzero(g.sys_wait & (g.barrier < 0))
    if len(u):
        parts.append(("unattributed", u, g.end[u] - g.start[u], np.full(len(u), -1),
                      np.full(len(u), -1), np.full(len(u), -1)))
    if not parts:
        return Waits(pd.DataFrame(columns=list(WAIT_COLUMNS)), 0, 0, None)
    frames = []
    for kind, rows, ns, wcore, weng, wrow in parts:
        frames.append(pd.DataFrame({
            "row": rows, "kind": kind, "core": g.core[rows], "engine": names[g.engine[rows]],
            "kernel": labels_of(c, "kernel", rows),
            "start_ns": g.start[rows], "ns": ns.astype(np.int64),
            "waited_for_core": pd.array(np.where(wcore >= 0, wcore, 0), "Int64"),
            "waited_for_engine": names[weng], "waited_for_row": wrow}))
        frames[-1].loc[wcore < 0, "waited_for_core"] = pd.NA
    t = pd.concat(frames, ignore_index=True)
    t = t[t["ns"] > 0].sort_values("ns", ascending=False, kind="stable").reset_index(drop=True)
    total = int(t["ns"].sum())
    unatt = int(t.loc[t["kind"] == "unattributed", "ns"].sum())
    att = t[t["kind"] != "unattributed"]
    main = None
    if len(att):
        grp = att.groupby(["kind", "waited_for_core", "waited_for_engine", "kernel"], dropna=False,
                          sort=False)["ns"].agg(["sum", "size", "max"])
        i = int(np.argmax(grp["sum"].to_numpy()))
        (kind, wc, we, k), top = grp.index[i], grp.iloc[i]
        main = {"kind": kind, "waited_for_core": int(wc), "waited_for_engine": we,
                "kernel": k if isinstance(k, str) else None, "ns": int(top["sum"]),
                "waits": int(top["size"]), "max_ns": int(top["max"]), "share": float(top["sum"] / total)}
    return Waits(t[list(WAIT_COLUMNS)], total, unatt, main)


def describe(row) -> str:
    """One sentence for a wait row: "core 3 TIU waited 2.100 us at the barrier of K for core 0,
    whose GDMA finished last"."""
    return _sentence(*(row[k] for k in _SAID))


def describe_all(table: pd.DataFrame) -> list[str]:
    """:func:`describe` of every row of a waits table, without a row dict per row (the page's
    clickable waits: up to 20,000 rows, 5x faster)."""
    return [_sentence(*values) for values in zip(*(table[k].tolist() for k in _SAID))]


#: the columns a wait's sentence says, in :func:`_sentence`'s order
_SAID = ("kind", "core", "engine", "ns", "kernel", "waited_for_core", "waited_for_engine")


def _sentence(kind, core, engine, ns, kernel, waited_for_core, waited_for_engine) -> str:
    us = f"{ns / 1000.0:.3f} us"
    who = f"core {core} {engine}"
    if kind == "barrier":
        where = f" of {kernel}" if kernel else ""
        return (f"{who} waited {us} at the barrier{where} for core {waited_for_core}, "
                f"whose {waited_for_engine} finished last")
    if kind == "dependency":
        return (f"{who} waited {us} for core {waited_for_core} "
                f"{waited_for_engine} (descriptor dependency)")
    return f"{who} waited {us}; nothing in the capture says for what"
