"""``tensor_location.json``: one record per code-generation call of an op (spec ``layer-info.md``
§2). Old and new key names are accepted; a record that cannot be used is skipped and counted.
"""
from __future__ import annotations

import functools
import itertools
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any, Union

import msgspec
import numpy as np
import pandas as pd

#: (before, after) key pairs of the counters: current files, then very old ones (no core_id)
ID_KEYS = (("tiu_dma_id(before)", "tiu_dma_id(after)"), ("bdc_gdma_id(before)", "bdc_gdma_id(after)"))

#: storage bytes per element of each dtype token TPU-MLIR writes or its debugger accepts; f20's
#: storage size is not documented: counted as 4 bytes (docs/metrics.md "Layers")
DTYPE_BYTES = {
    **dict.fromkeys(("f32", "si32", "ui32", "i32", "u32", "f20"), 4.0),
    **dict.fromkeys(("f16", "bf16", "si16", "ui16", "i16", "u16"), 2.0),
    **dict.fromkeys(("si8", "ui8", "i8", "u8", "f8", "f8e5m2", "f8e4m3"), 1.0),
    **dict.fromkeys(("si4", "ui4", "i4", "u4"), 0.5),
}

_TYPE_DIMS = re.compile(r"tensor<((?:\d+x)*)")


@dataclass
class Tensor:
    name: str | None
    shape: tuple[int, ...] | None   # full logical shape
    dtype: str | None               # dtype token, e.g. "f16"

    @property
    def bytes(self) -> float:
        if self.shape is None or self.dtype not in DTYPE_BYTES:
            return math.nan
        return math.prod(self.shape) * DTYPE_BYTES[self.dtype]

    @property
    def shape_text(self) -> str | None:
        return "x".join(map(str, self.shape)) if self.shape is not None else None


def _memory_type(text: object) -> tuple[tuple[int, ...] | None, str | None]:
    """``<d0xd1x…xdtype>`` -> (dims, dtype token); the dtype is the part after the last ``x``
    that starts with a letter."""
    return _memory_type_text(text) if isinstance(text, str) else (None, None)


@functools.lru_cache(maxsize=4096)      # a network repeats a few shapes and types many times
def _memory_type_text(text: str) -> tuple[tuple[int, ...] | None, str | None]:
    parts = text.strip().strip("<>").split("x")
    for i in range(len(parts) - 1, -1, -1):
        if parts[i][:1].isalpha():
            dims = parts[:i]
            if all(map(str.isdigit, dims)):
                return tuple(map(int, dims)), "x".join(parts[i:])
            return None, "x".join(parts[i:])
    return None, None


def tensor_of(obj: object) -> Tensor | None:
    """A tensor object; None for the ``{}`` of a none value (or anything not an object)."""
    if not isinstance(obj, dict) or not obj:
        return None
    slice_dims, dtype = _memory_type(obj.get("memory_type"))
    shape = obj.get("shape")
    if isinstance(shape, list) and set(map(type, shape)) <= {int}:
        full = tuple(shape)
    else:
        # the MLIR type text holds the whole tensor even for a local op's slice
        m = _TYPE_DIMS.match(obj.get("type") or "") if isinstance(obj.get("type"), str) else None
        full = tuple(int(d) for d in m.group(1).split("x") if d) if m and m.group(1) else slice_dims
    name = obj.get("name")
    return Tensor(name if isinstance(name, str) else None, full, dtype)


class _Record(msgspec.Struct, gc=False):
    """The keys of a record that are read; the tensors stay raw JSON text until a layer's first
    record needs them, everything else in the record is skipped by the decoder unbuilt."""
    file_line: Any = msgspec.field(name="file-line", default=msgspec.UNSET)
    subnet_id: Any = msgspec.UNSET
    core_id: Any = msgspec.UNSET
    opcode: Any = msgspec.UNSET
    is_local: Any = msgspec.UNSET
    before: Any = msgspec.field(name=ID_KEYS[0][0], default=msgspec.UNSET)
    after: Any = msgspec.field(name=ID_KEYS[0][1], default=msgspec.UNSET)
    old_before: Any = msgspec.field(name=ID_KEYS[1][0], default=msgspec.UNSET)
    old_after: Any = msgspec.field(name=ID_KEYS[1][1], default=msgspec.UNSET)
    operands: msgspec.Raw = msgspec.field(default=msgspec.Raw(b"null"))
    results: msgspec.Raw = msgspec.field(default=msgspec.Raw(b"null"))


