"""How close to the hardware each scope runs: a roofline per kernel, kernel call, layer, Function
Type and core (docs/metrics.md "Roofline").

For every scope: TIU Alg Ops (by data type), GDMA/SDMA bytes by memory level (DDR, L2M), and its
wall time ``ns`` = the union of its commands' intervals on each core, summed over the cores it
spans (core-time, so a scope over several cores is compared with per-core peaks). From these and
the chip's peaks at the capture's clocks (analysis/chip.py):

* utilisation of each resource = the time it would need at its peak / ``ns``: compute
  (Σ over data types of ops / that type's peak), DDR (bytes / the per-core DDR peak), L2M;
* ``bound_by`` = the resource with the highest utilisation, ``latency`` when every one is below
  :data:`LATENCY_UTIL`;
* the roof at the scope's intensity = min(peak ops, intensity × peak bandwidth) over DDR and L2M,
  and efficiency = achieved ops/s / roof — which equals the highest utilisation, the form used
  (it also holds for a scope without ops: a copy's efficiency is its bandwidth utilisation);
* ``under_roof_ns`` = ns × (1 − efficiency), at least 0: the time the scope loses against what
  the chip could do at its intensity. The table is ranked by it.

Whole-array work: one group code per command and scope kind, then one compiled pass per kind
(:func:`_scope_sums`: its sums, first start, last end and union); no Python loop over commands.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd
from numba import njit

from reportgen.analysis.chip import ChipPeaks
from reportgen.analysis.findings import _finding, _pct, _us
from reportgen.analysis.kernel_calls import _call_keys
from reportgen.analysis.rules import RULES
from reportgen.model import ENGINES, Profile

#: below this utilisation of every resource a scope is "latency"-bound: neither compute nor a
#: memory level is the limit, the commands are too small or wait on each other
LATENCY_UTIL = 0.20
#: kernel calls kept in the table (those with the most time under the roof); every other scope
#: kind is kept whole
MAX_CALLS = 200
SCOPES = ("kernel", "call", "layer", "function_type", "core")
RESOURCES = ("compute", "ddr", "l2m")
#: TIU data-type names (left side of the Data Type column, op-metrics.md §3.1) -> chip.py dtype
#: key; any other name runs at the int8 cube rate (chip.py)
_PEAK_KEY = {"FP16": "f16", "BFP16": "bf16", "BF16": "bf16", "FP32": "f32"}
_DMA_WORK = ("GDMA", "SDMA")          # bytes "as in the engine summary": GDMA + SDMA

COLUMNS = ("scope", "name", "core", "commands", "start_ns", "end_ns", "dtype", "ops", "ddr_bytes",
           "l2m_bytes", "ns", "intensity", "intensity_l2m", "ops_per_s", "ddr_gbps", "l2m_gbps",
           "peak_ops_per_s", "util_compute", "util_ddr", "util_l2m", "roof_ops_per_s", "bound_by",
           "efficiency", "under_roof_ns")


def _div(num, den) -> np.ndarray:
    num, den = np.asarray(num, float), np.asarray(den, float)
    return np.divide(num, den, out=np.full(len(num), np.nan), where=den > 0)


def input_dtype(dtype: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per command the code of its input data type (-1 unknown) and the names: the left side of
    the TIU Data Type ``"FP16 -> FP32"``."""
    cat = dtype.astype("category")
    left = [str(x).split("->")[0].strip() for x in cat.cat.categories]
    names = sorted({n for n in left if n and n != "None"})
    table = np.array([names.index(n) if n in names else -1 for n in left] + [-1], np.int64)
    return table[cat.cat.codes.to_numpy()], np.array(names, object)


def peak_ops_per_ns(peaks: ChipPeaks, names) -> np.ndarray:
    """Per data-type name, one core's peak ops per ns (TOPS × 1e3) at the capture's TIU clock."""
    return np.array([peaks.tops_per_core(_PEAK_KEY.get(n, n.lower())) * 1e3 for n in names], float)


