"""Each finding's estimated gain: the what-if scenario that removes its cause (docs/metrics.md
"What-if scenarios"), and the findings ranked by it (largest gain first; equal gains keep the
rules' order).  The ``waiting_share`` finding also names its main cause (analysis/waits.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.waits import describe
from reportgen.analysis.whatif import FACTOR, Scenario, what_if
from reportgen.model import ENGINES


def _core(v):
    return None if v is None or isinstance(v, str) or v != v else int(v)


def _scenario_for(f: dict, why) -> tuple[str, str | None, int | None]:
    """(kind, target, core) of the scenario that removes a finding's cause."""
    rule, core, engine = f["rule"], _core(f["core"]), f["engine"]
    if rule == "core_imbalance":
        return "balance", None, core
    if rule in ("dma_bound_stretch", "ddr_bandwidth_peak"):
        return "engine", "GDMA", core
    if rule == "waiting_share":
        cause = why.waits.main_cause
        if cause is None or cause["kind"] == "barrier":
            return "barrier", None, None
        return "engine", cause["waited_for_engine"], cause["waited_for_core"]
    if rule == "low_uarch_rate":
        return "function_type", f["subject"], None
    if rule in ("kernel_dominates", "far_under_roof"):
        return "kernel", f["subject"], None
    return "", None, None


def _gain(why, kind, target, core) -> tuple[float, str | None]:
    row = why.scenario(kind, target, core)
    if row is None and kind in ("engine", "function_type", "kernel"):
        return _evaluate(why, kind, target, core)
    if row is None:
        return np.nan, None
    return float(row["gain_ns"]), row["scenario"]


def _evaluate(why, kind, target, core):
    """A scenario the standard table does not hold (a Function Type beyond its top 10)."""
    rt = why.retimer
    where = f" on core {core}" if core is not None else ""
    if kind == "engine":
        if target not in ENGINES or core is None or core >= rt.ncores:
            return np.nan, None
        groups, table = "engine_core", rt.engine_table(ENGINES.index(target), core, FACTOR)
    else:
        codes_names = why.labels.get(kind)
        if codes_names is None or core is not None or target not in codes_names[1]:
            return np.nan, None
        names = codes_names[1]
        groups, table = kind, np.where(np.arange(len(names)) == names.index(target), FACTOR, 1.0)
    s = Scenario(f"{target} {FACTOR:g}x faster{where}", kind, target, core, FACTOR, groups, table)
    row = what_if(rt, [s]).iloc[0]
    return float(row["gain_ns"]), row["scenario"]


def rank_by_gain(found: pd.DataFrame, why) -> pd.DataFrame:
    """``found`` with ``gain_ns``, ``gain_share`` and ``gain_scenario`` columns, re-ranked."""
    if found.empty:
        return found.assign(gain_ns=pd.Series(dtype=float), gain_share=pd.Series(dtype=float),
                            gain_scenario=pd.Series(dtype=object))
    gains, names, texts = [], [], []
    for f in found.to_dict("records"):
        g, name = _gain(why, *_scenario_for(f, why))
        gains.append(g)
        names.append(name)
        text = f["text"]
        if f["rule"] == "waiting_share" and why.waits.main_cause is not None:
            t = why.waits.table
            m = why.waits.main_cause
            top = t[(t["kind"] == m["kind"]) & (t["waited_for_core"] == m["waited_for_core"])].head(1)
            if len(top):
                text += f"; mostly waiting for core {m['waited_for_core']} {m['waited_for_engine']} " \
                        f"({100 * m['share']:.1f} % of all waiting), e.g. {describe(top.iloc[0])}"
        texts.append(text)
    out = found.assign(text=texts, gain_ns=gains, gain_scenario=names)
    out["gain_share"] = out["gain_ns"] / why.span_ns if why.span_ns else np.nan
    key = np.nan_to_num(out["gain_ns"].to_numpy(float), nan=-1.0)
    order = np.lexsort((out["rank"].to_numpy(), -key))
    out = out.iloc[order].reset_index(drop=True)
    out["rank"] = np.arange(1, len(out) + 1)
    return out
