"""Framework operator analyses over a Profile built from a trace (framework-traces.md §6).

Inputs are the parsers' linked frames: ``profile.host`` (slices with their per-thread call tree:
``parent``, ``depth``, plus ``role``, ``op_row``) and ``profile.commands`` (device slices with
``launch_row`` = host row that issued them and ``op_row`` = the framework op they belong to).
Every function returns a DataFrame; :func:`attach_tables` stores them in ``profile.tables``
under stable names that the writers show as they are:

* ``Host-Device`` / ``Host-Device Self``: the seed tool's table (``$$`` call paths of a monitored
  category, host / device / launch durations), total and self attribution (§6.3), summed per
  path (per-call rows: :func:`host_device_table`, written by the seed CSV writer).
* ``Operators`` / ``Operators by Shape``: torch ``key_averages``-style table (§6.4).
* ``Kernels``: per kernel calls and total/avg/min/max duration with launch geometry (§6.5).
* ``Memory``, ``Memory Peak``, ``Memory Timeline``: allocations per operator, peaks, curve (§6.8).
* ``Ranks``: per rank/device comparison (§6.9).
* ``Steps``: ProfilerStep host ranges and their device span (§6.6); ``Op Statistic``: Ascend-style
  (OP Type, Core Type) task statistics (§6.5).

Definitions for legends: :data:`TABLE_DEFINITIONS`; report order: :data:`TABLE_ORDER`.
All tree walks climb parents level by level over whole arrays (depth iterations, not one
Python step per slice); groupings are pandas groupbys.
"""
from __future__ import annotations

import json
from typing import Iterable

import numpy as np
import pandas as pd

from reportgen.analysis.metrics import union_length
from reportgen.model import Profile

#: device names of communication kernels/tasks (HTA's COMM class, Ascend HCCL)
COMM_PATTERN = r"(?i)nccl|hccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|hcom_"
MEMORY_PATTERN = r"(?i)memcpy|memset|MEMCPY"
TIMELINE_POINTS = 2000  # per device in the "Memory Timeline" table (peaks kept)


# ============================================================================================
# tree helpers
# ============================================================================================
def _first_cat(cat: pd.Series) -> np.ndarray:
    """Lower-case first entry of each category list, computed once per distinct value."""
    codes, uniq = pd.factorize(cat.astype(object).fillna("").astype(str), sort=False)
    mapped = np.array([u.split(",")[0].strip().lower() for u in uniq], dtype=object)
    return mapped[codes] if len(codes) else np.empty(0, object)


def _cat_mask(cats: np.ndarray, wanted: str | Iterable[str] | None) -> np.ndarray:
    if wanted is None:
        return np.ones(len(cats), bool)
    if isinstance(wanted, str):
        wanted = [wanted]
    return np.isin(cats, [w.strip().lower() for w in wanted])


def nearest_ancestor(parent: np.ndarray, mask: np.ndarray, rows: np.ndarray | None = None
                     ) -> np.ndarray:
    """For each row (default: all), the closest strict ancestor whose ``mask`` is set; -1."""
    rows = np.arange(len(parent)) if rows is None else np.asarray(rows, np.int64)
    out = np.full(len(rows), -1, np.int64)
    todo = np.arange(len(rows))
    cur = parent[rows] if len(rows) else rows
    while len(todo):
        hit = (cur >= 0) & mask[np.maximum(cur, 0)]
        out[todo[hit]] = cur[hit]
        keep = (cur >= 0) & ~hit
        todo, cur = todo[keep], parent[cur[keep]]
    return out


