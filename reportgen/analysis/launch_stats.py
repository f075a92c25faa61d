"""Kernel launch statistics of framework traces (docs/metrics.md "Launch statistics").

Per device and kernel name, over the work slices whose launching host slice is a runtime call:
launches, kernel time, launch (runtime call) time, launch delay = kernel start - launch start,
short kernels (device time below the launch call's CPU time), delay outliers (above the
device's Tukey far fence Q3 + 3 IQR of all its delays). Grouped with pandas, no loop per slice.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.device_time import launch_times, slice_classes
from reportgen.model import Profile

COLUMNS = ["device", "name", "launches", "kernel_ns", "launch_ns", "mean_kernel_ns",
           "mean_launch_ns", "mean_delay_ns", "p50_delay_ns", "p95_delay_ns", "max_delay_ns",
           "short", "short_share", "delay_outliers"]
#: Tukey's "far out" fence factor for launch-delay outliers
OUTLIER_IQR = 3.0


def launch_arrays(profile: Profile) -> pd.DataFrame:
    """One row per launched work slice: device, name, kernel_ns, launch_ns, delay_ns, short."""
    cmds, host = profile.commands, profile.host
    if cmds.empty or host.empty or "launch_row" not in cmds.columns or "role" not in host.columns:
        return pd.DataFrame(columns=["device", "name", "kernel_ns", "launch_ns", "delay_ns", "short"])
    ls, le = launch_times(profile)
    lr = cmds["launch_row"].to_numpy(np.int64)
    role = host["role"].to_numpy(object)
    ok = slice_classes(cmds)["work"] & (lr >= 0)
    ok[ok] &= role[lr[ok]] == "runtime"
    s, e = cmds["start_ns"].to_numpy(np.int64)[ok], cmds["end_ns"].to_numpy(np.int64)[ok]
    t = pd.DataFrame({"device": cmds["core"].astype(np.int64).to_numpy()[ok],
                      "name": np.asarray(cmds["func_name"].astype(object))[ok],
                      "kernel_ns": e - s, "launch_ns": le[ok] - ls[ok], "delay_ns": s - ls[ok]})
    t["short"] = t["kernel_ns"] < t["launch_ns"]
    return t


def launch_stats(t: pd.DataFrame) -> pd.DataFrame:
    """Per (device, kernel name) of :func:`launch_arrays`, longest total kernel time first;
    empty without launches."""
    if t.empty:
        return pd.DataFrame(columns=COLUMNS)
    q = t.groupby("device")["delay_ns"].quantile([0.25, 0.75]).unstack()
    fence = (q[0.75] + OUTLIER_IQR * (q[0.75] - q[0.25])).reindex(t["device"]).to_numpy()
    t["outlier"] = t["delay_ns"].to_numpy() > fence
    g = t.groupby(["device", "name"], sort=False)
    out = g.agg(launches=("kernel_ns", "size"), kernel_ns=("kernel_ns", "sum"),
                launch_ns=("launch_ns", "sum"), mean_kernel_ns=("kernel_ns", "mean"),
                mean_launch_ns=("launch_ns", "mean"), mean_delay_ns=("delay_ns", "mean"),
                p50_delay_ns=("delay_ns", "median"),
                p95_delay_ns=("delay_ns", lambda v: float(np.percentile(v, 95))),
                max_delay_ns=("delay_ns", "max"), short=("short", "sum"),
                delay_outliers=("outlier", "sum")).reset_index()
    out["short_share"] = out["short"] / out["launches"]
    return out.sort_values(["device", "kernel_ns"], ascending=[True, False],
                           kind="stable").reset_index(drop=True)[COLUMNS]


def launch_totals(t: pd.DataFrame) -> pd.DataFrame:
    """Per device of :func:`launch_arrays`: launches, short kernels and their share, mean delay."""
    if t.empty:
        return pd.DataFrame(columns=["device", "launches", "short", "short_share", "mean_delay_ns"])
    g = t.groupby("device")
    out = g.agg(launches=("short", "size"), short=("short", "sum"),
                mean_delay_ns=("delay_ns", "mean")).reset_index()
    out["short_share"] = out["short"] / out["launches"]
    return out
