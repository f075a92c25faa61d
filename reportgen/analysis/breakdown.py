"""Where each engine's time goes: per core × engine × Function Type (and × Function Name).

One row per group of commands, plus ``Overall`` rows over all cores (model.BREAKDOWN_COLUMNS;
docs/metrics.md "Diagnosis"). System commands (``is_sys``) form their own rows with category
``waiting``: they are not work, and counting them as work makes an idle lane look full.

Everything is computed over whole arrays: groups are integer codes, sums are ``bincount``s,
busy time is :func:`unions.grouped_union`, and the duration percentiles come from one sort of
the durations shared by every grouping (a stable radix sort by group code keeps that order).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.metrics import _direction_flags
from reportgen.analysis.unions import grouped_union
from reportgen.model import BREAKDOWN_COLUMNS, ENGINES, FUNCTION_COLUMNS, Profile

OVERALL = "Overall"
CATEGORIES = ("work", "waiting")


def command_arrays(c: pd.DataFrame) -> dict[str, np.ndarray]:
    """The per-command arrays the diagnosis reads, each computed once."""
    engine = c["engine"].astype("category")
    e_table = np.array([ENGINES.index(str(n)) if str(n) in ENGINES else -1
                        for n in engine.cat.categories] + [-1], np.int64)
    start, end = c["start_ns"].to_numpy(np.int64), c["end_ns"].to_numpy(np.int64)
    alg, uarch = c["alg_ops"].to_numpy(float), c["uarch_ops"].to_numpy(float)
    nbytes = c["bytes"].astype("Float64").to_numpy(float, na_value=np.nan)
    a = {"core": c["core"].to_numpy(np.int64), "engine": e_table[engine.cat.codes.to_numpy()],
         "start": start, "end": end, "dur": end - start, "is_sys": c["is_sys"].to_numpy(bool),
         "cycles": c["cycles"].to_numpy(np.int64), "alg": alg, "uarch": uarch,
         "alg_cycle": c["alg_cycle"].to_numpy(float),
         "modelled": ~np.isnan(alg) & ~np.isnan(uarch), "bytes": nbytes}
    flags = _direction_flags(c["direction"])
    a["ddr"], a["l2m"] = flags["ddr"], flags["l2m"]
    return a


def _codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Category codes (unknown = last code) and the labels (unknown = "")."""
    cat = values.astype("category")
    labels = np.array([str(x) for x in cat.cat.categories] + [""], object)
    codes = cat.cat.codes.to_numpy().astype(np.int64)
    return np.where(codes < 0, len(labels) - 1, codes), labels


class Durations:
    """Durations sorted once; each grouping re-sorts only its small integer codes (radix sort)."""

    def __init__(self, dur: np.ndarray):
        self.dur = dur
        self.order = np.argsort(dur, kind="stable")

    def stats(self, gcode: np.ndarray, ngroups: int) -> dict[str, np.ndarray]:
        g = gcode[self.order]
        g = g.astype(np.uint16) if ngroups <= 1 << 16 else g
        d = self.dur[self.order[np.argsort(g, kind="stable")]].astype(float)
        count = np.bincount(gcode, minlength=ngroups)
        first = np.cumsum(count) - count

        def quantile(q: float) -> np.ndarray:       # linear interpolation (numpy's default)
            pos = (count - 1) * q
            lo = np.floor(pos).astype(np.int64)
            hi = np.ceil(pos).astype(np.int64)
            return d[first + lo] + (d[first + hi] - d[first + lo]) * (pos - lo)

        return {"min_ns": d[first], "max_ns": d[first + count - 1],
                "p50_ns": quantile(0.5), "p95_ns": quantile(0.95)}


def _sums(a: dict[str, np.ndarray], gcode: np.ndarray, ng: int) -> dict[str, np.ndarray]:
    def total(weights, mask=None) -> np.ndarray:
        w = weights if mask is None else np.where(mask, weights, 0)
        return np.bincount(gcode, weights=w, minlength=ng)

    m = a["modelled"]
    known = ~np.isnan(a["bytes"])
    nbytes = np.nan_to_num(a["bytes"])
    moved = nbytes > 0
    out = {
        "count": np.bincount(gcode, minlength=ng),
        "sum_ns": total(a["dur"]),
        "cycles": total(a["cycles"]),
        "modelled": np.bincount(gcode, weights=m, minlength=ng),
        "alg_cycles": total(np.nan_to_num(a["alg_cycle"]), m),
        "alg_ops": total(np.nan_to_num(a["alg"]), m),
        "uarch_ops": total(np.nan_to_num(a["uarch"]), m),
        "modelled_cycles": total(a["cycles"], m),
        "bytes_known": np.bincount(gcode, weights=known, minlength=ng),
        "bytes": total(nbytes),
        "ddr_bytes": total(nbytes, a["ddr"]),
        "l2m_bytes": total(nbytes, a["l2m"]),
        "ddr_ns": total(a["dur"], a["ddr"] & moved),
        "l2m_ns": total(a["dur"], a["l2m"] & moved),
    }
    return out