def ancestor_pairs(anc_of: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (row, ancestor) pairs following ``anc_of`` links (already restricted to a category)."""
    src, dst = [], []
    idx = np.arange(len(rows))
    cur = anc_of[rows] if len(rows) else rows
    while len(idx):
        ok = cur >= 0
        src.append(idx[ok])
        dst.append(cur[ok])
        idx, cur = idx[ok], anc_of[cur[ok]]
    if not src:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src), np.concatenate(dst)


def restricted_depth(anc_of: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Depth counting only ``mask`` rows (1 = no masked ancestor); 0 for unmasked rows."""
    n = len(anc_of)
    depth = np.zeros(n, np.int64)
    rows = np.flatnonzero(mask)
    cur = anc_of[rows]
    d = np.ones(len(rows), np.int64)
    while True:
        ok = cur >= 0
        if not ok.any():
            break
        d[ok] += 1
        cur = np.where(ok, anc_of[np.maximum(cur, 0)], -1)
    depth[rows] = d
    return depth


def call_paths(names: np.ndarray, anc_of: np.ndarray, mask: np.ndarray, sep: str = "$$"
               ) -> tuple[np.ndarray, np.ndarray]:
    """``sep``-joined names from the outermost masked ancestor down to each masked row."""
    depth = restricted_depth(anc_of, mask)
    path = np.empty(len(names), object)
    for d in range(1, int(depth.max(initial=0)) + 1):
        rows = np.flatnonzero(depth == d)
        if d == 1:
            path[rows] = names[rows].astype(str)
        else:
            path[rows] = path[anc_of[rows]] + sep + names[rows].astype(str)
    return path, depth


def subtree_sum(parent_of: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each row's value plus the values of all rows below it (``parent_of`` restricted tree)."""
    total = values.astype(float).copy()
    vals = values.astype(float)
    cur = parent_of.copy()
    live = np.flatnonzero((cur >= 0) & (vals != 0))
    cur = cur[live]
    v = vals[live]
    while len(live):
        np.add.at(total, cur, v)
        nxt = parent_of[cur]
        ok = nxt >= 0
        cur, v = nxt[ok], v[ok]
        live = live[ok]
    return total


# ============================================================================================
# (a) the seed host/device table
# ============================================================================================
def host_device_table(profile: Profile, monitor: str | Iterable[str] = "python_function",
                      launch: str | Iterable[str] | None = "cuda_runtime",
                      device: str | Iterable[str] | None = "kernel",
                      min_depth: int | None = None, max_depth: int | None = None,
                      self_only: bool = False, with_lists: bool = False) -> pd.DataFrame:
    """One row per monitored host slice with ``min_depth <= depth <= max_depth``.

    Depth and the ``$$`` path count only monitored ancestors on the same thread.  Launches are
    the ``launch``-category slices inside the row's slice on its thread (tree descendants);
    device slices are those whose issuing host slice is such a launch (or the monitored slice
    itself, as Ascend flows link ops to tasks directly).  ``self_only``: count only what is
    not inside a deeper monitored slice.
    """
    host, cmds = profile.host, profile.commands
    cols = ["name", "host duration(ms)", "device duration(ms)", "launch duration(ms)",
            "launches", "device slices", "depth", "rank", "pid", "tid", "start_ns"]
    if host.empty:
        return pd.DataFrame(columns=cols)
    cats = _first_cat(host["category"])
    names = host["name"].to_numpy(object)
    parent = host["parent"].to_numpy(np.int64)
    is_m = _cat_mask(cats, monitor)
    is_l = _cat_mask(cats, launch) & ~is_m if launch is not None else np.zeros(len(host), bool)
    m_anc = nearest_ancestor(parent, is_m)
    path, depth = call_paths(names, m_anc, is_m)
    dur = (host["end_ns"] - host["start_ns"]).to_numpy(np.int64)

    n = len(host)
    cdur = (cmds["end_ns"] - cmds["start_ns"]).to_numpy(np.int64) if len(cmds) else np.zeros(0, np.int64)
    # self attribution: each launch to its nearest monitored ancestor
    lrows = np.flatnonzero(is_l)
    l_owner = m_anc[lrows]
    ok = l_owner >= 0
    lrows, l_owner = lrows[ok], l_owner[ok]
    # each device slice to the monitored slice that issued it, or that holds its issuing launch
    crow = np.zeros(0, np.int64)
    c_owner = np.zeros(0, np.int64)
    if len(cmds) and "launch_row" in cmds.columns:
        dcat = _first_cat(cmds["func_type"].astype(object).fillna(""))
        dmask = _cat_mask(dcat, device) & (cmds["launch_row"].to_numpy(np.int64) >= 0)
        if device is None:  # "all device work": waits/syncs are not work
            dmask &= ~cmds["is_sys"].to_numpy(bool)
        crow = np.flatnonzero(dmask)
        r = cmds["launch_row"].to_numpy(np.int64)[crow]
        keep = is_l[r] | is_m[r]
        crow, r = crow[keep], r[keep]
        c_owner = np.where(is_m[r], r, m_anc[r])
        keep = c_owner >= 0
        crow, c_owner = crow[keep], c_owner[keep]
    sums = {
        "launch duration(ms)": np.bincount(l_owner, dur[lrows], minlength=n) / 1e6,
        "launches": np.bincount(l_owner, minlength=n).astype(float),
        "device duration(ms)": np.bincount(c_owner, cdur[crow], minlength=n) / 1e6,
        "device slices": np.bincount(c_owner, minlength=n).astype(float),
    }
    if not self_only:
        # total = own + everything under monitored descendants: sums climb the monitored tree
        # (no (row, ancestor) pairs are materialised: deep python stacks stay cheap)
        m_parent = np.where(is_m, m_anc, -1)
        sums = {k: subtree_sum(m_parent, v) for k, v in sums.items()}

    rows = np.flatnonzero(is_m)
    lo = 1 if min_depth is None else int(min_depth)
    hi = np.iinfo(np.int64).max if max_depth is None else int(max_depth)
    rows = rows[(depth[rows] >= lo) & (depth[rows] <= hi)]
    out = pd.DataFrame({
        "name": path[rows],
        "host duration(ms)": dur[rows] / 1e6,
        "row": rows,
    })
    out["device duration(ms)"] = sums["device duration(ms)"][rows]
    out["launch duration(ms)"] = sums["launch duration(ms)"][rows]
    out["launches"] = np.rint(sums["launches"][rows]).astype(np.int64)
    out["device slices"] = np.rint(sums["device slices"][rows]).astype(np.int64)
    out["depth"] = depth[rows]
    out["rank"] = host["rank"].to_numpy()[rows] if "rank" in host.columns else 0
    out["pid"] = host["pid"].to_numpy()[rows]
    out["tid"] = host["tid"].to_numpy()[rows]
    out["start_ns"] = host["start_ns"].to_numpy()[rows]
    if with_lists:
        # the seed's list columns name every launch/kernel of a row: pairs are the output here
        if self_only:
            launch_pairs = pd.DataFrame({"row": l_owner, "lrow": lrows})
            dev_pairs = pd.DataFrame({"row": c_owner, "cmd": crow})
        else:
            s1, d1 = ancestor_pairs(m_anc, l_owner)
            launch_pairs = pd.DataFrame({"row": np.concatenate([l_owner, d1]),
                                         "lrow": np.concatenate([lrows, lrows[s1]])})
            s2, d2 = ancestor_pairs(m_anc, c_owner)
            dev_pairs = pd.DataFrame({"row": np.concatenate([c_owner, d2]),
                                      "cmd": np.concatenate([crow, crow[s2]])})
    if with_lists:
        out = _attach_lists(out, launch_pairs, dev_pairs, names, dur, cmds, cdur)
    return out.drop(columns=["row"]).reset_index(drop=True)


def host_device_summary(calls: pd.DataFrame) -> pd.DataFrame:
    """:func:`host_device_table` rows summed per rank and ``$$`` path (the per-call rows stay
    in the seed CSV): Calls and total host / device / launch durations, largest device first."""
    if calls.empty:
        return pd.DataFrame(columns=["rank", "name", "depth", "calls", "host duration(ms)",
                                     "device duration(ms)", "launch duration(ms)", "launches",
                                     "device slices"])
    g = calls.groupby(["rank", "name"], sort=False)
    out = g.agg(**{"depth": ("depth", "first"), "calls": ("depth", "size"),
                   "host duration(ms)": ("host duration(ms)", "sum"),
                   "device duration(ms)": ("device duration(ms)", "sum"),
                   "launch duration(ms)": ("launch duration(ms)", "sum"),
                   "launches": ("launches", "sum"), "device slices": ("device slices", "sum")}).reset_index()
    return out.sort_values(["device duration(ms)", "host duration(ms)"], ascending=False,
                           kind="stable").reset_index(drop=True)


def _attach_lists(out, launch_pairs, dev_pairs, names, dur, cmds, cdur):
    """The seed's list columns: launches and kernels as [name, duration ms] and kernel args."""
    lp = launch_pairs.sort_values(["row", "lrow"])
    litems = [json.dumps([n, d / 1e6]) for n, d in zip(names[lp["lrow"].to_numpy()],
                                                      dur[lp["lrow"].to_numpy()])]
    lcol = pd.Series(litems, dtype=object).groupby(lp["row"].to_numpy()).agg(lambda s: "[" + ", ".join(s) + "]")
    dp = dev_pairs.sort_values(["row", "cmd"])
    kn = cmds["func_name"].astype(str).to_numpy()[dp["cmd"].to_numpy()] if len(cmds) else np.zeros(0, object)
    kitems = [json.dumps([n, d / 1e6]) for n, d in zip(kn, cdur[dp["cmd"].to_numpy()])]
    kcol = pd.Series(kitems, dtype=object).groupby(dp["row"].to_numpy()).agg(lambda s: "[" + ", ".join(s) + "]")
    args = cmds["args"].to_numpy(object)[dp["cmd"].to_numpy()] if "args" in cmds.columns and len(cmds) \
        else np.full(len(dp), None, object)
    aitems = [json.dumps(a, default=str) for a in args]
    acol = pd.Series(aitems, dtype=object).groupby(dp["row"].to_numpy()).agg(lambda s: "[" + ", ".join(s) + "]")
    out["launch list"] = out["row"].map(lcol).fillna("[]").to_numpy()
    out["kernel list"] = out["row"].map(kcol).fillna("[]").to_numpy()
    out["kernel infos"] = out["row"].map(acol).fillna("[]").to_numpy()
    return out


# ============================================================================================
# (b) key_averages
# ============================================================================================
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


def key_averages(profile: Profile, group_by_input_shape: bool = False) -> pd.DataFrame:
    """torch ``key_averages`` semantics (framework-traces.md §6.4), times in µs.

    Rows are framework ops, user annotations and runtime calls (torch's FunctionEvents; python
    frames are not).  Self CPU = duration - durations of the direct children among those rows;
    Self Device = device slices attributed to the op (``op_row``); Device total adds the
    subtree.  Both percentages divide by the sum of Self CPU (torch uses the same denominator
    for CPU total %), Self Device % by the sum of Self Device.
    """
    host, cmds = profile.host, profile.commands
    cols = ["Name", "Self CPU %", "Self CPU (us)", "CPU total %", "CPU total (us)",
            "CPU time avg (us)", "Self Device (us)", "Self Device %", "Device total (us)",
            "Device time avg (us)", "# of Calls"]
    if host.empty:
        return pd.DataFrame(columns=cols)
    role = host["role"].to_numpy() if "role" in host.columns else np.full(len(host), "host")
    inc = np.isin(role, ["op", "annotation", "runtime"])
    if not np.isin(role, ["op", "annotation"]).any():
        inc = np.ones(len(host), bool)  # generic trace: every host slice is a function
    parent = host["parent"].to_numpy(np.int64)
    p_inc = nearest_ancestor(parent, inc)
    dur = (host["end_ns"] - host["start_ns"]).to_numpy(np.int64).astype(float)
    child_sum = np.zeros(len(host))
    rows = np.flatnonzero(inc & (p_inc >= 0))
    np.add.at(child_sum, p_inc[rows], dur[rows])
    self_cpu = np.maximum(dur - child_sum, 0)
    self_dev = np.zeros(len(host))
    if len(cmds) and "op_row" in cmds.columns:
        op = cmds["op_row"].to_numpy(np.int64)
        ok = (op >= 0) & ~cmds["is_sys"].to_numpy(bool)
        np.add.at(self_dev, op[ok], (cmds["end_ns"] - cmds["start_ns"]).to_numpy(np.int64)[ok])
    tree_parent = np.where(inc, p_inc, -1)
    dev_total = subtree_sum(tree_parent, np.where(inc, self_dev, 0))
    t = pd.DataFrame({"Name": host["name"].to_numpy(), "self_cpu": self_cpu, "cpu": dur,
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


# ============================================================================================
# (c) kernels
# ============================================================================================
def kernel_table(profile: Profile) -> pd.DataFrame:
    """Device slices grouped by name and launch geometry (grid/block, or Ascend core type and
    block dim): calls, total/avg/min/max duration (µs) and share of all device time."""
    cmds = profile.commands
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


# ============================================================================================
# (d) memory
# ============================================================================================
def memory_tables(events: pd.DataFrame, host: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """PyTorch ``[memory]`` events -> per-operator allocations, peaks, downsampled curve.

    ``events``: rank, ts_ns, device_type, device_id, addr, bytes (negative = free),
    total_allocated, total_reserved, op_row (innermost op at the event, -1).
    """
    if events.empty:
        return {}
    ev = events.sort_values("ts_ns", kind="stable").copy()
    # old traces (2021) give only Bytes: the running sum per device is the allocated curve,
    # relative to what was allocated before the window
    key = [ev["rank"], ev["device_type"].fillna(0), ev["device_id"].fillna(-1)]
    running = ev["bytes"].fillna(0).groupby(key).cumsum()
    ev["total_allocated"] = ev["total_allocated"].fillna(running)
    ev["device"] = np.where(ev["device_type"].fillna(0).to_numpy() == 0, "CPU",
                            "device " + ev["device_id"].fillna(-1).astype(int).astype(str))
    names = host["name"].to_numpy(object) if len(host) else np.empty(0, object)
    op = ev["op_row"].to_numpy(np.int64)
    ev["Operator"] = np.where(op >= 0, names[np.maximum(op, 0)] if len(names) else "", "(no operator)")
    b = ev["bytes"].fillna(0).to_numpy(float)
    ev["_alloc_n"] = b > 0
    ev["_alloc_b"] = np.where(b > 0, b, 0.0)
    ev["_free_n"] = b < 0
    ev["_free_b"] = np.where(b < 0, -b, 0.0)
    # lifetimes: an allocation is released by the next event on the same address if it frees
    srt = ev.sort_values(["rank", "device", "addr", "ts_ns"], kind="stable")
    same = np.zeros(len(srt), bool)
    if len(srt) > 1:
        k = [srt[c].to_numpy() for c in ("rank", "device", "addr")]
        same[:-1] = (k[0][1:] == k[0][:-1]) & (k[1][1:] == k[1][:-1]) & (k[2][1:] == k[2][:-1])
    sb = srt["bytes"].fillna(0).to_numpy(float)
    nxt_free = np.zeros(len(srt), bool)
    nxt_free[:-1] = sb[1:] < 0
    paired = (sb > 0) & same & nxt_free
    life = np.full(len(srt), np.nan)
    ts = srt["ts_ns"].to_numpy(np.int64)
    life[:-1] = np.where(paired[:-1], (ts[1:] - ts[:-1]) / 1e3, np.nan)
    ev["_life_us"] = pd.Series(life, index=srt.index).reindex(ev.index)
    known = srt["addr"].notna().to_numpy()   # 2021 traces carry no Addr: no pairing possible
    ev["_unreleased"] = pd.Series((sb > 0) & ~paired & known, index=srt.index).reindex(ev.index)
    per_op = ev.groupby(["rank", "device", "Operator"], sort=False).agg(
        allocations=("_alloc_n", "sum"), allocated_bytes=("_alloc_b", "sum"),
        frees=("_free_n", "sum"), freed_bytes=("_free_b", "sum"),
        peak_allocated=("total_allocated", "max"), life=("_life_us", "mean"),
        unreleased=("_unreleased", "sum"),
    ).reset_index()
    per_op["size increase (bytes)"] = per_op["allocated_bytes"] - per_op["freed_bytes"]
    per_op = per_op.rename(columns={"rank": "Rank", "device": "Device",
                                    "allocations": "Allocations", "allocated_bytes": "Allocated (bytes)",
                                    "frees": "Frees", "freed_bytes": "Freed (bytes)",
                                    "peak_allocated": "Peak Total Allocated (bytes)",
                                    "size increase (bytes)": "Size Increase (bytes)",
                                    "life": "Mean Allocation Lifetime (us)",
                                    "unreleased": "Unreleased in Window"})
    per_op["Allocations"] = per_op["Allocations"].astype(np.int64)
    per_op["Frees"] = per_op["Frees"].astype(np.int64)
    per_op["Unreleased in Window"] = per_op["Unreleased in Window"].astype(np.int64)
    per_op = per_op.sort_values("Allocated (bytes)", ascending=False, kind="stable").reset_index(drop=True)
    has_total = ev[ev["total_allocated"].notna()]
    peak_rows = has_total.loc[has_total.groupby(["rank", "device"])["total_allocated"].idxmax()]
    peak = pd.DataFrame({
        "Rank": peak_rows["rank"].to_numpy(), "Device": peak_rows["device"].to_numpy(),
        "Peak Allocated (bytes)": peak_rows["total_allocated"].to_numpy(),
        "Peak Time (ns)": peak_rows["ts_ns"].to_numpy(),
        "Operator at Peak": peak_rows["Operator"].to_numpy(),
    })
    peak["Peak Reserved (bytes)"] = peak.apply(lambda r: None, axis=1) if peak.empty else \
        ev.groupby(["rank", "device"])["total_reserved"].max().reindex(
            list(zip(peak["Rank"], peak["Device"]))).to_numpy()
    timeline = downsample_curve(ev.rename(columns={"rank": "Rank", "device": "Device"}),
                                ["Rank", "Device"], "ts_ns",
                                ["total_allocated", "total_reserved"])
    timeline = timeline.rename(columns={"ts_ns": "Time (ns)", "total_allocated": "Total Allocated (bytes)",
                                        "total_reserved": "Total Reserved (bytes)"})
    return {"Memory": per_op, "Memory Peak": peak, "Memory Timeline": timeline}


def downsample_curve(df: pd.DataFrame, keys: list[str], time: str, values: list[str],
                     points: int = TIMELINE_POINTS) -> pd.DataFrame:
    """At most ``points`` rows per key: consecutive samples are bucketed, each bucket keeps its
    first time and each value's maximum (so peaks survive)."""
    parts = []
    for key, g in df.groupby(keys, sort=True):
        g = g.sort_values(time, kind="stable")
        if len(g) > points:
            # equal-count buckets: dense bursts keep their shape even across long idle gaps
            bucket = (np.arange(len(g)) * points) // len(g)
            g = g.groupby(bucket).agg({**{k: "first" for k in keys}, time: "first",
                                       **{v: "max" for v in values}})
        parts.append(g[keys + [time] + values])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=keys + [time] + values)


# ============================================================================================
# (e) ranks
# ============================================================================================
def rank_table(profile: Profile) -> pd.DataFrame:
    """Per rank (core): device slices, busy time (union), compute / communication / memory
    split, host ops and steps - the numbers to spot a straggler."""
    cmds, host = profile.commands, profile.host
    rows = []
    cores = sorted(set(cmds["core"].astype(int)) if len(cmds) else set()
                   | (set(host["rank"].astype(int)) if "rank" in host.columns and len(host) else set()))
    for core in cores:
        c = cmds[cmds["core"].to_numpy() == core] if len(cmds) else cmds
        work = c[~c["is_sys"].to_numpy(bool)] if len(c) else c
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


# ============================================================================================
# steps
# ============================================================================================
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


# ============================================================================================
# attaching
# ============================================================================================
def default_monitor(profile: Profile) -> str | None:
    """The seed table's monitored category for this profile: framework ops if there are any,
    else python frames, else the most common host category."""
    if profile.host.empty:
        return None
    cats = pd.Series(_first_cat(profile.host["category"]))
    for c in ("cpu_op", "operator", "python_function", "user_annotation"):
        if (cats == c).any():
            return c
    return cats.value_counts().index[0]


def default_launch(profile: Profile) -> list[str] | None:
    if profile.host.empty or "role" not in profile.host.columns:
        return None
    cats = _first_cat(profile.host["category"][profile.host["role"] == "runtime"])
    return sorted(set(cats)) or None


#: report order of the framework tables (writers show ``profile.tables`` in dict order)
TABLE_ORDER = ("Operators", "Operators by Shape", "Kernels", "Op Statistic", "Steps", "Ranks",
               "Host-Device", "Host-Device Self", "Memory", "Memory Peak", "Memory Timeline")

#: one-line definition per table, for legends and tooltips (framework-traces.md §6)
TABLE_DEFINITIONS = {
    "Operators": "torch key_averages semantics: Self CPU = duration minus direct child calls; "
                 "CPU total % divides by the sum of Self CPU (as torch does); Self Device = device "
                 "slices launched by the op itself; Device total adds its sub-calls. Times in us.",
    "Operators by Shape": "Operators grouped by name and input shapes (shapes ';'-joined, dims ',').",
    "Kernels": "Device slices grouped by name and launch geometry: calls, total/avg/min/max (us), "
               "share of all device time; occupancy columns are duration-weighted means.",
    "Op Statistic": "Device tasks per (OP Type, Core Type): count, total/min/avg/max (us), "
                    "Ratio = share of the device's total task time.",
    "Steps": "ProfilerStep#N host ranges; device step = first start to last end of the device "
             "slices launched inside the step.",
    "Ranks": "Per rank/device: busy = union of device slice intervals (compute / communication / "
             "memory-op split), span, utilisation, host slices, mean step.",
    "Host-Device": "Seed parser table summed per '$$' call path of the monitored category: host "
                   "time, device time of slices launched inside (total attribution, includes "
                   "deeper monitored calls), launch (runtime) time. ms.",
    "Host-Device Self": "As Host-Device, but launches and device slices count only for the "
                        "innermost monitored call that holds them (sums never double count).",
    "Memory": "Per operator (innermost op at the event): allocations, bytes allocated/freed, size "
              "increase, peak total allocated, mean allocation lifetime.",
    "Memory Peak": "Peak allocated (and reserved) memory per device, with the operator running at "
                   "the peak.",
    "Memory Timeline": "Allocated/reserved memory curve, downsampled keeping each bucket's maximum.",
}


def attach_tables(profile: Profile, monitor: str | None = None, launch: str | list | None = None,
                  device: str | list | None = None, min_depth: int | None = None,
                  max_depth: int | None = None, **_ignored) -> Profile:
    """Compute every applicable framework table into ``profile.tables`` (stable names)."""
    tables = profile.tables
    host = profile.host
    if not host.empty:
        mon = monitor or default_monitor(profile)
        lch = launch if launch is not None else default_launch(profile)
        args = dict(monitor=mon, launch=lch, device=device, min_depth=min_depth, max_depth=max_depth)
        # per path; one row per call would swamp the workbook (the seed CSV keeps them)
        tables["Host-Device"] = host_device_summary(host_device_table(profile, **args))
        tables["Host-Device Self"] = host_device_summary(host_device_table(profile, self_only=True, **args))
        tables["Operators"] = key_averages(profile)
        if host["args"].map(lambda a: isinstance(a, dict) and ("Input Dims" in a)).any():
            tables["Operators by Shape"] = key_averages(profile, group_by_input_shape=True)
        steps = step_table(profile)
        if len(steps):
            tables["Steps"] = steps
    if not profile.commands.empty:
        tables["Kernels"] = kernel_table(profile)
        stat = op_statistic(profile)
        if len(stat):
            tables["Op Statistic"] = stat   # a vendor op_statistic.csv, when present, replaces it
    mem = profile.memory_events
    if mem is not None and len(mem):
        tables.update(memory_tables(mem, host))
    ncores = profile.commands["core"].nunique() if len(profile.commands) else 0
    nranks = host["rank"].nunique() if "rank" in host.columns and len(host) else 0
    if max(ncores, nranks) > 1:
        tables["Ranks"] = rank_table(profile)
    order_tables(profile)
    return profile


def order_tables(profile: Profile) -> None:
    """Known tables in :data:`TABLE_ORDER`, any others (vendor tables) after them."""
    known = [k for k in TABLE_ORDER if k in profile.tables]
    rest = [k for k in profile.tables if k not in TABLE_ORDER]
    profile.tables = {k: profile.tables[k] for k in known + rest}
