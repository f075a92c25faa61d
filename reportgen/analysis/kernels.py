"""Device slices grouped (framework-traces.md §6.5): per kernel name and launch geometry, and
Ascend-style per (OP Type, Core Type) task statistics."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.model import Profile


def kernel_table(profile: Profile) -> pd.DataFrame:
    """Device work grouped by name and launch geometry (grid/block, or Ascend core type and
    block dim): calls, total/avg/min/max duration (µs) and share of all device work time.
    Waits, syncs and markers (``is_sys``) are no work and not listed."""
    cmds = profile.commands
    if len(cmds):
        cmds = cmds[~cmds["is_sys"].to_numpy(bool)]
    if cmds.empty:
        return pd.DataFrame(columns=["Name", "Type", "Calls", "Total (us)", "Avg (us)",
                                     "Min (us)", "Max (us)", "Share %"])
    t = pd.DataFrame({"Name": cmds["func_name"].astype(str).to_numpy(),
                      "Type": cmds["func_type"].astype(object).fillna("").astype(str).to_numpy(),
                      "dur": (cmds["end_ns"] - cmds["start_ns"]).to_numpy(np.int64) / 1e3})
    keys = ["Name", "Type"]
    for col, label in (("core_type", "Accelerator Core"), ("block_dim", "Block Dim"),
                       ("grid", "Grid"), ("block", "Block")):
        if col in cmds.columns and cmds[col].notna().any():
            t[label] = cmds[col].astype(object).where(cmds[col].notna(), "").astype(str).to_numpy()
            keys.append(label)
    g = t.groupby(keys, sort=False)["dur"]
    out = g.agg(["size", "sum", "mean", "min", "max"]).reset_index()
    out.columns = keys + ["Calls", "Total (us)", "Avg (us)", "Min (us)", "Max (us)"]
    total = out["Total (us)"].sum()
    out["Share %"] = 100 * out["Total (us)"] / total if total else np.nan
    # CUDA launch quality (tb_plugin kernel view): duration-weighted means over the group
    if "args" in cmds.columns:
        for key, label in (("blocks per SM", "Mean Blocks per SM"),
                           ("est. achieved occupancy %", "Mean Est. Achieved Occupancy %")):
            v = pd.to_numeric(pd.Series([a.get(key) if isinstance(a, dict) else None
                                         for a in cmds["args"].to_numpy()]), errors="coerce").to_numpy()
            if np.isfinite(v).any():
                w = np.where(np.isfinite(v), t["dur"].to_numpy(), 0.0)
                num = pd.Series(np.nan_to_num(v) * w).groupby([t[k] for k in keys], sort=False).sum()
                den = pd.Series(w).groupby([t[k] for k in keys], sort=False).sum()
                mean = (num / den.where(den > 0)).rename(label)
                out = out.merge(mean.reset_index(), on=keys, how="left")
    return out.sort_values("Total (us)", ascending=False, kind="stable").reset_index(drop=True)


def op_statistic(profile: Profile) -> pd.DataFrame:
    """Ascend ``op_statistic``: device tasks grouped by (OP Type, Core Type) with Count,
    Total/Min/Avg/Max (µs) and Ratio(%) = Total / all tasks' total, per core (device)."""
    cmds = profile.commands
    if cmds.empty or "op_type" not in cmds.columns:
        return pd.DataFrame()
    t = pd.DataFrame({
        "Device_id": cmds["core"].astype(np.int64).to_numpy(),
        "OP Type": cmds["op_type"].astype(object).fillna("").astype(str).to_numpy(),
        "Core Type": cmds["core_type"].astype(object).fillna("").astype(str).to_numpy()
        if "core_type" in cmds.columns else "",
        "dur": (cmds["end_ns"] - cmds["start_ns"]).to_numpy(np.int64) / 1e3,
    })
    out = t.groupby(["Device_id", "OP Type", "Core Type"], sort=False)["dur"].agg(
        ["size", "sum", "min", "mean", "max"]).reset_index()
    out.columns = ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)",
                   "Avg Time(us)", "Max Time(us)"]
    total = out.groupby("Device_id")["Total Time(us)"].transform("sum")
    out["Ratio(%)"] = 100 * out["Total Time(us)"] / total.where(total > 0)
    return out.sort_values(["Device_id", "Total Time(us)"], ascending=[True, False],
                           kind="stable").reset_index(drop=True)
