"""The compiler's layer files of a bmodel capture: ``tensor_location.json`` + ``final.mlir``.

:func:`read_layer_files` never fails a report (spec ``layer-info.md`` §1): both files absent means
no layer view and no message; one absent, or the JSON unreadable, means a warning and a report
without layers; a ``final.mlir`` that cannot be read leaves the layers but not the network facts.
"""
from __future__ import annotations

import codecs
import json
import math
import os
from pathlib import Path

import msgspec
import pandas as pd

from reportgen.heap import collector_paused
from reportgen.model import Meta
from reportgen.model_layers import OP_COLUMNS, RECORD_COLUMNS, LayerFiles
from reportgen.parsers.layers.final_mlir import MlirFacts, read_final_mlir
from reportgen.parsers.layers.tensor_location import (RecordColumns, decode_records, read_records,
                                                      reencode, tensor_of)
from reportgen.parsers.limits import MB

JSON_NAME, MLIR_NAME = "tensor_location.json", "final.mlir"
LOCAL_OPCODES = ("tpu.Load", "tpu.Store")


def read_layer_files(directory: str | Path, meta: Meta, max_input_mb: int,
                     core_numbers: list[int | None] | None = None) -> LayerFiles | None:
    """The layer files in ``directory`` (the dump folder), or None (warned unless both absent).

    ``core_numbers``: per decoded core (its position in the dump's sorted core files), the number
    its file name gives it; a record's ``core_id`` is that number (spec §4), so a missing core
    file does not shift the records of the following cores onto the wrong core.
    """
    directory = Path(directory)
    json_path, mlir_path = directory / JSON_NAME, directory / MLIR_NAME
    present = [p.is_file() for p in (json_path, mlir_path)]
    if not any(present):
        return None
    if not all(present):
        found, missing = (json_path, mlir_path) if present[0] else (mlir_path, json_path)
        meta.warn("layer-files-incomplete", f"no layer view: {found.name} is here but {missing.name} "
                  "is not (both are needed)", str(directory))
        return None
    # no collection passes over the ~10^6 containers of the decoded records (they would halve
    # the reading speed): everything _read builds is freed before the collector resumes
    with collector_paused():
        return _read(json_path, mlir_path, meta, max_input_mb, core_numbers)


def _read(json_path: Path, mlir_path: Path, meta: Meta, max_input_mb: int,
          core_numbers: list[int | None] | None) -> LayerFiles | None:
    data = _read_json(json_path, meta, max_input_mb)
    if data is None:
        return None
    columns, total = read_records(data), len(data)
    del data
    if columns.skipped:
        meta.warn("layer-records-skipped", f"{columns.skipped} of {total} records skipped "
                  f"(missing or malformed keys; first at position {columns.first_skipped})",
                  str(json_path))
    if not len(columns.record):
        meta.warn("layer-files-unreadable", "no layer view: no usable record", str(json_path))
        return None
    facts = _read_mlir(mlir_path, meta, max_input_mb)
    if columns.no_core:
        meta.warn("layer-records-no-core", f"{columns.no_core} records have no core_id "
                  "(an old compiler): taken as core 0", str(json_path))
    if columns.no_locality:
        meta.warn("layer-records-no-locality", f"{columns.no_locality} records have no is_local: "
                  "taken from the layer groups of final.mlir", str(json_path))
    records = _records_frame(columns, facts)
    if core_numbers is not None:
        records["core"] = _decoded_cores(records["core"], core_numbers, meta, str(json_path))
    groups = pd.DataFrame(facts.groups if facts else [], columns=["group_line", "first_line", "last_line"],
                          dtype="int64")
    return LayerFiles(str(json_path), str(mlir_path), records, _ops_frame(columns, facts), groups,
                      network=facts.network if facts else None, flops=facts.flops if facts else None,
                      quant_mode=facts.quant_mode if facts else None,
                      cores=facts.cores if facts else None)


def _too_large(path: Path, meta: Meta, max_input_mb: int) -> bool:
    if os.stat(path).st_size > max_input_mb * MB:
        meta.warn("layer-files-unreadable", f"not read: larger than the input limit of {max_input_mb} MB "
                  "(--max_input_mb)", str(path))
        return True
    return False


def _file_bytes(path: Path, max_input_mb: int) -> bytes:
    """The bytes of ``path``, copied rather than memory-mapped (178 MB take 0.1 s): a mapped file
    truncated by another process while we decode it would kill us with SIGBUS, not an error we
    can report. At most the input limit plus one byte is read, so a file growing after the size
    check still cannot exceed it."""
    with open(path, "rb") as f:
        return f.read(max_input_mb * MB + 1)


