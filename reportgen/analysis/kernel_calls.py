"""Kernel calls and kernels: what each kernel function costs and how busy the engines are in it.

Device calls (``source = "device"``): the commands of a PMU dump that carry a kernel name or a
kernel-function scope (DYN_DATA ``FUNC`` ... ``FUNC_END``), TIU/GDMA/SDMA of one core. A call is
one scope id, or, without one, a run of commands of one kernel name on a core in time order
(the same calls as the Perfetto "Kernel Function" track). Host calls (``source = "host"``):
the tpudnn events of a ``--trace_file`` trace placed on the device axis (analysis.host_align),
measured over every core in their window.

Definitions: docs/metrics.md "Diagnosis". All of it is whole-array work: calls are integer
codes, per-call sums are ``bincount``s, busy time is :func:`unions.grouped_union` (device) or a
difference of prefix sums over each lane's merged busy pieces (host).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.unions import group_order, grouped_union, merged
from reportgen.model import ENGINES, KERNEL_CALL_COLUMNS, KERNEL_COLUMNS, Profile

LANE_ENGINES = ("TIU", "GDMA", "SDMA")
HOST_KERNEL_CATEGORY = "tpudnn"


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num, den = np.asarray(num, float), np.asarray(den, float)
    return np.divide(num, den, out=np.full(len(num), np.nan), where=den > 0)


def _lane_engine(a) -> np.ndarray:
    """Position in LANE_ENGINES of each command's engine (-1: CDMA / other)."""
    table = np.array([LANE_ENGINES.index(e) if e in LANE_ENGINES else -1 for e in ENGINES] + [-1])
    return table[a["engine"]]


#: per-command contributions to a call's TIU ops and DMA bytes (analysis.breakdown.command_arrays
#: has them 0 where they do not apply: unmodelled ops, unknown bytes)
WEIGHTS = {"alg": "alg0", "uarch": "uarch0", "bytes": "bytes0", "ddr_bytes": "ddr_bytes0",
           "l2m_bytes": "l2m_bytes0"}


def _finish(calls: dict, ncores_in_window) -> pd.DataFrame:
    wall = calls["end_ns"] - calls["start_ns"]
    calls["wall_ns"] = wall
    calls["tiu_util"] = _div(calls["tiu_busy_ns"], wall * ncores_in_window)
    calls["uarch_rate"] = _div(calls.pop("alg"), calls.pop("uarch"))
    calls["ddr_bw"] = _div(calls["ddr_bytes"], wall)
    calls["l2m_bw"] = _div(calls["l2m_bytes"], wall)
    return pd.DataFrame(calls)[list(KERNEL_CALL_COLUMNS)]


