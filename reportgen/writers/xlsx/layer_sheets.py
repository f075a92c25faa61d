"""The layer sheets of a bmodel capture: "Summary" (op classes and the what-if table) and
"Layer by Layer Info" (one row per layer), under the vendor's sheet names with our definitions
(docs/metrics.md "Layers"); and the "Layer Id" / "Layer Name" columns of the command sheets.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.model import Profile
from reportgen.model_layers import LayerView
from reportgen.writers.xlsx.columns import Column, column_from_series
from reportgen.writers.xlsx.workbook import Book

TAB = "#31869B"
_LAYER_ID_NOTE = "The layer's line in final.mlir (one id per op; its records on every core merged)."

#: (header, layer-table column, number format, note) of "Layer by Layer Info"
LAYER_SPEC = [
    ("Layer Id", "file_line", "0", _LAYER_ID_NOTE),
    ("Subnet Id", "subnet_id", "0", ""),
    ("Layer Name", "name", None, "Op name (opcode after the dialect)."),
    ("Opcode", "opcode", None, ""),
    ("Local", "is_local", None, "Inside a layer group (tpu.Group)."),
    ("Group Line", "group_line", "0", "final.mlir line of the enclosing tpu.Group."),
    ("Data Type", "dtype", None, "Of the first operand (else result)."),
    ("Input Shape", "in_shape", None, "Whole tensor, not a slice."),
    ("Output Shape", "out_shape", None, ""),
    ("Operand Shapes", "operand_shapes", None, "Every operand, '-' for a none operand."),
    ("Records", "records", "#,##0", "tensor_location.json records merged (cores x time steps)."),
    ("Cores", "cores", "0", ""),
    ("TIU Cmds", "tiu_cmds", "#,##0", ""),
    ("GDMA Cmds", "gdma_cmds", "#,##0", ""),
    ("Busy(ns)", "busy_ns", "#,##0", "Union of the layer's TIU and GDMA work intervals per core, "
     "summed over cores."),
    ("Time Share", "time_share", "0.00%", "Busy / the busy time of all layers and unattributed commands."),
    ("Rank", "rank", "0", "1 = the longest busy time."),
    ("TIU Busy(ns)", "tiu_busy_ns", "#,##0", "Summed duration of TIU work commands."),
    ("GDMA Busy(ns)", "gdma_busy_ns", "#,##0", "Summed duration of GDMA work commands."),
    ("TIU Cycles", "tiu_cycles", "#,##0", "Summed Asic Cycle of the TIU commands (system ones too)."),
    ("Alg Cycle", "alg_cycle", "#,##0", ""),
    ("Alg Ops", "alg_ops", "#,##0", ""),
    ("uArch Ops", "uarch_ops", "#,##0", ""),
    ("uArch Rate", "uarch_rate", "0.00%", "Alg Ops / uArch Ops."),
    ("GDMA Bytes", "gdma_bytes", "#,##0", ""),
    ("Load Bytes", "gdma_load_bytes", "#,##0", "GDMA bytes into local memory."),
    ("Store Bytes", "gdma_store_bytes", "#,##0", "GDMA bytes out of local memory."),
    ("GDMA BW(GB/s)", "gdma_gbps", "0.00", "GDMA bytes / GDMA busy time."),
    ("Weight Bytes", "weight_bytes", "#,##0", "Operands defined by top.Weight in final.mlir."),
    ("Input Bytes", "in_bytes", "#,##0", "All operands, whole tensors."),
    ("Output Bytes", "out_bytes", "#,##0", ""),
]

#: (header, class-table column, number format) of the "Summary" op-class table
CLASS_SPEC = [
    ("Function", "op_class", None), ("Layers", "layers", "0"), ("Operations", "operations", None),
    ("Algorithm OPs", "alg_ops", "#,##0"), ("Algorithm OPs Ratio", "alg_share", "0.000%"),
    ("Weight Size(B)", "weight_bytes", "#,##0"), ("uArch OPs", "uarch_ops", "#,##0"),
    ("uArch URate", "uarch_rate", "0.000%"), ("uArch OPs Ratio", "uarch_share", "0.000%"),
    ("TIU Cycles", "tiu_cycles", "#,##0"), ("TIU Time(us)", "tiu_us", "0.000"),
    ("TIU Time Ratio", "tiu_share", "0.000%"), ("GDMA Busy(ns)", "gdma_busy_ns", "#,##0"),
    ("GDMA Bytes", "gdma_bytes", "#,##0"), ("Busy(ns)", "busy_ns", "#,##0"),
    ("Busy Ratio", "time_share", "0.000%"),
]
WHAT_IF_SPEC = [
    ("Case", "case", None), ("Peak", "peak", None), ("ReducedTime(us)", "reduced_us", "0.000"),
    ("CurrentTotalTime(us)", "total_us", "0.000"), ("Concurrency(%)", "concurrency", "0.0"),
    ("macUtil(%)", "mac_util", "0.000"),
]
WHAT_IF_NOTE = ("What if: 'origin' = the capture's wall time; '100% concurrency' = the longest engine "
                "of the longest core; then each class's TIU time (per core) replaced by its ops at the "
                "model peak ('model') or the class peak ('class'), one after the other "
                "(docs/metrics.md 'Layers: what if').")


def layer_columns(profile: Profile, positions: np.ndarray) -> list[Column]:
    """"Layer Id" / "Layer Name" of the commands at ``positions`` (TIU and GDMA sheets)."""
    view = profile.layer_view
    layer = view.command_layer[positions]
    owned = layer >= 0
    pick = np.maximum(layer, 0)
    ids = pd.Series(pd.array(view.layers["file_line"].to_numpy()[pick], dtype="Int64"))
    ids[~owned] = pd.NA
    names = pd.Series(np.where(owned, view.layers["name"].to_numpy(object)[pick], None), dtype=object)
    return [column_from_series("Layer Id", ids, "0", _LAYER_ID_NOTE + " Empty: no layer owns it."),
            column_from_series("Layer Name", names, None, "")]


def write_layer_sheets(book: Book, view: LayerView, quiet: bool) -> None:
    _write_summary(book, view)
    table = pd.concat([view.layers, view.unattributed], ignore_index=True)
    table["is_local"] = table["is_local"].map({True: "local", False: "global"}, na_action="ignore")
    cols = [column_from_series(h, table[c], f, n) for h, c, f, n in LAYER_SPEC]
    book.table_sheets("Layer by Layer Info", cols, len(table), TAB, quiet, 3)


def _write_table(book: Book, ws, row: int, frame: pd.DataFrame, spec) -> int:
    for c, (header, _, _) in enumerate(spec):
        ws.write_string(row, c, header, book.header)
    for values in frame[[s[1] for s in spec]].itertuples(index=False):
        row += 1
        for c, (value, (_, _, fmt)) in enumerate(zip(values, spec)):
            _cell(book, ws, row, c, value, fmt)
    return row + 1


def _cell(book: Book, ws, row: int, col: int, value, fmt) -> None:
    if value is None or value is pd.NA or (isinstance(value, float) and not np.isfinite(value)):
        return
    if isinstance(value, str):
        ws.write_string(row, col, value)
    else:
        ws.write_number(row, col, float(value), book.num(fmt))


def _write_summary(book: Book, view: LayerView) -> None:
    ws = book.sheet(book.unique_name("Summary"), TAB)
    ws.set_column(0, 0, 34)
    ws.set_column(1, len(CLASS_SPEC), 14)
    ws.write_string(0, 0, "Layer view: op classes and what if", book.title)
    row = 1
    for label, value, unit in view.facts:
        ws.write_string(row, 0, f"{label} ({unit})" if unit else label, book.key)
        _cell(book, ws, row, 1, value, "0.###")
        row += 1
    row = _write_table(book, ws, row + 1, view.classes, CLASS_SPEC)
    ws.write_string(row + 1, 0, WHAT_IF_NOTE)
    if len(view.what_if):
        _write_table(book, ws, row + 2, view.what_if, WHAT_IF_SPEC)
    else:
        ws.write_string(row + 2, 0, "No what-if table: the chip's peaks are unknown.")
