"""Kernel Function slices: one per kernel call on per-core "Kernel Function" tracks, with the
call's figures as typed args.

PMU captures: the device calls of ``profile.diagnosis.kernel_calls`` (one per func_scope, or run
of one kernel name on a core; docs/metrics.md "Diagnosis"), so every figure on a slice is the
analysis' own number: wall time, busy time per engine, TIU utilisation, uArch rate, bytes and
DDR/L2M bandwidth inside the call. Framework traces have no diagnosis (their lanes are streams,
not TIU/GDMA/SDMA): their calls are the same grouping of the commands that name a kernel,
without the engine figures.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.model import Profile
from reportgen.writers.perfetto.columns import column_values, engine_is
from reportgen.writers.perfetto.device import Device
from reportgen.writers.perfetto.trace import Plan
from reportgen.writers.perfetto.slices import lane_tracks, slice_plan

#: (arg name, kernel-call column, kind, scale): the per-call figures on each slice; a rate or
#: utilisation (0..1 in the analysis) is written in % like the commands' uArch Rate
CALL_ARGS = (
    ("Wall (ns)", "wall_ns", "int", 1),
    ("TIU Busy (ns)", "tiu_busy_ns", "int", 1),
    ("GDMA Busy (ns)", "gdma_busy_ns", "int", 1),
    ("SDMA Busy (ns)", "sdma_busy_ns", "int", 1),
    ("TIU Util (%)", "tiu_util", "double", 100),
    ("uArch Rate", "uarch_rate", "double", 100),
    ("DMA data size(B)", "bytes", "int", 1),
    ("DDR Bandwidth(GB/s)", "ddr_bw", "double", 1),
    ("L2M Bandwidth(GB/s)", "l2m_bw", "double", 1),
)


def percent(values: np.ndarray) -> np.ndarray:
    """A 0..1 fraction as the % every Perfetto arg shows (6 decimals, as the commands' rate)."""
    return np.round(values * 100.0, 6)


def _command_calls(c: pd.DataFrame) -> pd.DataFrame:
    """Framework traces: one call per func_scope, or run of one kernel name on a core."""
    keep = ~engine_is(c, "CDMA") & (c["kernel"].notna() | c["func_scope"].notna()).to_numpy(bool)
    dev = c.loc[keep, ["core", "start_ns", "end_ns", "kernel", "func_scope"]]   # only what is used
    if dev.empty:
        return pd.DataFrame(columns=["core", "start_ns", "end_ns", "kernel", "scope", "commands"])
    dev = dev.sort_values(["core", "start_ns"], kind="stable")
    kernel = dev["kernel"].astype(object)
    scope = dev["func_scope"].astype("Float64")
    run = (kernel.ne(kernel.shift()) | dev["core"].ne(dev["core"].shift())).cumsum()
    key = np.where(scope.notna().to_numpy(bool), scope.fillna(0).astype("int64").to_numpy(),
                   -run.to_numpy(np.int64))         # runs get negative keys, scopes are >= 0
    g = dev.assign(_key=key).groupby(["core", "_key"], sort=False, observed=True)
    return pd.DataFrame({"core": g["core"].first(), "start_ns": g["start_ns"].min(),
                         "end_ns": g["end_ns"].max(), "kernel": g["kernel"].first(),
                         "scope": g["func_scope"].first(), "commands": g.size()}).reset_index(drop=True)


def _diagnosis_calls(calls: pd.DataFrame) -> pd.DataFrame:
    """The device calls of the diagnosis; ``kernel`` is the name unless the call has none (the
    analysis then names it "scope N")."""
    k = calls[calls["source"] == "device"].reset_index(drop=True)
    scope = k["scope"].astype("Float64")
    unnamed = scope.notna().to_numpy(bool) & (
        k["name"].astype(str) == "scope " + scope.fillna(-1).astype("int64").astype(str)).to_numpy(bool)
    return k.assign(kernel=k["name"].astype(object).where(~unnamed, None))


def kernel_calls(profile: Profile) -> pd.DataFrame:
    """The calls drawn: the diagnosis' device calls when there is one."""
    d = profile.diagnosis
    if d is not None:
        return _diagnosis_calls(d.kernel_calls)
    return _command_calls(profile.commands)


def kernels_plan(device: Device, k: pd.DataFrame) -> Plan | None:
    """One slice per kernel call ``k`` of every core (None when there is none)."""
    if k.empty:
        return None
    t = device.t
    start, end = k["start_ns"].to_numpy(np.int64), k["end_ns"].to_numpy(np.int64)
    tracks = lane_tracks(device, k["core"].to_numpy(np.int64), start, end, "kernel-function",
                         "Kernel Function")
    label = k["kernel"].astype(object).where(k["kernel"].notna(),
                                             "scope " + k["scope"].astype("Float64").fillna(-1).astype("int64").astype(str))
    name_iid = t.names.codes(label)
    kern_iid = t.strings.codes(k["kernel"].astype(object))
    scope_v, scope_ok = column_values(k, "scope", "int")
    count = k["commands"].to_numpy(np.int64)
    figures = []
    for arg, col, kind, scale in CALL_ARGS:
        if col in k:
            # names not among trace.ARG_NAMES get their iid on first use, so a trace without
            # kernel figures (framework traces) interns exactly what it did before
            t.arg_iid.setdefault(arg, t.arg_names.get(arg))
            values, present = column_values(k, col, kind)
            figures.append((arg, kind, percent(values) if scale == 100 else values, present))
    args = [("Kernel Function", "string", kern_iid, kern_iid > 0),
            ("Func Scope Id", "int", scope_v, scope_ok),
            ("Commands", "int", count, np.ones(len(k), bool))] + figures
    arg_names = ["Kernel Function", "Func Scope Id", "Commands"] + [a for a, _, _, ok in figures if ok.any()]
    return slice_plan(device, tracks, start, end, name_iid, args, arg_names,
                      {"strings": (tracks[1][tracks[0]], kern_iid)})
