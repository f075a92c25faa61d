"""A vectorised protobuf wire encoder: one message per row, every field one numpy column, so a
chunk of Perfetto packets is encoded without a Python loop per event."""
from __future__ import annotations

import numpy as np

SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4     # TrackEvent.Type
SEQ_CLEARED = 1                                          # TracePacket.sequence_flags
FLOW_IDS, TERMINATING_FLOW_IDS = 36, 42                  # TrackEvent.flow_ids_old, terminating_flow_ids_old


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


def absent(present) -> bool:
    """True when a field is missing from every row (it then adds no columns at all)."""
    return present is not None and not np.any(present)


class Rows:
    """One protobuf message per row, built column by column.

    Parts are (bytes matrix, per-row length) pairs in field order; a row's message is the
    concatenation of each part's first ``len`` bytes.  A field is left out of a row by giving
    it length 0 (``present`` masks), so optional values cost nothing.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        # a part's length per row is an array, or an int when every row has the same
        self.parts: list[tuple[np.ndarray, np.ndarray | int]] = []
        self.varying = np.zeros(n, np.int64)           # each row's bytes of array-length parts
        self.fixed = 0                                 # ... plus those of int-length parts

    def _add(self, mat: np.ndarray, lens, present) -> None:
        if present is not None:
            lens = np.where(present, lens, 0)
        if np.ndim(lens):
            lens = np.asarray(lens, np.int64)
            self.varying += lens
        else:
            lens = int(lens)
            self.fixed += lens
        self.parts.append((mat, lens))

    def _const(self, data: bytes, present) -> None:
        row = np.frombuffer(data, np.uint8)
        self._add(np.broadcast_to(row, (self.n, len(row))), len(row), present)

    def const(self, field: int, value: int, present=None) -> "Rows":
        """A varint field with the same value in every row."""
        if absent(present):
            return self
        self._const(_varint_bytes(field << 3) + _varint_bytes(value), present)
        return self

    def varint(self, field: int, values, present=None) -> "Rows":
        if absent(present):
            return self
        self._const(_varint_bytes(field << 3), present)
        mat, lens = _varint_matrix(values)
        self._add(mat, lens, present)
        return self

    def fixed64(self, field: int, values, present=None) -> "Rows":
        """double / fixed64 (the 8 little-endian bytes of ``values``)."""
        if absent(present):
            return self
        self._const(_varint_bytes(field << 3 | 1), present)
        v = np.asarray(values)
        raw = np.ascontiguousarray(v, dtype=v.dtype.newbyteorder("<"))
        self._add(raw.view(np.uint8).reshape(self.n, 8), 8, present)
        return self

    def message(self, field: int, sub: "Rows", present=None) -> "Rows":
        if absent(present):
            return self
        self._const(_varint_bytes(field << 3 | 2), present)
        mat, lens = _varint_matrix(sub.lengths())
        self._add(mat, lens, present)
        for m, ln in sub.parts:
            self._add(m, ln, present)
        return self

    def dense(self, mat: np.ndarray, lens: np.ndarray) -> "Rows":
        """Pre-encoded bytes, the first ``lens[i]`` of row ``i`` (e.g. repeated fields)."""
        self._add(mat, lens, None)
        return self

    def lengths(self) -> np.ndarray:
        return self.varying + self.fixed

    def tobytes(self) -> bytes:
        """Every row's message, rows in order. Each part's byte columns are scattered straight
        to their places in the output (row start + bytes of the row's earlier parts), so no
        padded (rows x width) copy of the parts is ever made."""
        total = self.lengths()
        pos = np.zeros(self.n, np.int64)              # where the next part of each row goes
        if self.n:
            pos[1:] = np.cumsum(total)[:-1]
        out = np.empty(int(total.sum()), np.uint8)
        at = np.empty(self.n, np.int64)
        for mat, ln in self.parts:
            same = mat.strides[0] == 0                # a constant field: one row broadcast
            if not np.ndim(ln):                       # every row has the part's first ln bytes
                for k in range(min(ln, mat.shape[1])):
                    np.add(pos, k, out=at)
                    out[at] = mat[0, k] if same else mat[:, k]
                pos += ln
                continue
            for k in range(mat.shape[1]):
                has = ln > k
                if has.all():
                    np.add(pos, k, out=at)
                    out[at] = mat[0, k] if same else mat[:, k]
                elif has.any():
                    out[pos[has] + k] = mat[0, k] if same else mat[has, k]
            pos += ln
        return out.tobytes()


def varint_repeated(row: np.ndarray, ids: np.ndarray, field: int, n: int):
    """Repeated varint ``field`` with ``ids`` for rows ``row`` (sorted): (n, width) bytes + lengths.

    Flow ids go here as ``TrackEvent.flow_ids_old`` / ``terminating_flow_ids_old`` (uint64
    varints: 2 + 1 bytes for a reused id below 128, ``commands.reused_flow_ids``) rather than the
    fixed64 ``flow_ids`` (2 + 8); a trace processor reads either."""
    if not len(row):
        return np.zeros((n, 1), np.uint8), np.zeros(n, np.int64)
    enc = Rows(len(row)).varint(field, np.asarray(ids).astype(np.uint64))
    size = enc.lengths()                                      # bytes of each id
    blob = np.frombuffer(enc.tobytes(), np.uint8)
    counts = np.bincount(row, weights=size, minlength=n).astype(np.int64)
    mat = np.zeros((n, int(counts.max())), np.uint8)
    at = np.cumsum(size) - size                               # each id's start in the blob
    row_at = at[np.searchsorted(row, row, "left")]            # its row's first id's start
    mat[np.repeat(row, size), np.arange(len(blob)) - np.repeat(row_at, size)] = blob
    return mat, counts


def annotations(te: Rows, arg_iid: dict[str, int],
                args: list[tuple[str, str, np.ndarray, np.ndarray]]) -> None:
    """Typed debug annotations of TrackEvent ``te``: (name, kind int|double|string|bool, values,
    present); ``arg_iid`` gives the interned id of each name."""
    for name, kind, values, present in args:
        if absent(present):
            continue
        # name_iid and the value's tag are the same bytes in every row: one constant part
        field, wire_type = _ANNOTATION_VALUE[kind]
        ann = Rows(te.n)
        ann._const(_varint_bytes(1 << 3) + _varint_bytes(arg_iid[name]) + _varint_bytes(field << 3 | wire_type), None)
        if kind == "double":
            raw = np.ascontiguousarray(values, dtype="<f8")
            ann._add(raw.view(np.uint8).reshape(te.n, 8), 8, None)
        else:
            ann._add(*_varint_matrix(values.astype(np.int64)), None)
        te.message(4, ann, present)


#: DebugAnnotation value field and wire type per kind: int_value, bool_value, double_value,
#: string_value_iid
_ANNOTATION_VALUE = {"int": (4, 0), "bool": (2, 0), "double": (5, 1), "string": (17, 0)}


def packet(n: int, ts: np.ndarray, seq: np.ndarray, event: Rows) -> Rows:
    """One TracePacket per row: timestamp (on the sequence's incremental clock: the delta from
    its previous packet, ``Trace.deltas``), the TrackEvent, its sequence; uses interned data.

    No SEQ_NEEDS_INCREMENTAL_STATE flag (2 bytes a packet): it only tells a reader to skip the
    packet when the sequence's state was lost (packets dropped while tracing); in this file
    every sequence declares its state in its first packet, so a reader never skips."""
    pkt = Rows(n).varint(8, ts.astype(np.int64)).message(11, event)
    return pkt.varint(10, seq.astype(np.int64))
