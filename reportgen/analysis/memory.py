"""Memory tables (framework-traces.md §6.8): from PyTorch ``[memory]`` allocator events, or from
the memory files an Ascend profiler wrote; curves downsampled with their peaks kept."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.model import VendorOutput

TIMELINE_POINTS = 2000  # per device in the "Memory Timeline" table (peaks kept)


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


def vendor_memory_tables(vendor: VendorOutput) -> dict[str, pd.DataFrame]:
    """Ascend memory_record.csv -> "Memory Timeline" (downsampled) and "Memory Peak" per device
    and component; operator_memory.csv -> "Memory" per operator; npu_module_mem.csv ->
    "Component Memory" (peak reserved per component)."""
    tables: dict[str, pd.DataFrame] = {}
    curve = vendor.memory_record
    if curve is not None:
        tables["Memory Timeline"] = downsample_curve(curve, ["Device", "Component"], "Time (ns)",
                                                     ["Total Allocated (MB)", "Total Reserved (MB)"])
        g = curve.groupby(["Device", "Component"], sort=True)
        tables["Memory Peak"] = g.agg(**{"Peak Allocated (MB)": ("Total Allocated (MB)", "max"),
                                         "Peak Reserved (MB)": ("Total Reserved (MB)", "max")}).reset_index()
    if vendor.operator_memory is not None:
        g = vendor.operator_memory.groupby(["Device", "Name"], sort=False)
        tables["Memory"] = g.agg(**{"Allocations": ("Size (KB)", "size"), "Total Size (KB)": ("Size (KB)", "sum"),
                                    "Max Size (KB)": ("Size (KB)", "max"),
                                    "Mean Duration (us)": ("Duration (us)", "mean"),
                                    "Peak Total Allocated (MB)": ("Total Allocated (MB)", "max")}).reset_index() \
            .sort_values("Total Size (KB)", ascending=False, kind="stable").reset_index(drop=True)
    if vendor.module_memory is not None:
        tables["Component Memory"] = vendor.module_memory.groupby(["Device", "Component"], sort=True).agg(
            **{"Peak Reserved (MB)": ("Total Reserved (MB)", "max")}).reset_index()
    return tables