def _read_json(path: Path, meta: Meta, max_input_mb: int) -> list | None:
    """The decoded records of ``path`` (:func:`decode_records`), or None (warned)."""
    try:
        if _too_large(path, meta, max_input_mb):
            return None
        raw = _file_bytes(path, max_input_mb)
        return decode_records(raw[len(codecs.BOM_UTF8):] if raw[:3] == codecs.BOM_UTF8 else raw)
    except OSError as exc:
        meta.warn("layer-files-unreadable", f"no layer view: cannot be read ({exc})", str(path))
        return None
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        pass
    # not an array of JSON the fast decoder reads (broken JSON, NaN, not an array, not UTF-8,
    # nested too deep...): the standard library says where and what, or reads what the fast
    # decoder does not (a lone surrogate it reads is still refused: msgspec has no such string)
    try:
        data = json.loads(bytes(raw).decode("utf-8-sig"))
    except json.JSONDecodeError as exc:
        meta.warn("layer-files-unreadable", f"no layer view: not JSON at line {exc.lineno} column "
                  f"{exc.colno} ({exc.msg})", str(path))
        return None
    except (UnicodeDecodeError, RecursionError) as exc:
        meta.warn("layer-files-unreadable", f"no layer view: cannot be read ({exc})", str(path))
        return None
    if not isinstance(data, list):
        meta.warn("layer-files-unreadable", f"no layer view: a JSON array of records was expected, "
                  f"not {type(data).__name__}", str(path))
        return None
    try:
        return decode_records(reencode(data))
    except (msgspec.DecodeError, msgspec.ValidationError, TypeError, ValueError) as exc:
        meta.warn("layer-files-unreadable", f"no layer view: cannot be read ({exc})", str(path))
        return None


def _read_mlir(path: Path, meta: Meta, max_input_mb: int) -> MlirFacts | None:
    try:
        if _too_large(path, meta, max_input_mb):
            return None
        facts = read_final_mlir(path)
    except (OSError, UnicodeDecodeError) as exc:
        meta.warn("layer-mlir-unreadable", f"network name, FLOPs, mode and layer groups unknown: "
                  f"cannot be read ({exc})", str(path))
        return None
    if facts.network is None and facts.flops is None and facts.quant_mode is None:
        meta.warn("layer-mlir-no-module", "no module header: network name, FLOPs and mode unknown",
                  str(path))
    return facts


def _records_frame(c: RecordColumns, facts: MlirFacts | None) -> pd.DataFrame:
    local = c.is_local
    if local.isna().any():
        if facts is not None:
            inferred = _in_groups(pd.Series(c.file_line, dtype="int64"), facts.groups)
        else:
            inferred = pd.Series(c.opcode).isin(LOCAL_OPCODES).to_numpy()
        local = pd.array(local.fillna(pd.array(inferred, dtype="boolean")), dtype="boolean")
    frame = pd.DataFrame({
        "record": c.record, "core": c.core, "subnet_id": c.subnet_id, "file_line": c.file_line,
        "opcode": c.opcode, "is_local": local,
        "tiu_before": c.tiu_before, "tiu_after": c.tiu_after,
        "gdma_before": c.gdma_before, "gdma_after": c.gdma_after,
    })
    return frame.astype(RECORD_COLUMNS)


def _decoded_cores(core_id: pd.Series, core_numbers: list[int | None], meta: Meta, where: str) -> pd.Series:
    """The decoder's core of each record's ``core_id``; -1 (owns nothing) when no core file has
    that number. Core files without a number in their name keep their position."""
    if None in core_numbers or core_numbers == list(range(len(core_numbers))):
        return core_id
    position = pd.Series(range(len(core_numbers)), index=pd.Index(core_numbers, dtype="int64"))
    decoded = core_id.map(position)
    missing = decoded.isna()
    if missing.any():
        absent = sorted(int(k) for k in core_id[missing].unique())
        meta.warn("layer-core-missing", f"{int(missing.sum())} records belong to core(s) "
                  f"{', '.join(map(str, absent))}, which have no core file in the dump: no commands "
                  "to map", where)
    return decoded.fillna(-1).astype(core_id.dtype)


def _in_groups(lines: pd.Series, groups: list[tuple[int, int, int]]):
    inside = pd.Series(False, index=lines.index)
    for _, first, last in groups:          # one vector test per group, not per record
        inside |= lines.between(first, last)
    return inside.to_numpy()


def _ops_frame(c: RecordColumns, facts: MlirFacts | None) -> pd.DataFrame:
    weights = facts.weight_names if facts is not None else None
    rows = []
    for (subnet, line), (opcode, operands, results) in c.first_tensors.items():
        ins = [tensor_of(t) for t in operands]
        outs = [tensor_of(t) for t in results]
        first_in = next((t for t in ins if t is not None), None)
        first_out = next((t for t in outs if t is not None), None)
        typed = first_in or first_out
        rows.append({
            "subnet_id": subnet, "file_line": line, "opcode": opcode,
            "dtype": typed.dtype if typed else None,
            "in_shape": first_in.shape_text if first_in else None,
            "out_shape": first_out.shape_text if first_out else None,
            "operand_shapes": "; ".join((t.shape_text or "?") if t else "-" for t in ins) or None,
            "in_bytes": math.fsum(t.bytes for t in ins if t) if first_in else math.nan,
            "out_bytes": math.fsum(t.bytes for t in outs if t) if first_out else math.nan,
            "weight_bytes": (math.nan if weights is None else
                             math.fsum(t.bytes for t in ins if t and t.name in weights)),
        })
    frame = pd.DataFrame(rows, columns=list(OP_COLUMNS))
    return frame.astype(OP_COLUMNS)
