"""Per-core slice tracks built from a table of intervals (kernel calls, layers): the lanes they
need where they overlap, and the plan that writes one slice per row with typed args."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.intervals import first_fit_lanes
from reportgen.writers.perfetto.device import Device
from reportgen.writers.perfetto.trace import Plan
from reportgen.writers.perfetto.wire import SLICE_BEGIN, SLICE_END, Rows, annotations, packet

#: lanes per core a track key leaves room for (key = core * LANES + lane)
LANES = 1024


def lane_tracks(device: Device, core: np.ndarray, start: np.ndarray, end: np.ndarray, kind: str,
                title: str, rank: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tracks "``title``", "``title`` #2", ... under each core, as many as its rows overlap
    (first-fit lanes): each row's track code, and each track's sequence id and uuid."""
    t = device.t
    lane = first_fit_lanes(core, start, end)
    track_code, keys = pd.factorize(pd.Series(core * LANES + lane))
    uuid_of = np.array([t.track(f"device/core/{k // LANES}/{kind}/{k % LANES}",
                                title + ("" if k % LANES == 0 else f" #{k % LANES + 1}"),
                                device.core_track(int(k // LANES)), rank=rank + k % LANES)
                        for k in keys.to_numpy()], np.int64)
    return track_code, t.sequences(len(keys)), uuid_of


def slice_plan(device: Device, tracks: tuple[np.ndarray, np.ndarray, np.ndarray], start: np.ndarray,
               end: np.ndarray, name_iid: np.ndarray, args: list[tuple], arg_names: list[str],
               interned: dict[str, tuple] | None = None) -> Plan:
    """One slice per row on its track (``tracks`` from :func:`lane_tracks`), named ``name_iid``,
    with the typed ``args`` (name, kind, values, present) of every row; ``arg_names`` are the
    arg names each sequence interns, ``interned`` any other interned table it uses."""
    t = device.t
    track_code, seq_ids, uuid_of = tracks
    seq = seq_ids[track_code]
    order = np.lexsort((end, start, track_code))
    base = device.base

    def encode(lo: int, hi: int) -> bytes:
        rows = order[lo:hi]
        n = len(rows)
        te = Rows(n).const(9, SLICE_BEGIN)
        te.varint(10, name_iid[rows])
        annotations(te, t.arg_iid, [(a, kind, v[rows], ok[rows]) for a, kind, v, ok in args])
        delta = t.deltas(np.repeat(seq[rows], 2), np.column_stack([start[rows], end[rows]]).ravel() + base)
        rec = Rows(n).message(1, packet(n, delta[0::2], seq[rows], te))
        rec.message(1, packet(n, delta[1::2], seq[rows], Rows(n).const(9, SLICE_END)))
        return rec.tobytes()

    first_ts = np.full(len(seq_ids), np.iinfo(np.int64).max)
    np.minimum.at(first_ts, track_code, start + base)
    arg_iids = [t.arg_iid[a] for a in arg_names]
    return Plan(len(start), seq_ids, uuid_of, first_ts, encode,
                {"names": (seq, name_iid), **(interned or {}),
                 "args": (np.repeat(seq_ids, len(arg_iids)), np.tile(arg_iids, len(seq_ids)))})
