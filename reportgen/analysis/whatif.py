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
from reportgen.analysis.retime import contiguous, node_index_dtype, retime_spans, topological_order
from reportgen.model import ENGINES

WHAT_IF_COLUMNS = ("rank", "scenario", "kind", "target", "core", "factor", "predicted_span_ns",
                   "gain_ns", "gain_share")
TOP_TARGETS = 10
FACTOR = 2.0
#: scenarios re-timed together in one pass at most (their ends side by side: 8 bytes per node
#: each) ...
BATCH = 8
#: ... and as many as fit in this many bytes of ends (at least one): one pass per scenario
#: reads the layout (~50 bytes per node) once, so the batch matters while it is small; beyond
#: a few million nodes the buffer, not the passes, would set the analysis' peak memory
BATCH_BYTES = 96 << 20
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
    """(code per command, -1 unknown; names) of every label a scenario may target (a
    category's own codes, int8/int16 mostly: not widened to int64 beside the graph)."""
    out = {}
    for kind, col in (("kernel", "kernel"), ("function_type", "func_type")):
        if col in c and c[col].notna().any():
            s = c[col]
            out[kind] = ((s.cat.codes.to_numpy(), [str(x) for x in s.cat.categories])
                         if isinstance(s.dtype, pd.CategoricalDtype) else label_codes(s))
    if layer_of is not None:
        out["layer"] = (np.asarray(layer_of, np.int64), None)
    return out


def _barrier_positions(barrier: np.ndarray, pos: np.ndarray, n: int, index) -> np.ndarray:
    """Per command, the laid-out position of barrier ``barrier[i]`` (node n + b), -1 for none."""
    out = np.full(n, -1, index)
    out[barrier >= 0] = pos[n + barrier[barrier >= 0]]
    return out


class Retimer:
    """A graph laid out once in topological order, re-timed per scenario."""

    def __init__(self, g: DepGraph, labels: dict | None = None):
        self.n = n = g.n
        n_groups = len(g.release_row)
        indptr, preds = g.in_edges()
        order = topological_order(n, n_groups, *contiguous(indptr, preds, g.barrier, g.arrive_group,
                                                           np.argsort(g.start, kind="stable")))
        total = n + n_groups
        # node indexes as int32 (captures stay far below 2^31 nodes): the pass reads less
        # memory, and the layout's temporaries are half as large
        index = node_index_dtype(total + len(preds))
        pos = np.empty(total, index)
        pos[order] = np.arange(total, dtype=index)
        self.is_release = order >= n
        cmd = np.where(self.is_release, 0, order).astype(index)      # command of each position
        del order
        releases = np.flatnonzero(self.is_release)          # a few: one per barrier

        def lay(a, fill=0, dtype=np.int64):
            out = a[cmd].astype(dtype, copy=False)
            out[releases] = fill
            return out

        counts = np.diff(indptr)[cmd]
        counts[releases] = 0
        self.indptr = np.zeros(total + 1, np.int64)
        np.cumsum(counts, out=self.indptr[1:])
        if len(preds):
            # each position's predecessors, read from the command's CSR slice
            first = np.repeat((indptr[cmd] - self.indptr[:-1]).astype(np.int64), counts)
            first += np.arange(self.indptr[-1])
            del counts
            self.preds = pos[preds[first]]
            del first
        else:
            self.preds = np.zeros(0, index)
        del indptr, preds
        self.indptr = self.indptr.astype(index)
        # times from the earliest start (a span does not move with its origin), int32 when
        # every one fits (~16 bytes per node less read by each pass), else int64
        base = int(g.start.min()) if n else 0
        times = time_dtype(g, base)
        self.start0 = lay(g.start - base, 0, times)
        self.dur = lay(g.end - g.start, 0, times)
        self.gap, self.lat = lay(g.gap, 0, times), lay(g.lat, 0, times)

        # position of each command's barrier (-1: none), for its wait and for its arrival
        self.release_of = lay(_barrier_positions(g.barrier, pos, n, index), -1, index)
        self.arrive_at = lay(_barrier_positions(g.arrive_group, pos, n, index), -1, index)
        del pos
        self.waits = np.flatnonzero(self.release_of >= 0)
        work = ~g.is_sys & (g.engine >= 0)
        self.ncores = int(g.core.max()) + 1 if n else 1
        keys = {"engine_core": lambda: np.where(work, np.maximum(g.engine, 0) * self.ncores + g.core, -1),
                "core": lambda: np.where(work, g.core, -1)}
        for kind, (codes, _) in (labels or {}).items():
            keys[kind] = lambda codes=codes: np.where(work, codes, -1)
        # one grouping at a time: its int64 temporary is freed before the next one is made
        self.groups = {k: lay(make(), -1, np.int32) for k, make in keys.items()}
        self.span0 = int(g.end.max() - g.start.min()) if n else 0

    def spans(self, groups: str, tables: np.ndarray, free_barriers: bool = False,
              buffer: np.ndarray | None = None) -> np.ndarray:
        """Predicted spans, one per row of ``tables`` (duration divisors over ``groups``);
        ``buffer``: a (nodes, >= rows) int64 array to work in (reused across calls)."""
        if not self.n:
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


def time_dtype(g: DepGraph, base: int):
    """int32 when the re-timing's times all fit it: starts from ``base``, durations, gaps and
    barrier latencies (a capture shorter than 2.1 s without larger gaps); int64 otherwise.
    The pass adds them in int64 whatever they are stored as."""
    if not g.n:
        return np.int32
    lim = np.iinfo(np.int32)
    dur = g.end - g.start
    lows = (0, int(dur.min()), int(g.gap.min()), int(g.lat.min()))
    highs = (int(g.start.max()) - base, int(dur.max()), int(g.gap.max()), int(g.lat.max()))
    return np.int32 if min(lows) > lim.min and max(highs) < lim.max else np.int64


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


def batch_size(nodes: int, scenarios: int, budget: int | None = None) -> int:
    """Scenarios per pass: BATCH at most, no more than there are, and within ``budget`` bytes
    of ends (BATCH_BYTES; at least one)."""
    budget = BATCH_BYTES if budget is None else budget
    return max(1, min(BATCH, scenarios, budget // (8 * max(nodes, 1))))


def what_if(rt: Retimer, scens: list[Scenario]) -> pd.DataFrame:
    """The ranked "what would help most" table (WHAT_IF_COLUMNS), largest gain first."""
    span = np.zeros(len(scens), np.int64)
    batch = batch_size(len(rt.is_release), len(scens))
    buffer = np.empty((len(rt.is_release), batch), np.int64)
    for key in dict.fromkeys(s.groups for s in scens):       # one pass per batch of a grouping
        idx = [i for i, s in enumerate(scens) if s.groups == key]
        for lo in range(0, len(idx), batch):
            part = idx[lo:lo + batch]
            if key == "":
                span[part] = rt.spans("none", np.ones((1, 1)), free_barriers=True, buffer=buffer)[0]
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
