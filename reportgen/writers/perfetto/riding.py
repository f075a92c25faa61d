"""Counter points that ride on command slice events.

A counter point of a core's engine (TIU uArch rate, GDMA/SDMA bandwidth) falls on the start or
end of one of that engine's commands on that core.  Instead of a packet of its own (~22 bytes),
such a point is written as ``TrackEvent.extra_double_counter_values`` (10 bytes) on that
command's begin or end event, or as ``extra_counter_values`` (an int64 varint, 2-4 bytes) when
the value is a whole number (0 when an engine goes idle, a 100 % rate): a trace processor keeps
counter values as doubles either way.  The counter track is the default
``TrackEventDefaults.extra_(double_)counter_track_uuids`` of the lane's sequence, so the event
names no track.  A trace processor imports it as the same counter row (track, ts, value).

Points whose (core, time) has more than one point (two TIU commands starting at the same ns)
keep their own packets on the counter's sequence, so every point of one (track, time) comes
from one sequence, in order; so do points no command event carries.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.writers.perfetto.columns import engine_is
from reportgen.writers.perfetto.counters import counter_path, sort_order
from reportgen.writers.perfetto.wire import Rows

EXTRA_INT, EXTRA_DOUBLE = 12, 46      # TrackEvent.extra_counter_values, extra_double_counter_values


@dataclass
class Riding:
    """Per command row: the counter value its begin / end event carries (NaN: none); per
    counter series: which of its points ride (the others keep their packets)."""

    begin: np.ndarray
    end: np.ndarray
    rides: list[np.ndarray]
    tracks: dict[tuple[int, str], str]        # (core, engine) -> path of its counter track


def riding(c: pd.DataFrame, series: list[tuple]) -> Riding:
    """Which points of ``series`` ((name, unit, core, ts, value), sorted by core and time, from
    :func:`counters.counter_series`) ride on which command events of ``c``."""
    n = len(c)
    begin, end = np.full(n, np.nan), np.full(n, np.nan)
    rides, tracks = [], {}
    core_all = c["core"].to_numpy(np.int64)
    start_all, end_all = c["start_ns"].to_numpy(np.int64), c["end_ns"].to_numpy(np.int64)
    for name, _unit, core, ts, value in series:
        engine = name.split()[0]
        cores_of = core[np.append(True, core[1:] != core[:-1])] if len(core) else core   # sorted by core
        tracks.update({(int(k), engine): counter_path(int(k), name) for k in cores_of})
        rows = np.flatnonzero(engine_is(c, engine))
        ride = np.zeros(len(ts), bool)
        rides.append(ride)
        if not len(rows) or not len(ts):
            continue
        # events (row, side) keyed by core and time: key = core * span + (time - low)
        ev_core = np.concatenate([core_all[rows], core_all[rows]])
        ev_ts = np.concatenate([start_all[rows], end_all[rows]])
        ev_id = np.concatenate([rows * 2, rows * 2 + 1])            # side 0 = begin, 1 = end
        low = min(int(ev_ts.min()), int(ts.min()))
        span = max(int(ev_ts.max()), int(ts.max())) - low + 1
        cores = max(int(ev_core.max()), int(core.max())) + 1
        if cores * span >= 1 << 62 or min(int(ev_core.min()), int(core.min())) < 0:
            continue                                               # no compact key: all keep packets
        ev_key = ev_core * span + (ev_ts - low)
        o = sort_order(ev_id, ev_key)                              # the first event per key carries it
        k = ev_key[o]
        first = np.ones(len(k), bool)
        first[1:] = k[1:] != k[:-1]
        keys, carrier = k[first], ev_id[o][first]
        pkey = np.asarray(core, np.int64) * span + (np.asarray(ts, np.int64) - low)
        alone = np.ones(len(pkey), bool)                           # the only point at its key
        same = pkey[1:] == pkey[:-1]
        alone[1:] &= ~same
        alone[:-1] &= ~same
        at = np.minimum(np.searchsorted(keys, pkey), len(keys) - 1)
        ride[:] = alone & (keys[at] == pkey)
        ev = carrier[at[ride]]
        val = np.asarray(value, np.float64)[ride]
        begin[ev[ev % 2 == 0] // 2] = val[ev % 2 == 0]
        end[ev[ev % 2 == 1] // 2] = val[ev % 2 == 1]
    return Riding(begin, end, rides, tracks)


def ride_values(event: Rows, values: np.ndarray) -> None:
    """The counter value each event carries (NaN: none): whole numbers as an int64 extra
    counter value, others as a double one."""
    has = ~np.isnan(values)
    whole = has & (np.round(values) == values) & (np.abs(values) < 2.0 ** 53) & ~np.signbit(values)
    event.varint(EXTRA_INT, np.where(whole, values, 0).astype(np.int64), whole)
    event.fixed64(EXTRA_DOUBLE, values, has & ~whole)