def _ratio(num: np.ndarray, den: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    ok = den > 0 if valid is None else (den > 0) & valid
    return np.divide(num, den, out=np.full(len(num), np.nan), where=ok)


def _table(a, keys: dict[str, np.ndarray], labels: dict[str, np.ndarray], durations: Durations,
           ) -> tuple[pd.DataFrame, np.ndarray]:
    """One row per distinct combination of the integer ``keys`` (per command); returns the
    frame (keys decoded with ``labels``) and each command's group code."""
    names = list(keys)
    widths = [int(keys[k].max()) + 1 if len(keys[k]) else 1 for k in names]
    flat = np.zeros(len(a["start"]), np.int64)
    for k, w in zip(names, widths):
        flat = flat * w + keys[k]
    gcode, uniques = pd.factorize(flat, sort=True)
    ng = len(uniques)
    parts = np.array(np.unravel_index(uniques, widths)) if ng else np.zeros((len(names), 0), np.int64)
    frame = {k: (labels[k][parts[i]] if k in labels else parts[i]) for i, k in enumerate(names)}
    s = _sums(a, gcode, ng)
    frame.update({k: s[k].astype(np.int64) for k in ("count", "sum_ns", "cycles")})
    frame["busy_ns"] = grouped_union(gcode, a["start"], a["end"], ng)
    frame.update(durations.stats(gcode, ng))
    frame["mean_ns"] = s["sum_ns"] / np.maximum(s["count"], 1)
    modelled = s["modelled"] > 0
    frame["alg_cycles"] = np.where(modelled, s["alg_cycles"], np.nan)
    frame["alg_ops"] = np.where(modelled, s["alg_ops"], np.nan)
    frame["uarch_ops"] = np.where(modelled, s["uarch_ops"], np.nan)
    frame["uarch_rate"] = _ratio(s["alg_ops"], s["uarch_ops"], modelled)
    frame["alg_ops_per_cycle"] = _ratio(s["alg_ops"], s["modelled_cycles"], modelled)
    has_bytes = s["bytes_known"] > 0
    for k in ("bytes", "ddr_bytes", "l2m_bytes"):
        frame[k] = np.where(has_bytes, s[k], np.nan)
    frame["ddr_bw"] = _ratio(s["ddr_bytes"], s["ddr_ns"])
    frame["l2m_bw"] = _ratio(s["l2m_bytes"], s["l2m_ns"])
    return pd.DataFrame(frame), gcode


def _engine_busy(summary: pd.DataFrame | None, core, engine: str) -> float:
    if summary is None:
        return np.nan
    row = summary[summary["core"].astype(str) == str(core)]
    col = f"{engine.lower()}_busy_ns"
    return float(row[col].iloc[0]) if len(row) and col in row else np.nan


def _breakdown(profile: Profile, a, durations: Durations, by_name: bool) -> pd.DataFrame:
    c = profile.commands
    ft_code, ft_labels = _codes(c["func_type"])
    keys = {"engine": a["engine"] + 1, "category": a["is_sys"].astype(np.int64),
            "func_type": ft_code}
    labels = {"engine": np.array(("",) + ENGINES, object), "category": np.array(CATEGORIES, object),
              "func_type": ft_labels}
    if by_name:
        keys["func_name"], labels["func_name"] = _codes(c["func_name"])
    ncores = max(profile.meta.num_cores, int(a["core"].max()) + 1 if len(a["core"]) else 0)
    span = int(a["end"].max() - a["start"].min()) if len(a["start"]) else 0
    per_core, _ = _table(a, {"core": a["core"], **keys}, labels, durations)
    overall, _ = _table(a, keys, labels, durations)
    # busy over all cores: the per-core unions added up, as in the engine summary (cores run in
    # parallel); CDMA belongs to ports, so its Overall busy stays the union over all of them
    group = [k for k in keys]
    summed = per_core.groupby(group, sort=False)["busy_ns"].sum()
    per_core_sum = pd.MultiIndex.from_frame(overall[group]).map(summed.to_dict().get)
    is_cdma = (overall["engine"] == "CDMA").to_numpy()
    overall["busy_ns"] = np.where(is_cdma, overall["busy_ns"], np.asarray(per_core_sum, float)).astype(np.int64)
    overall.insert(0, "core", OVERALL)
    out = pd.concat([per_core, overall], ignore_index=True)
    out = out[out["engine"] != ""]
    # shares: of the engine's busy time (engine summary, work only) and of the span
    engine_busy = {(k, e): _engine_busy(profile.summary, k, e)
                   for k, e in out[["core", "engine"]].drop_duplicates().itertuples(index=False)}
    busy = np.array([engine_busy[k] for k in zip(out["core"], out["engine"])], float)
    work = (out["category"] == "work").to_numpy()
    out["share_busy"] = np.where(work, _ratio(out["busy_ns"].to_numpy(float), busy), np.nan)
    window = np.where((out["core"] == OVERALL).to_numpy() & (out["engine"] != "CDMA").to_numpy(),
                      span * max(ncores, 1), span).astype(float)
    out["share_span"] = _ratio(out["busy_ns"].to_numpy(float), window)
    out = _ordered(out)
    return out[list(FUNCTION_COLUMNS if by_name else BREAKDOWN_COLUMNS)].reset_index(drop=True)


def _ordered(out: pd.DataFrame) -> pd.DataFrame:
    """Cores in order then Overall; engines in display order; work before waiting; longest first."""
    core_rank = np.where(out["core"] == OVERALL, 1 << 30, pd.to_numeric(out["core"], errors="coerce")
                         .fillna(0)).astype(np.int64)
    engine_rank = out["engine"].map({e: i for i, e in enumerate(ENGINES)}).to_numpy()
    category_rank = (out["category"] == "waiting").to_numpy(np.int64)
    order = np.lexsort((out["func_type"].astype(str).to_numpy(), -out["busy_ns"].to_numpy(np.int64),
                        category_rank, engine_rank, core_rank))
    return out.iloc[order]


def breakdowns(profile: Profile, a: dict[str, np.ndarray] | None = None
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per Function Type, per Function Name) breakdown tables of a PMU profile."""
    a = command_arrays(profile.commands) if a is None else a
    durations = Durations(a["dur"])
    return (_breakdown(profile, a, durations, by_name=False),
            _breakdown(profile, a, durations, by_name=True))
