"""Per-allocation memory tables of a PyTorch trace (the TensorBoard plugin's "Memory View"
allocation list): each allocation with its release, and what is live at each device's peak
(docs/metrics.md "Memory allocations").  Whole-array work, no Python step per event."""
from __future__ import annotations

import numpy as np
import pandas as pd

#: rows of "Memory at Peak" per device (largest live allocations first)
LIVE_AT_PEAK_ROWS = 50


def _device(device_type: pd.Series, device_id: pd.Series) -> np.ndarray:
    t = pd.to_numeric(device_type, errors="coerce").fillna(0).to_numpy(np.int64)
    d = pd.to_numeric(device_id, errors="coerce").fillna(-1).to_numpy(np.int64)
    return np.where(t == 0, "CPU", "device " + d.astype(str)).astype(object)


def allocations(events: pd.DataFrame, host: pd.DataFrame) -> pd.DataFrame:
    """One row per allocation (a ``[memory]`` event with Bytes > 0): the operator it happened
    in, size, device, allocation time, release time (the next event on the same rank, device
    and address, when it frees that many bytes), duration; "not released" when none does."""
    ev = events.reset_index(drop=True)
    nbytes = pd.to_numeric(ev["bytes"], errors="coerce").fillna(0).to_numpy(np.int64)
    device = _device(ev["device_type"], ev["device_id"])
    addr = pd.to_numeric(ev["addr"], errors="coerce").fillna(-1).to_numpy(np.int64)
    ts = ev["ts_ns"].to_numpy(np.int64)
    rank = ev["rank"].astype(str).to_numpy(object)
    key = pd.factorize(pd.Series(rank) + "\x1f" + pd.Series(device) + "\x1f" + pd.Series(addr).astype(str))[0]
    order = np.lexsort((np.arange(len(ev)), ts, key))
    nxt = np.full(len(ev), -1, np.int64)
    if len(order) > 1:
        same = key[order[1:]] == key[order[:-1]]
        nxt[order[:-1][same]] = order[1:][same]
    alloc = np.flatnonzero(nbytes > 0)
    rel = nxt[alloc]
    freed = (rel >= 0) & (nbytes[np.maximum(rel, 0)] == -nbytes[alloc]) & (addr[alloc] >= 0)
    names = host["name"].to_numpy(object) if len(host) else np.empty(0, object)
    op = ev["op_row"].to_numpy(np.int64)[alloc]
    release = np.where(freed, ts[np.maximum(rel, 0)], 0)
    out = pd.DataFrame({
        "Operator": np.where(op >= 0, names[np.maximum(op, 0)] if len(names) else "", "(no operator)"),
        "Size (B)": nbytes[alloc],
        "Device": device[alloc],
        "Allocation Time (ns)": ts[alloc],
        "Release Time (ns)": pd.array(np.where(freed, release, 0), dtype="Int64"),
        "Duration (us)": np.where(freed, (release - ts[alloc]) / 1e3, np.nan),
        "Released": np.where(freed, "released", "not released"),
    })
    out.loc[~freed, "Release Time (ns)"] = pd.NA
    if ev["rank"].nunique() > 1:
        out.insert(0, "Rank", ev["rank"].to_numpy()[alloc])
    return out


def live_at_peak(events: pd.DataFrame, allocs: pd.DataFrame) -> pd.DataFrame:
    """Per device, the allocations live at its peak of allocated memory (the largest
    ``total_allocated``; traces without it: the running sum of Bytes), largest first."""
    ev = events.reset_index(drop=True)
    nbytes = pd.to_numeric(ev["bytes"], errors="coerce").fillna(0)
    device = pd.Series(_device(ev["device_type"], ev["device_id"]))
    rank = ev["rank"].astype(str)
    order = np.lexsort((np.arange(len(ev)), ev["ts_ns"].to_numpy(np.int64)))
    running = nbytes.iloc[order].groupby([rank.iloc[order], device.iloc[order]]).cumsum()
    total = pd.to_numeric(ev["total_allocated"], errors="coerce").fillna(running.sort_index())
    frame = pd.DataFrame({"rank": rank, "device": device, "total": total, "ts": ev["ts_ns"]})
    peaks = frame.loc[frame.groupby(["rank", "device"], sort=True)["total"].idxmax()]
    parts = []
    a_rank = allocs["Rank"].astype(str) if "Rank" in allocs else pd.Series("", index=allocs.index)
    for _, p in peaks.iterrows():                      # one per device
        r_ok = (a_rank == p["rank"]) if "Rank" in allocs else True
        at = allocs["Allocation Time (ns)"]
        rel = allocs["Release Time (ns)"].astype("Float64")
        live = allocs[r_ok & (allocs["Device"] == p["device"]) & (at <= p["ts"])
                      & (rel.isna() | (rel > p["ts"])).to_numpy(bool)]
        live = live.sort_values("Size (B)", ascending=False, kind="stable").head(LIVE_AT_PEAK_ROWS)
        parts.append(live.assign(**{"Peak Allocated (B)": int(p["total"]), "Peak Time (ns)": int(p["ts"])}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def allocation_tables(events: pd.DataFrame | None, host: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """"Memory Allocations" and "Memory at Peak" (empty dict without allocator events)."""
    if events is None or not len(events):
        return {}
    allocs = allocations(events, host)
    if not len(allocs):
        return {}
    return {"Memory Allocations": allocs, "Memory at Peak": live_at_peak(events, allocs)}
