"""Operator tables in torch ``key_averages`` semantics (framework-traces.md §6.4): from the host
call tree and device attribution, or from a vendor's per-call self/total times."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.calltree import function_rows, subtree_sum
from reportgen.model import Profile


def input_shapes(args: pd.Series) -> pd.Series:
    """Canonical input-shape key: shapes joined by ';', dims by ',' (PyTorch list of lists and
    Ascend ';'-joined strings give the same text)."""
    def one(a):
        if not isinstance(a, dict):
            return ""
        v = a.get("Input Dims", a.get("Input Shapes"))
        if v is None:
            return ""
        if isinstance(v, str):
            parts = [p.strip().strip('"').strip() for p in v.replace("\r", "").replace("\n", "").split(";")]
            return ";".join(parts)
        if isinstance(v, (list, tuple)):
            return ";".join(",".join(str(x) for x in s) if isinstance(s, (list, tuple)) else str(s)
                            for s in v)
        return str(v)
    return pd.Series([one(a) for a in args.to_numpy()], index=args.index, dtype=object)


#: torch names every profiler step ProfilerStep#N and aggregates them as one key
#: (profiler_util._rewrite_name with the wildcard)
STEP_NAME = r"^ProfilerStep#\d+$"


def key_names(names: pd.Series) -> np.ndarray:
    """Operator names as torch keys them: ``ProfilerStep#N`` -> ``ProfilerStep*``."""
    return names.astype(str).str.replace(STEP_NAME, "ProfilerStep*", regex=True).to_numpy(object)


