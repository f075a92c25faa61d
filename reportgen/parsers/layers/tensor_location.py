"""``tensor_location.json``: one record per code-generation call of an op (spec ``layer-info.md``
§2). Old and new key names are accepted; a record that cannot be used is skipped and counted.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

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
    if not isinstance(text, str):
        return None, None
    parts = text.strip().strip("<>").split("x")
    for i in range(len(parts) - 1, -1, -1):
        if parts[i][:1].isalpha():
            dims = parts[:i]
            if all(d.isdigit() for d in dims):
                return tuple(int(d) for d in dims), "x".join(parts[i:])
            return None, "x".join(parts[i:])
    return None, None


def tensor_of(obj: object) -> Tensor | None:
    """A tensor object; None for the ``{}`` of a none value (or anything not an object)."""
    if not isinstance(obj, dict) or not obj:
        return None
    slice_dims, dtype = _memory_type(obj.get("memory_type"))
    shape = obj.get("shape")
    if isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        full = tuple(shape)
    else:
        # the MLIR type text holds the whole tensor even for a local op's slice
        m = _TYPE_DIMS.match(obj.get("type") or "") if isinstance(obj.get("type"), str) else None
        full = tuple(int(d) for d in m.group(1).split("x") if d) if m and m.group(1) else slice_dims
    name = obj.get("name")
    return Tensor(name if isinstance(name, str) else None, full, dtype)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _pair(value: object) -> tuple[int, int] | None:
    if isinstance(value, list) and len(value) == 2 and all(_int(v) is not None for v in value):
        return value[0], value[1]
    return None


@dataclass
class RecordColumns:
    """The usable records as columns, and what was skipped or defaulted."""
    record: list[int] = field(default_factory=list)
    core: list[int] = field(default_factory=list)
    subnet_id: list[int] = field(default_factory=list)
    file_line: list[int] = field(default_factory=list)
    opcode: list[str] = field(default_factory=list)
    is_local: list[bool | None] = field(default_factory=list)
    tiu_before: list[int] = field(default_factory=list)
    tiu_after: list[int] = field(default_factory=list)
    gdma_before: list[int] = field(default_factory=list)
    gdma_after: list[int] = field(default_factory=list)
    #: (subnet_id, file_line) -> (opcode, operands, results) of the layer's first record
    first_tensors: dict[tuple[int, int], tuple[str, list, list]] = field(default_factory=dict)
    skipped: int = 0
    first_skipped: int | None = None    # position of the first skipped record
    no_core: int = 0
    no_locality: int = 0


def read_records(data: list) -> RecordColumns:
    """Columns of the usable records of the JSON array ``data`` (file order)."""
    out = RecordColumns()
    for position, rec in enumerate(data):
        parsed = _record(rec)
        if parsed is None:
            out.skipped += 1
            out.first_skipped = position if out.first_skipped is None else out.first_skipped
            continue
        core, subnet, line, opcode, local, before, after = parsed
        out.record.append(position)
        out.core.append(0 if core is None else core)
        out.no_core += core is None
        out.no_locality += local is None
        out.subnet_id.append(subnet)
        out.file_line.append(line)
        out.opcode.append(opcode)
        out.is_local.append(local)
        out.tiu_before.append(before[0])
        out.gdma_before.append(before[1])
        out.tiu_after.append(after[0])
        out.gdma_after.append(after[1])
        key = (subnet, line)
        if key not in out.first_tensors:
            operands, results = rec.get("operands"), rec.get("results")
            out.first_tensors[key] = (opcode, operands if isinstance(operands, list) else [],
                                      results if isinstance(results, list) else [])
    return out


def _record(rec: object):
    """(core or None, subnet, file_line, opcode, is_local or None, before, after) or None."""
    if not isinstance(rec, dict):
        return None
    for before_key, after_key in ID_KEYS:
        if before_key in rec or after_key in rec:
            before, after = _pair(rec.get(before_key)), _pair(rec.get(after_key))
            break
    else:
        return None
    line, opcode = _int(rec.get("file-line")), rec.get("opcode")
    if before is None or after is None or line is None or not isinstance(opcode, str) or not opcode:
        return None
    core = _int(rec.get("core_id"))
    if "core_id" in rec and (core is None or core < 0):
        return None
    subnet = _int(rec.get("subnet_id"))
    if "subnet_id" in rec and subnet is None:
        return None
    local = rec.get("is_local")
    if local is not None and not isinstance(local, bool):
        return None
    return core, -1 if subnet is None else subnet, line, opcode, local, before, after
