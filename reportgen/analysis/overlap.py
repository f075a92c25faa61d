"""Per core: how TIU and DMA time overlap, what the idle time waits on, and data-bound stretches.

The profile's wall window (the engine summary's span) is cut at every edge of three unions per
core: TIU work, DMA work (GDMA ∪ SDMA; CDMA belongs to ports) and system commands of those
engines. Each elementary segment is then both / TIU only / DMA only / neither, and "neither" is
"waiting" where a system command runs. The four parts add up to the span, so unlike the
vendor's Concurrency nothing here can be negative (docs/metrics.md "Diagnosis").
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.rules import RULES
from reportgen.analysis.unions import covered, merged, sorted_unique
from reportgen.model import ENGINES, OVERLAP_COLUMNS, STRETCH_COLUMNS

TIU, GDMA, SDMA = (ENGINES.index(e) for e in ("TIU", "GDMA", "SDMA"))
#: attribution of the time when the engines are not overlapped: column -> label of ``bound``
BOUND_LABELS = {"tiu_only_ns": "compute-bound", "dma_only_ns": "data-bound", "waiting_ns": "waiting"}


def _div(a: float, b: float) -> float:
    return float(a) / float(b) if b else float("nan")


def _segments(a, rows: np.ndarray, t0: int, t1: int):
    """Elementary segments of [t0, t1) of one core and the TIU / DMA / system flag of each."""
    eng, work = a["engine"][rows], ~a["is_sys"][rows]
    s, e = a["start"][rows], a["end"][rows]
    sets = {"tiu": work & (eng == TIU), "dma": work & ((eng == GDMA) | (eng == SDMA)),
            "sys": ~work & (eng != -1) & (eng <= SDMA)}
    pieces = {k: merged(s[m], e[m]) for k, m in sets.items()}
    edges = sorted_unique(np.concatenate([[t0, t1]] + [np.concatenate(p) for p in pieces.values()]))
    edges = edges[(edges >= t0) & (edges <= t1)]
    left, length = edges[:-1], np.diff(edges)
    return left, length, {k: covered(left, *p) for k, p in pieces.items()}


def _stretches(core: int, left, length, dma_only: np.ndarray, span: int) -> list[dict]:
    """Maximal runs of data-bound segments at least the rule's share of the span long."""
    if not dma_only.any():
        return []
    edge = np.diff(np.concatenate([[0], dma_only.astype(np.int8), [0]]))
    first, stop = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
    start = left[first]
    end = left[stop - 1] + length[stop - 1]
    keep = (end - start) >= RULES["dma_bound_stretch"].threshold * span
    return [{"core": core, "start_ns": int(s), "end_ns": int(e), "length_ns": int(e - s),
             "share_span": _div(e - s, span)} for s, e in zip(start[keep], end[keep])]


def overlap(a: dict[str, np.ndarray], ncores: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(overlap per core + Overall, data-bound stretches) of the command arrays ``a``."""
    t0 = int(a["start"].min()) if len(a["start"]) else 0
    t1 = int(a["end"].max()) if len(a["start"]) else 0
    span = t1 - t0
    by_core = np.argsort(a["core"], kind="stable")
    bounds = np.searchsorted(a["core"][by_core], np.arange(ncores + 1))
    tiu_modelled = (a["engine"] == TIU) & ~a["is_sys"] & a["modelled"]
    rows, stretches = [], []
    for core in range(ncores):
        idx = by_core[bounds[core]:bounds[core + 1]]
        left, length, f = _segments(a, idx, t0, t1)
        both, tiu_only, dma_only = f["tiu"] & f["dma"], f["tiu"] & ~f["dma"], f["dma"] & ~f["tiu"]
        neither = ~f["tiu"] & ~f["dma"]
        m = idx[tiu_modelled[idx]]
        rows.append({"core": core, "span_ns": span,
                     "tiu_busy_ns": int(length[f["tiu"]].sum()), "dma_busy_ns": int(length[f["dma"]].sum()),
                     "both_ns": int(length[both].sum()), "tiu_only_ns": int(length[tiu_only].sum()),
                     "dma_only_ns": int(length[dma_only].sum()), "idle_ns": int(length[neither].sum()),
                     "waiting_ns": int(length[neither & f["sys"]].sum()),
                     "tiu_alg_cycles": float(a["alg_cycle"][m].sum()) if len(m) else float("nan"),
                     "tiu_asic_cycles": int(a["cycles"][m].sum())})
        stretches += _stretches(core, left, length, dma_only, span)
    if not rows:
        return pd.DataFrame(columns=list(OVERLAP_COLUMNS)), pd.DataFrame(columns=list(STRETCH_COLUMNS))
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