def self_cpu_ns(host: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(mask of operator rows, Self CPU per row in ns): duration minus the durations of the
    direct children in the operator tree (``parent`` holds torch's rule), not clipped at 0
    (torch does not clip either), so the Self CPU of a thread adds up to its roots' durations."""
    inc = function_rows(host)
    parent = host["parent"].to_numpy(np.int64)
    dur = (host["end_ns"] - host["start_ns"]).to_numpy(np.int64)
    child = np.flatnonzero(inc & (parent >= 0))
    self_cpu = dur - np.bincount(parent[child], dur[child], minlength=len(host)).astype(np.int64)
    return inc, np.where(inc, self_cpu, 0)


def key_averages(profile: Profile, group_by_input_shape: bool = False) -> pd.DataFrame:
    """torch ``key_averages`` semantics (framework-traces.md §6.4), times in µs.

    Rows are torch's FunctionEvents (:func:`function_rows`) over the operator tree built with
    torch's rule (reportgen.intervals.operator_parents); ``ProfilerStep#N`` are keyed as
    ``ProfilerStep*``.  Self CPU = duration - durations of the direct children; Self Device =
    device slices attributed to the op (``op_row``); Device total adds the subtree.  Both CPU
    percentages divide by the sum of Self CPU (torch uses the same denominator for CPU total %),
    Self Device % by the sum of Self Device.
    """
    host, cmds = profile.host, profile.commands
    cols = ["Name", "Self CPU %", "Self CPU (us)", "CPU total %", "CPU total (us)",
            "CPU time avg (us)", "Self Device (us)", "Self Device %", "Device total (us)",
            "Device time avg (us)", "# of Calls"]
    if host.empty:
        return pd.DataFrame(columns=cols)
    inc, self_cpu = self_cpu_ns(host)
    self_cpu = self_cpu.astype(float)
    dur = (host["end_ns"] - host["start_ns"]).to_numpy(np.int64).astype(float)
    self_dev = np.zeros(len(host))
    if len(cmds) and "op_row" in cmds.columns:
        op = cmds["op_row"].to_numpy(np.int64)
        ok = (op >= 0) & ~cmds["is_sys"].to_numpy(bool)
        np.add.at(self_dev, op[ok], (cmds["end_ns"] - cmds["start_ns"]).to_numpy(np.int64)[ok])
    tree_parent = np.where(inc, host["parent"].to_numpy(np.int64), -1)
    dev_total = subtree_sum(tree_parent, np.where(inc, self_dev, 0))
    t = pd.DataFrame({"Name": key_names(host["name"]), "self_cpu": self_cpu, "cpu": dur,
                      "self_dev": self_dev, "dev": dev_total})[inc]
    keys = ["Name"]
    if group_by_input_shape:
        t["Input Shapes"] = input_shapes(host["args"][inc]).to_numpy()
        keys.append("Input Shapes")
    g = t.groupby(keys, sort=False, dropna=False)
    agg = g.agg(self_cpu=("self_cpu", "sum"), cpu=("cpu", "sum"), self_dev=("self_dev", "sum"),
                dev=("dev", "sum"), calls=("cpu", "size")).reset_index()
    tot_self = agg["self_cpu"].sum()
    tot_dev = agg["self_dev"].sum()
    out = pd.DataFrame({k: agg[k] for k in keys})
    out["Self CPU %"] = 100 * agg["self_cpu"] / tot_self if tot_self else np.nan
    out["Self CPU (us)"] = agg["self_cpu"] / 1e3
    out["CPU total %"] = 100 * agg["cpu"] / tot_self if tot_self else np.nan
    out["CPU total (us)"] = agg["cpu"] / 1e3
    out["CPU time avg (us)"] = agg["cpu"] / agg["calls"] / 1e3
    out["Self Device (us)"] = agg["self_dev"] / 1e3
    out["Self Device %"] = 100 * agg["self_dev"] / tot_dev if tot_dev else np.nan
    out["Device total (us)"] = agg["dev"] / 1e3
    out["Device time avg (us)"] = agg["dev"] / agg["calls"] / 1e3
    out["# of Calls"] = agg["calls"].astype(np.int64)
    return out.sort_values(["Device total (us)", "CPU total (us)"], ascending=False,
                           kind="stable").reset_index(drop=True)


def key_averages_from_calls(calls: pd.DataFrame, group_by_input_shape: bool = False
                            ) -> pd.DataFrame:
    """The same table from per-call rows that already carry self/total times in µs (Ascend
    operator_details.csv: Host Self/Total, Device Self/Total)."""
    keys = ["Name"] + (["Input Shapes"] if group_by_input_shape and "Input Shapes" in calls else [])
    c = calls.copy()
    if "Input Shapes" in keys:
        c["Input Shapes"] = input_shapes(pd.Series([{"Input Shapes": v} for v in c["Input Shapes"]],
                                                   index=c.index))
    g = c.groupby(keys, sort=False, dropna=False)
    agg = g.agg(self_cpu=("host_self_us", "sum"), cpu=("host_total_us", "sum"),
                self_dev=("device_self_us", "sum"), dev=("device_total_us", "sum"),
                calls=("host_total_us", "size")).reset_index()
    tot_self, tot_dev = agg["self_cpu"].sum(), agg["self_dev"].sum()
    out = pd.DataFrame({k: agg[k] for k in keys})
    out["Self CPU %"] = 100 * agg["self_cpu"] / tot_self if tot_self else np.nan
    out["Self CPU (us)"] = agg["self_cpu"]
    out["CPU total %"] = 100 * agg["cpu"] / tot_self if tot_self else np.nan
    out["CPU total (us)"] = agg["cpu"]
    out["CPU time avg (us)"] = agg["cpu"] / agg["calls"]
    out["Self Device (us)"] = agg["self_dev"]
    out["Self Device %"] = 100 * agg["self_dev"] / tot_dev if tot_dev else np.nan
    out["Device total (us)"] = agg["dev"]
    out["Device time avg (us)"] = agg["dev"] / agg["calls"]
    out["# of Calls"] = agg["calls"].astype(np.int64)
    return out.sort_values(["Device total (us)", "CPU total (us)"], ascending=False,
                           kind="stable").reset_index(drop=True)
