"""A protobuf wire encoder for many messages of one shape: one message per row, every field one
numpy column, the bytes written by one compiled loop (no Python loop per event).

A :class:`Rows` is a message schema: a list of fields in wire order, each a column of values
(or a constant) and an optional per-row ``present`` mask.  :meth:`Rows.tobytes` flattens the
schema (nested messages become begin / end marks), stacks the columns into one matrix and hands
both to :func:`_encode`, a numba loop that sizes each row's nested messages and writes its bytes,
row after row.
"""
from __future__ import annotations

import numpy as np
from numba import njit

SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4     # TrackEvent.Type
SEQ_CLEARED = 1                                          # TracePacket.sequence_flags
FLOW_IDS, TERMINATING_FLOW_IDS = 36, 42                  # TrackEvent.flow_ids_old, terminating_flow_ids_old

# op kinds of a flattened schema; an annotation (a DebugAnnotation message of a name iid and one
# value) is one op, not four: most of an event's fields are annotations
_VARINT, _FIXED64, _BEGIN, _END, _REPEATED, _ANNOTATION_VARINT, _ANNOTATION_FIXED64 = range(7)


def _most(kind: int, key: int, value: int, const: int) -> int:
    """Bytes op ``kind`` writes at most in a row, its value ``value`` bytes at most (a message's
    length: 5 bytes, up to 32 GB)."""
    head = _varint_size(key)
    if kind == _FIXED64:
        return head + 8
    if kind == _BEGIN:
        return head + 5
    if kind in (_END, _REPEATED):
        return 0
    if kind == _VARINT:
        return head + value
    # an annotation: tag and length, name_iid (field 1), the value's key and the value
    return 1 + 5 + 1 + _varint_size(const) + head + (8 if kind == _ANNOTATION_FIXED64 else value)


def absent(present) -> bool:
    """True when a field is missing from every row (it then adds no column at all)."""
    return present is not None and not np.any(present)


