"""Per-core counter tracks: TIU uArch rate and GDMA/SDMA bandwidth."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.writers.perfetto.columns import engine_is
from reportgen.writers.perfetto.device import ENGINE_RANK, Device
from reportgen.writers.perfetto.trace import Plan
from reportgen.writers.perfetto.wire import COUNTER, Rows, packet


def counter_path(core: int, name: str) -> str:
    """The path (hence the uuid) of a core's counter track."""
    return f"device/core/{core}/counter/{name}"


def sort_order(*keys: np.ndarray) -> np.ndarray:
    """``np.lexsort(keys)`` (last key most significant) for integer keys, as one stable argsort
    of a combined key when the keys' ranges fit in 62 bits (a third of the time)."""
    keys = [np.asarray(k, np.int64) for k in keys]
    if not len(keys[0]):
        return np.zeros(0, np.int64)
    lows = [int(k.min()) for k in keys]
    spans = [int(k.max()) - low + 1 for k, low in zip(keys, lows)]
    if np.prod([float(x) for x in spans]) >= 2.0 ** 62:
        return np.lexsort(keys)
    combined = np.zeros(len(keys[0]), np.int64)
    for k, low, span in zip(reversed(keys), reversed(lows), reversed(spans)):
        combined *= span
        combined += k - low
    return np.argsort(combined, kind="stable")


def counter_series(c: pd.DataFrame) -> list[tuple]:
    """TIU uArch rate (of the latest started modelled command, 0 when none runs) and DMA
    bandwidth (sum over the running commands) per core: (track name, unit, core, ts, value)
    per counter, sorted by core and time."""
    series = []
    core_all = c["core"].to_numpy(np.int64)
    start_all, end_all = c["start_ns"].to_numpy(np.int64), c["end_ns"].to_numpy(np.int64)
    rows = np.flatnonzero(engine_is(c, "TIU") & c["uarch_rate"].notna().to_numpy(bool))
    if len(rows):
        rows = rows[sort_order(end_all[rows] - start_all[rows], start_all[rows], core_all[rows])]
        core, s, e = core_all[rows], start_all[rows], end_all[rows]
        # latest end so far on the core: a running maximum, each core's ends lifted above the
        # previous core's
        lift = (core - core.min()) * (int(e.max()) - int(e.min()) + 1)
        run_end = np.maximum.accumulate(e - int(e.min()) + lift) - lift + int(e.min())
        next_start = np.full(len(s), np.iinfo(np.int64).max)
        same = core[1:] == core[:-1]
        next_start[:-1][same] = s[1:][same]
        idle = next_start > run_end
        rate = np.round(c["uarch_rate"].to_numpy(np.float64)[rows] * 100.0, 6)
        ts = np.concatenate([s, run_end[idle]])
        val = np.concatenate([rate, np.zeros(idle.sum())])
        cores = np.concatenate([core, core[idle]])
        kind = np.concatenate([np.arange(len(s)) * 2, np.flatnonzero(idle) * 2 + 1])
        o = sort_order(kind, ts, cores)
        series.append(("TIU uArch Rate (%)", "%", cores[o], ts[o], val[o]))
    ddr, l2m = c["ddr_bw"].to_numpy(np.float64, na_value=np.nan), c["l2m_bw"].to_numpy(np.float64, na_value=np.nan)
    bw_all = np.where(np.isnan(ddr), l2m, ddr)
    for eng in ("GDMA", "SDMA"):
        rows = np.flatnonzero(engine_is(c, eng) & ~c["is_sys"].to_numpy(bool) & ~np.isnan(bw_all))
        if not len(rows):
            continue
        # integer 1e-4 GB/s steps keep the running sum exact
        units = np.round(bw_all[rows] * 1e4).astype(np.int64)
        ts = np.concatenate([start_all[rows], end_all[rows]])
        delta = np.concatenate([units, -units])
        cores = np.concatenate([core_all[rows], core_all[rows]])
        # by core and time; the order within one (core, time) does not matter: only the level
        # after all of its steps is kept
        o = sort_order(ts, cores)
        ts, delta, cores = ts[o], delta[o], cores[o]
        # every command adds and removes its units on its own core, so each core's steps sum
        # to 0 and one running sum over all cores is each core's level
        level = np.cumsum(delta)
        last = np.ones(len(ts), bool)              # one point per (core, time)
        last[:-1] = (ts[1:] != ts[:-1]) | (cores[1:] != cores[:-1])
        series.append((f"{eng} Bandwidth (GB/s)", "GB/s", cores[last], ts[last], level[last] / 1e4))
    return series


def counters_plan(device: Device, series: list[tuple], rides: list[np.ndarray]) -> list[Plan]:
    """The counter tracks of ``series``, with a packet for each point that does not ride on a
    command event (``rides``, :mod:`.riding`)."""
    return [_counter_plan(device, *s, ~r) for s, r in zip(series, rides)]


def _counter_plan(device: Device, name: str, unit: str, core: np.ndarray, ts: np.ndarray,
                  value: np.ndarray, own: np.ndarray) -> Plan:
    """One counter track per core for the points (core, ts, value), sorted by core and time;
    the ``own`` ones get packets of their own on the track's sequence."""
    t = device.t
    cores = np.unique(core)
    uuid_of = np.array([t.track(counter_path(int(k), name), name, device.core_track(int(k)),
                                rank=ENGINE_RANK[name] * 64, counter_unit=unit) for k in cores], np.int64)
    core, ts, value = core[own], ts[own], value[own]
    track_code = np.searchsorted(cores, core)
    seq_ids = t.sequences(len(cores))
    seq = seq_ids[track_code]
    base = device.base

    def encode(lo: int, hi: int) -> bytes:
        n = hi - lo
        te = Rows(n).const(9, COUNTER)
        te.fixed64(44, value[lo:hi].astype(np.float64))
        return Rows(n).message(1, packet(n, t.deltas(seq[lo:hi], ts[lo:hi] + base), seq[lo:hi], te)).tobytes()

    first_ts = np.full(len(cores), np.iinfo(np.int64).max)
    np.minimum.at(first_ts, track_code, ts + base)
    first_ts[first_ts == np.iinfo(np.int64).max] = 0            # every point of the track rides
    return Plan(len(ts), seq_ids, uuid_of, first_ts, encode, {})
