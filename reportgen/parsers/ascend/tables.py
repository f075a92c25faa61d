"""One rank's ASCEND_PROFILER_OUTPUT summary files as read (numbers cleaned): operator_details,
memory_record / operator_memory / npu_module_mem, communication(.json|_matrix.json), and the
per-task columns of kernel_details.csv the NPU plugin shows (shapes, data types, formats, PMU
counters typed with their units). Tables derived from them: :mod:`reportgen.analysis.ascend`."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.model import Meta, VendorOutput
from reportgen.parsers.ascend.files import col, num, read_csv, read_json, tolerated
from reportgen.parsers.times import parse_us, points

#: kernel_details.csv text columns the plugin's Kernel view shows per task
KERNEL_TEXT = ("Name", "Type", "Accelerator Core", "Input Shapes", "Input Data Types",
               "Input Formats", "Output Shapes", "Output Data Types", "Output Formats")
#: a PMU / timing column's unit from its vendor name (first match wins): times in µs, ratios
#: 0..1, cycle counts, floating-point operation counts, percentages; kernel_details.csv states
#: µs in the header, the aic_metrics ratios are fractions (msprof op_summary reference)
PMU_UNITS = ((re.compile(r"\(us\)$"), "us"), (re.compile(r"\(%\)$"), "%"),
             (re.compile(r"(?:_ratio|_rate)$"), "ratio"), (re.compile(r"_cycles$"), "cycles"),
             (re.compile(r"_fops$"), "FLOP"), (re.compile(r"(?:_bw|_bandwidth)\(GB/s\)$"), "GB/s"))
#: leading kernel_details.csv columns that are not PMU counters
KERNEL_FIXED = set(KERNEL_TEXT) | {
    "Step Id", "Device_id", "Model ID", "Task ID", "Stream ID", "OP State", "Start Time(us)",
    "Duration(us)", "Wait Time(us)", "Block Dim", "Block Num", "Mix Block Dim", "Mix Block Num",
    "HF32 Eligible", "Context ID"}


def pmu_unit(name: str) -> str | None:
    """The unit of a kernel_details.csv PMU column, None when its name states none."""
    return next((unit for pattern, unit in PMU_UNITS if pattern.search(name)), None)


def pmu_name(name: str) -> str:
    """``aicore_time(us)`` -> ``aicore_time (us)``; ``aic_mac_ratio`` -> ``aic_mac_ratio (ratio)``."""
    unit = pmu_unit(name)
    base = re.sub(r"\((?:us|%|GB/s)\)$", "", name).strip()
    return f"{base} ({unit})" if unit else base


def kernel_details(df: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """The plugin's per-task columns of kernel_details.csv (rows kept by the time check):
    shapes, data types and formats as text, block dims, and
    every PMU column as numbers named with their unit (:func:`pmu_name`)."""
    out = pd.DataFrame(index=df.index)
    for c in KERNEL_TEXT:
        s = col(df, c, {"Name": "Op Name", "Type": "OP Type", "Accelerator Core": "Task Type"}.get(c, c))
        out[c] = s if s is not None else None          # read_csv stripped the tripled quotes
    out["Duration (us)"] = num(col(df, "Duration(us)", "Task Duration(us)"))
    out["Block Dim"] = num(col(df, "Block Dim", "Block Num"))
    out["Mix Block Dim"] = num(col(df, "Mix Block Dim", "Mix Block Num"))
    for c in df.columns:
        if c not in KERNEL_FIXED and c not in ("Op Name", "OP Type", "Task Type", "Task Start Time(us)",
                                              "Task Duration(us)", "Task Wait Time(us)"):
            out[pmu_name(c)] = num(df[c])
    return out[keep].reset_index(drop=True)


def operator_calls(df: pd.DataFrame) -> pd.DataFrame:
    """operator_details.csv, one row per framework-op call (self/total times in µs, the AI Core
    variants, and the call stack as frames joined by newlines)."""
    stack = col(df, "Call Stack")
    out = pd.DataFrame({
        "Name": df.get("Name"),
        "Input Shapes": df["Input Shapes"].fillna("").str.replace("\r", "").str.replace("\n", "")
        if "Input Shapes" in df else "",
        "host_self_us": num(col(df, "Host Self Duration(us)")),
        "host_total_us": num(col(df, "Host Total Duration(us)")),
        "device_self_us": num(col(df, "Device Self Duration(us)")),
        "device_total_us": num(col(df, "Device Total Duration(us)")),
        "device_self_aicore_us": num(col(df, "Device Self Duration With AICore(us)")),
        "device_total_aicore_us": num(col(df, "Device Total Duration With AICore(us)")),
        "Call Stack": stack.fillna("").str.replace("\r", "").str.replace(r";\s*\n", "\n", regex=True)
        .str.strip() if stack is not None else "",
    })
    return out


def read_memory_files(apo: Path, vendor: VendorOutput, meta: Meta) -> None:
    """memory_record.csv (allocator curve), operator_memory.csv (one row per allocation) and
    npu_module_mem.csv (reserved memory per component), as read; a broken one is a warning."""
    for name, read in (("memory_record.csv", _memory_record), ("operator_memory.csv", _operator_memory),
                       ("npu_module_mem.csv", _module_memory)):
        if (apo / name).is_file():
            with tolerated(meta, apo / name):
                read(apo / name, vendor, meta)


def _memory_record(mr: Path, vendor: VendorOutput, meta: Meta) -> None:
    df = read_csv(mr)
    t = parse_us(df["Timestamp(us)"].to_numpy(object) if "Timestamp(us)" in df else [None] * len(df))
    ok, warnings = points(t, np.arange(1, len(df) + 1), unit="row", noun="rows", field="Timestamp(us)")
    for code, message in warnings:
        meta.warn(code, message, str(mr))
    vendor.memory_record = pd.DataFrame({
        "Device": df.get("Device Type", pd.Series([""] * len(df))).fillna("").to_numpy(),
        "Component": df["Component"].to_numpy(),
        "Time (ns)": t.ns,
        "Total Allocated (MB)": num(df.get("Total Allocated(MB)")).to_numpy(),
        "Total Reserved (MB)": num(df.get("Total Reserved(MB)")).to_numpy(),
    })[ok]


def _operator_memory(om: Path, vendor: VendorOutput, meta: Meta) -> None:
    df = read_csv(om)
    vendor.operator_memory = pd.DataFrame({
        "Name": df["Name"], "Size (KB)": num(df.get("Size(KB)")),
        "Allocation Time (us)": num(df.get("Allocation Time(us)")),
        "Release Time (us)": num(df.get("Release Time(us)")),
        "Duration (us)": num(df.get("Duration(us)")),
        "Total Allocated (MB)": num(df.get("Allocation Total Allocated(MB)")),
        "Total Reserved (MB)": num(df.get("Allocation Total Reserved(MB)")),
        "Device": df.get("Device Type", pd.Series([""] * len(df))).fillna("")})


def _module_memory(nm: Path, vendor: VendorOutput, meta: Meta) -> None:
    df = read_csv(nm)
    vendor.module_memory = pd.DataFrame({
        "Device": df.get("Device", pd.Series([""] * len(df))).fillna(""),
        "Component": df["Component"],
        "Time (us)": num(df.get("Timestamp(us)")),
        "Total Reserved (MB)": num(df.get("Total Reserved(MB)"))})


def communication_tables(apo: Path, meta: Meta) -> dict[str, pd.DataFrame]:
    """communication.json (time and bandwidth per op) and communication_matrix.json (per
    src-dst link) as flat tables; a broken file is a warning."""
    out: dict[str, pd.DataFrame] = {}
    for name, table, read in (("communication_matrix.json", "Communication Matrix", _matrix),
                              ("communication.json", "Communication", _communication)):
        if (apo / name).is_file():
            with tolerated(meta, apo / name):
                t = read(apo / name)
                if len(t):
                    out[table] = t
    return out


def _matrix(fm: Path) -> pd.DataFrame:
    links = []
    for step, kinds in (read_json(fm) or {}).items():
        for kind, ops in (kinds or {}).items() if isinstance(kinds, dict) else ():
            for op, pairs in (ops or {}).items() if isinstance(ops, dict) else ():
                for pair, info in (pairs or {}).items() if isinstance(pairs, dict) else ():
                    if isinstance(info, dict):
                        src, _, dst = str(pair).partition("-")
                        links.append({"Step": step, "Kind": kind, "Operator": op, "Src Rank": src,
                                      "Dst Rank": dst, "Transport": info.get("Transport Type"),
                                      "Size (MB)": info.get("Transit Size(MB)"),
                                      "Time (ms)": info.get("Transit Time(ms)"),
                                      "Bandwidth (GB/s)": info.get("Bandwidth(GB/s)")})
    return pd.DataFrame(links)


def _communication(f: Path) -> pd.DataFrame:
    data = read_json(f)
    rows = []
    for step, kinds in (data or {}).items():
        if not isinstance(kinds, dict):
            continue
        for kind, ops in kinds.items():
            if not isinstance(ops, dict):
                continue
            for op, info in ops.items():
                t = (info or {}).get("Communication Time Info", {}) or {}
                row = {"Step": step, "Kind": kind, "Operator": op}
                for k in ("Start Timestamp(us)", "Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)",
                          "Synchronization Time(ms)", "Idle Time(ms)", "Wait Time Ratio",
                          "Synchronization Time Ratio"):
                    row[k] = t.get(k)
                for link, bw in ((info or {}).get("Communication Bandwidth Info", {}) or {}).items():
                    if isinstance(bw, dict):
                        row[f"{link} Size (MB)"] = bw.get("Transit Size(MB)")
                        row[f"{link} Bandwidth (GB/s)"] = bw.get("Bandwidth(GB/s)")
                rows.append(row)
    return pd.DataFrame(rows)


