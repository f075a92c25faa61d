"""Two runs compared (``--baseline``): deltas per core and engine, Function Type, kernel and layer.

Both sides are :class:`~reportgen.analysis.digest.Digest` objects, so a baseline read back from
an old report's summary.json compares exactly like the dump it was made from.

Noise rule (docs/metrics.md "Comparing two runs"): a delta is marked ``within_noise`` when
``|new − base| <= max(rel · |base|, floor)`` with ``(rel, floor)`` the metric's entry of
:data:`NOISE`. Repeated captures of one program differ by a few percent (clock alignment,
DDR refresh, barrier jitter), and a few hundred ns at the edges; a delta inside that band is not
evidence of a change.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.analysis.digest import ENGINES, Digest

#: unit -> (relative band, absolute floor) of run-to-run noise
NOISE = {"ns": (0.02, 1000.0), "ratio": (0.02, 0.005), "GB/s": (0.02, 0.5)}

#: the per-lane metrics compared (digest LANE_COLUMNS) and their unit
LANE_METRICS = (("busy_ns", "ns"), ("util", "ratio"), ("ddr_bw", "GB/s"), ("uarch_rate", "ratio"))


def within_noise(base, new, unit: str) -> np.ndarray:
    """The noise rule on arrays: True where the change is inside the metric's noise band
    (unknown on either side: False, the difference is not a measurement)."""
    rel, floor = NOISE[unit]
    base = np.asarray(base, np.float64)
    new = np.asarray(new, np.float64)
    band = np.maximum(rel * np.abs(base), floor)
    return np.abs(new - base) <= band


def _pct(base, new) -> np.ndarray:
    base = np.asarray(base, np.float64)
    new = np.asarray(new, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(base != 0, 100.0 * (new - base) / np.abs(base), np.nan)


@dataclass
class Comparison:
    baseline: str                   # what was compared against
    new: str
    engines: pd.DataFrame           # core, engine, then base_/new_/delta_/pct_/noise_ per metric
    function_types: pd.DataFrame    # name, status, base/new busy (total_ns) and commands (count)
    kernels: pd.DataFrame           # name, status, base/new wall time of calls (total_ns) and calls
    operators: pd.DataFrame         # framework traces: the same per operator (device time)
    timelines: tuple[dict, dict]    # (base, new) digest timelines, each starting at 0
    layers: pd.DataFrame            # both runs with layers: per (subnet_id, file_line), see _layers


def _lane_order(core, engine) -> tuple:
    """Engines in display order (streams after them), then cores in order, Overall last."""
    rank = ENGINES.index(engine) if engine in ENGINES else len(ENGINES)
    overall = str(core) == "Overall"
    return (rank, overall, str(engine), int(core) if not overall and str(core).isdigit() else 0, str(core))


def _engines(base: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """One row per (core, engine) lane present on either side, every LANE_METRICS metric as
    base/new/delta/pct/noise columns. A lane missing on one side did no work there: busy 0;
    its other metrics are unknown."""
    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(core=frame["core"].astype(str)).set_index(["core", "engine"])
    b, n = keyed(base), keyed(new)
    keys = sorted(dict.fromkeys([*b.index, *n.index]), key=lambda k: _lane_order(*k))
    if not keys:
        return pd.DataFrame(columns=["core", "engine"])
    b, n = b.reindex(keys), n.reindex(keys)
    out = pd.DataFrame({"core": [int(c) if c.isdigit() else c for c, _ in keys],
                        "engine": [e for _, e in keys]})
    for m, unit in LANE_METRICS:
        bv = pd.to_numeric(b[m], errors="coerce").to_numpy(np.float64)
        nv = pd.to_numeric(n[m], errors="coerce").to_numpy(np.float64)
        if np.isnan(bv).all() and np.isnan(nv).all():
            continue
        if m == "busy_ns":
            bv, nv = np.nan_to_num(bv), np.nan_to_num(nv)
        known = ~np.isnan(bv) & ~np.isnan(nv)
        out[f"base_{m}"], out[f"new_{m}"] = bv, nv
        out[f"delta_{m}"] = nv - bv
        out[f"pct_{m}"] = _pct(bv, nv)
        out[f"noise_{m}"] = pd.array(np.where(known, within_noise(bv, nv, unit), None), dtype="boolean")
    if "base_busy_ns" in out:
        for side in ("base", "new", "delta"):
            out[f"{side}_busy_ns"] = out[f"{side}_busy_ns"].round().astype("int64")
    return out


def _totals(base: pd.DataFrame, new: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per name: time and count on each side, delta, %, status (both / new / gone)."""
    def by_name(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.groupby(key, sort=False)[["total_ns", "count"]].sum() if len(frame) else \
            pd.DataFrame(columns=["total_ns", "count"], dtype="int64")
    b, n = by_name(base), by_name(new)
    t = b.add_suffix("_base").join(n.add_suffix("_new"), how="outer")
    out = pd.DataFrame({
        "name": t.index.astype(str),
        "status": np.select([t["total_ns_base"].isna(), t["total_ns_new"].isna()], ["new", "gone"], "both"),
        "base_total_ns": t["total_ns_base"].fillna(0).astype("int64").to_numpy(),
        "new_total_ns": t["total_ns_new"].fillna(0).astype("int64").to_numpy(),
        "base_count": t["count_base"].fillna(0).astype("int64").to_numpy(),
        "new_count": t["count_new"].fillna(0).astype("int64").to_numpy(),
    })
    out["delta_total_ns"] = out["new_total_ns"] - out["base_total_ns"]
    out["pct_total_ns"] = _pct(out["base_total_ns"], out["new_total_ns"])
    out["within_noise"] = (out["status"] == "both") & within_noise(out["base_total_ns"],
                                                                    out["new_total_ns"], "ns")
    order = out["delta_total_ns"].abs().sort_values(ascending=False, kind="stable").index
    return out.loc[order].reset_index(drop=True)


#: a layer's columns in the comparison, in order
LAYER_DELTA_COLUMNS = ("subnet_id", "file_line", "opcode", "status", "base_busy_ns", "new_busy_ns",
                       "delta_busy_ns", "pct_busy_ns", "base_tiu_cmds", "new_tiu_cmds", "base_gdma_cmds",
                       "new_gdma_cmds")


def _layers(base: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Per layer (subnet_id, file_line) of either run, when both runs have layers: busy time and
    commands on each side, delta, % and status: ``new`` / ``gone`` (one side only), ``noise``
    (the noise rule on busy_ns) or ``changed``; largest |delta| first."""
    if base.empty or new.empty:
        return pd.DataFrame(columns=list(LAYER_DELTA_COLUMNS))
    key = ["subnet_id", "file_line"]
    t = base.merge(new, on=key, how="outer", suffixes=("_base", "_new"), indicator=True, sort=False)
    only_base, only_new = (t["_merge"] == "left_only").to_numpy(), (t["_merge"] == "right_only").to_numpy()
    out = pd.DataFrame({"subnet_id": t["subnet_id"].astype("int64"), "file_line": t["file_line"].astype("int64"),
                        "opcode": t["opcode_new"].fillna(t["opcode_base"])})
    for m in ("busy_ns", "tiu_cmds", "gdma_cmds"):
        for side in ("base", "new"):
            out[f"{side}_{m}"] = t[f"{m}_{side}"].fillna(0).astype("int64")
    out["delta_busy_ns"] = out["new_busy_ns"] - out["base_busy_ns"]
    out["pct_busy_ns"] = _pct(out["base_busy_ns"], out["new_busy_ns"])
    out["status"] = np.select([only_new, only_base, within_noise(out["base_busy_ns"], out["new_busy_ns"], "ns")],
                              ["new", "gone", "noise"], "changed")
    order = out["delta_busy_ns"].abs().sort_values(ascending=False, kind="stable").index
    return out.loc[order, list(LAYER_DELTA_COLUMNS)].reset_index(drop=True)


def compare(base: Digest, new: Digest) -> Comparison:
    """Every delta of ``new`` against ``base``."""
    return Comparison(base.source, new.source, _engines(base.lanes, new.lanes),
                      _totals(base.function_types, new.function_types, "func_type"),
                      _totals(base.kernels, new.kernels, "kernel"),
                      _totals(base.operators, new.operators, "operator"), (base.timeline, new.timeline),
                      _layers(base.layers, new.layers))


def comparison_document(c: Comparison) -> dict:
    """summary.json's ``compare``: JSON values only (NaN -> null)."""
    def rows(frame: pd.DataFrame) -> list[dict]:
        clean = frame.astype(object).where(frame.notna(), None)
        return [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()}
                for r in clean.to_dict("records")]
    return {"baseline": c.baseline, "new": c.new,
            "noise_rule": {u: {"relative": r, "floor": f} for u, (r, f) in NOISE.items()},
            "engines": rows(c.engines), "function_types": rows(c.function_types),
            "kernels": rows(c.kernels), "operators": rows(c.operators), "layers": rows(c.layers)}
