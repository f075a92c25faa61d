"""The trace being written: its file, the track tree (descriptors, uuids derived from each
track's path), the interned string tables and the packet sequences, one per track."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from reportgen.writers.perfetto.wire import SEQ_CLEARED

DESCRIPTOR_SEQ = 1                  # sequence of the track descriptors
BOOTTIME = 6                        # the trace clock (BuiltinClock.BOOTTIME), what plain timestamps are in
DELTA_CLOCK = 64                    # each sequence's own clock (ids 64-127 are sequence-scoped): incremental
ARG_NAMES = ("Global Idx", "Sheet", "Cmd Id", "Cycles", "DMA data size(B)", "DDR Bandwidth(GB/s)",
             "L2M Bandwidth(GB/s)", "uArch Rate", "Direction", "Data Type", "Kernel Function",
             "Mode", "Stall Cycles", "Dep Cmd Id", "Batch", "Port", "Core", "Func Scope Id", "Commands",
             "critical")


class Interned:
    """Global iid per string (1-based); each sequence declares the iids it uses."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def codes(self, values) -> np.ndarray:
        """iid per value (0 = missing)."""
        s = pd.Series(values, dtype=object)
        codes, uniques = pd.factorize(s, use_na_sentinel=True)
        table = np.array([self.get(str(u)) for u in uniques] + [0], np.int64)
        return table[codes]                     # code -1 (missing) picks the trailing 0

    def lookup(self, column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
        """(codes, table) with ``table[codes]`` = iid per row (0 = missing).

        A categorical column keeps its own small codes, so nothing of the column's length is
        allocated; other columns are factorised once.
        """
        if isinstance(column.dtype, pd.CategoricalDtype):
            codes, uniques = column.cat.codes.to_numpy(), column.cat.categories
        else:
            codes, uniques = pd.factorize(column.astype(object), use_na_sentinel=True)
        return codes, np.array([self.get(str(u)) for u in uniques] + [0], np.int64)

    def get(self, text: str) -> int:
        iid = self.ids.get(text)
        if iid is None:
            iid = self.ids[text] = len(self.ids) + 1
        return iid

    def names(self) -> dict[int, str]:
        return {i: s for s, i in self.ids.items()}


def path_uuid(path: str) -> int:
    """A track's uuid, derived from its path (so two runs write identical bytes)."""
    return int.from_bytes(hashlib.blake2b(path.encode(), digest_size=8).digest(), "little") >> 1


class Trace:
    """Collects tracks, string tables and sequences while the file is written."""

    def __init__(self, fh) -> None:
        self.fh = fh
        self.names, self.cats, self.arg_names, self.strings = (Interned(), Interned(),
                                                               Interned(), Interned())
        self.arg_iid = {a: self.arg_names.get(a) for a in ARG_NAMES}
        self.descriptors = pb.Trace()
        self.next_seq = DESCRIPTOR_SEQ + 1
        self.uuids: set[int] = set()
        self.bytes_written = 0
        self.last_ts = np.zeros(0, np.int64)        # per sequence: time of its latest packet

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self.bytes_written += len(data)

    def track(self, path: str, name: str, parent: int | None = None, rank: int | None = None,
              counter_unit: str | None = None, explicit: bool = False, description: str = "",
              process: tuple[int, str] | None = None, thread: tuple[int, int, str] | None = None) -> int:
        uuid = path_uuid(path)
        if uuid in self.uuids:
            raise RuntimeError(f"duplicate track {path}")
        self.uuids.add(uuid)
        pkt = self.descriptors.packet.add()
        pkt.trusted_packet_sequence_id = DESCRIPTOR_SEQ
        d = pkt.track_descriptor
        d.uuid = uuid
        if process is not None:
            d.process.pid, d.process.process_name = process
        elif thread is not None:
            d.thread.pid, d.thread.tid, d.thread.thread_name = thread
        else:
            d.name = name
        if parent is not None:
            d.parent_uuid = parent
        if rank is not None:
            d.sibling_order_rank = rank
        if explicit:
            d.child_ordering = pb.TrackDescriptor.EXPLICIT
        if description:
            d.description = description
        if counter_unit is not None:
            d.counter.unit_name = counter_unit
        return uuid

    def flush_descriptors(self) -> None:
        self.write(self.descriptors.SerializeToString())
        self.descriptors = pb.Trace()

    def sequences(self, count: int) -> np.ndarray:
        first = self.next_seq
        self.next_seq += count
        return np.arange(first, first + count, dtype=np.int64)

    def intern(self, seq: np.ndarray, track: np.ndarray, first_ts: np.ndarray,
               used: dict[str, tuple[np.ndarray, np.ndarray]], counters: np.ndarray) -> None:
        """First packets of every sequence: one clears incremental state, makes the sequence's
        track the default ``track_uuid`` of its events, its incremental clock their default
        clock, and declares the iids the sequence uses; the next one is the clock's snapshot
        (its value ``first_ts`` = the same trace time), so events carry only the delta from the
        sequence's previous packet (:meth:`deltas`); ``counters[k]`` (0: none) is the default
        track of the extra counter values (int and double) of sequence k's events (:mod:`.riding`).

        ``used[table] = (sequence, iid)`` pairs, unique; tables: names, cats, args, strings.
        """
        out = pb.Trace()
        lookup = {"names": self.names.names(), "cats": self.cats.names(),
                  "args": self.arg_names.names(), "strings": self.strings.names()}
        cut = {}
        for table, (s_use, iid_use) in used.items():
            o = np.lexsort((iid_use, s_use))
            s_use, iid_use = s_use[o], iid_use[o]
            cut[table] = (iid_use, np.searchsorted(s_use, seq, "left"), np.searchsorted(s_use, seq, "right"))
        adders = {"names": lambda d, i, x: d.event_names.add(iid=i, name=x),
                  "cats": lambda d, i, x: d.event_categories.add(iid=i, name=x),
                  "args": lambda d, i, x: d.debug_annotation_names.add(iid=i, name=x),
                  "strings": lambda d, i, x: d.debug_annotation_string_values.add(iid=i, str=x.encode())}
        for k, (s, uuid, ts, counter) in enumerate(zip(seq, track, first_ts, counters)):
            pkt = out.packet.add()
            pkt.trusted_packet_sequence_id = int(s)
            pkt.sequence_flags = SEQ_CLEARED
            pkt.trace_packet_defaults.timestamp_clock_id = DELTA_CLOCK
            pkt.trace_packet_defaults.track_event_defaults.track_uuid = int(uuid)
            if counter:
                defaults = pkt.trace_packet_defaults.track_event_defaults
                defaults.extra_counter_track_uuids.append(int(counter))
                defaults.extra_double_counter_track_uuids.append(int(counter))
            for table, (iids, lo, hi) in cut.items():
                for iid in iids[lo[k]:hi[k]]:
                    adders[table](pkt.interned_data, int(iid), lookup[table][int(iid)])
            snap = out.packet.add()
            snap.trusted_packet_sequence_id = int(s)
            snap.clock_snapshot.clocks.add(clock_id=BOOTTIME, timestamp=int(ts))
            snap.clock_snapshot.clocks.add(clock_id=DELTA_CLOCK, timestamp=int(ts), is_incremental=True)
        self.write(out.SerializeToString())
        self.last_ts = np.zeros(self.next_seq, np.int64)
        self.last_ts[seq] = first_ts

    def deltas(self, seq: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Each packet's timestamp on its sequence's incremental clock: the time since the
        sequence's previous packet; ``seq``, ``ts`` in file order, called chunk by chunk in
        file order."""
        seq, ts = np.asarray(seq, np.int64), np.asarray(ts, np.int64)
        grouped = bool(np.all(seq[1:] >= seq[:-1]))     # a lane's events together: no sort
        o = slice(None) if grouped else np.argsort(seq, kind="stable")
        s, t = seq[o], ts[o]
        prev = np.empty_like(t)
        prev[1:] = t[:-1]
        first = np.ones(len(s), bool)
        first[1:] = s[1:] != s[:-1]
        prev[first] = self.last_ts[s[first]]
        out = np.empty_like(ts)
        out[o] = t - prev
        if len(out) and out.min() < 0:
            raise RuntimeError("perfetto: a sequence's packets go back in time")
        last = np.append(first[1:], True)
        self.last_ts[s[last]] = t[last]
        return out


def pairs(seq: np.ndarray, iid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique (sequence, iid) pairs with iid > 0, without sorting when the key space is small."""
    keep = iid > 0
    seq, iid = np.asarray(seq, np.int64)[keep], np.asarray(iid, np.int64)[keep]
    if not len(seq):
        return seq, iid
    span = int(iid.max()) + 1
    key = seq * span + iid
    space = (int(seq.max()) + 1) * span
    hits = np.flatnonzero(np.bincount(key, minlength=space)) if space <= 1 << 26 else np.unique(key)
    return hits // span, hits % span


@dataclass
class Plan:
    """The events of a group of tracks, one packet sequence per track, encoded chunk by chunk.

    ``used[table] = (sequence, iid)`` per row (tables: names, cats, args, strings; iid 0 =
    none) says which interned strings each sequence declares in its first packet."""

    n: int                                  # events
    seq_ids: np.ndarray                     # sequence id per track
    tracks: np.ndarray                      # track uuid per track
    first_ts: np.ndarray                    # earliest event time per track
    encode: Callable[[int, int], bytes]     # the packets of events lo..hi
    used: dict[str, tuple[np.ndarray, np.ndarray]]
    counters: np.ndarray | None = None      # per track: the counter its events' extra values go to (0: none)
