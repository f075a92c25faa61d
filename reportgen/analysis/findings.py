"""Findings: the diagnosis tables judged by the rules of analysis/rules.py, in plain words.

Each finding names its rule, the core / engine / subject it is about, the measured value, the
threshold it passed and a sentence with the numbers. Ranked: severity "high" first, then how
far past its threshold (``Rule.excess``), then rule order. Only aggregated tables are read here
(a few hundred rows), never the commands.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.chip import ChipPeaks
from reportgen.analysis.rules import RULES
from reportgen.model import FINDING_COLUMNS

IMBALANCE_ENGINES = ("TIU", "GDMA", "SDMA")


def _pct(v: float) -> str:
    return f"{100.0 * v:.1f} %"


def _us(ns: float) -> str:
    return f"{ns / 1000.0:.3f} us"


def _finding(rule: str, value: float, text: str, core=None, engine=None, subject=None,
             detail: str = "", context: str = "") -> dict:
    """One finding; ``detail`` (e.g. "core 3 96.9 %") and ``context`` (what all cores share, e.g.
    the median) are what a folded finding (:func:`fold`) lists of it."""
    r = RULES[rule]
    return {"rule": rule, "severity": r.severity(value), "core": core, "engine": engine,
            "subject": subject, "value": float(value), "threshold": r.threshold, "unit": r.unit,
            "text": text, "_detail": detail, "_context": context}


def _core_rows(summary: pd.DataFrame) -> pd.DataFrame:
    return summary[summary["core"].astype(str) != "Overall"]


def core_imbalance(summary: pd.DataFrame) -> list[dict]:
    rule, rows, out = RULES["core_imbalance"], _core_rows(summary), []
    if len(rows) < 2:
        return out
    for engine in IMBALANCE_ENGINES:
        util = rows[f"{engine.lower()}_util"].to_numpy(float)
        median = float(np.median(util))
        if not median > 0:
            continue
        for core, u in zip(rows["core"], util):
            ratio = u / median
            if rule.fires(ratio):
                out.append(_finding("core_imbalance", ratio,
                                    f"core {core} {engine} busy {_pct(u)} of the span vs median "
                                    f"{_pct(median)} over {len(rows)} cores ({ratio:.2f}x)",
                                    core=int(core), engine=engine,
                                    detail=f"core {core} {_pct(u)} ({ratio:.2f}x)",
                                    context=f"median {_pct(median)}"))
    return out


def dma_bound_stretches(stretches: pd.DataFrame) -> list[dict]:
    return [_finding("dma_bound_stretch", s.share_span,
                     f"core {s.core}: DMA busy while TIU idle for {_us(s.length_ns)} "
                     f"({_pct(s.share_span)} of the span), from {_us(s.start_ns)} to {_us(s.end_ns)}",
                     core=int(s.core), engine="TIU", subject=f"{int(s.start_ns)}-{int(s.end_ns)}")
            for s in stretches.itertuples(index=False)
            if RULES["dma_bound_stretch"].fires(s.share_span)]


def ddr_bandwidth(summary: pd.DataFrame, peaks: ChipPeaks | None) -> list[dict]:
    if peaks is None:
        return []
    out, rule, peak = [], RULES["ddr_bandwidth_peak"], peaks.ddr_gbps_per_core
    rows = _core_rows(summary)
    nbytes = rows["gdma_ddr_bytes"].to_numpy(float) + rows["sdma_ddr_bytes"].to_numpy(float)
    busy = rows["gdma_ddr_busy_ns"].to_numpy(float) + rows["sdma_ddr_busy_ns"].to_numpy(float)
    bw = np.divide(nbytes, busy, out=np.full(len(busy), np.nan), where=busy > 0)
    for core, b in zip(rows["core"], bw):
        share = b / peak
        if rule.fires(share):
            out.append(_finding("ddr_bandwidth_peak", share,
                                f"core {core} DDR bandwidth while transferring {b:.2f} GB/s = "
                                f"{_pct(share)} of the {peak:.3f} GB/s per-core peak ({peaks.chip.name})",
                                core=int(core), engine="GDMA+SDMA", detail=f"core {core} {b:.2f} GB/s",
                                context=f"peak {peak:.3f} GB/s per core"))
    return out


def waiting_share(breakdown: pd.DataFrame) -> list[dict]:
    rows = breakdown[(breakdown["category"] == "waiting") & (breakdown["core"] != "Overall")]
    share = rows.groupby(["core", "engine"], sort=False)["share_span"].sum()
    return [_finding("waiting_share", v, f"core {core} {engine} spends {_pct(v)} of the span in "
                     "system commands (send/wait/sync), not working", core=int(core), engine=engine,
                     detail=f"core {core} {_pct(v)}")
            for (core, engine), v in share.items() if RULES["waiting_share"].fires(v)]


def low_uarch_rate(breakdown: pd.DataFrame) -> list[dict]:
    rule = RULES["low_uarch_rate"]
    rows = breakdown[(breakdown["core"] == "Overall") & (breakdown["engine"] == "TIU")
                     & (breakdown["category"] == "work")]
    return [_finding("low_uarch_rate", r.uarch_rate,
                     f"TIU {r.func_type} uArch rate {_pct(r.uarch_rate)} over all cores, "
                     f"{_pct(r.share_busy)} of TIU busy time: the hardware computes "
                     f"{1 / r.uarch_rate:.2f}x the useful ops (operand shapes not aligned)",
                     core="Overall", engine="TIU", subject=str(r.func_type))
            for r in rows.itertuples(index=False)
            if r.share_busy >= rule.min_share and rule.fires(r.uarch_rate)]


def kernel_dominates(kernels: pd.DataFrame) -> list[dict]:
    out = []
    for source, rows in kernels.groupby("source", sort=False):
        if len(rows) < 2:
            continue
        for r in rows.itertuples(index=False):
            if RULES["kernel_dominates"].fires(r.share_kernels):
                out.append(_finding("kernel_dominates", r.share_kernels,
                                    f"{source} kernel {r.name} takes {_pct(r.share_kernels)} of all "
                                    f"kernel time ({r.calls} calls, {_us(r.total_ns)})",
                                    subject=str(r.name)))
    return out


#: per-core rules whose findings on one engine fold into one finding when they fire on FOLD_MIN
#: cores or more (8 lines saying the same of 8 cores hide the other findings): rule -> headline
FOLDED_HEADLINES = {
    "core_imbalance": "{engine} busy time is uneven: {n} of {cores} cores are at least {threshold:g}x "
                      "away from the median ({context})",
    "ddr_bandwidth_peak": "DDR bandwidth while transferring is at least {share} of the peak on "
                          "{n} of {cores} cores ({context})",
    "waiting_share": "{engine} spends at least {share} of the span in system commands "
                     "(send/wait/sync) on {n} of {cores} cores",
}
FOLD_MIN = 3
LISTED = 8          # cores named in a folded finding's text, most extreme first


def fold(found: list[dict], cores: int, headlines: dict[str, str] = FOLDED_HEADLINES,
         noun: str = "core") -> list[dict]:
    """The findings with each (rule, engine) group of ``headlines`` that fired on FOLD_MIN
    cores or more replaced by one: core None, subject the cores it fired on, value and severity
    of its most extreme member, the text naming the cores. Framework findings fold the same way
    over devices (``noun`` "device"); their ``gain_ns`` is then the members' sum. ``_members``
    lists the folded cores."""
    groups: dict[tuple, list[dict]] = {}
    for f in found:
        if f["rule"] in headlines:
            groups.setdefault((f["rule"], f["engine"]), []).append(f)
    out = [f for f in found if f["rule"] not in headlines
           or len(groups[(f["rule"], f["engine"])]) < FOLD_MIN]
    for (rule, engine), members in groups.items():
        if len(members) < FOLD_MIN:
            continue
        members = sorted(members, key=lambda f: -RULES[rule].excess(f["value"]))
        head = headlines[rule].format(engine=engine, n=len(members), cores=cores,
                                             threshold=RULES[rule].threshold, share=f"{100 * RULES[rule].threshold:g} %",
                                             context=members[0]["_context"])
        listed = ", ".join(f["_detail"] for f in members[:LISTED])
        more = f" and {len(members) - LISTED} more" if len(members) > LISTED else ""
        worst = dict(members[0])
        if "gain_ns" in worst:
            gains = np.array([f["gain_ns"] for f in members], float)
            worst["gain_ns"] = float(np.nansum(gains)) if np.isfinite(gains).any() else np.nan
        out.append(dict(worst, core=None, text=f"{head}: {listed}{more}", _members=[f["core"] for f in members],
                        subject=f"{noun}s " + ", ".join(str(f["core"]) for f in sorted(members, key=lambda f: f["core"])),
                        severity="high" if any(f["severity"] == "high" for f in members) else "medium"))
    return out


def findings(summary: pd.DataFrame, breakdown: pd.DataFrame, kernels: pd.DataFrame,
             stretches: pd.DataFrame, peaks: ChipPeaks | None, extra: list[dict] = ()) -> pd.DataFrame:
    """``extra``: findings judged elsewhere (roofline, local memory), made with :func:`_finding`."""
    found = (core_imbalance(summary) + dma_bound_stretches(stretches) + ddr_bandwidth(summary, peaks)
             + waiting_share(breakdown) + low_uarch_rate(breakdown) + kernel_dominates(kernels)
             + list(extra))
    found = fold(found, cores=len(_core_rows(summary)))
    if not found:
        return pd.DataFrame(columns=list(FINDING_COLUMNS))
    return ranked(pd.DataFrame(found).drop(columns=["_detail", "_context"]), list(FINDING_COLUMNS))


def ranked(out: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Findings (one row each) ranked: high first, then how far past the threshold, then rule
    order; ``rank`` numbers them from 1. Shared by the PMU and framework findings."""
    for col in ("core", "engine", "subject"):             # absent stays None (JSON null), not NaN
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    rule_order = {name: i for i, name in enumerate(RULES)}
    excess = [RULES[r].excess(v) for r, v in zip(out["rule"], out["value"])]
    order = np.lexsort((out["rule"].map(rule_order).to_numpy(), -np.array(excess),
                        (out["severity"] != "high").to_numpy()))
    out = out.iloc[order].reset_index(drop=True)
    out["rank"] = np.arange(1, len(out) + 1)
    return out[columns]
