"""Timeline aggregates for drawing millions of commands: lanes, occupancy, bandwidth over time.

A timeline shows one *lane* per sheet (``TIU_0``, ``GDMA_0``, ..., ``CDMA_1``): commands of one
lane are one engine queue, so they do not overlap and a lane sorted by start is also sorted by
end. Host events (``Profile.host``) get one lane per (pid, tid, depth) so nested events never
overlap either.

Everything here is vectorised numpy/pandas; the HTML report draws these aggregates (and the
browser recomputes :func:`occupancy` for the visible window with the same rule, so the two can be
compared in tests).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reportgen.model import ENGINES, Profile


@dataclass
class Lanes:
    """Device lanes in display order, and which lane each command row belongs to."""

    names: list[str]            # sheet names, in Profile.sheets() order
    engines: list[str]          # engine of each lane
    cores: list[list[int]]      # cores whose commands the lane holds (CDMA ports: submitting cores)
    of_command: np.ndarray      # int32 lane index per row of profile.commands


def device_lanes(profile: Profile) -> Lanes:
    c = profile.commands
    names = profile.sheets()
    if not names:
        return Lanes([], [], [], np.zeros(0, np.int32))
    # on the sheet's codes (its few distinct names mapped to lanes): no string per command
    sheet_codes, sheet_names = pd.factorize(c["sheet"], use_na_sentinel=True)
    lane_of = {name: i for i, name in enumerate(names)}
    table = np.array([lane_of.get(str(x), -1) for x in sheet_names] + [lane_of.get("nan", -1)], np.int32)
    codes = table[sheet_codes]
    core = c["core"].to_numpy(np.int64)
    low, span = (int(core.min()), int(core.max()) - int(core.min()) + 1) if len(core) else (0, 1)
    on = codes >= 0
    pairs = np.unique(codes[on].astype(np.int64) * span + (core[on] - low))   # (lane, core), sorted
    lanes_with, first = np.unique(codes, return_index=True)                 # each lane's first row
    engine_at = dict(zip(lanes_with.tolist(), c["engine"].iloc[first].astype(str).tolist()))
    cores_of: dict[int, list[int]] = {}
    for lane, k in zip((pairs // span).tolist(), (pairs % span + low).tolist()):
        cores_of.setdefault(lane, []).append(k)
    return Lanes(
        names=names,
        engines=[engine_at[i] for i in range(len(names))],
        cores=[cores_of[i] for i in range(len(names))],
        of_command=codes,
    )


@dataclass
class HostLanes:
    """Host event lanes: one per (pid, tid, depth), in pid, tid, depth order."""

    names: list[str]            # "pid 12 / tid 7" (depth > 0 adds " · d2"; a level: "PTA · ...")
    of_event: np.ndarray        # int32 lane index per row of profile.host
    #: each lane's level (Ascend trace views: PTA, CANN), "" without levels
    levels: list[str] = field(default_factory=list)


def host_lanes(profile: Profile) -> HostLanes:
    h = profile.host
    if h.empty:
        return HostLanes([], np.zeros(0, np.int32))
    keys = pd.DataFrame({"pid": h["pid"].astype(str).to_numpy(), "tid": h["tid"].astype(str).to_numpy(),
                         "depth": h["depth"].to_numpy(np.int64)})
    # natural order: numeric pids/tids sort as numbers, names after them
    uniq = keys.drop_duplicates().copy()
    for col in ("pid", "tid"):
        num = pd.to_numeric(uniq[col], errors="coerce")
        uniq[f"_{col}n"] = num.fillna(np.inf)
    uniq = uniq.sort_values(["_pidn", "pid", "_tidn", "tid", "depth"]).reset_index(drop=True)
    uniq["lane"] = np.arange(len(uniq), dtype=np.int32)
    lane = keys.merge(uniq[["pid", "tid", "depth", "lane"]], on=["pid", "tid", "depth"], how="left")
    levels = [""] * len(uniq)
    if "level" in h.columns:                  # Ascend trace views: the lane's level first
        level_of = dict(zip(keys["pid"], h["level"].astype(str)))
        levels = [level_of.get(p, "") for p in uniq["pid"]]
    names = [(f"{lv} · " if lv else "") + f"pid {p} / tid {t}" + (f" · d{d}" if d else "")
             for lv, p, t, d in zip(levels, uniq["pid"], uniq["tid"], uniq["depth"])]
    return HostLanes(names, lane["lane"].to_numpy(np.int32), levels)


def _buckets(starts, ends, lanes, t0: float, t1: float, width: float, n_buckets: int, step: int = 1 << 18):
    """Per slice of at most ``step`` items, those inside [t0, t1): (start, end clipped to the
    window, lane * n_buckets, first bucket, last bucket)."""
    for lo in range(0, len(starts), step):
        s = np.asarray(starts[lo:lo + step], np.float64)
        e = np.asarray(ends[lo:lo + step], np.float64)
        keep = (e > t0) & (s < t1) & (e > s)
        s, e = np.maximum(s[keep], t0), np.minimum(e[keep], t1)
        ln = np.asarray(lanes[lo:lo + step])[keep].astype(np.int64)
        b0 = np.minimum(((s - t0) / width).astype(np.int64), n_buckets - 1)
        b1 = np.minimum(((e - t0) / width).astype(np.int64), n_buckets - 1)
        yield s, e, ln * n_buckets, b0, b1


def occupancy(starts: np.ndarray, ends: np.ndarray, lanes: np.ndarray, n_lanes: int,
              t0: float, t1: float, n_buckets: int) -> np.ndarray:
    """Busy fraction per (lane, bucket) of the window [t0, t1) cut into ``n_buckets`` equal buckets.

    A bucket's value is the summed overlap of the commands with it divided by its width, clipped
    to 1 (only overlapping host events could exceed it). The browser computes the visible window
    with exactly this rule.
    """
    width = (t1 - t0) / n_buckets
    out = np.zeros(n_lanes * n_buckets + 1, np.float64)   # +1: a dump slot for empty ranges
    if width <= 0:
        return out[:-1].reshape(n_lanes, n_buckets)
    # each sum in item order (np.add.at), slice after slice: the same sums as over all items
    # at once, with temporaries of one slice only
    for s, e, base, b0, b1 in _buckets(starts, ends, lanes, t0, t1, width, n_buckets):
        same = b0 == b1
        # a command inside one bucket adds its whole length there
        np.add.at(out, base[same] + b0[same], e[same] - s[same])
    # a command spanning buckets: partial first and last bucket, full width in between
    for s, e, base, b0, b1 in _buckets(starts, ends, lanes, t0, t1, width, n_buckets):
        sp = b0 != b1
        np.add.at(out, base[sp] + b0[sp], t0 + (b0[sp] + 1) * width - s[sp])
    for s, e, base, b0, b1 in _buckets(starts, ends, lanes, t0, t1, width, n_buckets):
        sp = b0 != b1
        np.add.at(out, base[sp] + b1[sp], e[sp] - (t0 + b1[sp] * width))
    full = np.zeros(n_lanes * n_buckets + 1, np.float64)
    for s, e, base, b0, b1 in _buckets(starts, ends, lanes, t0, t1, width, n_buckets):
        inner = (b0 != b1) & (b1 > b0 + 1)
        np.add.at(full, base[inner] + b0[inner] + 1, 1.0)
        np.add.at(full, base[inner] + b1[inner], -1.0)
    # the difference array must not run from one lane into the next: each run starts and ends
    # inside its own lane's row, so a cumulative sum over the flat array is safe
    out += np.cumsum(full) * width
    frac = out[:-1].reshape(n_lanes, n_buckets) / width
    return np.clip(frac, 0.0, 1.0)


def _traffic_class(direction: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """DDR / L2M masks with the rule of analysis.metrics: DDR if the direction names DDR,
    L2M if it names L2M and not DDR. Tested on the few distinct names, then mapped by code."""
    cat = direction.astype("category")
    names = pd.Series(cat.cat.categories.astype(str))
    codes = cat.cat.codes.to_numpy()
    ddr_name = np.append(names.str.contains("DDR").to_numpy(bool), False)   # code -1 -> unknown
    l2m_name = np.append(names.str.contains("L2M").to_numpy(bool), False)
    ddr = ddr_name[codes]
    return ddr, l2m_name[codes] & ~ddr


def _spread(starts: np.ndarray, ends: np.ndarray, amount: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Amount per bucket when each item's ``amount`` is spread evenly over [start, end).

    F(t) = amount delivered by time t is piecewise linear with breakpoints at starts and ends;
    evaluating it at the bucket edges (np.interp is exact between breakpoints) gives each
    bucket's share without looping over commands.
    """
    if len(starts) == 0:
        return np.zeros(len(edges) - 1)
    dur = (ends - starts).astype(np.float64)
    inst = dur <= 0                          # zero-length items deliver everything at their start
    rate = np.where(inst, 0.0, amount / np.where(inst, 1.0, dur))
    t = np.concatenate([starts, ends]).astype(np.float64)
    slope = np.concatenate([rate, -rate])
    order = np.argsort(t, kind="stable")
    t, slope = t[order], slope[order]
    cur_slope = np.cumsum(slope)
    f = np.concatenate([[0.0], np.cumsum(cur_slope[:-1] * np.diff(t))])
    delivered = np.interp(edges, t, f, left=0.0, right=f[-1])
    per_bucket = np.diff(delivered)
    if inst.any():
        idx = np.clip(np.searchsorted(edges, starts[inst], side="right") - 1, 0, len(edges) - 2)
        per_bucket += np.bincount(idx, weights=amount[inst], minlength=len(edges) - 1)
    return per_bucket


