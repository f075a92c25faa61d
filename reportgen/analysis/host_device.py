"""The seed tool's host/device table (framework-traces.md §6.3): per monitored host slice, its
``$$`` call path, host / device / launch durations with total or self attribution, and the
defaults that pick the monitored and launch categories for a profile."""
from __future__ import annotations

import json
from typing import Iterable

import numpy as np
import pandas as pd

from reportgen.analysis.calltree import (MonitoredTree, ancestor_pairs, call_paths, category_mask,
                                         first_category, subtree_sum)
from reportgen.model import Profile


def host_device_table(profile: Profile, monitor: str | Iterable[str] = "python_function",
                      launch: str | Iterable[str] | None = "cuda_runtime",
                      device: str | Iterable[str] | None = "kernel",
                      min_depth: int | None = None, max_depth: int | None = None,
                      self_only: bool = False, with_lists: bool = False) -> pd.DataFrame:
    """One row per monitored host slice with ``min_depth <= depth <= max_depth`` (a negative
    ``max_depth``, the seed tool's ``-1``, means no limit, like None).

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
    cats = first_category(host["category"])
    names = host["name"].to_numpy(object)
    is_m = category_mask(cats, monitor)
    is_l = category_mask(cats, launch) & ~is_m if launch is not None else np.zeros(len(host), bool)
    tree = MonitoredTree(host, is_m)
    m_anc = tree.ancestor
    path, depth = call_paths(names, m_anc, is_m)
    dur = (host["end_ns"] - host["start_ns"]).to_numpy(np.int64)

    n = len(host)
    cdur = (cmds["end_ns"] - cmds["start_ns"]).to_numpy(np.int64) if len(cmds) else np.zeros(0, np.int64)
    # self attribution: each launch to the innermost monitored slice holding it
    lrows = np.flatnonzero(is_l)
    l_owner = tree.holder(lrows)
    ok = l_owner >= 0
    lrows, l_owner = lrows[ok], l_owner[ok]
    # each device slice to the monitored slice that issued it, or that holds its issuing launch
    crow = np.zeros(0, np.int64)
    c_owner = np.zeros(0, np.int64)
    if len(cmds) and "launch_row" in cmds.columns:
        dcat = first_category(cmds["func_type"].astype(object).fillna(""))
        dmask = category_mask(dcat, device) & (cmds["launch_row"].to_numpy(np.int64) >= 0)
        # waits, syncs and markers are no work, whatever category was asked for
        dmask &= ~cmds["is_sys"].to_numpy(bool)
        crow = np.flatnonzero(dmask)
        r = cmds["launch_row"].to_numpy(np.int64)[crow]
        keep = is_l[r] | is_m[r]
        crow, r = crow[keep], r[keep]
        c_owner = r.copy()
        held = ~is_m[r]
        c_owner[held] = tree.holder(r[held])
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
    hi = np.iinfo(np.int64).max if max_depth is None or max_depth < 0 else int(max_depth)
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


#: monitored category by preference: the seed CSV follows the seed tool (python frames first,
#: else the trace's aten ops); the Host-Device tables sum per path, where op paths read best
MONITOR_PREFERENCE = {"seed": ("python_function", "cpu_op", "operator", "user_annotation"),
                      "tables": ("cpu_op", "operator", "python_function", "user_annotation")}


def default_monitor(profile: Profile, use: str = "tables") -> str | None:
    """The monitored category fitting the trace's era (:data:`MONITOR_PREFERENCE`), else the most
    common host category; so a trace with host slices always gives rows."""
    if profile.host.empty:
        return None
    cats = pd.Series(first_category(profile.host["category"]))
    for c in MONITOR_PREFERENCE[use]:
        if (cats == c).any():
            return c
    return cats.value_counts().index[0]


def default_launch(profile: Profile) -> list[str] | None:
    """The seed table's launch categories: those of the profile's runtime calls."""
    if profile.host.empty or "role" not in profile.host.columns:
        return None
    cats = first_category(profile.host["category"][profile.host["role"] == "runtime"])
    return sorted(set(cats)) or None


#: ``-dc`` values meaning every device slice that is work
ALL_DEVICE = ("all", "any", "*")


def default_device(profile: Profile, use: str = "tables") -> str | None:
    """The seed CSV: ``kernel`` when the trace has kernel slices (the seed tool's default), else
    all work; the Host-Device tables: all work (None)."""
    cmds = profile.commands
    if use == "seed" and len(cmds) and \
            (first_category(cmds["func_type"].astype(object).fillna("")) == "kernel").any():
        return "kernel"
    return None


def seed_categories(profile: Profile, monitor: str | None = None, launch: str | None = None,
                    device: str | None = None, use: str = "tables") -> dict:
    """The categories of the seed table (``-mc``, ``-hc``, ``-dc``; None: the defaults above for
    ``use`` "seed" (the CSV) or "tables"; ``-dc all``: every device slice that is work) as
    :func:`host_device_table` arguments."""
    if device is not None and device.strip().lower() in ALL_DEVICE:
        dev = None
    else:
        dev = device or default_device(profile, use)
    return {"monitor": monitor or default_monitor(profile, use),
            "launch": launch or default_launch(profile), "device": dev}
