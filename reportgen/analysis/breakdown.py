"""Where each engine's time goes: per core × engine × Function Type (and × Function Name).

One row per group of commands, plus ``Overall`` rows over all cores (model.BREAKDOWN_COLUMNS;
docs/metrics.md "Diagnosis"). System commands (``is_sys``) form their own rows with category
``waiting``: they are not work, and counting them as work makes an idle lane look full.

Everything is whole-array work. Each command gets one code for its finest group (core, engine,
category, Function Type, Function Name); the sums are ``bincount``s over those codes, and the
coarser tables add up the few fine groups instead of the million commands again. Only what does
not add up is measured per table from the commands: busy time (a union) and the duration
percentiles (one integer sort of group code and duration per table).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.metrics import _direction_flags
from reportgen.analysis.unions import disjoint_lanes, grouped_union
from reportgen.model import BREAKDOWN_COLUMNS, ENGINES, FUNCTION_COLUMNS, Profile

OVERALL = "Overall"
CATEGORIES = ("work", "waiting")
KEYS = ("core", "engine", "category", "func_type", "func_name")
#: sums per group (added up from the finest groups to the coarser ones)
SUMS = ("count", "sum_ns", "cycles", "modelled", "alg_cycles", "alg_ops", "uarch_ops",
        "modelled_cycles", "bytes_known", "bytes", "ddr_bytes", "l2m_bytes", "ddr_ns", "l2m_ns")
_DUR_BITS = 40           # durations below 2^40 ns (18 min) share an int64 sort key with the group


def command_arrays(c: pd.DataFrame) -> dict[str, np.ndarray]:
    """The per-command arrays the diagnosis reads, each computed once, when first read (the
    roofline, read first, needs a few of them: the others do not add to its peak of memory)."""
    engine = c["engine"].astype("category")
    e_table = np.array([ENGINES.index(str(n)) if str(n) in ENGINES else -1
                        for n in engine.cat.categories] + [-1], np.int64)
    a = CommandArrays(c)
    a.update({"core": c["core"].to_numpy(np.int64), "engine": e_table[engine.cat.codes.to_numpy()],
              "start": c["start_ns"].to_numpy(np.int64), "end": c["end_ns"].to_numpy(np.int64),
              "is_sys": c["is_sys"].to_numpy(bool), "cycles": c["cycles"].to_numpy(np.int64),
              "alg": c["alg_ops"].to_numpy(float), "uarch": c["uarch_ops"].to_numpy(float),
              "alg_cycle": c["alg_cycle"].to_numpy(float)})
    return a


class CommandArrays(dict):
    """:func:`command_arrays`: the derived arrays made on first read (:data:`_DERIVED`)."""

    def __init__(self, c: pd.DataFrame):
        super().__init__()
        self.commands = c

    def __missing__(self, key: str) -> np.ndarray:
        if key not in _DERIVED:
            raise KeyError(key)
        if key in ("ddr", "l2m"):
            flags = _direction_flags(self.commands["direction"])
            self["ddr"], self["l2m"] = flags["ddr"], flags["l2m"]
        else:
            self[key] = _DERIVED[key](self)
        return self[key]


def _solo(a) -> np.ndarray:
    # rows whose sheet is one time-ordered queue (CDMA excluded: a core's CDMA rows span ports):
    # a group of them inside one core and engine covers its summed duration
    sheet = a.commands["sheet"].cat.codes.to_numpy().astype(np.int64)
    return disjoint_lanes(sheet, a["start"], a["end"]) & (a["engine"] != ENGINES.index("CDMA"))


#: the arrays derived from the others; the summed quantities are 0 where they do not apply
#: (unmodelled ops, unknown bytes)
_DERIVED = {
    "dur": lambda a: a["end"] - a["start"],
    "modelled": lambda a: ~np.isnan(a["alg"]) & ~np.isnan(a["uarch"]),
    "bytes": lambda a: a.commands["bytes"].to_numpy("float64", na_value=np.nan),
    "ddr": None, "l2m": None,                               # CommandArrays.__missing__
    "alg0": lambda a: np.where(a["modelled"], a["alg"], 0.0),
    "uarch0": lambda a: np.where(a["modelled"], a["uarch"], 0.0),
    "alg_cycle0": lambda a: np.where(a["modelled"], np.nan_to_num(a["alg_cycle"]), 0.0),
    "bytes0": lambda a: np.nan_to_num(a["bytes"]),
    "ddr_bytes0": lambda a: np.where(a["ddr"], a["bytes0"], 0.0),
    "l2m_bytes0": lambda a: np.where(a["l2m"], a["bytes0"], 0.0),
    "solo": _solo,
}


def _codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Category codes (unknown = last code) and the labels (unknown = "")."""
    cat = values.astype("category")
    labels = np.array([str(x) for x in cat.cat.categories] + [""], object)
    codes = cat.cat.codes.to_numpy().astype(np.int64)
    return np.where(codes < 0, len(labels) - 1, codes), labels