def bandwidth_over_time(profile: Profile, n_buckets: int = 1000) -> dict:
    """Time-weighted DMA bandwidth (GB/s) per core and per CDMA port, DDR and L2M separately.

    Each non-system DMA command's bytes are spread evenly over its duration; a bucket's value is
    the bytes that fell into it divided by its width (bytes/ns = GB/s). Averaged over the span
    this equals the ``*_bw_wall`` metrics of the engine summary.

    Returns ``{"t0": ns, "edges_ns": array(n_buckets+1) relative to t0, "series": [{"name",
    "kind": "DDR"|"L2M", "gbps": array}]}`` with all-zero series left out.
    """
    c = profile.commands
    if c.empty:
        return {"t0": 0, "edges_ns": np.zeros(1), "series": []}
    t0 = int(c["start_ns"].min())
    span = int(c["end_ns"].max()) - t0
    edges = np.linspace(0.0, float(max(span, 1)), n_buckets + 1)
    width = edges[1] - edges[0]
    dma = c[c["engine"].astype(str).isin(["GDMA", "SDMA", "CDMA"]) & ~c["is_sys"].to_numpy(bool)]
    nbytes = dma["bytes"].astype("Float64").fillna(0).to_numpy(float)
    ddr, l2m = _traffic_class(dma["direction"])
    cdma = (dma["engine"].astype(str) == "CDMA").to_numpy(bool)
    # owner of the traffic: the submitting core, or the CDMA port (its sheet)
    core_of = dma["core"].to_numpy(np.int64)
    port_sheet = dma["sheet"].astype(str).to_numpy()
    owner_key = np.where(cdma, -1, core_of)
    starts = dma["start_ns"].to_numpy(np.int64) - t0
    ends = dma["end_ns"].to_numpy(np.int64) - t0
    groups = pd.DataFrame({"core": owner_key, "port": np.where(cdma, port_sheet, "")})
    codes, owners = pd.factorize(pd.MultiIndex.from_frame(groups), sort=False)
    # cores in number order, then ports by name
    order = sorted(range(len(owners)), key=lambda k: (owners[k][0] < 0, owners[k][0], owners[k][1]))
    series = []
    for k in order:
        core, port = owners[k]
        name = port if core < 0 else f"core {core}"
        mine = codes == k
        for kind, mask in (("DDR", ddr), ("L2M", l2m)):
            sel = mine & mask & (nbytes > 0)
            if not sel.any():
                continue
            per_bucket = _spread(starts[sel], ends[sel], nbytes[sel], edges)
            series.append({"name": name, "kind": kind, "gbps": per_bucket / width})
    return {"t0": t0, "edges_ns": edges, "series": series}


