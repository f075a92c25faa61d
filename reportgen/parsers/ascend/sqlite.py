"""msprof / torch_npu SQLite exports (``msprof_*.db``, ``ascend_pytorch_profiler[_{r}].db``) read
with the standard library's :mod:`sqlite3` into the same model as the CSV path.

Schema (msprof "export db" reference; names are ids into ``STRING_IDS(id, value)``):
``TASK(startNs, endNs, deviceId, connectionId, globalTaskId, globalPid, taskType, contextId,
streamId, taskId, modelId)`` - every device task; ``COMPUTE_TASK_INFO(name, globalTaskId,
blockDim, mixBlockDim, taskType, opType, inputFormats, inputDataTypes, inputShapes,
outputFormats, outputDataTypes, outputShapes, ...)``; ``COMMUNICATION_TASK_INFO(name,
globalTaskId, taskType, planeId, groupName, ..., srcRank, dstRank, transportType, size, ...)``;
``COMMUNICATION_OP(opName, startNs, endNs, connectionId, groupName, opId, ..., opType)``.

A kernel is a TASK row with a COMPUTE_TASK_INFO row (core type = its taskType, e.g. AI_CORE);
a TASK row with a COMMUNICATION_TASK_INFO row is a communication task (core type
``COMMUNICATION``, lane ``HCCL Plane N``: busy time of its lane, ``lane_busy``, but no kernel);
any other TASK row is a runtime task (core type
``RUNTIME``, e.g. EVENT_RECORD) - device time that is not kernel work (``is_sys``).
Times are integer ns (no conversion).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.errors import InputError
from reportgen.model import Meta, VendorOutput
from reportgen.parsers import limits
from reportgen.parsers.ascend.commands import finish_commands

#: COMPUTE_TASK_INFO string columns -> the kernel_details.csv column names
COMPUTE_TEXT = {"name": "Name", "opType": "Type", "taskType": "Accelerator Core",
                "inputShapes": "Input Shapes", "inputDataTypes": "Input Data Types",
                "inputFormats": "Input Formats", "outputShapes": "Output Shapes",
                "outputDataTypes": "Output Data Types", "outputFormats": "Output Formats"}


def _connect(db: Path) -> sqlite3.Connection:
    limits.check_file(db, limits.current(None))
    with open(db, "rb") as f:
        if f.read(16) != b"SQLite format 3\x00":
            raise InputError(str(db), "not an SQLite database")
    try:
        con = sqlite3.connect(f"file:{db.resolve().as_posix()}?mode=ro", uri=True)
        con.execute("SELECT name FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError as exc:
        raise InputError(str(db), f"unreadable SQLite database ({exc})") from None
    return con


def _tables(con: sqlite3.Connection) -> dict[str, set[str]]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {n: {r[1] for r in con.execute(f'PRAGMA table_info("{n}")')} for n in names}


def _query(con, sql: str) -> pd.DataFrame:
    return pd.read_sql_query(sql, con)


def load_db_rank(db: Path, rank: int, meta: Meta
                 ) -> tuple[pd.DataFrame, pd.DataFrame | None, VendorOutput, None]:
    """One DB export -> (commands, no host operators, vendor tables, no memory events)."""
    con = _connect(db)
    try:
        return _read(con, db, rank, meta)
    except sqlite3.DatabaseError as exc:
        raise InputError(str(db), f"unexpected SQLite content ({exc})") from None
    finally:
        con.close()


def _read(con, db: Path, rank: int, meta: Meta):
    tables = _tables(con)
    need = {"startNs", "endNs", "globalTaskId", "taskType", "streamId"}
    if "TASK" not in tables or not need <= tables["TASK"]:
        raise InputError(str(db), "SQLite export without a TASK table (startNs, endNs, globalTaskId, "
                                  "taskType, streamId)")
    strings = dict(con.execute("SELECT id, value FROM STRING_IDS").fetchall()) \
        if "STRING_IDS" in tables else {}
    text = lambda s: s.map(lambda v: strings.get(v, v) if v is not None else None)
    task = _query(con, "SELECT rowid AS row, startNs, endNs, globalTaskId, taskType, streamId FROM TASK")
    compute = _query(con, "SELECT * FROM COMPUTE_TASK_INFO") if "COMPUTE_TASK_INFO" in tables else pd.DataFrame()
    comm = _query(con, "SELECT * FROM COMMUNICATION_TASK_INFO") if "COMMUNICATION_TASK_INFO" in tables \
        else pd.DataFrame()
    is_kernel = task["globalTaskId"].isin(compute["globalTaskId"]) if len(compute) else \
        pd.Series(False, index=task.index)
    is_comm = ~is_kernel & (task["globalTaskId"].isin(comm["globalTaskId"]) if len(comm) else False)
    kernels = task[is_kernel].merge(compute.drop(columns=["taskType"], errors="ignore")
                                    .assign(coreType=compute.get("taskType")),
                                    on="globalTaskId", how="left").drop_duplicates("row")
    comms = task[is_comm].merge(comm.rename(columns={"taskType": "commType"}), on="globalTaskId",
                                how="left").drop_duplicates("row")
    runtime = task[~is_kernel & ~is_comm]
    parts = []
    if len(kernels):
        core = text(kernels["coreType"])
        parts.append(pd.DataFrame({
            "engine": "Stream " + kernels["streamId"].astype(str), "start_ns": kernels["startNs"],
            "end_ns": kernels["endNs"], "func_type": core, "func_name": text(kernels["name"]),
            "core_type": core, "op_type": text(kernels["opType"]) if "opType" in kernels else None,
            "block_dim": kernels.get("blockDim", np.nan), "is_sys": False, "sys_wait": False}))
    if len(comms):
        plane = comms["planeId"].astype(str) if "planeId" in comms else "0"
        parts.append(pd.DataFrame({
            "engine": "HCCL Plane " + plane, "start_ns": comms["startNs"], "end_ns": comms["endNs"],
            "func_type": text(comms["commType"]), "func_name": text(comms["name"]),
            "core_type": "COMMUNICATION", "op_type": text(comms["commType"]), "block_dim": np.nan,
            "is_sys": True, "lane_busy": True, "sys_wait": False}))
    if len(runtime):
        kind = text(runtime["taskType"])
        parts.append(pd.DataFrame({
            "engine": "Stream " + runtime["streamId"].astype(str), "start_ns": runtime["startNs"],
            "end_ns": runtime["endNs"], "func_type": kind, "func_name": kind, "core_type": "RUNTIME",
            "op_type": kind, "block_dim": np.nan, "is_sys": True,
            "sys_wait": kind.astype(str).str.contains("WAIT").to_numpy()}))
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if "lane_busy" in rows.columns:
        rows["lane_busy"] = rows["lane_busy"].fillna(False).astype(bool)
    bad = (rows["end_ns"] < rows["start_ns"]) if len(rows) else pd.Series(dtype=bool)
    if bad.any():
        meta.warn("bad-times", f"{int(bad.sum())} TASK rows end before they start; dropped", str(db))
        rows = rows[~bad]
    vendor = VendorOutput()
    if len(kernels):
        details = pd.DataFrame({label: text(kernels[c]) if c in kernels else None
                                for c, label in COMPUTE_TEXT.items()})
        details["Duration (us)"] = (kernels["endNs"] - kernels["startNs"]).to_numpy() / 1e3
        details["Block Dim"] = kernels.get("blockDim", np.nan)
        details["Mix Block Dim"] = kernels.get("mixBlockDim", np.nan)
        vendor.kernel_details = details.reset_index(drop=True)
    if "COMMUNICATION_OP" in tables:
        ops = _query(con, "SELECT * FROM COMMUNICATION_OP")
        if len(ops):
            vendor.tables["Communication Ops"] = pd.DataFrame({
                "Operator": text(ops["opName"]), "Type": text(ops.get("opType", ops["opName"])),
                "Group": text(ops["groupName"]) if "groupName" in ops else None,
                "Start (ns)": ops["startNs"], "Duration (us)": (ops["endNs"] - ops["startNs"]) / 1e3})
    if rows.empty:
        from reportgen.model import empty_commands
        return empty_commands(), None, vendor, None
    rows = rows.assign(core=rank)
    rows["start_ns"] = rows["start_ns"].astype(np.int64)
    rows["end_ns"] = rows["end_ns"].astype(np.int64)
    rows["engine"] = rows["engine"].astype(str)
    rows["core"] = rows["core"].astype(np.int64)
    return finish_commands(rows, None), None, vendor, None
