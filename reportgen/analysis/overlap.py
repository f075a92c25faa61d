"""Per core: how TIU and DMA time overlap, what the idle time waits on, and data-bound stretches.

Three unions per core inside the profile's wall window (the engine summary's span): T = TIU
work, D = DMA work (GDMA ∪ SDMA; CDMA belongs to ports) and S = system commands of those
engines. Every figure is a union length: both = |T| + |D| − |T ∪ D|, TIU only = |T| − both,
DMA only = |D| − both, idle = span − |T ∪ D|, waiting = |S ∪ T ∪ D| − |T ∪ D| (system commands
while neither works). The four parts add up to the span, so unlike the vendor's Concurrency
nothing here can be negative (docs/metrics.md "Diagnosis").

A data-bound stretch lies in a gap of T, so only the gaps of T at least the rule's length are
searched for the D pieces inside them.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.rules import RULES
from reportgen.analysis.unions import merged
from reportgen.model import ENGINES, OVERLAP_COLUMNS, STRETCH_COLUMNS

TIU, GDMA, SDMA = (ENGINES.index(e) for e in ("TIU", "GDMA", "SDMA"))
#: attribution of the time when the engines are not overlapped: column -> label of ``bound``
BOUND_LABELS = {"tiu_only_ns": "compute-bound", "dma_only_ns": "data-bound", "waiting_ns": "waiting"}


def _length(pieces: tuple[np.ndarray, np.ndarray]) -> int:
    return int((pieces[1] - pieces[0]).sum())


def _union(*sets: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return merged(np.concatenate([p[0] for p in sets]), np.concatenate([p[1] for p in sets]))


def _stretches(core: int, t: tuple, d: tuple, t0: int, t1: int, span: int) -> list[dict]:
    """Maximal data-bound intervals (D pieces inside gaps of T) at least the rule's share of
    the span long."""
    least = RULES["dma_bound_stretch"].threshold * span
    gap_start = np.concatenate([[t0], t[1]])
    gap_end = np.concatenate([t[0], [t1]])
    out = []
    for g0, g1 in zip(gap_start[gap_end - gap_start >= least], gap_end[gap_end - gap_start >= least]):
        lo, hi = np.searchsorted(d[1], g0, "right"), np.searchsorted(d[0], g1, "left")
        s, e = np.maximum(d[0][lo:hi], g0), np.minimum(d[1][lo:hi], g1)
        for a, b in zip(s[e - s >= least], e[e - s >= least]):
            out.append({"core": core, "start_ns": int(a), "end_ns": int(b), "length_ns": int(b - a),
                        "share_span": (b - a) / span})
    return out


def overlap(a: dict[str, np.ndarray], ncores: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(overlap per core + Overall, data-bound stretches) of the command arrays ``a``."""
    if not len(a["start"]) or not ncores:
        return pd.DataFrame(columns=list(OVERLAP_COLUMNS)), pd.DataFrame(columns=list(STRETCH_COLUMNS))
    t0, t1 = int(a["start"].min()), int(a["end"].max())
    span = t1 - t0
    by_core = np.argsort(a["core"], kind="stable")
    bounds = np.searchsorted(a["core"][by_core], np.arange(ncores + 1))
    work, eng = ~a["is_sys"], a["engine"]
    sets = {"tiu": work & (eng == TIU), "dma": work & ((eng == GDMA) | (eng == SDMA)),
            "sys": ~work & (eng >= TIU) & (eng <= SDMA)}
    tiu_modelled = sets["tiu"] & a["modelled"]
    rows, stretches = [], []
    for core in range(ncores):
        idx = by_core[bounds[core]:bounds[core + 1]]
        t, d, s = (merged(a["start"][idx[m[idx]]], a["end"][idx[m[idx]]])
                   for m in (sets["tiu"], sets["dma"], sets["sys"]))
        tiu_ns, dma_ns = _length(t), _length(d)
        either = _length(_union(t, d))
        both = tiu_ns + dma_ns - either
        m = idx[tiu_modelled[idx]]
        rows.append({"core": core, "span_ns": span, "tiu_busy_ns": tiu_ns, "dma_busy_ns": dma_ns,
                     "both_ns": both, "tiu_only_ns": tiu_ns - both, "dma_only_ns": dma_ns - both,
                     "idle_ns": span - either, "waiting_ns": _length(_union(t, d, s)) - either,
                     "tiu_alg_cycles": float(a["alg_cycle"][m].sum()) if len(m) else float("nan"),
                     "tiu_asic_cycles": int(a["cycles"][m].sum())})
        stretches += _stretches(core, t, d, t0, t1, span)
    out = pd.DataFrame(rows).astype({"core": object})
    # Overall: every core's parts added up, against span x cores (so the parts still add up)
    total = out.drop(columns="core").sum(min_count=1)
    out.loc[len(out)] = {"core": "Overall", **total.to_dict()}
    attributed = out[list(BOUND_LABELS)].to_numpy(float)
    out["bound"] = np.where(attributed.max(axis=1) > 0,
                            np.array(list(BOUND_LABELS.values()), object)[attributed.argmax(axis=1)], "")
    shorter = np.minimum(out["tiu_busy_ns"], out["dma_busy_ns"]).to_numpy(float)
    out["concurrency"] = np.divide(out["both_ns"].to_numpy(float), shorter,
                                   out=np.full(len(out), np.nan), where=shorter > 0)
    out["alg_cycle_ratio"] = np.divide(out["tiu_alg_cycles"].to_numpy(float),
                                       out["tiu_asic_cycles"].to_numpy(float),
                                       out=np.full(len(out), np.nan), where=out["tiu_asic_cycles"] > 0)
    return (out[list(OVERLAP_COLUMNS)],
            pd.DataFrame(stretches, columns=list(STRETCH_COLUMNS)))