def _text_codes(column: pd.Series, missing: str) -> tuple[np.ndarray, list[str]]:
    """Per row the code of its value as text (``missing`` for a missing one), and the texts."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    texts = [str(u) for u in uniques] + [missing]
    merged, distinct = pd.factorize(pd.Index(texts, dtype=object))   # equal texts: one code
    return merged[codes].astype(np.int64), [str(x) for x in distinct]


def time_by_func_type(profile: Profile) -> pd.DataFrame:
    """Summed command duration (ns) per engine and Function Type, all cores and ports together.

    Columns ``engine, func_type, is_sys, total_ns, cmds``; engines in display order, types by
    decreasing time. System commands keep their own type so they are visible, never hidden.
    """
    c = profile.commands
    if c.empty:
        return pd.DataFrame(columns=["engine", "func_type", "is_sys", "total_ns", "cmds"])
    # grouped on the columns' codes (few distinct values), their text looked up per group: no
    # string per command (at 3.3M commands 0.1 s instead of ~0.6 s and ~150 MB)
    engine, engines = _text_codes(c["engine"], "nan")
    ftype, ftypes = _text_codes(c["func_type"], "(unknown)")
    group, pairs = pd.factorize(engine * len(ftypes) + ftype)     # in order of first appearance
    dur = (c["end_ns"].to_numpy(np.int64) - c["start_ns"].to_numpy(np.int64)).astype(np.float64)
    n = len(pairs)
    g = pd.DataFrame({
        "engine": np.asarray([engines[k] for k in pairs // len(ftypes)], dtype=object),
        "func_type": np.asarray([ftypes[k] for k in pairs % len(ftypes)], dtype=object),
        "is_sys": np.bincount(group, weights=~c["is_sys"].to_numpy(bool), minlength=n) == 0,
        # integer sums below 2**53 ns are exact in float64
        "total_ns": np.bincount(group, weights=dur, minlength=n).astype(np.int64),
        "cmds": np.bincount(group, minlength=n).astype(np.int64),
    })
    rank = {e: i for i, e in enumerate(ENGINES)}
    g["_e"] = g["engine"].map(rank).fillna(len(rank))
    g = g.sort_values(["_e", "engine", "total_ns"], ascending=[True, True, False])
    return g.drop(columns="_e").reset_index(drop=True)