def _varint_size(value: int) -> int:
    """Bytes of the varint of ``value`` (a negative one as its 64-bit two's complement)."""
    return max(1, ((int(value) & (1 << 64) - 1).bit_length() + 6) // 7)


class Rows:
    """One protobuf message per row, described field by field in wire order.

    A field is left out of a row by its ``present`` mask (False), so optional values cost
    nothing; a field present in no row is not recorded at all.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        # (kind, key, values or None, constant, present or None, sub-message or repeated ids)
        self.fields: list[tuple] = []

    def _field(self, kind: int, key: int, values=None, const: int = 0, present=None, extra=None) -> "Rows":
        if present is not None:
            present = np.asarray(present, bool)
            if present.all():
                present = None
        self.fields.append((kind, key, values, const, present, extra))
        return self

    def const(self, field: int, value: int, present=None) -> "Rows":
        """A varint field with the same value in every row."""
        if absent(present):
            return self
        return self._field(_VARINT, field << 3, const=int(value), present=present)

    def varint(self, field: int, values, present=None) -> "Rows":
        """Signed values are encoded as their 64-bit two's complement (protobuf int64)."""
        if absent(present):
            return self
        v = np.asarray(values)
        if v.dtype.kind not in "iub":
            v = v.astype(np.uint64)
        return self._field(_VARINT, field << 3, v, present=present)

    def fixed64(self, field: int, values, present=None) -> "Rows":
        """double / fixed64 (the 8 little-endian bytes of ``values``, an 8-byte type)."""
        if absent(present):
            return self
        v = np.asarray(values)
        if v.dtype.itemsize != 8:
            raise TypeError(f"fixed64 field {field}: {v.dtype} is not an 8-byte type")
        return self._field(_FIXED64, field << 3 | 1, v.view(np.uint64), present=present)

    def message(self, field: int, sub: "Rows", present=None) -> "Rows":
        if absent(present):
            return self
        return self._field(_BEGIN, field << 3 | 2, present=present, extra=sub)

    def annotation(self, name_iid: int, field: int, values, present=None) -> "Rows":
        """TrackEvent.debug_annotations (field 4): a DebugAnnotation of ``name_iid`` and the
        value ``values`` in its ``field`` (a double when ``values`` are floats, else a varint)."""
        if absent(present):
            return self
        v = np.asarray(values)
        if v.dtype.kind == "f":
            return self._field(_ANNOTATION_FIXED64, field << 3 | 1, v.astype(np.float64).view(np.uint64),
                               int(name_iid), present)
        return self._field(_ANNOTATION_VARINT, field << 3, v.astype(np.int64), int(name_iid), present)

    def repeated(self, field: int, row: np.ndarray, ids: np.ndarray) -> "Rows":
        """Repeated varint ``field``: ``ids[k]`` belongs to row ``row[k]`` (``row`` sorted).

        Flow ids go here as ``TrackEvent.flow_ids_old`` / ``terminating_flow_ids_old`` (uint64
        varints: 2 + 1 bytes for a reused id below 128, ``commands.reused_flow_ids``) rather
        than the fixed64 ``flow_ids`` (2 + 8); a trace processor reads either."""
        if not len(row):
            return self
        row = np.asarray(row, np.int64)
        bounds = np.searchsorted(row, np.arange(self.n + 1), "left")
        return self._field(_REPEATED, field << 3, bounds, extra=np.asarray(ids).astype(np.uint64))

    def _flatten(self, ops: list, columns: list, masks: list, repeats: list, total: list) -> None:
        for kind, key, values, const, present, extra in self.fields:
            mask = -1
            if present is not None:
                mask = len(masks)
                masks.append(present)
            col = -1
            if kind == _REPEATED:
                col = len(columns)
                columns.extend([values[:-1] + total[0], values[1:] + total[0]])   # the row's ids in rep
                repeats.append(extra)
                total[0] += len(extra)
            elif values is not None:
                col = len(columns)
                columns.append(values)
            at = len(ops)
            ops.append([kind, key, col, const, mask, 0])
            if kind == _BEGIN:
                extra._flatten(ops, columns, masks, repeats, total)
                ops[at][5] = len(ops)                     # the index of the matching end
                ops.append([_END, 0, -1, 0, -1, 0])

    def tobytes(self) -> bytes:
        """Every row's message, rows in order."""
        ops, columns, masks, repeats = [], [], [], []
        self._flatten(ops, columns, masks, repeats, [0])
        if not self.n or not ops:
            return b""
        table = np.array(ops, np.int64).reshape(-1, 6)
        vals = np.empty((self.n, len(columns)), np.uint64)      # a row's values side by side
        for j, v in enumerate(columns):
            vals[:, j] = v                                # unsafe cast: int64 -> two's complement
        has = np.empty((self.n, len(masks)), bool)
        for j, m in enumerate(masks):
            has[:, j] = m
        rep = np.concatenate(repeats) if repeats else np.zeros(0, np.uint64)
        # bytes per row at most: each field's key and its column's longest value
        longest = [_varint_size(m) for m in vals.max(axis=0).tolist()] if len(columns) else []
        bound = self.n * sum(_most(kind, key, longest[col] if col >= 0 else _varint_size(const), const)
                             for kind, key, col, const, _, _ in table.tolist())
        bound += len(rep) * (3 + _varint_size(int(rep.max()) if len(rep) else 0))
        return _encode(table, vals, has, rep, self.n, bound).tobytes()


@njit(cache=True)
def _size(u):
    s = 1
    while u >= np.uint64(128):
        u >>= np.uint64(7)
        s += 1
    return s


@njit(cache=True)
def _put(buf, pos, u):
    while u >= np.uint64(128):
        buf[pos] = np.uint8((u & np.uint64(127)) | np.uint64(128))
        u >>= np.uint64(7)
        pos += 1
    buf[pos] = np.uint8(u)
    return pos + 1


@njit(cache=True)
def _put8(buf, pos, u):
    for b in range(8):
        buf[pos + b] = np.uint8((u >> np.uint64(8 * b)) & np.uint64(255))
    return pos + 8


@njit(cache=True)
def _encode(table, vals, has, rep, n, bound):
    """Rows 0..n-1 of the flattened schema ``table`` (kind, key, column, constant, mask, end;
    ``vals[i, column]``, ``has[i, mask]``), one pass: a message's length is written once its
    content is, in the byte reserved for it (the content moved up when the length needs more)."""
    nops = table.shape[0]
    buf = np.empty(bound, np.uint8)
    slot = np.zeros(nops + 1, np.int64)          # per open message: where its length goes
    pos = 0
    for i in range(n):
        depth = 0
        k = 0
        while k < nops:
            kind, col, mask = table[k, 0], table[k, 2], table[k, 4]
            if mask >= 0 and not has[i, mask]:
                k = table[k, 5] + 1 if kind == 2 else k + 1
                continue
            key = np.uint64(table[k, 1])
            if kind == 0:
                pos = _put(buf, pos, key)
                pos = _put(buf, pos, np.uint64(table[k, 3]) if col < 0 else vals[i, col])
            elif kind == 1:
                pos = _put(buf, pos, key)
                pos = _put8(buf, pos, vals[i, col])
            elif kind == 2:
                pos = _put(buf, pos, key)
                depth += 1
                slot[depth] = pos
                pos += 1
            elif kind == 3:
                at = slot[depth]
                depth -= 1
                length = pos - at - 1
                extra = _size(np.uint64(length)) - 1
                if extra:
                    for b in range(pos - 1, at, -1):
                        buf[b + extra] = buf[b]
                    pos += extra
                _put(buf, at, np.uint64(length))
            elif kind == 4:
                for r in range(vals[i, col], vals[i, col + 1]):
                    pos = _put(buf, pos, key)
                    pos = _put(buf, pos, rep[r])
            else:
                # DebugAnnotation: name_iid (field 1), then the value
                iid, u = np.uint64(table[k, 3]), vals[i, col]
                value = 8 if kind == 6 else _size(u)
                buf[pos] = 34                            # debug_annotations = 4, a message
                pos = _put(buf, pos + 1, np.uint64(1 + _size(iid) + _size(key) + value))
                buf[pos] = 8
                pos = _put(buf, pos + 1, iid)
                pos = _put(buf, pos, key)
                pos = _put8(buf, pos, u) if kind == 6 else _put(buf, pos, u)
            k += 1
    return buf[:pos]


def annotations(te: Rows, arg_iid: dict[str, int],
                args: list[tuple[str, str, np.ndarray, np.ndarray]]) -> None:
    """Typed debug annotations of TrackEvent ``te``: (name, kind int|double|string|bool, values,
    present); ``arg_iid`` gives the interned id of each name."""
    for name, kind, values, present in args:
        if absent(present):
            continue
        values = np.asarray(values, np.float64 if kind == "double" else np.int64)
        te.annotation(arg_iid[name], _ANNOTATION_VALUE[kind], values, present)


#: DebugAnnotation value field per kind: int_value, bool_value, double_value, string_value_iid
_ANNOTATION_VALUE = {"int": 4, "bool": 2, "double": 5, "string": 17}


def packet(n: int, ts: np.ndarray, seq: np.ndarray, event: Rows) -> Rows:
    """One TracePacket per row: timestamp (on the sequence's incremental clock: the delta from
    its previous packet, ``Trace.deltas``), the TrackEvent, its sequence; uses interned data.

    No SEQ_NEEDS_INCREMENTAL_STATE flag (2 bytes a packet): it only tells a reader to skip the
    packet when the sequence's state was lost (packets dropped while tracing); in this file
    every sequence declares its state in its first packet, so a reader never skips."""
    pkt = Rows(n).varint(8, ts.astype(np.int64)).message(11, event)
    return pkt.varint(10, seq.astype(np.int64))