class _Checked(msgspec.Struct, gc=False):
    """A record of the usual file, its types checked by the decoder: the current id keys, both
    present, pairs of integers; ``core_id``, ``subnet_id``, ``is_local`` absent or of their type."""
    file_line: int = msgspec.field(name="file-line")
    opcode: str
    before: tuple[int, int] = msgspec.field(name=ID_KEYS[0][0])
    after: tuple[int, int] = msgspec.field(name=ID_KEYS[0][1])
    subnet_id: int = -1
    core_id: Union[int, msgspec.UnsetType] = msgspec.UNSET
    is_local: Union[bool, None] = None
    operands: msgspec.Raw = msgspec.field(default=msgspec.Raw(b"null"))
    results: msgspec.Raw = msgspec.field(default=msgspec.Raw(b"null"))


#: the usual file: every element a record of checked types (then no test per value is left)
_CHECKED = msgspec.json.Decoder(list[_Checked])
#: any JSON array: its objects are records of any types; any other element is kept as is (then
#: skipped)
_DOCUMENT = msgspec.json.Decoder(list[Union[_Record, None, bool, int, float, str, list]])
_NOT_A_RECORD = _Record()
_BEFORE, _AFTER, _LINE, _OPCODE, _CORE, _SUBNET, _LOCAL = map(operator.attrgetter, (
    "before", "after", "file_line", "opcode", "core_id", "subnet_id", "is_local"))
_INT64 = (-(1 << 63), (1 << 63) - 1)


def decode_records(text: bytes) -> list:
    """The records of the JSON array ``text``: typed by the decoder when every record has the
    usual keys and types, else as found; :class:`msgspec.DecodeError` (not JSON, or JSON this
    decoder does not read, e.g. NaN) and :class:`msgspec.ValidationError` (not an array)
    propagate."""
    try:
        return _CHECKED.decode(text)
    except msgspec.ValidationError:
        return _DOCUMENT.decode(text)


def reencode(data: list) -> bytes:
    """A JSON array the standard library read, as text :func:`decode_records` reads."""
    return msgspec.json.encode(data)


def _int64(values: list, ok: np.ndarray, width: int) -> np.ndarray:
    """``values`` (integers, or lists of ``width`` integers) as int64 where ``ok``, 0 elsewhere;
    integers beyond int64 are taken out of ``ok`` (in place) first, in the rare file that has one."""
    def fits(v):
        return all(_INT64[0] <= x <= _INT64[1] for x in (v if width > 1 else [v]))

    if not ok.all():
        empty = [0] * width if width > 1 else 0
        values = [v if k else empty for v, k in zip(values, ok)]
    try:
        flat = itertools.chain.from_iterable(values) if width > 1 else values
        return np.fromiter(flat, np.int64, len(values) * width)
    except OverflowError:
        ok &= np.array([fits(v) for v in values], bool)
        return _int64(values, ok, width)


