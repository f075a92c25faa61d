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
from reportgen.writers.perfetto.counters import COUNTERS, counter_path, counter_points, counter_rows, sort_order
from reportgen.writers.perfetto.wire import Rows

EXTRA_INT, EXTRA_DOUBLE = 12, 46      # TrackEvent.extra_counter_values, extra_double_counter_values


@dataclass
class Riding:
    """Per command row: the counter value its begin / end event carries (NaN: none); per
    counter: (name, unit, the cores with points, and the points (core, ts, value) that keep
    packets of their own)."""

    begin: np.ndarray
    end: np.ndarray
    counters: list[tuple]
    tracks: dict[tuple[int, str], str]        # (core, engine) -> path of its counter track


def riding(c: pd.DataFrame) -> Riding:
    """The counter points of every core (:func:`counters.counter_points`) and which of them
    ride on which command events of ``c``.  Core by core: what is allocated at once is one
    core's points and events."""
    n = len(c)
    begin, end = np.full(n, np.nan), np.full(n, np.nan)
    counters, tracks = [], {}
    core_all = c["core"].to_numpy(np.int64)
    start_all, end_all = c["start_ns"].to_numpy(np.int64), c["end_ns"].to_numpy(np.int64)
    for name, unit, engine in COUNTERS:
        rows = counter_rows(c, engine)
        if not len(rows):
            continue
        events = np.flatnonzero(engine_is(c, engine))        # the commands that may carry a point
        # a compact (core, time) key of every event (the points' times are their commands')
        low = min(int(start_all[events].min()), int(end_all[events].min()))
        span = max(int(start_all[events].max()), int(end_all[events].max())) - low + 1
        keyed = (int(core_all[events].max()) + 1) * span < 1 << 62 and int(core_all[events].min()) >= 0
        point_core, ev_core = core_all[rows], core_all[events]
        by_core, ev_by_core = np.argsort(point_core, kind="stable"), np.argsort(ev_core, kind="stable")
        cores = np.unique(point_core)
        lo, hi = np.searchsorted(point_core[by_core], cores, "left"), np.searchsorted(point_core[by_core], cores, "right")
        ev_lo = np.searchsorted(ev_core[ev_by_core], cores, "left")
        ev_hi = np.searchsorted(ev_core[ev_by_core], cores, "right")
        own = []
        for k, a, b, ea, eb in zip(cores, lo, hi, ev_lo, ev_hi):
            ts, value = counter_points(c, engine, rows[by_core[a:b]])
            ride = _ride(events[ev_by_core[ea:eb]], start_all, end_all, ts, value, begin, end) if keyed \
                else np.zeros(len(ts), bool)
            own.append((np.full(int((~ride).sum()), k, np.int64), ts[~ride], value[~ride]))
        counters.append((name, unit, cores, *(np.concatenate(x) for x in zip(*own))))
        tracks.update({(int(k), engine): counter_path(int(k), name) for k in cores})
    return Riding(begin, end, counters, tracks)


def _ride(rows: np.ndarray, start_all: np.ndarray, end_all: np.ndarray, ts: np.ndarray, value: np.ndarray,
          begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Which points (ts, value) of one core ride on the events of its commands ``rows``: the
    first event at the point's time carries it (``begin`` / ``end`` filled); a point that
    shares its time with another keeps its packet."""
    ride = np.zeros(len(ts), bool)
    if not len(rows) or not len(ts):
        return ride
    ev_ts = np.concatenate([start_all[rows], end_all[rows]])
    ev_id = np.concatenate([rows * 2, rows * 2 + 1])            # side 0 = begin, 1 = end
    o = sort_order(ev_id, ev_ts)                                # the first event per time carries it
    k = ev_ts[o]
    first = np.ones(len(k), bool)
    first[1:] = k[1:] != k[:-1]
    keys, carrier = k[first], ev_id[o][first]
    alone = np.ones(len(ts), bool)                              # the only point at its time
    same = ts[1:] == ts[:-1]
    alone[1:] &= ~same
    alone[:-1] &= ~same
    at = np.minimum(np.searchsorted(keys, ts), len(keys) - 1)
    ride[:] = alone & (keys[at] == ts)
    ev = carrier[at[ride]]
    val = np.asarray(value, np.float64)[ride]
    begin[ev[ev % 2 == 0] // 2] = val[ev % 2 == 0]
    end[ev[ev % 2 == 1] // 2] = val[ev % 2 == 1]
    return ride


def ride_values(event: Rows, values: np.ndarray) -> None:
    """The counter value each event carries (NaN: none): whole numbers as an int64 extra
    counter value, others as a double one."""
    has = ~np.isnan(values)
    whole = has & (np.round(values) == values) & (np.abs(values) < 2.0 ** 53) & ~np.signbit(values)
    event.varint(EXTRA_INT, np.where(whole, values, 0).astype(np.int64), whole)
    event.fixed64(EXTRA_DOUBLE, values, has & ~whole)
