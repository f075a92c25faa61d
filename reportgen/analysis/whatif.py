"""What-if: the dependency graph re-timed with some durations scaled (docs/metrics.md
"What-if scenarios").

Every command keeps its edges and its issue gap (start minus its binding predecessor's end); a
command with no predecessor keeps its start.  A scenario multiplies the durations of the
non-system commands it targets by ``1 / factor`` (``factor`` 2: twice as fast); system commands
keep theirs, barrier waits end at their barrier's re-timed release (last arrival) plus their
release latency.  The predicted span is the re-timed latest end minus the earliest start.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.analysis.depgraph import DepGraph, label_codes
from reportgen.analysis.retime import contiguous, retime, topological_order
from reportgen.model import ENGINES

WHAT_IF_COLUMNS = ("rank", "scenario", "kind", "target", "core", "factor", "predicted_span_ns",
                   "gain_ns", "gain_share")
TOP_TARGETS = 10
FACTOR = 2.0


@dataclass
class Scenario:
    scenario: str            # words
    kind: str                # engine | kernel | layer | function_type | balance | barrier
    target: str | None
    core: int | None         # None: all cores
    factor: float | None     # None: barriers free
    speed: np.ndarray | None  # per command duration divisor (None: barrier scenario)


class Retimer:
    """A graph prepared once (in-edges, topological order) and re-timed per scenario."""

    def __init__(self, g: DepGraph):
        self.g = g
        self.indptr, self.preds = g.in_edges()
        self.order = topological_order(g.n, len(g.release_row),
                                       *contiguous(self.indptr, self.preds, g.barrier,
                                                   g.arrive_group, g.start))
        self.dur = g.end - g.start
        self.work = ~g.is_sys
        self.span0 = int(g.end.max() - g.start.min()) if g.n else 0

    def span(self, speed: np.ndarray | None = None, free_barriers: bool = False) -> int:
        """Predicted span with durations divided by ``speed`` (1 = unchanged)."""
        g = self.g
        if not g.n:
            return 0
        dur = self.dur if speed is None else np.where(
            self.work, np.rint(self.dur / speed).astype(np.int64), self.dur)
        barrier, arrive, lat = g.barrier, g.arrive_group, g.lat
        if free_barriers:
            w = barrier >= 0
            dur = np.where(w, np.maximum(lat, 0), dur)
            barrier = arrive = np.full(g.n, -1, np.int64)
        start, end = retime(self.order, g.n, *contiguous(self.indptr, self.preds, g.start, g.gap,
                                                         dur, barrier, arrive, lat))
        return int(end.max() - start.min())


def _speed(mask: np.ndarray, factor: float) -> np.ndarray:
    return np.where(mask, factor, 1.0)


def scenarios(g: DepGraph, c: pd.DataFrame, kernels: pd.DataFrame | None = None,
              layer_of: np.ndarray | None = None, layer_names: list[str] | None = None,
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
        out.append(Scenario(f"{name} {factor:g}x faster", "engine", name, None, factor, _speed(on, factor)))
        for core in cores:
            m = on & (g.core == core)
            if m.any() and len(cores) > 1:
                out.append(Scenario(f"{name} {factor:g}x faster on core {core}", "engine", name,
                                    int(core), factor, _speed(m, factor)))
    for kind, (labels, names) in (("kernel", _col(c, "kernel")),
                                  ("function_type", _col(c, "func_type")),
                                  ("layer", (layer_of, layer_names))):
        if labels is None or not names:
            continue
        for target, mask in _top_targets(labels, dur, work, names):
            out.append(Scenario(f"{_KIND_WORDS[kind]} {target} {factor:g}x faster", kind, target, None,
                                factor, _speed(mask, factor)))
    out += _balance(g, cores, dur, work)
    if len(g.release_row):
        out.append(Scenario("barriers free (no core waits)", "barrier", None, None,
                            None, None))
    return out


_KIND_WORDS = {"kernel": "kernel", "function_type": "Function Type", "layer": "layer"}


def _col(c: pd.DataFrame, name: str):
    """(code per command, -1 unknown; names) of a label column."""
    if name not in c or not c[name].notna().any():
        return None, None
    codes, names = label_codes(c[name])
    return codes, names


def _top_targets(labels, dur, work, names):
    """The TOP_TARGETS labels with the most work time, each with its command mask."""
    ok = (labels >= 0) & work
    tot = np.bincount(labels[ok], weights=dur[ok], minlength=len(names))
    top = np.argsort(-tot, kind="stable")[:TOP_TARGETS]
    return [(str(names[i]), (labels == i) & work) for i in top if tot[i] > 0]


def _balance(g: DepGraph, cores, dur, work) -> list[Scenario]:
    """Each core's work (summed non-system durations) evened out to the median over the cores
    that work: a core above the median has its work scaled down to it."""
    busy = np.array([dur[(g.core == c) & work].sum() for c in cores])
    active = busy > 0
    if active.sum() < 2:
        return []
    med = float(np.median(busy[active]))
    out, every = [], np.ones(g.n)
    for core, b in zip(cores, busy):
        if b > med > 0:
            f = b / med
            m = (g.core == core) & work
            every = np.where(m, f, every)
            out.append(Scenario(f"core {core} evened out to the median work", "balance", None,
                                int(core), round(f, 3), _speed(m, f)))
    if len(out) > 1:
        out.append(Scenario("every core evened out to the median work", "balance", None, None,
                            float(np.max(every)), every))
    return out


def what_if(rt: Retimer, scens: list[Scenario]) -> pd.DataFrame:
    """The ranked "what would help most" table (WHAT_IF_COLUMNS), largest gain first."""
    rows = []
    for s in scens:
        span = rt.span(free_barriers=True) if s.kind == "barrier" else rt.span(s.speed)
        rows.append({"scenario": s.scenario, "kind": s.kind, "target": s.target, "core": s.core,
                     "factor": s.factor, "predicted_span_ns": span, "gain_ns": rt.span0 - span})
    t = pd.DataFrame(rows, columns=list(WHAT_IF_COLUMNS[1:-1]))
    t["gain_share"] = t["gain_ns"] / rt.span0 if rt.span0 else 0.0
    t = t.sort_values("gain_ns", ascending=False, kind="stable").reset_index(drop=True)
    t.insert(0, "rank", np.arange(1, len(t) + 1))
    t["core"] = t["core"].astype(object).where(t["core"].notna(), None)
    t["target"] = t["target"].astype(object).where(t["target"].notna(), None)
    return t