def _per_command(profile: Profile, a: dict, peaks: ChipPeaks) -> dict[str, np.ndarray]:
    """The per-command quantities every scope adds up."""
    tiu = (a["engine"] == ENGINES.index("TIU")) & ~a["is_sys"]
    dma = np.isin(a["engine"], [ENGINES.index(e) for e in _DMA_WORK]) & ~a["is_sys"]
    dt, names = input_dtype(profile.commands["dtype"])
    ops = np.where(tiu, a["alg0"], 0.0)
    peak = np.append(peak_ops_per_ns(peaks, names), peaks.tops_per_core("int8") * 1e3)
    # the quantities added per scope, one row each: ops, compute ns, DDR bytes, L2M bytes
    sums = np.vstack([ops, ops / peak[dt], np.where(dma, a["ddr_bytes0"], 0.0),
                      np.where(dma, a["l2m_bytes0"], 0.0)]).astype(np.float64, copy=False)
    return {"sums": sums, "dtype": dt.astype(np.int64, copy=False), "dtype_names": names}


def _scope_codes(profile: Profile, a: dict) -> Iterator[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(scope kind, group code per command (-1: outside), names, core per group or -1), one
    kind at a time (one kind's codes alive at once)."""
    c, core = profile.commands, a["core"]
    ncores = int(core.max()) + 1 if len(core) else 1
    kernel = c["kernel"].astype("category")
    kcode = kernel.cat.codes.to_numpy().astype(np.int64)
    if (kcode >= 0).any():
        yield ("kernel", kcode, np.array([str(x) for x in kernel.cat.categories], object),
               np.full(len(kernel.cat.categories), -1))
    inside = (kcode >= 0) | c["func_scope"].notna().to_numpy(bool)
    if inside.any():
        idx = np.flatnonzero(inside)
        key, _ = _call_keys(c, a, idx)
        code, _ = pd.factorize((core[idx] << 40) + key, sort=True)
        call = np.full(len(core), -1, np.int64)
        call[idx] = code
        n = int(code.max()) + 1
        first = np.full(n, len(core), np.int64)
        np.minimum.at(first, code, idx)
        del idx, key, code
        labels = np.array([str(x) for x in kernel.cat.categories] + [""], object)
        names = labels[kcode[first]]
        scope = c["func_scope"].to_numpy("float64", na_value=np.nan)[first]
        names = np.where(names == "", np.char.add("scope ", np.nan_to_num(scope).astype(np.int64).astype(str))
                         .astype(object), names)          # as the Kernels table names them
        yield ("call", call, names, core[first])
        del call
    del kcode, inside
    view = profile.layer_view
    if view is not None and len(view.layers):
        # the Layers table's name and final.mlir line (names repeat: MatMul, MatMul ...)
        lname = (view.layers["name"].astype(str) + " (line " + view.layers["file_line"].astype(str)
                 + ")").to_numpy(object)
        yield ("layer", np.asarray(view.command_layer, np.int64), lname, np.full(len(lname), -1))
    ftype = c["func_type"].astype("category")
    yield ("function_type", np.where(a["is_sys"], -1, ftype.cat.codes.to_numpy().astype(np.int64)),
           np.array([str(x) for x in ftype.cat.categories], object), np.full(len(ftype.cat.categories), -1))
    yield ("core", core.astype(np.int64), np.array([f"core {i}" for i in range(ncores)], object),
           np.arange(ncores))


def _scope_table(kind: str, code: np.ndarray, names: np.ndarray, gcore: np.ndarray,
                 a: dict, q: dict, order: np.ndarray) -> pd.DataFrame:
    n, nd = len(names), len(q["dtype_names"])
    ncores = int(a["core"].max()) + 1 if len(a["core"]) else 1
    count, sums, by_type, start, end, union = _scope_sums(
        code.astype(np.int64, copy=False), a["core"], a["start"], a["end"], q["sums"], q["dtype"], order,
        n, nd, ncores)
    ops, compute_ns, ddr, l2m = sums
    # the data type carrying the most ops names the scope's compute roof
    by_type = by_type[:, :nd]
    main = np.argmax(by_type, axis=1) if nd else np.zeros(n, np.int64)
    has = by_type.max(axis=1) > 0 if nd else np.zeros(n, bool)
    dtype = np.where(has, np.append(q["dtype_names"], "")[main], None)
    nt = (by_type > 0).sum(axis=1) if nd else np.zeros(n)
    dtype = np.where(nt > 1, "mixed", dtype)
    keep = count > 0
    return pd.DataFrame({
        "scope": kind, "name": names, "core": gcore, "commands": count, "start_ns": start,
        "end_ns": end, "dtype": dtype, "ops": ops, "compute_ns": compute_ns,
        "ddr_bytes": ddr, "l2m_bytes": l2m, "ns": union.astype(float)})[keep]


@njit(cache=True)
def _scope_sums(code, core, start, end, sums, dtype, order, n, nd, ncores):
    """Per group of ``code`` (-1: none): commands, the rows of ``sums`` added in command order
    (the order ``np.bincount`` adds in: the same floating-point results), ops by data type
    (``nd``: unknown), first start, last end, and the wall time: the union of the group's
    intervals per core, summed over cores, taken in start ``order``."""
    count = np.zeros(n, np.int64)
    total = np.zeros((len(sums), n))
    by_type = np.zeros((n, nd + 1))
    first = np.full(n, np.iinfo(np.int64).max)
    last = np.full(n, np.iinfo(np.int64).min)
    for i in range(len(code)):
        g = code[i]
        if g < 0:
            continue
        count[g] += 1
        for k in range(len(sums)):
            total[k, g] += sums[k, i]
        d = dtype[i] if dtype[i] >= 0 else nd
        by_type[g, d] += sums[0, i]
        first[g] = min(first[g], start[i])
        last[g] = max(last[g], end[i])
    union = np.zeros(n, np.int64)
    run_s = np.zeros(n * ncores, np.int64)
    run_e = np.zeros(n * ncores, np.int64)
    open_ = np.zeros(n * ncores, np.bool_)
    for i in order:
        g = code[i]
        if g < 0:
            continue
        k = g * ncores + core[i]
        if not open_[k]:
            open_[k], run_s[k], run_e[k] = True, start[i], end[i]
        elif start[i] > run_e[k]:
            union[g] += run_e[k] - run_s[k]
            run_s[k], run_e[k] = start[i], end[i]
        elif end[i] > run_e[k]:
            run_e[k] = end[i]
    for k in range(n * ncores):
        if open_[k]:
            union[k // ncores] += run_e[k] - run_s[k]
    return count, total, by_type, first, last, union


def finish(t: pd.DataFrame, peaks: ChipPeaks) -> pd.DataFrame:
    """The roofline columns from the sums (``ops``, ``compute_ns``, bytes, ``ns``) of each row."""
    ns = t["ns"].to_numpy(float)
    ops, compute_ns = t["ops"].to_numpy(float), t["compute_ns"].to_numpy(float)
    ddr, l2m = t["ddr_bytes"].to_numpy(float), t["l2m_bytes"].to_numpy(float)
    bw_ddr, bw_l2m = peaks.ddr_gbps_per_core, peaks.l2_gbps           # bytes per ns
    # a chip without the memory level (peak 0: CV84X6 has no L2M) has no utilisation of it
    util = np.vstack([_div(compute_ns, ns), _div(ddr, ns * bw_ddr), _div(l2m, ns * bw_l2m)])
    util0 = np.nan_to_num(util)
    best = util0.max(axis=0)
    bound = np.where(best < LATENCY_UTIL, "latency", np.array(RESOURCES, object)[np.argmax(util0, axis=0)])
    peak = _div(ops, compute_ns) * 1e9                                # effective ops/s of the mix
    intensity, intensity_l2m = _div(ops, ddr), _div(ops, l2m)
    roof = np.fmin(peak, np.fmin(np.where((ddr > 0) & (bw_ddr > 0), intensity * bw_ddr * 1e9, np.inf),
                                 np.where((l2m > 0) & (bw_l2m > 0), intensity_l2m * bw_l2m * 1e9, np.inf)))
    out = t.drop(columns=["compute_ns"]).copy()
    out["intensity"], out["intensity_l2m"] = intensity, intensity_l2m
    out["ops_per_s"] = _div(ops, ns) * 1e9
    out["ddr_gbps"], out["l2m_gbps"] = _div(ddr, ns), _div(l2m, ns)
    out["peak_ops_per_s"] = peak
    out["util_compute"], out["util_ddr"], out["util_l2m"] = util
    out["roof_ops_per_s"] = np.where(ops > 0, roof, np.nan)
    out["bound_by"] = np.where(ns > 0, bound, None)
    out["efficiency"] = np.where(ns > 0, best, np.nan)
    out["under_roof_ns"] = np.where(ns > 0, ns * np.maximum(0.0, 1.0 - best), 0.0)
    return out


def roofline(profile: Profile, a: dict[str, np.ndarray], peaks: ChipPeaks | None) -> pd.DataFrame:
    """The roofline table (``COLUMNS``), ranked by time under the roof; empty without peaks."""
    if peaks is None or len(a["start"]) == 0:
        return pd.DataFrame(columns=list(COLUMNS))
    q = _per_command(profile, a, peaks)
    order = np.argsort(a["start"], kind="stable")         # a few sorted runs (one per queue)
    parts = []
    for kind, code, names, gcore in _scope_codes(profile, a):
        t = finish(_scope_table(kind, code, names, gcore, a, q, order), peaks)
        if kind == "call":
            t = t.sort_values("under_roof_ns", ascending=False, kind="stable").head(MAX_CALLS)
        parts.append(t)
        del code                   # freed before the next kind's codes are made
    out = pd.concat(parts, ignore_index=True)
    out["core"] = out["core"].astype(object).where(out["core"] >= 0, None)
    out["dtype"] = out["dtype"].astype(object).where(out["dtype"].notna(), None)
    out["scope_rank"] = pd.Categorical(out["scope"], categories=list(SCOPES)).codes
    out = out.sort_values(["under_roof_ns", "scope_rank", "name"], ascending=[False, True, True],
                          kind="stable").drop(columns="scope_rank").reset_index(drop=True)
    return out[list(COLUMNS)]


def roofline_findings(table: pd.DataFrame) -> list[dict]:
    """Rule ``far_under_roof``: kernels bound by a memory level or by latency that reach at most
    the threshold of their roof, among kernels holding at least ``min_share`` of the kernel time."""
    rule = RULES["far_under_roof"]
    k = table[table["scope"] == "kernel"] if len(table) else table
    if k.empty:
        return []
    share = k["ns"] / k["ns"].sum()
    out = []
    for r, s in zip(k.itertuples(index=False), share):
        if r.bound_by in ("ddr", "l2m", "latency") and s >= rule.min_share and rule.fires(r.efficiency):
            what = {"ddr": "DDR-bound", "l2m": "L2M-bound", "latency": "latency-bound"}[r.bound_by]
            out.append(_finding(
                "far_under_roof", r.efficiency,
                f"kernel {r.name} is {what} at {_pct(r.efficiency)} of its roof: {_us(r.under_roof_ns)} "
                f"under the roof of {_us(r.ns)} ({_pct(s)} of kernel time; compute "
                f"{_pct(r.util_compute)}, DDR {_pct(r.util_ddr)}, L2M {_pct(r.util_l2m)} of peak)",
                engine="TIU+DMA", subject=str(r.name)))
    return out
