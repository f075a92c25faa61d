"""Per training step (``ProfilerStep#N`` host ranges and their device span, framework-traces.md
§6.6) and per rank/device (busy time split into compute / communication / memory ops, §6.9)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.calltree import nearest_ancestor
from reportgen.analysis.metrics import union_length
from reportgen.model import Profile

#: device names of communication kernels/tasks (HTA's COMM class, Ascend HCCL); a bare
#: "broadcast" is no collective (Ascend's BroadcastTo, elementwise broadcast kernels): collective
#: broadcasts carry nccl/rccl/hccl/hcom_ in their names
COMM_PATTERN = r"(?i)nccl|hccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|hcom_"
MEMORY_PATTERN = r"(?i)memcpy|memset|MEMCPY"


def rank_table(profile: Profile) -> pd.DataFrame:
    """Per rank (core): device slices, busy time (union), compute / communication / memory
    split, host ops and steps - the numbers to spot a straggler."""
    cmds, host = profile.commands, profile.host
    rows = []
    cores = sorted(set(cmds["core"].astype(int)) if len(cmds) else set()
                   | (set(host["rank"].astype(int)) if "rank" in host.columns and len(host) else set()))
    for core in cores:
        c = cmds[cmds["core"].to_numpy() == core] if len(cmds) else cmds
        busy = ~c["is_sys"].to_numpy(bool)
        if "lane_busy" in c.columns:         # communication lanes: busy, though no kernels
            busy |= c["lane_busy"].fillna(False).to_numpy(bool)
        work = c[busy] if len(c) else c
        names = work["func_name"].astype(str) if len(work) else pd.Series(dtype=str)
        ftype = work["func_type"].astype(object).fillna("").astype(str) if len(work) else pd.Series(dtype=str)
        comm = (names.str.contains(COMM_PATTERN) | ftype.str.contains(r"(?i)hccl|comm")).to_numpy(bool)
        memop = (names.str.contains(MEMORY_PATTERN) | ftype.str.contains(MEMORY_PATTERN)).to_numpy(bool) & ~comm
        comp = ~comm & ~memop
        s = work["start_ns"].to_numpy(np.int64) if len(work) else np.zeros(0, np.int64)
        e = work["end_ns"].to_numpy(np.int64) if len(work) else np.zeros(0, np.int64)
        h = host[host["rank"].astype(int).to_numpy() == core] if "rank" in host.columns and len(host) else host
        steps = h[h["name"].astype(str).str.match(r"ProfilerStep#\d+")] if len(h) else h
        span = int(e.max() - s.min()) if len(s) else 0
        rows.append({
            "Rank": core,
            "Device slices": int(len(c)),
            "Device span (us)": span / 1e3,
            "Device busy (us)": union_length(s, e) / 1e3,
            "Compute busy (us)": union_length(s[comp], e[comp]) / 1e3,
            "Communication busy (us)": union_length(s[comm], e[comm]) / 1e3,
            "Memory-op busy (us)": union_length(s[memop], e[memop]) / 1e3,
            "Kernel time sum (us)": float((e - s).sum()) / 1e3,
            "Host slices": int(len(h)),
            "Steps": int(len(steps)),
            "Mean step (us)": float((steps["end_ns"] - steps["start_ns"]).mean() / 1e3) if len(steps) else np.nan,
        })
    out = pd.DataFrame(rows)
    if len(out):
        out["Device utilisation %"] = np.where(out["Device span (us)"] > 0,
                                               100 * out["Device busy (us)"] / out["Device span (us)"].where(out["Device span (us)"] > 0, 1), np.nan)
        med = out["Device busy (us)"].median()
        out["Busy vs median %"] = 100 * out["Device busy (us)"] / med if med else np.nan
    return out


STEP_PATTERN = r"^ProfilerStep#(\d+)$"


def step_table(profile: Profile) -> pd.DataFrame:
    """``ProfilerStep#N`` host ranges and the device work launched inside them
    (framework-traces.md §6.6: device step = first start .. last end of those device slices)."""
    host, cmds = profile.host, profile.commands
    if host.empty:
        return pd.DataFrame()
    num = host["name"].astype(str).str.extract(STEP_PATTERN)[0]
    is_step = num.notna().to_numpy()
    if not is_step.any():
        return pd.DataFrame()
    rows = np.flatnonzero(is_step)
    out = pd.DataFrame({
        "Rank": host["rank"].to_numpy()[rows] if "rank" in host.columns else 0,
        "Step": num.to_numpy()[rows].astype(np.int64),
        "Host start (ns)": host["start_ns"].to_numpy()[rows],
        "Host duration (us)": (host["end_ns"] - host["start_ns"]).to_numpy()[rows] / 1e3,
    }, index=rows)
    if len(cmds) and "launch_row" in cmds.columns:
        parent = host["parent"].to_numpy(np.int64)
        step_anc = nearest_ancestor(parent, is_step)
        lr = cmds["launch_row"].to_numpy(np.int64)
        ok = lr >= 0
        owner = np.full(len(cmds), -1, np.int64)
        owner[ok] = np.where(is_step[lr[ok]], lr[ok], step_anc[lr[ok]])
        has = owner >= 0
        d = pd.DataFrame({"owner": owner[has], "s": cmds["start_ns"].to_numpy()[has],
                          "e": cmds["end_ns"].to_numpy()[has]})
        d["dur"] = d["e"] - d["s"]
        g = d.groupby("owner").agg(first=("s", "min"), last=("e", "max"), n=("s", "size"),
                                   busy=("dur", "sum"))
        out["Device start (ns)"] = g["first"].reindex(out.index).to_numpy()
        out["Device duration (us)"] = (g["last"] - g["first"]).reindex(out.index).to_numpy() / 1e3
        out["Device slices"] = g["n"].reindex(out.index).fillna(0).astype(np.int64).to_numpy()
        out["Device time sum (us)"] = g["busy"].reindex(out.index).fillna(0).to_numpy() / 1e3
    return out.sort_values(["Rank", "Step"], kind="stable").reset_index(drop=True)
