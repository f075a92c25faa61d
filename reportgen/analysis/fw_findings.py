"""Findings of framework traces: the device-time breakdown, launch statistics, step variation,
operator and kernel tables judged by the rules of analysis/rules.py, in the PMU findings' form
(model.FINDING_COLUMNS) plus ``gain_ns``: the device time a fix could give back where the rule
can tell (NaN otherwise). Ranked like PMU findings: high first, then how far past the threshold.
Only aggregated tables (a row per device, step or name) are read here."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.findings import ranked as rank_rows
from reportgen.analysis.rules import RULES
from reportgen.analysis.step_variation import PART_NAMES
from reportgen.model import FINDING_COLUMNS

COLUMNS = list(FINDING_COLUMNS) + ["gain_ns", "gain_share", "gain_scenario"]
#: what each rule's gain assumes (the finding's ``gain_scenario``)
GAIN_SCENARIOS = {"fw_host_bound": "the host issues work before the device runs dry",
                  "fw_launch_bound": "launch overhead hidden (fused kernels, graphs)",
                  "fw_sync_bound": "no idle under synchronisation",
                  "fw_exposed_comm": "communication fully overlapped by compute",
                  "fw_uneven_steps": "the slowest step as fast as the median",
                  "fw_straggler": "the device computes as fast as the median"}


def _pct(v: float) -> str:
    return f"{100.0 * v:.1f} %"


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def _finding(rule: str, value: float, text: str, device=None, subject=None, gain=np.nan,
             context: str = "") -> dict:
    """One finding; ``_detail`` (device and value) and ``_context`` (what all devices share)
    are what a folded finding (findings.fold) lists of it."""
    r = RULES[rule]
    shown = _pct(value) if r.unit == "%" else f"{value:.2f}x"
    return {"rule": rule, "severity": r.severity(value), "core": device, "engine": None,
            "subject": subject, "value": float(value), "threshold": r.threshold, "unit": r.unit,
            "text": text, "gain_ns": float(gain),
            "_detail": f"device {device} {shown}" + (f" ({subject})" if subject else ""),
            "_context": context}


#: per-device rules whose findings fold into one when they fire on findings.FOLD_MIN devices or
#: more (the PMU findings' mechanism, findings.fold): rule -> headline
FOLDED_HEADLINES = {
    "fw_device_idle": "{n} of {cores} devices are idle {share} of their span or more",
    "fw_host_bound": "{n} of {cores} devices are host-bound: idle {share} of their span or more "
                     "before the host launched the next kernel",
    "fw_launch_bound": "{n} of {cores} devices are launch-bound: idle {share} of their span or more "
                       "while the next kernel's launch call ran",
    "fw_sync_bound": "{n} of {cores} devices are idle {share} of their span or more in "
                     "synchronisation",
    "fw_exposed_comm": "{n} of {cores} devices spend {share} of their span or more in "
                       "communication no compute overlaps",
    "fw_uneven_steps": "{n} of {cores} devices have a step at least {threshold:g}x their median step",
    "fw_memory_capacity": "{n} of {cores} devices peak at {share} of their memory or more",
    "fw_straggler": "{n} of {cores} devices compute at least {threshold:g}x the median ({context})",
}


#: idle-cause rules: rule -> (part, sentence after "device N: ", what a fix is)
IDLE_RULES = {
    "fw_host_bound": ("idle_host_ns", "idle {v} of its span ({t}) because the host had not yet "
                      "launched the next kernel (host-bound: input pipeline, Python or operator "
                      "overhead between launches)"),
    "fw_launch_bound": ("idle_launch_ns", "idle {v} of its span ({t}) while the next kernel's "
                        "launch call was running (launch-bound{extra}): fuse small kernels or "
                        "capture them in a graph"),
    "fw_sync_bound": ("idle_sync_ns", "idle {v} of its span ({t}) in synchronisation (device "
                      "waits or host synchronize calls)"),
}


def device_findings(devices: pd.DataFrame, short_share: dict) -> list[dict]:
    out = []
    for r in devices.to_dict("records"):
        span = r["span_ns"]
        if not span > 0:
            continue
        d = r["device"]
        idle = sum(r[k] for k in PART_NAMES if k.startswith("idle_"))
        if RULES["fw_device_idle"].fires(idle / span):
            causes = ", ".join(f"{PART_NAMES[k].replace('idle ', '').replace('other idle', 'other')} "
                               f"{_pct(r[k] / span)}" for k in PART_NAMES if k.startswith("idle_") and r[k])
            out.append(_finding("fw_device_idle", idle / span,
                                f"device {d} is idle {_pct(idle / span)} of its {_ms(span)} span "
                                f"({_ms(idle)}; {causes})", device=d))
        for rule, (part, sentence) in IDLE_RULES.items():
            v = r[part] / span
            if RULES[rule].fires(v):
                extra = (f": {_pct(short_share[d])} of its launched kernels run shorter than "
                         "their launch call" if d in short_share else "")
                out.append(_finding(rule, v, f"device {d}: " + sentence.format(
                    v=_pct(v), t=_ms(r[part]), extra=extra), device=d, gain=r[part]))
        v = r["exposed_comm_ns"] / span
        if RULES["fw_exposed_comm"].fires(v):
            total = r["comm_total_ns"]
            out.append(_finding("fw_exposed_comm", v,
                                f"device {d}: {_ms(r['exposed_comm_ns'])} of communication "
                                f"({_pct(v)} of its span) is not overlapped by compute "
                                f"(compute overlaps {_pct(1 - r['exposed_comm_ns'] / total)} of its "
                                f"{_ms(total)} of communication)", device=d,
                                gain=r["exposed_comm_ns"]))
    return out


def straggler_findings(devices: pd.DataFrame) -> list[dict]:
    if len(devices) < 2:
        return []
    compute = devices["compute_ns"].to_numpy(float)
    median = float(np.median(compute))
    if not median > 0:
        return []
    return [_finding("fw_straggler", c / median,
                     f"device {d} computes {_ms(c)}, {c / median:.2f}x the median {_ms(median)} "
                     f"over {len(devices)} devices: the others wait for it", device=int(d),
                     gain=c - median, context=f"median {_ms(median)}")
            for d, c in zip(devices["device"], compute) if RULES["fw_straggler"].fires(c / median)]


def step_findings(variation: pd.DataFrame) -> list[dict]:
    out = []
    for r in variation.to_dict("records"):
        if r["steps"] >= 3 and RULES["fw_uneven_steps"].fires(r["slowest_vs_median"]):
            out.append(_finding(
                "fw_uneven_steps", r["slowest_vs_median"],
                f"device {r['device']}: step {r['slowest_step']} takes {_ms(r['slowest_ns'])}, "
                f"{r['slowest_vs_median']:.2f}x the median step {_ms(r['median_ns'])} of "
                f"{r['steps']} steps (CV {r['cv']:.2f}); most of the difference is "
                f"{r['grew_most']} (+{_ms(r['grew_by_ns'])})", device=r["device"],
                subject=f"step {r['slowest_step']}", gain=r["slowest_ns"] - r["median_ns"]))
    return out


def kernel_findings(kernels: pd.DataFrame) -> list[dict]:
    """``kernels``: device, name, total_ns per (device, kernel name)."""
    out = []
    for d, t in kernels.groupby("device", sort=True):
        total = t["total_ns"].sum()
        if len(t) < 2 or not total > 0:
            continue
        for r in t.itertuples(index=False):
            share = r.total_ns / total
            if RULES["kernel_dominates"].fires(share):
                out.append(_finding("kernel_dominates", share,
                                    f"device {d}: kernel {r.name} takes {_pct(share)} of all "
                                    f"kernel time ({r.calls} calls, {_ms(r.total_ns)})",
                                    device=int(d), subject=str(r.name)))
    return out


def operator_findings(operators: pd.DataFrame | None) -> list[dict]:
    if operators is None or "Self Device (us)" not in operators.columns:
        return []
    ops = operators[~operators["Name"].astype(str).str.startswith("ProfilerStep")]
    dev = pd.to_numeric(ops["Self Device (us)"], errors="coerce").fillna(0)
    total = dev.sum()
    if (dev > 0).sum() < 2 or not total > 0:
        return []
    return [_finding("fw_operator_dominates", v / total,
                     f"operator {name} holds {_pct(v / total)} of all operators' self device time "
                     f"({v / 1e3:.3f} ms)", subject=str(name))
            for name, v in zip(ops["Name"], dev) if RULES["fw_operator_dominates"].fires(v / total)]


def memory_findings(peaks: dict, capacity: dict) -> list[dict]:
    """``peaks`` / ``capacity``: device -> bytes (peak reserved, else allocated; what the trace
    states the device holds)."""
    out = []
    for d, peak in peaks.items():
        cap = capacity.get(d)
        if cap and RULES["fw_memory_capacity"].fires(peak / cap):
            out.append(_finding("fw_memory_capacity", peak / cap,
                                f"device {d}: peak memory {peak / 2**30:.2f} GiB is {_pct(peak / cap)} "
                                f"of its {cap / 2**30:.2f} GiB", device=d))
    return out


def ranked(found: list[dict], spans: dict) -> pd.DataFrame:
    """The findings as a table, ranked like the PMU findings (findings.ranked); ``gain_share``
    = gain / the device's span (``spans``: device -> span_ns; a folded finding: its devices'
    summed span)."""
    if not found:
        return pd.DataFrame(columns=COLUMNS)
    out = pd.DataFrame(found)
    span = pd.to_numeric(out["core"].map(spans), errors="coerce")
    if "_members" in out:        # a folded finding: the summed span of its devices
        summed = [sum(spans.get(d, np.nan) for d in m) if isinstance(m, list) else np.nan
                  for m in out["_members"]]
        span = span.fillna(pd.Series(summed, index=out.index))
    out["gain_share"] = out["gain_ns"] / span.where(span > 0)
    out["gain_scenario"] = out["rule"].map(GAIN_SCENARIOS).where(out["gain_ns"].notna(), None)
    return rank_rows(out, COLUMNS)