def _call_keys(c: pd.DataFrame, a, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``idx``: the call's scope id, or, without one, minus the number of its run
    of one kernel name on a core in time order (so runs and scopes never share a key)."""
    scope = c["func_scope"].to_numpy("float64", na_value=np.nan)[idx]
    key = np.nan_to_num(scope).astype(np.int64)
    loose = np.flatnonzero(np.isnan(scope))
    if len(loose):
        kcode = c["kernel"].cat.codes.to_numpy()[idx[loose]]
        core, start = a["core"][idx[loose]], a["start"][idx[loose]]
        order = np.lexsort((start, core))
        changed = np.ones(len(order), bool)
        changed[1:] = (kcode[order][1:] != kcode[order][:-1]) | (core[order][1:] != core[order][:-1])
        key[loose[order]] = -np.cumsum(changed)
    return key, scope


def device_calls(profile: Profile, a: dict[str, np.ndarray]) -> pd.DataFrame:
    c = profile.commands
    lane = _lane_engine(a)
    inside = (c["kernel"].notna().to_numpy(bool) | c["func_scope"].notna().to_numpy(bool)) & (lane >= 0)
    if not inside.any():
        return pd.DataFrame(columns=list(KERNEL_CALL_COLUMNS))
    idx = np.flatnonzero(inside)
    del inside
    key, _ = _call_keys(c, a, idx)
    # one code per (core, call key); every row outside a call gets the last code, n
    key += a["core"][idx] << 40
    code, _ = pd.factorize(key, sort=True)
    del key
    n = int(code.max()) + 1
    call = np.full(len(c), n, np.int64)
    call[idx] = code
    rows = len(idx)
    del code, idx
    order = group_order(call, n + 1)[:rows]                      # rows of calls, call by call
    bounds = np.searchsorted(call[order], np.arange(n))
    first = np.minimum.reduceat(order, bounds)                  # the first row of each call
    start = np.minimum.reduceat(a["start"][order], bounds)
    end = np.maximum.reduceat(a["end"][order], bounds)
    del order
    kernel = c["kernel"].astype("category")
    labels = np.array([str(x) for x in kernel.cat.categories] + [""], object)
    names = labels[kernel.cat.codes.to_numpy()[first]]
    scopes = c["func_scope"].take(first).to_numpy("float64", na_value=np.nan)
    names = np.where(names == "", np.array([f"scope {int(s)}" if s == s else "" for s in scopes],
                                           object), names)
    work_call = np.where(a["is_sys"], n, call)                   # system commands: no work
    # a call's rows of one engine lie in one sheet (a call is on one core)
    busy = grouped_union(work_call * 3 + np.maximum(lane, 0), a["start"], a["end"], 3 * n + 3,
                         a["solo"])[:3 * n].reshape(n, 3)
    calls = {"source": "device", "name": names, "core": a["core"][first], "scope": scopes,
             "start_ns": start, "end_ns": end, "commands": np.bincount(call, minlength=n + 1)[:n],
             **{f"{e.lower()}_busy_ns": busy[:, i] for i, e in enumerate(LANE_ENGINES)},
             **{k: np.bincount(work_call, weights=a[w], minlength=n + 1)[:n] for k, w in WEIGHTS.items()}}
    return _finish(calls, 1)


class _PrefixCover:
    """Length of a lane's busy time before any point: prefix sums over its merged pieces."""

    def __init__(self, start: np.ndarray, end: np.ndarray):
        self.s, self.e = merged(start, end)
        self.before = np.concatenate([[0], np.cumsum(self.e - self.s)])

    def upto(self, x: np.ndarray) -> np.ndarray:
        if len(self.s) == 0:
            return np.zeros(len(x), np.int64)
        k = np.searchsorted(self.s, x, side="right")        # pieces starting at or before x
        inside = np.minimum(x, self.e[np.maximum(k - 1, 0)]) - self.s[np.maximum(k - 1, 0)]
        return self.before[np.maximum(k - 1, 0)] + np.where(k > 0, np.maximum(inside, 0), 0)


def host_calls(profile: Profile, a: dict[str, np.ndarray], ncores: int) -> pd.DataFrame:
    host = profile.host
    sel = (host["category"].astype(str) == HOST_KERNEL_CATEGORY).to_numpy(bool)
    if not sel.any() or len(a["start"]) == 0:
        return pd.DataFrame(columns=list(KERNEL_CALL_COLUMNS))
    lo = host["start_ns"].to_numpy(np.int64)[sel]
    hi = host["end_ns"].to_numpy(np.int64)[sel]
    lane = _lane_engine(a)
    work = ~a["is_sys"]
    busy = {e: np.zeros(len(lo), np.int64) for e in LANE_ENGINES}
    for core in np.unique(a["core"]):                           # a few lanes, each whole-array
        for i, e in enumerate(LANE_ENGINES):
            m = work & (lane == i) & (a["core"] == core)
            if m.any():
                cover = _PrefixCover(a["start"][m], a["end"][m])
                busy[e] += cover.upto(hi) - cover.upto(lo)
    # commands starting inside a window: prefix sums over the commands in start order
    order = np.argsort(a["start"], kind="stable")
    inside = lane[order] >= 0
    starts = a["start"][order]
    first, stop = np.searchsorted(starts, lo, "left"), np.searchsorted(starts, hi, "left")
    work = ~a["is_sys"][order] & inside
    w = {k: np.where(work, a[v][order], 0.0) for k, v in WEIGHTS.items()}
    w["commands"] = inside.astype(float)
    sums = {k: (np.concatenate([[0.0], np.cumsum(v)])[stop] - np.concatenate([[0.0], np.cumsum(v)])[first])
            for k, v in w.items()}
    calls = {"source": "host", "name": host["name"].to_numpy(object)[sel], "core": np.nan,
             "scope": np.nan, "start_ns": lo, "end_ns": hi,
             "commands": np.rint(sums.pop("commands")).astype(np.int64),
             **{f"{e.lower()}_busy_ns": busy[e] for e in LANE_ENGINES}, **sums}
    return _finish(calls, max(ncores, 1))


def kernel_table(calls: pd.DataFrame, span: int, ncores: int) -> pd.DataFrame:
    """One row per (source, kernel name): calls, total / mean / min / max wall time, shares."""
    if calls.empty:
        return pd.DataFrame(columns=list(KERNEL_COLUMNS))
    g = calls.groupby(["source", "name"], sort=False)["wall_ns"]
    out = g.agg(calls="size", total_ns="sum", mean_ns="mean", min_ns="min", max_ns="max").reset_index()
    # device calls run on one core each, so their wall window is span x cores; host calls span
    window = np.where(out["source"] == "device", span * max(ncores, 1), span)
    out["share_wall"] = _div(out["total_ns"], window)
    out["share_kernels"] = _div(out["total_ns"], out.groupby("source")["total_ns"].transform("sum"))
    out = out.sort_values(["source", "total_ns", "name"], ascending=[True, False, True], kind="stable")
    return out[list(KERNEL_COLUMNS)].reset_index(drop=True)