def _dense(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dense code per row, the distinct values in order) of non-negative integer keys."""
    top = int(flat.max()) + 1 if len(flat) else 0
    if top <= 1 << 22:                                   # a presence table: no hashing, no sort
        present = np.bincount(flat, minlength=top) > 0
        remap = np.cumsum(present) - 1
        return remap[flat], np.flatnonzero(present)
    code, uniques = pd.factorize(flat, sort=True)
    return code, np.asarray(uniques)


def _combine(parts: list[np.ndarray]) -> np.ndarray:
    flat = np.zeros(len(parts[0]), np.int64)
    for p in parts:
        flat = flat * (int(p.max()) + 1 if len(p) else 1) + p
    return flat


def _sums(a: dict[str, np.ndarray], g: np.ndarray, ng: int) -> dict[str, np.ndarray]:
    def total(weights) -> np.ndarray:
        return np.bincount(g, weights=weights, minlength=ng)

    m, moved = a["modelled"], a["bytes0"] > 0
    return {
        "count": np.bincount(g, minlength=ng).astype(float), "sum_ns": total(a["dur"]),
        "cycles": total(a["cycles"]), "modelled": total(m),
        "alg_cycles": total(a["alg_cycle0"]), "alg_ops": total(a["alg0"]),
        "uarch_ops": total(a["uarch0"]), "modelled_cycles": total(np.where(m, a["cycles"], 0)),
        "bytes_known": total(~np.isnan(a["bytes"])), "bytes": total(a["bytes0"]),
        "ddr_bytes": total(a["ddr_bytes0"]), "l2m_bytes": total(a["l2m_bytes0"]),
        "ddr_ns": total(np.where(a["ddr"] & moved, a["dur"], 0)),
        "l2m_ns": total(np.where(a["l2m"] & moved, a["dur"], 0)),
    }


def duration_stats(dur: np.ndarray, g: np.ndarray, ng: int) -> dict[str, np.ndarray]:
    """min / p50 / p95 / max duration per group (percentiles interpolated linearly, as numpy's
    default), from one sort of (group, duration)."""
    if len(dur) and (dur.min() >= 0 and dur.max() < 1 << _DUR_BITS and ng < 1 << 22):
        d = (np.sort((g.astype(np.int64) << _DUR_BITS) | dur) & ((1 << _DUR_BITS) - 1)).astype(float)
    else:
        d = dur[np.lexsort((dur, g))].astype(float)
    count = np.bincount(g, minlength=ng)
    first = np.cumsum(count) - count

    def quantile(q: float) -> np.ndarray:
        pos = (count - 1) * q
        lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
        return d[first + lo] + (d[first + hi] - d[first + lo]) * (pos - lo)

    return {"min_ns": d[first], "max_ns": d[first + count - 1],
            "p50_ns": quantile(0.5), "p95_ns": quantile(0.95)}


def _ratio(num, den, valid=None) -> np.ndarray:
    num, den = np.asarray(num, float), np.asarray(den, float)
    ok = den > 0 if valid is None else (den > 0) & valid
    return np.divide(num, den, out=np.full(len(num), np.nan), where=ok)


class _Fine:
    """The finest groups: their key parts, sums, and each command's group code."""

    def __init__(self, profile: Profile, a: dict[str, np.ndarray]):
        c = profile.commands
        ft, ft_labels = _codes(c["func_type"])
        fn, fn_labels = _codes(c["func_name"])
        parts = [a["core"], a["engine"] + 1, a["is_sys"].astype(np.int64), ft, fn]
        self.code, uniques = _dense(_combine(parts))
        widths = [int(p.max()) + 1 if len(p) else 1 for p in parts]
        self.parts = dict(zip(KEYS, np.unravel_index(uniques, widths)))
        self.labels = {"engine": np.array(("",) + ENGINES, object),
                       "category": np.array(CATEGORIES, object),
                       "func_type": ft_labels, "func_name": fn_labels}
        self.sums = _sums(a, self.code, len(uniques))

    def grouping(self, keys: tuple[str, ...]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(fine group -> group of ``keys``, key parts of those groups)."""
        fine_to, uniques = _dense(_combine([self.parts[k] for k in keys]))
        first = np.zeros(len(uniques), np.int64)
        first[fine_to[::-1]] = np.arange(len(fine_to))[::-1]      # a fine group of each
        return fine_to, {k: self.parts[k][first] for k in keys}


def _table(fine: _Fine, a, keys: tuple[str, ...]) -> tuple[pd.DataFrame, np.ndarray]:
    """The breakdown by ``keys`` and each command's group code in it."""
    fine_to, parts = fine.grouping(keys)
    ng = len(next(iter(parts.values())))
    g = fine_to[fine.code]
    s = {k: np.bincount(fine_to, weights=v, minlength=ng) for k, v in fine.sums.items()}
    frame = {k: (fine.labels[k][v] if k in fine.labels else v) for k, v in parts.items()}
    frame.update({k: s[k].astype(np.int64) for k in ("count", "sum_ns", "cycles")})
    if "core" in keys:
        frame["busy_ns"] = grouped_union(g, a["start"], a["end"], ng, a["solo"])
    frame.update(duration_stats(a["dur"], g, ng))
    frame["mean_ns"] = s["sum_ns"] / np.maximum(s["count"], 1)
    modelled = s["modelled"] > 0
    for k in ("alg_cycles", "alg_ops", "uarch_ops"):
        frame[k] = np.where(modelled, s[k], np.nan)
    frame["uarch_rate"] = _ratio(s["alg_ops"], s["uarch_ops"], modelled)
    frame["alg_ops_per_cycle"] = _ratio(s["alg_ops"], s["modelled_cycles"], modelled)
    for k in ("bytes", "ddr_bytes", "l2m_bytes"):
        frame[k] = np.where(s["bytes_known"] > 0, s[k], np.nan)
    frame["ddr_bw"] = _ratio(s["ddr_bytes"], s["ddr_ns"])
    frame["l2m_bw"] = _ratio(s["l2m_bytes"], s["l2m_ns"])
    return pd.DataFrame(frame), g


def _overall_busy(per_core: pd.DataFrame, overall: pd.DataFrame, a, g_overall: np.ndarray,
                  keys: tuple[str, ...]) -> np.ndarray:
    """Busy over all cores: the per-core unions added up, as in the engine summary (cores run in
    parallel); CDMA belongs to ports, so its Overall busy is the union over all of them."""
    summed = per_core.groupby(list(keys), sort=False)["busy_ns"].sum()
    busy = summed.reindex(pd.MultiIndex.from_frame(overall[list(keys)])).to_numpy(np.int64)
    cdma = a["engine"] == ENGINES.index("CDMA")
    union = grouped_union(g_overall[cdma], a["start"][cdma], a["end"][cdma], len(overall))
    return np.where((overall["engine"] == "CDMA").to_numpy(), union, busy)


def _engine_busy(summary: pd.DataFrame | None, out: pd.DataFrame) -> np.ndarray:
    """The engine summary's busy time of each row's (core, engine)."""
    if summary is None:
        return np.full(len(out), np.nan)
    cores = summary["core"].astype(str).to_numpy()
    row = pd.Series(np.arange(len(cores)), index=cores).reindex(out["core"].astype(str)).to_numpy()
    busy = np.full(len(out), np.nan)
    for e in ENGINES:
        sel = (out["engine"] == e).to_numpy() & ~np.isnan(row)
        busy[sel] = summary[f"{e.lower()}_busy_ns"].to_numpy(float)[row[sel].astype(np.int64)]
    return busy


def _breakdown(profile: Profile, fine: _Fine, a, by_name: bool) -> pd.DataFrame:
    keys = KEYS[1:] if by_name else KEYS[1:4]
    per_core, _ = _table(fine, a, ("core",) + keys)
    overall, g_overall = _table(fine, a, keys)
    overall.insert(0, "busy_ns", _overall_busy(per_core, overall, a, g_overall, keys))
    overall.insert(0, "core", OVERALL)
    out = pd.concat([per_core, overall], ignore_index=True)
    out = out[out["engine"] != ""]
    ncores = max(profile.meta.num_cores, int(a["core"].max()) + 1 if len(a["core"]) else 0)
    span = int(a["end"].max() - a["start"].min()) if len(a["start"]) else 0
    busy = out["busy_ns"].to_numpy(float)
    work = (out["category"] == "work").to_numpy()
    out["share_busy"] = np.where(work, _ratio(busy, _engine_busy(profile.summary, out)), np.nan)
    window = np.where((out["core"] == OVERALL).to_numpy() & (out["engine"] != "CDMA").to_numpy(),
                      span * max(ncores, 1), span)
    out["share_span"] = _ratio(busy, window)
    return _ordered(out)[list(FUNCTION_COLUMNS if by_name else BREAKDOWN_COLUMNS)].reset_index(drop=True)


def _ordered(out: pd.DataFrame) -> pd.DataFrame:
    """Cores in order then Overall; engines in display order; work before waiting; longest first."""
    overall = (out["core"] == OVERALL).to_numpy()
    core_rank = np.where(overall, 1 << 30, pd.to_numeric(out["core"].where(~overall, 0))).astype(np.int64)
    engine_rank = out["engine"].map({e: i for i, e in enumerate(ENGINES)}).to_numpy()
    category_rank = (out["category"] == "waiting").to_numpy(np.int64)
    order = np.lexsort((out["func_type"].astype(str).to_numpy(), -out["busy_ns"].to_numpy(np.int64),
                        category_rank, engine_rank, core_rank))
    return out.iloc[order]


def breakdowns(profile: Profile, a: dict[str, np.ndarray] | None = None
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per Function Type, per Function Name) breakdown tables of a PMU profile."""
    a = command_arrays(profile.commands) if a is None else a
    fine = _Fine(profile, a)
    return _breakdown(profile, fine, a, by_name=False), _breakdown(profile, fine, a, by_name=True)
