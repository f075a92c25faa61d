"""What-if: the dependency graph re-timed with some durations scaled (docs/metrics.md
"What-if scenarios").

Every command keeps its edges and its issue gap (start minus its binding predecessor's end); a
command with no predecessor keeps its start.  A scenario divides the durations of the
non-system commands it targets by ``factor`` (2: twice as fast); system commands keep theirs,
barrier waits end at their barrier's re-timed release (last arrival) plus their release
latency.  The predicted span is the re-timed latest end minus the earliest start.

A scenario is a table of factors over one grouping of the commands (engine x core, core,
kernel, Function Type, layer): the graph is laid out once in topological order
(:class:`Retimer`) and each scenario is one compiled pass over it (analysis/retime.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.analysis.depgraph import DepGraph, label_codes
from reportgen.analysis.retime import contiguous, retime_spans, topological_order
from reportgen.model import ENGINES

WHAT_IF_COLUMNS = ("rank", "scenario", "kind", "target", "core", "factor", "predicted_span_ns",
                   "gain_ns", "gain_share")
TOP_TARGETS = 10
FACTOR = 2.0
#: scenarios re-timed together in one pass (their ends side by side: BATCH x 8 bytes per node)
BATCH = 8
_KIND_WORDS = {"kernel": "kernel", "function_type": "Function Type", "layer": "layer"}


@dataclass
class Scenario:
    scenario: str            # words
    kind: str                # engine | kernel | layer | function_type | balance | barrier
    target: str | None
    core: int | None         # None: all cores
    factor: float | None     # None: barriers free
    groups: str = ""         # Retimer.groups key the table is indexed by ("": barriers free)
    table: np.ndarray | None = None   # duration divisor per group


def label_groups(c: pd.DataFrame, layer_of: np.ndarray | None = None) -> dict:
    """(code per command, -1 unknown; names) of every label a scenario may target."""
    out = {}
    for kind, col in (("kernel", "kernel"), ("function_type", "func_type")):
        if col in c and c[col].notna().any():
            out[kind] = label_codes(c[col])
    if layer_of is not None:
        out["layer"] = (np.asarray(layer_of, np.int64), None)
    return out


class Retimer:
    """A graph laid out once in topological order, re-timed per scenario."""

    def __init__(self, g: DepGraph, labels: dict | None = None):
        self.g = g
        n, n_groups = g.n, len(g.release_row)
        indptr, preds = g.in_edges()
        order = topological_order(n, n_groups, *contiguous(indptr, preds, g.barrier, g.arrive_group,
                                                           np.argsort(g.start, kind="stable")))
        total = n + n_groups
        pos = np.empty(total, np.int64)
        pos[order] = np.arange(total)
        self.is_release = order >= n
        cmd = np.where(self.is_release, 0, order)          # command of each position
        on = ~self.is_release
        releases = np.flatnonzero(self.is_release)          # a few: one per barrier

        def lay(a, fill=0):
            out = a[cmd].astype(np.int64, copy=False)
            out[releases] = fill
            return out

        counts = np.where(on, np.diff(indptr)[cmd], 0)
        self.indptr = np.zeros(total + 1, np.int64)
        np.cumsum(counts, out=self.indptr[1:])
        first = np.repeat(indptr[cmd] - self.indptr[:-1], counts)
        self.preds = pos[preds[first + np.arange(self.indptr[-1])]] if len(preds) else np.zeros(0, np.int64)
        self.start0, self.gap, self.lat = lay(g.start), lay(g.gap), lay(g.lat)
        self.dur = lay(g.end - g.start)
        # node indexes as int32: the pass reads less memory (captures stay far below 2^31 nodes)
        self.indptr, self.preds = self.indptr.astype(np.int32), self.preds.astype(np.int32)
        def barrier_node(b):                               # position of barrier b, -1 none
            out = np.full(n, -1, np.int64)
            out[b >= 0] = pos[n + b[b >= 0]]
            return out

        self.release_of = lay(barrier_node(g.barrier), -1).astype(np.int32)
        self.arrive_at = lay(barrier_node(g.arrive_group), -1).astype(np.int32)
        self.waits = np.flatnonzero(self.release_of >= 0)
        work = ~g.is_sys & (g.engine >= 0)
        self.ncores = int(g.core.max()) + 1 if n else 1
        keys = {"engine_core": np.where(work, np.maximum(g.engine, 0) * self.ncores + g.core, -1),
                "core": np.where(work, g.core, -1)}
        for kind, (codes, _) in (labels or {}).items():
            keys[kind] = np.where(work, codes, -1)
        self.groups = {k: lay(v, -1).astype(np.int32) for k, v in keys.items()}
        self.span0 = int(g.end.max() - g.start.min()) if n else 0

    def spans(self, groups: str, tables: np.ndarray, free_barriers: bool = False,
              buffer: np.ndarray | None = None) -> np.ndarray:
        """Predicted spans, one per row of ``tables`` (duration divisors over ``groups``);
        ``buffer``: a (nodes, >= rows) int64 array to work in (reused across calls)."""
        if not self.g.n:
            return np.zeros(len(tables), np.int64)
        if buffer is None or buffer.shape[1] < len(tables):
            buffer = np.empty((len(self.is_release), len(tables)), np.int64)
        group = self.groups.get(groups)
        if group is None:
            group = np.full(len(self.is_release), -1, np.int32)
        smin, emax = retime_spans(self.is_release, self.indptr, self.preds, self.start0, self.gap,
                                  self.dur, group, np.ascontiguousarray(tables, np.float64),
                                  self.release_of, self.arrive_at, self.lat, self.waits, free_barriers,
                                  buffer)
        return emax - smin

    def span(self, groups: str = "core", table: np.ndarray | None = None,
             free_barriers: bool = False) -> int:
        """Predicted span with durations divided by ``table`` over ``groups`` (None: unchanged)."""
        if table is None:
            groups, table = "none", np.ones(1)
        return int(self.spans(groups, np.asarray(table, np.float64)[None, :], free_barriers)[0])

    def engine_table(self, engine: int, core: int | None, factor: float) -> np.ndarray:
        t = np.ones(len(ENGINES) * self.ncores)
        if core is None:
            t[engine * self.ncores:(engine + 1) * self.ncores] = factor
        else:
            t[engine * self.ncores + core] = factor
        return t


def _table(size: int, at, factor: float) -> np.ndarray:
    t = np.ones(max(size, 1))
    t[at] = factor
    return t


def scenarios(g: DepGraph, rt: Retimer, labels: dict, layer_names: list[str] | None = None,
              factor: float = FACTOR) -> list[Scenario]:
    """The standard scenarios of a capture (issue order): each engine 2x faster on all cores and
    on each core alone; the top kernels, layers and Function Types 2x faster; each core's work
    evened out to the median; barriers free."""
    out: list[Scenario] = []
    cores = np.unique(g.core)
    dur = (g.end - g.start).astype(float)
    work = ~g.is_sys
    for e, name in enumerate(ENGINES):
        on = (g.engine == e) & work
        if not on.any():
            continue
        out.append(Scenario(f"{name} {factor:g}x faster", "engine", name, None, factor, "engine_core",
                            rt.engine_table(e, None, factor)))
        if len(cores) > 1:
            for core in np.unique(g.core[on]):
                out.append(Scenario(f"{name} {factor:g}x faster on core {core}", "engine", name,
                                    int(core), factor, "engine_core", rt.engine_table(e, int(core), factor)))
    for kind in ("kernel", "function_type", "layer"):
        if kind not in labels:
            continue
        codes, names = labels[kind]
        names = layer_names if kind == "layer" else names
        if not names:
            continue
        for i in _top_targets(codes, dur, work, len(names)):
            out.append(Scenario(f"{_KIND_WORDS[kind]} {names[i]} {factor:g}x faster", kind, str(names[i]),
                                None, factor, kind, _table(len(names), i, factor)))
    out += _balance(g, rt, cores, dur, work)
    if len(g.release_row):
        out.append(Scenario("barriers free (no core waits)", "barrier", None, None, None))
    return out


def _top_targets(codes, dur, work, size: int) -> list[int]:
    """The TOP_TARGETS labels with the most work time."""
    ok = (codes >= 0) & work
    tot = np.bincount(codes[ok], weights=dur[ok], minlength=size)
    return [int(i) for i in np.argsort(-tot, kind="stable")[:TOP_TARGETS] if tot[i] > 0]


def _balance(g: DepGraph, rt: Retimer, cores, dur, work) -> list[Scenario]:
    """Each core's work (summed non-system durations) evened out to the median over the cores
    that work: a core above the median has its work scaled down to it."""
    busy = np.bincount(g.core[work], weights=dur[work], minlength=rt.ncores)[cores]
    active = busy > 0
    if active.sum() < 2:
        return []
    med = float(np.median(busy[active]))
    out, every = [], np.ones(rt.ncores)
    for core, b in zip(cores, busy):
        if b > med > 0:
            f = b / med
            every[core] = f
            out.append(Scenario(f"core {core} evened out to the median work", "balance", None,
                                int(core), round(f, 3), "core", _table(rt.ncores, core, f)))
    if len(out) > 1:
        out.append(Scenario("every core evened out to the median work", "balance", None, None,
                            float(np.max(every)), "core", every))
    return out


def what_if(rt: Retimer, scens: list[Scenario]) -> pd.DataFrame:
    """The ranked "what would help most" table (WHAT_IF_COLUMNS), largest gain first."""
    span = np.zeros(len(scens), np.int64)
    buffer = np.empty((len(rt.is_release), min(BATCH, max(len(scens), 1))), np.int64)
    for key in dict.fromkeys(s.groups for s in scens):       # one pass per BATCH of a grouping
        idx = [i for i, s in enumerate(scens) if s.groups == key]
        for lo in range(0, len(idx), BATCH):
            part = idx[lo:lo + BATCH]
            if key == "":
                span[part] = rt.span(free_barriers=True)
            else:
                span[part] = rt.spans(key, np.stack([scens[i].table for i in part]), buffer=buffer)
    rows = [{"scenario": s.scenario, "kind": s.kind, "target": s.target, "core": s.core,
             "factor": s.factor, "predicted_span_ns": int(p), "gain_ns": rt.span0 - int(p)}
            for s, p in zip(scens, span)]
    t = pd.DataFrame(rows, columns=list(WHAT_IF_COLUMNS[1:-1]))
    t["gain_share"] = t["gain_ns"] / rt.span0 if rt.span0 else 0.0
    t = t.sort_values("gain_ns", ascending=False, kind="stable").reset_index(drop=True)
    t.insert(0, "rank", np.arange(1, len(t) + 1))
    t["core"] = t["core"].astype(object).where(t["core"].notna(), None)
    t["target"] = t["target"].astype(object).where(t["target"].notna(), None)
    return t
