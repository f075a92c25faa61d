"""The layer part of the model: the compiler's layer files as read, and the layer view derived
from them (spec ``layer-info.md``; docs/metrics.md "Layers").

A bmodel capture folder may hold ``tensor_location.json`` (which command ids each code-generated
op emitted) and ``final.mlir`` (the op text: network name, FLOPs, quantisation, layer groups).
``parsers.layers`` fills :class:`LayerFiles` (``Profile.layers``); ``analysis.layers`` maps the
commands onto it and fills :class:`LayerView` (``Profile.layer_view``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

#: Columns of ``LayerFiles.records``: one row per record of ``tensor_location.json`` (one
#: code-generation call: a core of a global op, a time step of a layer-group member), file order.
RECORD_COLUMNS: dict[str, str] = {
    "record": "int64",        # 0-based position in the JSON array
    "core": "int16",          # the decoder's core of core_id (0 when the file has none; -1: no such core file)
    "subnet_id": "int64",
    "file_line": "int64",     # 1-based line of the op in final.mlir (-1: no location)
    "opcode": "object",       # "tpu.Conv2D"
    "is_local": "boolean",    # inside a tpu.Group; <NA> when neither file says
    "tiu_before": "int64",    # the record owns TIU Cmd Ids (tiu_before, tiu_after]
    "tiu_after": "int64",
    "gdma_before": "int64",   # and GDMA Cmd Ids (gdma_before, gdma_after]
    "gdma_after": "int64",
}

#: Columns of ``LayerFiles.ops``: one row per layer (subnet_id, file_line), first record's tensors.
OP_COLUMNS: dict[str, str] = {
    "subnet_id": "int64",
    "file_line": "int64",
    "opcode": "object",
    "dtype": "object",         # dtype token of the first operand (else result): "f16"; None unknown
    "in_shape": "object",      # full logical shape of the first operand, e.g. "1x32x14x768"
    "out_shape": "object",     # of the first result
    "operand_shapes": "object",  # every operand's shape, "; "-separated ("-" for a none operand)
    "in_bytes": "float64",     # Σ operand bytes (full tensors); NaN when a dtype is unknown
    "out_bytes": "float64",    # Σ result bytes
    "weight_bytes": "float64",  # Σ bytes of operands defined by top.Weight in final.mlir
}


@dataclass
class LayerFiles:
    """``tensor_location.json`` + ``final.mlir`` of a capture, as read."""

    json_path: str
    mlir_path: str
    records: pd.DataFrame
    ops: pd.DataFrame
    #: layer groups of final.mlir: group_line (the tpu.Group line), first_line, last_line (body)
    groups: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        {c: pd.Series(dtype="int64") for c in ("group_line", "first_line", "last_line")}))
    network: str | None = None   # module name; None when unknown
    flops: int | None = None     # module.FLOPs (0 is a value: LLM blocks)
    quant_mode: str | None = None  # module.mode, e.g. "F16"
    cores: int | None = None     # module.cores: cores the model was compiled for


@dataclass
class LayerView:
    """The commands of a capture mapped onto its layers (analysis.layers)."""

    #: per row of ``Profile.commands`` (positional): index into ``layers`` or -1 (no layer:
    #: unattributed TIU/GDMA commands, and every SDMA/CDMA command)
    command_layer: np.ndarray
    #: per row of ``Profile.commands``: the owning record (``LayerFiles.records.record``) or -1
    command_record: np.ndarray
    #: one row per layer (subnet_id, file_line) in first-record order; metrics in docs/metrics.md
    layers: pd.DataFrame
    #: per op class (the vendor's "Summary"), classes by TIU cycles, descending
    classes: pd.DataFrame
    #: the what-if table (docs/metrics.md "Layers: what if"); empty when peaks are unknown
    what_if: pd.DataFrame
    #: the TIU/GDMA commands no record owns, as one row with the columns of ``layers``
    unattributed: pd.DataFrame
    #: chip and model facts shown above the tables: (label, value, unit)
    facts: list[tuple[str, object, str]] = field(default_factory=list)
    #: one row per record with commands (the layer lanes): record, core, layer, file_line, name,
    #: group_line, start_ns, end_ns, cmds; by core and start
    spans: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: unattributed commands per core and engine: core, engine, cmds
    unattributed_cmds: pd.DataFrame = field(default_factory=pd.DataFrame)
