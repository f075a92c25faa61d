"""``perfetto.pftrace``: every command as a Perfetto slice, with typed args, flows and counters.

Layout (track tree; every track is declared once, uuids are derived from the track's path so
two runs write identical bytes)::

    <chip> TPU                                   device root
      Core N                                     explicit order by core number
        Kernel Function                          one slice per func_scope (or kernel run)
        TIU, TIU #2...                           commands; "#k" lanes only when commands overlap
        TIU uArch Rate (%)          [counter]    uArch rate of the running modelled TIU command
        GDMA, GDMA Bandwidth (GB/s) [counter]    summed DDR/L2M bandwidth of the running commands
        SDMA, SDMA Bandwidth (GB/s) [counter]
      CDMA
        CDMA port P                              other CDMA ops (write, general, ...)
          CDMA port P TX, RX (, #2...)           send/tcp_send/tx_* and receive/read/rx_* ops
    host process (pid) -> thread (tid) (, "#k" lanes)   from profile.host (--trace_file)

Slices: name = Function Name, category = Function Type, debug args as typed values (int /
double / interned string; an unknown value is left out, never written as text or 0):
``Global Idx``, ``Sheet``, ``Cmd Id``, ``Cycles``, ``DMA data size(B)``, ``DDR Bandwidth(GB/s)``,
``L2M Bandwidth(GB/s)``, ``uArch Rate`` (a number in %), ``Direction``, ``Data Type``,
``Kernel Function``, ``Mode``, ``Stall Cycles``, ``Dep Cmd Id``, ``Batch``, ``Port`` and ``Core`` (CDMA:
the submitting core).  So SQL such as
``EXTRACT_ARG(arg_set_id, 'debug.uArch Rate') < 50`` works without CAST.

Dependency flows.  A TIU descriptor's ``cmd_id_dep`` names the GDMA command the TIU command waits
for, and a GDMA descriptor's names the TIU command it waits for (the two engines synchronise
through each other's command ids; SDMA/CDMA have no such field we model).  Ids restart with every
kernel launch, so the source of a dependency is the *latest* command of the other engine on the
same core with ``cmd_id == dep_cmd_id`` that started no later than the dependent command
(``dep_cmd_id`` 0 means "none").  On the golden dumps this resolves every dependency and the
source always ends before the dependent starts.  One flow per dependency, id = dependent row + 1,
starting on the source slice and terminating on the dependent one.  send_msg/wait_msg pairs are
not linked: their message ids exist only in the TIU registers (``des_imm``) and the captures pair
a send on one id with a wait on another across all cores, a rule we cannot confirm, and a
wrong arrow is worse than none.

Host (``profile.host``, filled by :func:`reportgen.analysis.host_align.attach_host_trace`): real
process/thread tracks (numeric pid/tid; otherwise stand-in ids named after the originals),
slices nested as in the model; events that overlap without nesting go to "thread T #k" lanes.

Timestamps are device ns; when a host trace was attached (``meta.host_alignment``) they
are on the host clock (device ns + offset, as the reference does), so the host slices keep their
own times.  Anything that would still be negative is shifted to start at 0.

Encoding.  Each track is its own packet sequence.  The sequence's first packet clears its
incremental state, makes the track the sequence's default ``track_uuid`` (so events do not repeat
it) and interns the event names, categories, arg names and string values the sequence uses; the
sequence's packets follow in timestamp order.  Event packets are encoded by a small vectorised protobuf wire encoder
(:class:`_Rows`): every field of every packet of a chunk is one numpy column, so there is no Python
loop per command, and chunks of :data:`CHUNK` slices are written as they are encoded (memory
stays flat).  Descriptors and interned data, a few per track, use the ``perfetto`` package's
``perfetto_trace_pb2``.  The file is a concatenation of ``Trace`` messages, which is one trace.
"""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from tqdm import tqdm

from reportgen.intervals import first_fit_lanes, lanes as nesting_lanes, nest
from reportgen.errors import OutputError
from reportgen.model import Profile
from reportgen.writers.atomic import atomic_open

FILE_NAME = "perfetto.pftrace"
CHUNK = 32_768                      # slices encoded and written at a time

SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4
SEQ_CLEARED, SEQ_NEEDS_STATE = 1, 2
DESCRIPTOR_SEQ = 1                  # sequence of the track descriptors


