"""Which columns each sheet shows: the command sheets per engine, and generic extra tables.

A command sheet (``TIU_0``, ``GDMA_0``, ``SDMA_0``, ``CDMA_1`` ...) shows Engine Id, Core Id,
**Global Idx** (column C, the ``global_idx`` every output shows), Cmd Id, Kernel, Function
Type/Name, Asic Cycle, Start/End/Duration (ns), the engine's own columns, then the register
fields of ``profile.registers[engine]`` when they are written, a DMA's full source and
destination addresses (``src_start_addr``, ``dst_start_addr``, as the vendor shows them) just
before the ``_l32``/``_h13`` fields they are composed of.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from reportgen.model import COMMAND_COLUMNS, ENGINE_IDS, NODE_COLUMNS, Profile
from reportgen.writers.xlsx.columns import Column, column_from_series
from reportgen.writers.xlsx.framework_columns import framework_columns
from reportgen.writers.xlsx.layer_sheets import layer_columns

TAB_COLORS = {"TIU": "#008000", "GDMA": "#FFA500", "SDMA": "#A6A6A6", "CDMA": "#C0504D"}
FREEZE_COLS = 3  # Engine Id, Core Id, Global Idx stay visible while scrolling right

#: (header, model column, number format, note); shown on every command sheet in this order
COMMON_SPEC = [
    ("Core Id", "core", "0", "CDMA sheets: the core that submitted the command."),
    ("Global Idx", "global_idx", "0",
     "0-based position of the command in this sheet's list; the same global_idx the HTML "
     "report and perfetto.pftrace show."),
    ("Cmd Id", "cmd_id", "0", "Hardware command id as the vendor tools show it."),
    ("Kernel", "kernel", None, "Kernel / layer function the command belongs to; empty if unknown."),
    ("Function Type", "func_type", None, ""),
    ("Function Name", "func_name", None, ""),
    ("Asic Cycle", "cycles", "#,##0", "end - start + 1 in the engine's own clock cycles "
     "(the vendor's name for it)."),
    ("Start Time(ns)", "start_ns", "#,##0", "Aligned across cores; 0 = earliest record."),
    ("End Time(ns)", "end_ns", "#,##0", ""),
]
TIU_SPEC = [
    ("Alg Ops", "alg_ops", "#,##0", "Algorithmic operations; empty where no op model exists."),
    ("uArch Ops", "uarch_ops", "#,##0", "Operations after hardware alignment."),
    ("uArch Rate", "uarch_rate", "0.0%", "Alg Ops / uArch Ops (a fraction shown as %)."),
    ("Alg Cycle", "alg_cycle", "#,##0", "Ideal cycles for Alg Ops at peak rate."),
    ("Data Type", "dtype", None, "Operand precision -> result precision."),
    ("Dep Cmd Id", "dep_cmd_id", "0", "Command id this command waits for (cmd_id_dep)."),
]
DMA_SPEC = [
    ("DMA data size(B)", "bytes", "#,##0", ""),
    ("Direction", "direction", None, "Source -> destination memory; empty if unknown."),
    ("Data Type", "dtype", None, ""),
    ("Stall Cycle", "stall_cycles", "#,##0",
     "Cycles the DMA waited because TIU and DMA accessed the same memory bank."),
    ("DDR Bandwidth(GB/s)", "ddr_bw", "0.00", "Bytes / duration, for commands touching DDR."),
    ("L2M Bandwidth(GB/s)", "l2m_bw", "0.00", "Bytes / duration, for commands touching L2M "
     "(and not DDR)."),
    ("GMEM Xact", "gmem_xact", "#,##0", "AXI transactions of the command."),
    ("Dep Cmd Id", "dep_cmd_id", "0", "Command id this command waits for (cmd_id_dep)."),
]
#: model columns shown only when they hold data for the sheet
OPTIONAL_SPEC = [
    ("Batch", "batch", "0", "Batch index of the command."),
]
ENGINE_SPECS = {"TIU": TIU_SPEC, "GDMA": DMA_SPEC, "SDMA": DMA_SPEC, "CDMA": DMA_SPEC}


def _spec_columns(frame: pd.DataFrame, spec: Iterable[tuple], only_if_data: bool) -> list[Column]:
    cols = []
    for header, name, fmt, note in spec:
        if name not in frame.columns:
            continue
        if only_if_data and not frame[name].notna().any():
            continue
        cols.append(column_from_series(header, frame[name], fmt, note))
    return cols


def command_columns(frame: pd.DataFrame, engine: str, registers: pd.DataFrame | None) -> list[Column]:
    """The columns of one command sheet (``frame``: that sheet's commands in global_idx order)."""
    n = len(frame)
    eid = ENGINE_IDS.get(engine)
    cols = [Column("Engine Id", "number", np.full(n, -1 if eid is None else eid, np.int64),
                   np.ones(n, bool) if eid is None else None, num_format="0",
                   note="0 TIU, 1 GDMA, 3 SDMA, 4 CDMA (the vendor's engine ids).")]
    cols += _spec_columns(frame, COMMON_SPEC, only_if_data=False)
    dur = (frame["end_ns"].to_numpy(np.int64) - frame["start_ns"].to_numpy(np.int64))
    cols.append(Column("Duration(ns)", "number", dur, num_format="#,##0", note="End - Start."))
    if engine in ENGINE_SPECS:
        cols += _spec_columns(frame, ENGINE_SPECS[engine], only_if_data=False)
    else:
        # an engine the PMU model does not know (a framework stream): show what has data
        seen: set[str] = set()
        spec = [s for s in TIU_SPEC + DMA_SPEC if not (s[1] in seen or seen.add(s[1]))]
        cols += _spec_columns(frame, spec, only_if_data=True)
    cols += _spec_columns(frame, OPTIONAL_SPEC, only_if_data=True)
    extra = [c for c in frame.columns if c not in COMMAND_COLUMNS and c not in NODE_COLUMNS
             and frame[c].notna().any()]
    cols += [column_from_series(str(c), frame[c]) for c in extra]
    if registers is not None and len(registers.columns):
        regs = registers.reindex(frame.index)
        taken = {c.header for c in cols}
        for name in register_order(list(regs.columns)):
            s = regs[name]
            if not s.notna().any():
                continue  # this engine's table covers other cores too
            header = str(name) if str(name) not in taken else f"{name} (reg)"
            col = column_from_series(header, s, None, _register_note(str(name), regs.columns))
            col.printed = False
            cols.append(col)
    return cols


#: the split fields a full address is composed of: (low 32 bits, high bits)
ADDRESS_PARTS = ("_l32", "_h13")


def _is_full_address(name, names) -> bool:
    return f"{name}{ADDRESS_PARTS[0]}" in names and f"{name}{ADDRESS_PARTS[1]}" in names


def register_order(names: list) -> list:
    """Register fields in table order, except that a full address the decoder composed
    (``src_start_addr`` = ``src_start_addr_h13`` << 32 | ``src_start_addr_l32``) comes just
    before its low part instead of at the end."""
    full = {n for n in names if _is_full_address(n, names)}
    out = []
    for name in names:
        base = str(name)[:-len(ADDRESS_PARTS[0])] if str(name).endswith(ADDRESS_PARTS[0]) else None
        if base in full:
            out.append(base)
        if name not in full:
            out.append(name)
    return out


def _register_note(name: str, names) -> str:
    if _is_full_address(name, names):
        low, high = (name + part for part in ADDRESS_PARTS)
        return (f"Full address, as the vendor shows it: ({high} << 32) + {low}; bits 44..40 are "
                "the memory tag (below 30 DDR, 30 L2M, 31 LMEM). Decimal; =DEC2HEX(cell) shows hex.")
    return "decimal address; =DEC2HEX(cell) shows hex" if "addr" in name else ""


def table_columns(table: pd.DataFrame) -> list[Column]:
    """Columns of a generic extra table (``profile.tables``): its index too when it is named."""
    if not isinstance(table.index, pd.RangeIndex) or table.index.name is not None:
        table = table.reset_index()
    return [column_from_series(str(c), table[c]) for c in table.columns]



#: every number format a command sheet can use (specs, integers, register fields, none)
COMMAND_FORMATS = sorted({fmt for spec in (COMMON_SPEC, TIU_SPEC, DMA_SPEC, OPTIONAL_SPEC)
                          for _, _, fmt, _ in spec if fmt} | {"0", "#,##0"}) + [None]


def command_sheet_columns(profile: Profile, pos: np.ndarray, with_registers: bool) -> list[Column]:
    """The columns of the command sheet holding the commands at rows ``pos``."""
    frame = profile.commands.iloc[pos]
    order = np.argsort(frame["global_idx"].to_numpy(), kind="stable")
    frame = frame.iloc[order]
    engine = str(frame["engine"].iloc[0])
    regs = profile.registers.get(engine) if with_registers else None
    columns = command_columns(frame, engine, regs)
    if not profile.meta.is_pmu:      # trace clock: typed relative ns, no cycle column
        columns = framework_columns(profile, frame, columns)
    if profile.layer_view is not None and engine in ("TIU", "GDMA"):
        columns[FREEZE_COLS + 2:FREEZE_COLS + 2] = layer_columns(profile, pos[order])  # beside Kernel
    return columns
