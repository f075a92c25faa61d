"""Per-core counter tracks: TIU uArch rate and GDMA/SDMA bandwidth."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.writers.perfetto.columns import engine_is, float_values
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


#: the counters: (track name, unit, engine whose commands make it)
COUNTERS = (("TIU uArch Rate (%)", "%", "TIU"), ("GDMA Bandwidth (GB/s)", "GB/s", "GDMA"),
            ("SDMA Bandwidth (GB/s)", "GB/s", "SDMA"))


def counter_rows(c: pd.DataFrame, engine: str) -> np.ndarray:
    """The commands (rows, ascending) a counter is made of: the modelled TIU commands (a uArch
    rate), the GDMA/SDMA commands of the kernel (not system ones) with a bandwidth."""
    if engine == "TIU":
        return np.flatnonzero(engine_is(c, "TIU") & c["uarch_rate"].notna().to_numpy(bool))
    known = (c["ddr_bw"].notna() | c["l2m_bw"].notna()).to_numpy(bool)
    return np.flatnonzero(engine_is(c, engine) & ~c["is_sys"].to_numpy(bool) & known)


def counter_points(c: pd.DataFrame, engine: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points (ts, value), in time order, of the ``engine`` counter of ONE core made of its
    commands ``rows``: TIU uArch rate (of the latest started modelled command, 0 when none
    runs), DMA bandwidth (the sum over the running commands)."""
    s, e = c["start_ns"].to_numpy(np.int64)[rows], c["end_ns"].to_numpy(np.int64)[rows]
    if engine == "TIU":
        o = sort_order(e - s, s)
        s, e = s[o], e[o]
        run_end = np.maximum.accumulate(e)                  # latest end so far
        next_start = np.full(len(s), np.iinfo(np.int64).max)
        next_start[:-1] = s[1:]
        idle = next_start > run_end
        rate = np.round(float_values(c, "uarch_rate", rows[o]) * 100.0, 6)
        ts = np.concatenate([s, run_end[idle]])
        val = np.concatenate([rate, np.zeros(idle.sum())])
        kind = np.concatenate([np.arange(len(s)) * 2, np.flatnonzero(idle) * 2 + 1])
        o = sort_order(kind, ts)
        return ts[o], val[o]
    ddr, l2m = float_values(c, "ddr_bw", rows), float_values(c, "l2m_bw", rows)
    bw = np.where(np.isnan(ddr), l2m, ddr)
    # integer 1e-4 GB/s steps keep the running sum exact
    units = np.round(bw * 1e4).astype(np.int64)
    ts = np.concatenate([s, e])
    delta = np.concatenate([units, -units])
    # by time; the order within one time does not matter: only the level after all of its
    # steps is kept
    o = sort_order(ts)
    ts = ts[o]
    level = np.cumsum(delta[o])
    last = np.ones(len(ts), bool)                          # one point per time
    last[:-1] = ts[1:] != ts[:-1]
    return ts[last], level[last] / 1e4


def counters_plan(device: Device, counters: list[tuple]) -> list[Plan]:
    """The counter tracks: per counter (name, unit, the cores with points, and the points
    (core, ts, value) that do not ride on a command event, :mod:`.riding`)."""
    return [_counter_plan(device, *x) for x in counters]


def _counter_plan(device: Device, name: str, unit: str, cores: np.ndarray, core: np.ndarray, ts: np.ndarray,
                  value: np.ndarray) -> Plan:
    """One counter track per core of ``cores``; the points (core, ts, value), sorted by core
    and time, get packets of their own on the track's sequence."""
    t = device.t
    uuid_of = np.array([t.track(counter_path(int(k), name), name, device.core_track(int(k)),
                                rank=ENGINE_RANK[name] * 64, counter_unit=unit) for k in cores], np.int64)
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