# == vectorised protobuf wire encoding ======================================================
def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _varint_matrix(values) -> tuple[np.ndarray, np.ndarray]:
    """Varint encoding of each value: an (n, width) byte matrix and the byte count per row.

    Signed values are encoded as their 64-bit two's complement (protobuf int64).  Only as many
    byte columns as the largest value needs are computed.
    """
    v = np.asarray(values)
    v = v.astype(np.int64).view(np.uint64) if v.dtype.kind in "ib" else v.astype(np.uint64)
    n = len(v)
    top = int(v.max()) if n else 0
    width = max(1, (top.bit_length() + 6) // 7)
    mat = np.empty((n, width), np.uint8)
    lens = np.ones(n, np.int64)
    rest = v.copy()
    for k in range(width):
        low = (rest & np.uint64(0x7F)).astype(np.uint8)
        rest >>= np.uint64(7)
        more = rest != 0
        mat[:, k] = low | (more.astype(np.uint8) << 7)
        lens += more
    return mat, lens


def _absent(present) -> bool:
    """True when a field is missing from every row (it then adds no columns at all)."""
    return present is not None and not np.any(present)


class _Rows:
    """One protobuf message per row, built column by column.

    Parts are (bytes matrix, per-row length) pairs in field order; a row's message is the
    concatenation of each part's first ``len`` bytes.  A field is left out of a row by giving
    it length 0 (``present`` masks), so optional values cost nothing.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []

    def _add(self, mat: np.ndarray, lens: np.ndarray, present) -> None:
        if present is not None:
            lens = np.where(present, lens, 0)
        self.parts.append((mat, np.asarray(lens, np.int64)))

    def _const(self, data: bytes, present) -> None:
        row = np.frombuffer(data, np.uint8)
        self._add(np.broadcast_to(row, (self.n, len(row))), np.full(self.n, len(row)), present)

    def const(self, field: int, value: int, present=None) -> "_Rows":
        """A varint field with the same value in every row."""
        if _absent(present):
            return self
        self._const(_varint_bytes(field << 3) + _varint_bytes(value), present)
        return self

    def varint(self, field: int, values, present=None) -> "_Rows":
        if _absent(present):
            return self
        self._const(_varint_bytes(field << 3), present)
        mat, lens = _varint_matrix(values)
        self._add(mat, lens, present)
        return self

    def fixed64(self, field: int, values, present=None) -> "_Rows":
        """double / fixed64 (the 8 little-endian bytes of ``values``)."""
        if _absent(present):
            return self
        self._const(_varint_bytes(field << 3 | 1), present)
        v = np.asarray(values)
        raw = np.ascontiguousarray(v, dtype=v.dtype.newbyteorder("<"))
        self._add(raw.view(np.uint8).reshape(self.n, 8), np.full(self.n, 8), present)
        return self

    def message(self, field: int, sub: "_Rows", present=None) -> "_Rows":
        if _absent(present):
            return self
        self._const(_varint_bytes(field << 3 | 2), present)
        mat, lens = _varint_matrix(sub.lengths())
        self._add(mat, lens, present)
        for m, ln in sub.parts:
            self._add(m, ln, present)
        return self

    def dense(self, mat: np.ndarray, lens: np.ndarray) -> "_Rows":
        """Pre-encoded bytes, the first ``lens[i]`` of row ``i`` (e.g. repeated fields)."""
        self.parts.append((mat, np.asarray(lens, np.int64)))
        return self

    def lengths(self) -> np.ndarray:
        total = np.zeros(self.n, np.int64)
        for _, ln in self.parts:
            total += ln
        return total

    def tobytes(self) -> bytes:
        """Every row's message, rows in order. Each part's byte columns are scattered straight
        to their places in the output (row start + bytes of the row's earlier parts), so no
        padded (rows x width) copy of the parts is ever made."""
        lengths = [np.asarray(ln, np.int64) for _, ln in self.parts]
        pos = np.zeros(self.n, np.int64)              # where the next part of each row goes
        if self.n:
            pos[1:] = np.cumsum(sum(lengths))[:-1]
        out = np.empty(int(sum(int(ln.sum()) for ln in lengths)), np.uint8)
        at = np.empty(self.n, np.int64)
        for (mat, _), ln in zip(self.parts, lengths):
            same = mat.strides[0] == 0                # a constant field: one row broadcast
            for k in range(mat.shape[1]):
                has = ln > k
                if has.all():
                    np.add(pos, k, out=at)
                    out[at] = mat[0, k] if same else mat[:, k]
                elif has.any():
                    out[pos[has] + k] = mat[0, k] if same else mat[has, k]
            pos += ln
        return out.tobytes()


def _fixed64_repeated(row: np.ndarray, ids: np.ndarray, field: int, n: int):
    """Repeated fixed64 ``field`` with ``ids`` for rows ``row`` (sorted): (n, k*w) bytes + lengths."""
    tag = np.frombuffer(_varint_bytes(field << 3 | 1), np.uint8)
    w = len(tag) + 8
    counts = np.bincount(row, minlength=n)
    k = int(counts.max()) if len(row) else 0
    mat = np.zeros((n, max(k, 1), w), np.uint8)
    if len(row):
        within = np.arange(len(row)) - np.searchsorted(row, row, "left")
        mat[row, within, :len(tag)] = tag
        mat[row, within, len(tag):] = ids.astype("<u8").view(np.uint8).reshape(-1, 8)
    return mat.reshape(n, -1), counts * w


# == string tables ===========================================================================
class _Interned:
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


def _uuid(path: str) -> int:
    return int.from_bytes(hashlib.blake2b(path.encode(), digest_size=8).digest(), "little") >> 1


# == the writer ==============================================================================
ARG_NAMES = ("Global Idx", "Sheet", "Cmd Id", "Cycles", "DMA data size(B)", "DDR Bandwidth(GB/s)",
             "L2M Bandwidth(GB/s)", "uArch Rate", "Direction", "Data Type", "Kernel Function",
             "Mode", "Stall Cycles", "Dep Cmd Id", "Batch", "Port", "Core", "Func Scope Id", "Commands")
#: CDMA operations per direction (pmu-dump-format.md §8.4); anything else stays on the port track
CDMA_CHANNEL = {**dict.fromkeys(("send", "tcp_send", "tx_send", "tx_wait"), 1),
                **dict.fromkeys(("receive", "read", "tcp_receive", "rx_send", "rx_wait"), 2)}
ENGINE_RANK = {"Kernel Function": 0, "TIU": 1, "TIU uArch Rate (%)": 2, "GDMA": 3,
               "GDMA Bandwidth (GB/s)": 4, "SDMA": 5, "SDMA Bandwidth (GB/s)": 6}


class _Trace:
    """Collects tracks, string tables and sequences while the file is written."""

    def __init__(self, fh) -> None:
        self.fh = fh
        self.names, self.cats, self.arg_names, self.strings = (_Interned(), _Interned(),
                                                               _Interned(), _Interned())
        self.arg_iid = {a: self.arg_names.get(a) for a in ARG_NAMES}
        self.descriptors = pb.Trace()
        self.next_seq = DESCRIPTOR_SEQ + 1
        self.uuids: set[int] = set()
        self.bytes_written = 0

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self.bytes_written += len(data)

    def track(self, path: str, name: str, parent: int | None = None, rank: int | None = None,
              counter_unit: str | None = None, explicit: bool = False, description: str = "",
              process: tuple[int, str] | None = None, thread: tuple[int, int, str] | None = None) -> int:
        uuid = _uuid(path)
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
               used: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """First packet of every sequence: clears incremental state, makes the sequence's track
        the default ``track_uuid`` of its events and declares the iids the sequence uses.

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
        for k, (s, uuid, ts) in enumerate(zip(seq, track, first_ts)):
            pkt = out.packet.add()
            pkt.trusted_packet_sequence_id = int(s)
            pkt.sequence_flags = SEQ_CLEARED
            pkt.timestamp = int(ts)
            pkt.trace_packet_defaults.track_event_defaults.track_uuid = int(uuid)
            for table, (iids, lo, hi) in cut.items():
                for iid in iids[lo[k]:hi[k]]:
                    adders[table](pkt.interned_data, int(iid), lookup[table][int(iid)])
        self.write(out.SerializeToString())


def _pairs(seq: np.ndarray, iid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _annotations(te: _Rows, trace: _Trace, args: list[tuple[str, str, np.ndarray, np.ndarray]]) -> None:
    """Typed debug annotations: (name, kind int|double|string|bool, values, present)."""
    for name, kind, values, present in args:
        if _absent(present):
            continue
        ann = _Rows(te.n).const(1, trace.arg_iid[name])
        if kind == "int":
            ann.varint(4, values.astype(np.int64))
        elif kind == "bool":
            ann.varint(2, values.astype(np.int64))
        elif kind == "double":
            ann.fixed64(5, values.astype(np.float64))
        else:                                        # interned string
            ann.varint(17, values.astype(np.int64))
        te.message(4, ann, present)


def _packet(n: int, ts: np.ndarray, seq: np.ndarray, event: _Rows) -> _Rows:
    pkt = _Rows(n).varint(8, ts.astype(np.int64)).message(11, event)
    return pkt.varint(10, seq.astype(np.int64)).const(13, SEQ_NEEDS_STATE)


def _time_base(profile: Profile) -> int:
    align = profile.meta.host_alignment or {}
    base = int(align.get("offset_ns", 0)) if len(profile.host) else 0
    lows = [profile.commands["start_ns"].min() if len(profile.commands) else 0,
            profile.host["start_ns"].min() if len(profile.host) else 0]
    low = min(int(x) for x in lows)
    return max(base, -low)


def _column(c: pd.DataFrame, name: str, kind: str):
    """(values, present) of a command column for an annotation of ``kind``."""
    s = c[name]
    present = s.notna().to_numpy(bool)
    if kind == "double":
        return s.astype("float64").fillna(0).to_numpy(np.float64), present
    return s.astype("Float64").fillna(0).astype("int64").to_numpy(np.int64), present


def _codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and their labels; a categorical column's own codes (no copy of strings)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), column.cat.categories
    codes, uniques = pd.factorize(column.astype(object))
    return codes, pd.Index(uniques)


def _engine_is(c: pd.DataFrame, engine: str) -> np.ndarray:
    codes, names = _codes(c["engine"])
    hit = np.append(np.asarray(names.astype(str) == engine, bool), False)   # code -1: missing
    return hit[codes]


def _command_dependencies(c: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(source row, dependent row) per resolvable cmd_id_dep between TIU and GDMA (module doc)."""
    if "dep_cmd_id" not in c or not c["dep_cmd_id"].notna().any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    frame = pd.DataFrame({"row": np.arange(len(c)), "core": c["core"].to_numpy(np.int64),
                          "engine": _codes(c["engine"])[0], "start": c["start_ns"].to_numpy(np.int64),
                          "cmd_id": c["cmd_id"].to_numpy(np.int64),
                          "dep": c["dep_cmd_id"].astype("Float64").fillna(0).astype("int64").to_numpy()})
    src_rows, dst_rows = [], []
    for target, source in (("TIU", "GDMA"), ("GDMA", "TIU")):
        dst = frame[_engine_is(c, target) & (frame["dep"] > 0).to_numpy()].sort_values("start", kind="stable")
        # stable: of two candidates starting together, the later row (in sheet order) wins
        src = frame[_engine_is(c, source)].sort_values("start", kind="stable")
        if dst.empty or src.empty:
            continue
        m = pd.merge_asof(dst, src[["start", "core", "cmd_id", "row"]], on="start",
                          left_by=["core", "dep"], right_by=["core", "cmd_id"],
                          direction="backward", suffixes=("", "_src"))
        m = m[m["row_src"].notna()]
        src_rows.append(m["row_src"].to_numpy(np.int64))
        dst_rows.append(m["row"].to_numpy(np.int64))
    if not src_rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src_rows), np.concatenate(dst_rows)


def _core_description(summary: pd.DataFrame | None, core: int) -> str:
    if summary is None or summary.empty:
        return ""
    row = summary[summary["core"].astype(str) == str(core)]
    if row.empty:
        return ""
    r = row.iloc[0]
    parts = [f"{e.upper()} util {r[f'{e}_util'] * 100:.1f}%" for e in ("tiu", "gdma", "sdma")
             if f"{e}_util" in r and not pd.isna(r[f"{e}_util"])]
    if "tiu_uarch_rate" in r and not pd.isna(r["tiu_uarch_rate"]):
        parts.append(f"TIU uArch rate {r['tiu_uarch_rate'] * 100:.1f}%")
    return ", ".join(parts)


def write(profile: Profile, summary: pd.DataFrame | None, out_dir, *, quiet: bool = False) -> Path:
    """Write ``out_dir/perfetto.pftrace`` (atomically) and return its path."""
    out = Path(out_dir) / FILE_NAME
    try:
        with atomic_open(out, "wb") as fh:
            _TraceWriter(profile, summary, _Trace(fh), quiet).run()
    except OSError as err:
        raise OutputError(f"{out}: cannot write the Perfetto trace ({err.strerror or err})") from None
    return out


class _TraceWriter:
    def __init__(self, profile: Profile, summary, trace: _Trace, quiet: bool) -> None:
        self.p, self.summary, self.t, self.quiet = profile, summary, trace, quiet
        self.base = _time_base(profile)
        chip = profile.meta.chip or "TPU"
        self.root = trace.track("device", f"{chip} TPU" if chip != "TPU" else "TPU", explicit=True)
        self.core_tracks: dict[int, int] = {}

    def core_track(self, core: int) -> int:
        if core not in self.core_tracks:
            self.core_tracks[core] = self.t.track(f"device/core/{core}", f"Core {core}", self.root,
                                                  rank=core, explicit=True,
                                                  description=_core_description(self.summary, core))
        return self.core_tracks[core]

    def run(self) -> None:
        c = self.p.commands
        plan = []
        if len(c):
            plan.append(self._commands_plan(c))
            plan.append(self._kernels_plan(c))
            plan.extend(self._counters_plan(c))
        if len(self.p.host):
            plan.append(self._host_plan(self.p.host))
        plan = [x for x in plan if x is not None and x["n"]]
        self.t.flush_descriptors()

        def cat(key):
            return np.concatenate([x[key] for x in plan]) if plan else np.zeros(0, np.int64)

        # interned data of every sequence first: all of a sequence's events come after it
        used = {}
        for table in ("names", "cats", "args", "strings"):
            pairs = [_pairs(*x["used"][table]) for x in plan if table in x["used"]]
            used[table] = (np.concatenate([p[0] for p in pairs] or [np.zeros(0, np.int64)]),
                           np.concatenate([p[1] for p in pairs] or [np.zeros(0, np.int64)]))
        self.t.intern(cat("seq_ids"), cat("tracks"), cat("first_ts"), used)
        chunks = sum(math.ceil(x["n"] / CHUNK) for x in plan)
        with tqdm(total=chunks, desc="perfetto", unit="chunk", disable=self.quiet, leave=False) as bar:
            for x in plan:
                for lo in range(0, x["n"], CHUNK):
                    self.t.write(x["encode"](lo, min(lo + CHUNK, x["n"])))
                    bar.update()

    # -- commands ---------------------------------------------------------------------------
    def _commands_plan(self, c: pd.DataFrame) -> dict:
        t = self.t
        eng_code, eng_names = _codes(c["engine"])
        core = c["core"].to_numpy(np.int64)
        port = c["port"].astype("Float64").fillna(-1).astype("int64").to_numpy()
        is_cdma = _engine_is(c, "CDMA")
        owner = np.where(is_cdma, port, core) + 1                # >= 0
        # CDMA: a TX and an RX lane group under each port, like the reference (other ops on the
        # port track itself); a transfer's two sides overlap, so they never share a track
        names, name_table = _codes(c["func_name"])
        channel_of = np.array([CDMA_CHANNEL.get(str(x), 0) for x in name_table] + [0], np.int64)
        channel = np.where(is_cdma, channel_of[names], 0)
        group = (eng_code.astype(np.int64) * 4 + channel) * (1 << 32) + owner
        base_code, base_keys = pd.factorize(group)
        start = c["start_ns"].to_numpy(np.int64)
        end = c["end_ns"].to_numpy(np.int64)
        lane = first_fit_lanes(base_code, start, end)
        track_code, track_keys = pd.factorize(pd.Series(base_code * 1024 + lane))
        # declare the tracks
        cdma_root, port_tracks = None, {}
        uuid_of = np.zeros(len(track_keys), np.int64)
        for k, key in enumerate(track_keys.to_numpy()):
            b, ln = divmod(int(key), 1024)
            e4, own = divmod(int(base_keys[b]), 1 << 32)
            (e, ch), own = divmod(e4, 4), own - 1
            eng = str(eng_names[e])
            label = eng if ln == 0 else f"{eng} #{ln + 1}"
            if eng == "CDMA":
                if cdma_root is None:
                    cdma_root = t.track("device/cdma", "CDMA", self.root, rank=1 << 20, explicit=True)
                if own not in port_tracks:
                    port_tracks[own] = t.track(f"device/cdma/{own}", f"CDMA port{own}", cdma_root,
                                               rank=own, explicit=True)
                if ch == 0 and ln == 0:
                    uuid_of[k] = port_tracks[own]
                    continue
                label = f"CDMA port{own}" + ("", " TX", " RX")[ch] + ("" if ln == 0 else f" #{ln + 1}")
                uuid_of[k] = t.track(f"device/cdma/{own}/{ch}/{ln}", label, port_tracks[own],
                                     rank=ch * 64 + ln)
            else:
                rank = ENGINE_RANK.get(eng, 7) * 64 + ln
                uuid_of[k] = t.track(f"device/core/{own}/engine/{eng}/{ln}", label,
                                     self.core_track(int(own)), rank=rank)
        seq_ids = t.sequences(len(track_keys))
        order = np.lexsort((end, start, track_code))
        track_code = track_code.astype(np.int32)
        seq = seq_ids[track_code]                                # transient: for the iids used
        # strings: small per-column iid tables; args: read per chunk from the frame, so what
        # stays allocated for the whole write is order, track_code and the flow lists
        names, cats = t.names.lookup(c["func_name"]), t.cats.lookup(c["func_type"])
        str_cols = {"Sheet": "sheet", "Direction": "direction", "Data Type": "dtype",
                    "Kernel Function": "kernel", "Mode": "mode"}
        strings = {a: t.strings.lookup(c[col]) for a, col in str_cols.items()}
        int_cols = {"Global Idx": "global_idx", "Cmd Id": "cmd_id", "Cycles": "cycles",
                    "DMA data size(B)": "bytes", "Stall Cycles": "stall_cycles",
                    "Dep Cmd Id": "dep_cmd_id", "Batch": "batch", "Port": "port"}
        dbl_cols = {"DDR Bandwidth(GB/s)": "ddr_bw", "L2M Bandwidth(GB/s)": "l2m_bw", "uArch Rate": "uarch_rate"}
        used = {"names": _pairs(seq, names[1][names[0]]), "cats": _pairs(seq, cats[1][cats[0]]),
                "strings": tuple(np.concatenate(x) for x in zip(*[_pairs(seq, tab[codes])
                                                                  for codes, tab in strings.values()]))}
        arg_present = {**{a: c[col].notna().to_numpy(bool) for a, col in {**int_cols, **dbl_cols}.items()},
                       **{a: codes >= 0 for a, (codes, _) in strings.items()}, "Core": is_cdma}
        used["args"] = tuple(np.concatenate(x) for x in zip(*[_pairs(seq, np.where(ok, t.arg_iid[a], 0))
                                                             for a, ok in arg_present.items()]))
        first_ts = np.full(len(track_keys), np.iinfo(np.int64).max)
        np.minimum.at(first_ts, track_code, start + self.base)
        del seq, arg_present
        # flows, by output position: sources carry flow_ids, dependents terminating_flow_ids
        src, dst = _command_dependencies(c)
        position = np.empty(len(c), np.int64)
        position[order] = np.arange(len(c))
        src_pos, dst_pos = position[src], position[dst]
        del position
        so, do = np.argsort(src_pos, kind="stable"), np.argsort(dst_pos, kind="stable")
        src_pos, src_flow = src_pos[so], (dst + 1)[so]          # flow id = dependent row + 1
        dst_pos, dst_flow = dst_pos[do], (dst + 1)[do]
        base = self.base

        def encode(lo: int, hi: int) -> bytes:
            rows = order[lo:hi]
            n = len(rows)
            part = c.take(rows)
            seq_rows = seq_ids[track_code[rows]]
            te = _Rows(n).const(9, SLICE_BEGIN)
            iid = names[1][names[0][rows]]
            te.varint(10, iid, iid > 0)
            iid = cats[1][cats[0][rows]]
            te.varint(3, iid, iid > 0)
            args = [(a, "int", *_column(part, col, "int")) for a, col in int_cols.items()]
            args.append(("Core", "int", part["core"].to_numpy(np.int64), is_cdma[rows]))
            for a, col in dbl_cols.items():
                v, ok = _column(part, col, "double")
                args.append((a, "double", np.round(v * 100.0, 6) if a == "uArch Rate" else v, ok))
            for a, (codes, tab) in strings.items():
                iid = tab[codes[rows]]
                args.append((a, "string", iid, iid > 0))
            _annotations(te, t, args)
            i, j = np.searchsorted(src_pos, [lo, hi])
            te.dense(*_fixed64_repeated(src_pos[i:j] - lo, src_flow[i:j], 47, n))
            i, j = np.searchsorted(dst_pos, [lo, hi])
            terminating = np.zeros(n, np.uint64)
            terminating[dst_pos[i:j] - lo] = dst_flow[i:j]
            te.fixed64(48, terminating, terminating > 0)
            rec = _Rows(n).message(1, _packet(n, start[rows] + base, seq_rows, te))
            end_ev = _Rows(n).const(9, SLICE_END)
            rec.message(1, _packet(n, end[rows] + base, seq_rows, end_ev))
            return rec.tobytes()

        return {"n": len(c), "seq_ids": seq_ids, "tracks": uuid_of, "first_ts": first_ts,
                "encode": encode, "used": used}

    # -- kernel functions -------------------------------------------------------------------
    def _kernels_plan(self, c: pd.DataFrame) -> dict | None:
        t = self.t
        keep = ~_engine_is(c, "CDMA") & (c["kernel"].notna() | c["func_scope"].notna()).to_numpy(bool)
        dev = c.loc[keep, ["core", "start_ns", "end_ns", "kernel", "func_scope"]]   # only what is used
        if dev.empty:
            return None
        dev = dev.sort_values(["core", "start_ns"], kind="stable")
        kernel = dev["kernel"].astype(object)
        scope = dev["func_scope"].astype("Float64")
        # scope key: the func_scope id; without one, a run of the same kernel name on a core
        run = (kernel.ne(kernel.shift()) | dev["core"].ne(dev["core"].shift())).cumsum()
        key = np.where(scope.notna().to_numpy(bool), scope.fillna(0).astype("int64").to_numpy(),
                       -run.to_numpy(np.int64))         # runs get negative keys, scopes are >= 0
        g = dev.assign(_key=key).groupby(["core", "_key"], sort=False, observed=True)
        k = pd.DataFrame({"core": g["core"].first(), "start": g["start_ns"].min(), "end": g["end_ns"].max(),
                          "kernel": g["kernel"].first(), "scope": g["func_scope"].first(),
                          "count": g.size()}).reset_index(drop=True)
        start, end = k["start"].to_numpy(np.int64), k["end"].to_numpy(np.int64)
        core = k["core"].to_numpy(np.int64)
        lane = first_fit_lanes(core, start, end)
        track_code, keys = pd.factorize(pd.Series(core * 1024 + lane))
        uuid_of = np.array([t.track(f"device/core/{kk // 1024}/kernel-function/{kk % 1024}",
                                    "Kernel Function" + ("" if kk % 1024 == 0 else f" #{kk % 1024 + 1}"),
                                    self.core_track(int(kk // 1024)), rank=kk % 1024)
                            for kk in keys.to_numpy()], np.int64)
        seq_ids = t.sequences(len(keys))
        seq = seq_ids[track_code]
        label = k["kernel"].astype(object).where(k["kernel"].notna(),
                                                 "scope " + k["scope"].astype("Float64").fillna(-1).astype("int64").astype(str))
        name_iid = t.names.codes(label)
        kern_iid = t.strings.codes(k["kernel"].astype(object))
        scope_v, scope_ok = _column(k, "scope", "int")
        count = k["count"].to_numpy(np.int64)
        order = np.lexsort((end, start, track_code))
        base = self.base

        def encode(lo: int, hi: int) -> bytes:
            rows = order[lo:hi]
            n = len(rows)
            te = _Rows(n).const(9, SLICE_BEGIN)
            te.varint(10, name_iid[rows])
            _annotations(te, t, [("Kernel Function", "string", kern_iid[rows], kern_iid[rows] > 0),
                                 ("Func Scope Id", "int", scope_v[rows], scope_ok[rows]),
                                 ("Commands", "int", count[rows], np.ones(n, bool))])
            rec = _Rows(n).message(1, _packet(n, start[rows] + base, seq[rows], te))
            end_ev = _Rows(n).const(9, SLICE_END)
            rec.message(1, _packet(n, end[rows] + base, seq[rows], end_ev))
            return rec.tobytes()

        first_ts = np.full(len(keys), np.iinfo(np.int64).max)
        np.minimum.at(first_ts, track_code, start + base)
        args = [t.arg_iid[a] for a in ("Kernel Function", "Func Scope Id", "Commands")]
        return {"n": len(k), "seq_ids": seq_ids, "tracks": uuid_of, "first_ts": first_ts, "encode": encode,
                "used": {"names": (seq, name_iid), "strings": (seq, kern_iid),
                         "args": (np.repeat(seq_ids, 3), np.tile(args, len(seq_ids)))}}

    # -- counters ---------------------------------------------------------------------------
    def _counters_plan(self, c: pd.DataFrame) -> list[dict]:
        """TIU uArch rate (of the latest started modelled command, 0 when none runs) and DMA
        bandwidth (sum over the running commands) per core, as double counters."""
        series = []                                    # (core, track name, ts, value)
        tiu = c.loc[_engine_is(c, "TIU") & c["uarch_rate"].notna().to_numpy(bool),
                    ["core", "start_ns", "end_ns", "uarch_rate"]]
        if len(tiu):
            tiu = tiu.sort_values(["core", "start_ns", "end_ns"], kind="stable")
            core = tiu["core"].to_numpy(np.int64)
            s, e = tiu["start_ns"].to_numpy(np.int64), tiu["end_ns"].to_numpy(np.int64)
            run_end = pd.Series(e).groupby(core).cummax().to_numpy(np.int64)
            next_start = np.full(len(s), np.iinfo(np.int64).max)
            same = core[1:] == core[:-1]
            next_start[:-1][same] = s[1:][same]
            idle = next_start > run_end
            rate = np.round(tiu["uarch_rate"].to_numpy(np.float64) * 100.0, 6)
            ts = np.concatenate([s, run_end[idle]])
            val = np.concatenate([rate, np.zeros(idle.sum())])
            cores = np.concatenate([core, core[idle]])
            kind = np.concatenate([np.arange(len(s)) * 2, np.flatnonzero(idle) * 2 + 1])
            o = np.lexsort((kind, ts, cores))
            series.append(("TIU uArch Rate (%)", "%", cores[o], ts[o], val[o]))
        for eng in ("GDMA", "SDMA"):
            d = c.loc[_engine_is(c, eng) & ~c["is_sys"].to_numpy(bool),
                      ["core", "start_ns", "end_ns", "ddr_bw", "l2m_bw"]]
            bw = d["ddr_bw"].astype("float64").fillna(d["l2m_bw"].astype("float64"))
            d = d[bw.notna().to_numpy(bool)]
            bw = bw[bw.notna()]
            if d.empty:
                continue
            # integer 1e-4 GB/s steps keep the running sum exact
            units = np.round(bw.to_numpy(np.float64) * 1e4).astype(np.int64)
            core = d["core"].to_numpy(np.int64)
            ts = np.concatenate([d["start_ns"].to_numpy(np.int64), d["end_ns"].to_numpy(np.int64)])
            delta = np.concatenate([units, -units])
            cores = np.concatenate([core, core])
            o = np.lexsort((delta, ts, cores))          # ends (negative) first at equal times
            ts, delta, cores = ts[o], delta[o], cores[o]
            level = pd.Series(delta).groupby(cores).cumsum().to_numpy(np.int64)
            last = np.ones(len(ts), bool)              # one point per (core, time)
            last[:-1] = (ts[1:] != ts[:-1]) | (cores[1:] != cores[:-1])
            series.append((f"{eng} Bandwidth (GB/s)", "GB/s", cores[last], ts[last], level[last] / 1e4))
        return [self._counter_plan(*s) for s in series]

    def _counter_plan(self, name: str, unit: str, core: np.ndarray, ts: np.ndarray, value: np.ndarray) -> dict:
        t = self.t
        cores, track_code = np.unique(core, return_inverse=True)
        uuid_of = np.array([t.track(f"device/core/{k}/counter/{name}", name, self.core_track(int(k)),
                                    rank=ENGINE_RANK[name] * 64, counter_unit=unit) for k in cores], np.int64)
        seq_ids = t.sequences(len(cores))
        seq = seq_ids[track_code]
        base = self.base

        def encode(lo: int, hi: int) -> bytes:
            n = hi - lo
            te = _Rows(n).const(9, COUNTER)
            te.fixed64(44, value[lo:hi].astype(np.float64))
            return _Rows(n).message(1, _packet(n, ts[lo:hi] + base, seq[lo:hi], te)).tobytes()

        first_ts = np.full(len(cores), np.iinfo(np.int64).max)
        np.minimum.at(first_ts, track_code, ts + base)
        return {"n": len(ts), "seq_ids": seq_ids, "tracks": uuid_of, "first_ts": first_ts, "encode": encode, "used": {}}

    # -- host -------------------------------------------------------------------------------
    def _host_plan(self, h: pd.DataFrame) -> dict:
        t = self.t
        pid_s, tid_s = h["pid"].astype(str), h["tid"].astype(str)
        pid_num = pd.to_numeric(h["pid"], errors="coerce")
        tid_num = pd.to_numeric(h["tid"], errors="coerce")
        numeric = (pid_num.notna().all() and tid_num.notna().all()
                   and pid_num.abs().max() < 2**31 and tid_num.abs().max() < 2**31
                   and (pid_num % 1 == 0).all() and (tid_num % 1 == 0).all())
        proc_code, procs = pd.factorize(pid_s)
        thread_code, threads = pd.factorize(pid_s + "\x1f" + tid_s)
        start, end = h["start_ns"].to_numpy(np.int64), h["end_ns"].to_numpy(np.int64)
        lane = nesting_lanes(thread_code, start, end)
        # real process/thread tracks (numeric ids) or stand-in ids named after the originals
        pid_of = (pid_num.astype("int64").to_numpy() if numeric else proc_code + 1)
        tid_of = (tid_num.astype("int64").to_numpy() if numeric else thread_code + 1)
        proc_uuid = {}
        for k, name in enumerate(procs):
            row = int(np.flatnonzero(proc_code == k)[0])
            proc_uuid[k] = t.track(f"host/{name}", "", process=(int(pid_of[row]), f"host {name}"))
        lane_code, lane_keys = pd.factorize(pd.Series(thread_code.astype(np.int64) * 1024 + lane))
        uuid_of = np.zeros(len(lane_keys), np.int64)
        for k, key in enumerate(lane_keys.to_numpy()):
            th, ln = divmod(int(key), 1024)
            row = int(np.flatnonzero(thread_code == th)[0])
            label = f"{tid_s.iloc[row]}"
            if ln == 0:
                uuid_of[k] = t.track(f"host/{threads[th]}/0", "", thread=(int(pid_of[row]), int(tid_of[row]),
                                                                          f"thread {label}"))
            else:
                uuid_of[k] = t.track(f"host/{threads[th]}/{ln}", f"thread {label} #{ln + 1}",
                                     proc_uuid[int(proc_code[row])], rank=ln)
        seq_ids = t.sequences(len(lane_keys))
        # events: B at start, E at end (I for zero-length); at equal times ends first (deepest
        # first), then begins/instants in nesting order, which keeps every lane balanced
        n = len(h)
        zero = start == end
        depth = nest(lane_code, start, end)[0].astype(np.int64)   # depth within its lane
        ev_row = np.concatenate([np.arange(n), np.flatnonzero(~zero)])
        ev_ts = np.concatenate([start, end[~zero]])
        ev_type = np.concatenate([np.where(zero, INSTANT, SLICE_BEGIN), np.full((~zero).sum(), SLICE_END)])
        pre = np.empty(n, np.int64)
        pre[np.lexsort((np.arange(n), -end, start, lane_code))] = np.arange(n)
        ev_class = (ev_type == SLICE_END).astype(np.int64) ^ 1          # 0 = end, 1 = begin
        ev_tie = np.where(ev_type == SLICE_END, -depth[ev_row], pre[ev_row])
        ev_lane = lane_code[ev_row]
        o = np.lexsort((ev_tie, ev_class, ev_ts, ev_lane))
        ev_row, ev_ts, ev_type, ev_lane = ev_row[o], ev_ts[o], ev_type[o], ev_lane[o]
        name_iid = t.names.codes(h["name"].astype(object))
        cat_iid = t.cats.codes(h["category"].astype(object))
        host_args = self._host_args(h["args"].to_numpy(object))
        seq = seq_ids[ev_lane]
        base = self.base

        def encode(lo: int, hi: int) -> bytes:
            rows, typ = ev_row[lo:hi], ev_type[lo:hi]
            m = hi - lo
            opens = typ != SLICE_END
            te = _Rows(m).varint(9, typ)
            te.varint(10, name_iid[rows], opens).varint(3, cat_iid[rows], opens & (cat_iid[rows] > 0))
            _annotations(te, t, [(a, kind, v[rows], ok[rows] & opens) for a, kind, v, ok in host_args])
            return _Rows(m).message(1, _packet(m, ev_ts[lo:hi] + base, seq[lo:hi], te)).tobytes()

        first_ts = np.full(len(lane_keys), np.iinfo(np.int64).max)
        np.minimum.at(first_ts, lane_code, start + base)
        row_seq = seq_ids[lane_code]
        arg_seq = np.concatenate([row_seq[ok] for *_, ok in host_args] or [np.zeros(0, np.int64)])
        arg_iid = np.concatenate([np.full(ok.sum(), t.arg_iid[a]) for a, _, _, ok in host_args]
                                 or [np.zeros(0, np.int64)])
        str_args = [(v, ok) for _, kind, v, ok in host_args if kind == "string"]
        return {"n": len(ev_ts), "seq_ids": seq_ids, "tracks": uuid_of, "first_ts": first_ts, "encode": encode,
                "used": {"names": (row_seq, name_iid), "cats": (row_seq, cat_iid),
                         "args": (arg_seq, arg_iid),
                         "strings": (np.concatenate([row_seq[ok] for _, ok in str_args] or [np.zeros(0, np.int64)]),
                                     np.concatenate([v[ok] for v, ok in str_args] or [np.zeros(0, np.int64)]))}}

    MAX_HOST_ARGS = 32

    def _host_args(self, args: np.ndarray) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
        """Top-level host args as typed annotations (nested values as JSON text), most common keys.

        The dicts are read once into a long (event, key, value) table; typing and encoding
        are then done per key on whole columns.
        """
        t = self.t
        n = len(args)
        items = [(i, k, v) for i, a in enumerate(args) if isinstance(a, dict) for k, v in a.items()]
        if not items:
            return []
        row, key, val = zip(*items)
        long = pd.DataFrame({"row": np.asarray(row, np.int64), "key": pd.Series(key, dtype=object).astype(str),
                             "val": pd.Series(val, dtype=object)})
        top = long["key"].value_counts().index[: self.MAX_HOST_ARGS]
        long = long[long["key"].isin(top)]
        long["typ"] = long["val"].map(type)
        out = []
        for k, g in long.groupby("key", sort=False):
            if k not in t.arg_iid:
                t.arg_iid[k] = t.arg_names.get(k)
            typ, vals, rows = g["typ"], g["val"], g["row"].to_numpy()
            is_text = np.ones(len(g), bool)
            for kind, pytype, dtype in (("bool", bool, bool), ("int", int, np.int64), ("double", float, np.float64)):
                sel = (typ == pytype).to_numpy()
                if not sel.any():
                    continue
                try:
                    values = np.array(vals[sel].tolist(), dtype)
                except OverflowError:                # an int beyond int64: keep its digits as text
                    continue
                ok = np.isfinite(values) if kind == "double" else np.ones(len(values), bool)
                full, present = np.zeros(n, dtype), np.zeros(n, bool)
                full[rows[sel][ok]], present[rows[sel][ok]] = values[ok], True
                out.append((k, kind, full, present))
                is_text[np.flatnonzero(sel)[ok]] = False
            is_text &= vals.notna().to_numpy() | (typ == float).to_numpy()   # None: no arg
            if is_text.any():
                text = [v if isinstance(v, str) else json.dumps(v, default=str) for v in vals[is_text]]
                full = np.zeros(n, np.int64)
                full[rows[is_text]] = t.strings.codes(text)
                out.append((k, "string", full, full > 0))
        return out