def _ints(values: list, checked: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(the values as int64, 0 where not a JSON integer; mask of the JSON integers);
    ``checked``: the decoder made them integers."""
    if checked or set(map(type, values)) <= {int}:      # the usual file: one C-level pass
        ok = np.ones(len(values), bool)
    else:
        ok = np.array([type(v) is int for v in values], bool)
    return _int64(values, ok, 1), ok


def _pairs(values: list, checked: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(n x 2 int64, 0 where not a pair of JSON integers; mask of the pairs); ``checked``: the
    decoder made them pairs of integers."""
    if checked or (set(map(type, values)) <= {list} and set(map(len, values)) <= {2}
                   and set(map(type, itertools.chain.from_iterable(values))) <= {int}):
        ok = np.ones(len(values), bool)
    else:
        ok = np.array([type(v) is list and len(v) == 2 and type(v[0]) is int and type(v[1]) is int
                       for v in values], bool)
    return _int64(values, ok, 2).reshape(-1, 2), ok


def _given(values: list) -> np.ndarray:
    if msgspec.UNSET not in values:                     # one C-level pass
        return np.ones(len(values), bool)
    return np.array([v is not msgspec.UNSET for v in values], bool)


@dataclass
class RecordColumns:
    """The usable records as columns (file order), and what was skipped or defaulted."""
    record: np.ndarray            # 0-based position in the JSON array
    core: np.ndarray
    subnet_id: np.ndarray
    file_line: np.ndarray
    opcode: np.ndarray            # object array of str
    is_local: pd.arrays.BooleanArray   # <NA> where the record has none
    tiu_before: np.ndarray
    tiu_after: np.ndarray
    gdma_before: np.ndarray
    gdma_after: np.ndarray
    #: (subnet_id, file_line) -> (opcode, operands, results) of the layer's first record
    first_tensors: dict[tuple[int, int], tuple[str, list, list]] = field(default_factory=dict)
    skipped: int = 0
    first_skipped: int | None = None    # position of the first skipped record
    no_core: int = 0
    no_locality: int = 0


def _first_of_each(subnet: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Positions of the first record of each (subnet, line), in file order."""
    if not len(line):
        return np.zeros(0, np.int64)
    span = int(line.max()) - int(line.min()) + 1
    if (int(subnet.max()) - int(subnet.min()) + 1) * span < 1 << 62:     # one int64 key
        key = (subnet - subnet.min()) * span + (line - line.min())
        return np.sort(np.unique(key, return_index=True)[1])
    order = np.lexsort((line, subnet))                   # stable: file order within a layer
    s, f = subnet[order], line[order]
    return np.sort(order[np.r_[True, (s[1:] != s[:-1]) | (f[1:] != f[:-1])]])


def read_records(data: list) -> RecordColumns:
    """Columns of the usable records of the decoded array ``data`` (:func:`decode_records`).

    A record is usable with its id pair (the current keys, else the old ones: the first pair
    with either key present), an integer ``file-line`` and a non-empty ``opcode``; ``core_id``,
    ``subnet_id`` and ``is_local`` may be absent (0, -1, unknown) but not of another type.
    Every test runs over a whole column: no function call per record.
    """
    checked = bool(data) and type(data[0]) is _Checked     # decoded by _CHECKED: all are
    recs = data if checked else [r if type(r) is _Record else _NOT_A_RECORD for r in data]
    befores, afters = list(map(_BEFORE, recs)), list(map(_AFTER, recs))
    if not checked and (msgspec.UNSET in befores or msgspec.UNSET in afters):   # old keys
        new = [b is not msgspec.UNSET or a is not msgspec.UNSET for b, a in zip(befores, afters)]
        befores = [b if k else r.old_before for b, r, k in zip(befores, recs, new)]
        afters = [a if k else r.old_after for a, r, k in zip(afters, recs, new)]
    before, before_ok = _pairs(befores, checked)
    after, after_ok = _pairs(afters, checked)
    line, line_ok = _ints(list(map(_LINE, recs)), checked)
    opcodes = list(map(_OPCODE, recs))
    if set(map(type, opcodes)) <= {str} and "" not in opcodes:
        opcode_ok = np.ones(len(opcodes), bool)
    else:
        opcode_ok = np.array([type(v) is str and v != "" for v in opcodes], bool)
    cores = list(map(_CORE, recs))
    core, core_int = _ints(cores)
    core_given = _given(cores)
    subnets = list(map(_SUBNET, recs))
    subnet, subnet_int = _ints(subnets)
    subnet_given = _given(subnets)
    locality = list(map(_LOCAL, recs))
    if set(map(type, locality)) <= {bool}:             # every record says
        local_given = local_bool = np.ones(len(locality), bool)
    else:
        local_given = np.array([v is not msgspec.UNSET and v is not None for v in locality], bool)
        local_bool = np.array([type(v) is bool for v in locality], bool)
    usable = (before_ok & after_ok & line_ok & opcode_ok
              & (~core_given | (core_int & (core >= 0))) & (~subnet_given | subnet_int)
              & (~local_given | local_bool))
    keep = np.flatnonzero(usable)
    skipped = np.flatnonzero(~usable)
    local = pd.array(np.array([v is True for v in locality], bool)[keep], dtype="boolean")
    local[~local_bool[keep]] = pd.NA
    out = RecordColumns(
        record=keep, core=np.where(core_given, core, 0)[keep],
        subnet_id=np.where(subnet_given, subnet, -1)[keep], file_line=line[keep],
        opcode=np.array(opcodes, dtype=object)[keep], is_local=local,
        tiu_before=before[keep, 0], tiu_after=after[keep, 0],
        gdma_before=before[keep, 1], gdma_after=after[keep, 1],
        skipped=len(skipped), first_skipped=int(skipped[0]) if len(skipped) else None,
        no_core=int((~core_given[keep]).sum()), no_locality=int((~local_bool[keep]).sum()),
    )
    # the first record of each layer (the tensors of ~layers records are decoded, not those of
    # every time step and core), all in one decoder call
    first = _first_of_each(out.subnet_id, out.file_line)
    raws = [raw for i in keep[first] for raw in (recs[i].operands, recs[i].results)]
    tensors = msgspec.json.decode(b"[" + b",".join(raws) + b"]")
    for n, i in enumerate(first):
        operands, results = tensors[2 * n], tensors[2 * n + 1]
        out.first_tensors[(int(out.subnet_id[i]), int(out.file_line[i]))] = (
            out.opcode[i], operands if isinstance(operands, list) else [],
            results if isinstance(results, list) else [])
    return out
