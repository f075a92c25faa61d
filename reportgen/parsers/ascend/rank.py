"""One rank's ``ASCEND_PROFILER_OUTPUT`` folder -> its commands (device tasks), host operators and
summary files.  Device tasks come from ``kernel_details.csv`` (richest: core type, block dim,
shapes) or, without it, from the "Ascend Hardware" lanes of ``trace_view.json``; host operators
come from ``trace_view.json`` (read by :mod:`reportgen.parsers.chrome`); a rank folder that holds
only a DB export is read by :mod:`.sqlite`.  Every file but the task source is optional: a broken
one is a warning naming it (:func:`.files.tolerated`)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.errors import InputError
from reportgen.model import Meta, Profile, VendorOutput, empty_commands
from reportgen.parsers import chrome as ct
from reportgen.parsers.ascend.commands import finish_commands
from reportgen.parsers.ascend.files import col, num, numeric_table, read_csv, tolerated
from reportgen.parsers.ascend.layout import APO, DB_EXPORT
from reportgen.parsers.ascend.levels import command_levels, host_levels, overlap_lanes
from reportgen.parsers.ascend.tables import (communication_tables, kernel_details, operator_calls,
                                             read_memory_files)
from reportgen.parsers.times import parse_us, spans

#: the summary CSVs shown as they are, and their table names
AS_READ = (("op_statistic.csv", "Op Statistic"), ("step_trace_time.csv", "Steps"),
           ("api_statistic.csv", "API Statistic"))
#: files a rank's output folder is recognised by
KNOWN = ("trace_view.json", "kernel_details.csv", "operator_details.csv", "op_statistic.csv",
         "step_trace_time.csv", "memory_record.csv", "operator_memory.csv", "npu_module_mem.csv",
         "communication.json", "communication_matrix.json", "api_statistic.csv")


def kernel_commands(df: pd.DataFrame, rank: int, meta: Meta, path: Path
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """kernel_details.csv or op_summary_*.csv rows -> (command rows, not finalized; the plugin's
    per-task columns of the same rows: :func:`.tables.kernel_details`); rows whose times are
    unusable are dropped with a counted warning (:mod:`reportgen.parsers.times`)."""
    name = col(df, "Name", "Op Name")
    start = col(df, "Start Time(us)", "Task Start Time(us)")
    dur = col(df, "Duration(us)", "Task Duration(us)")
    if name is None or start is None or dur is None:
        raise InputError("kernel_details.csv", "missing Name / Start Time(us) / Duration(us) columns")
    times = spans(parse_us(start.to_numpy(object)), parse_us(dur.to_numpy(object)),
                  np.arange(1, len(df) + 1), unit="row", noun="rows", fields=(start.name, dur.name))
    for code, message in times.warnings:
        meta.warn(code, message, str(path))
    core_type = col(df, "Accelerator Core", "Task Type")
    stream = col(df, "Stream ID")
    engine = ("Stream " + stream.astype(str)).where(stream.notna(), None) if stream is not None \
        else pd.Series([None] * len(df))
    # tasks without a stream (HCCL) get a lane named after their core type
    engine = engine.where(engine.notna(), core_type.fillna("Device") if core_type is not None else "Device")
    out = pd.DataFrame({
        "core": rank, "engine": engine.to_numpy(),
        "func_type": core_type.to_numpy() if core_type is not None else None,
        "func_name": name.to_numpy(),
        "core_type": core_type.to_numpy() if core_type is not None else None,
        "op_type": col(df, "Type", "OP Type").to_numpy() if col(df, "Type", "OP Type") is not None else None,
        "block_dim": num(col(df, "Block Dim", "Block Num")).to_numpy() if col(df, "Block Dim", "Block Num") is not None else np.nan,
        "input_shapes": col(df, "Input Shapes").to_numpy() if col(df, "Input Shapes") is not None else None,
        "step": num(col(df, "Step Id")).to_numpy() if col(df, "Step Id") is not None else np.nan,
        "wait_us": num(col(df, "Wait Time(us)", "Task Wait Time(us)")).to_numpy()
        if col(df, "Wait Time(us)", "Task Wait Time(us)") is not None else np.nan,
    })
    ft = out["func_type"].astype(object).fillna("").astype(str)
    out["is_sys"] = ft.isin(ct.ASCEND_SYNC_TASKS).to_numpy()
    out["sys_wait"] = ft.str.contains("WAIT").to_numpy()
    out = out[times.keep].reset_index(drop=True)
    out.insert(2, "start_ns", times.start)
    out.insert(3, "end_ns", times.start + times.dur)
    return out, kernel_details(df, times.keep)


def load_rank(rank_dir: Path, rank: int, meta: Meta
              ) -> tuple[pd.DataFrame, pd.DataFrame, VendorOutput, pd.DataFrame | None]:
    """One rank folder -> (commands, host, vendor summary files, memory events)."""
    apo = rank_dir / APO if (rank_dir / APO).is_dir() else rank_dir
    dbs = sorted(p for p in apo.glob("*.db") if DB_EXPORT.match(p.name))
    if not any((apo / k).is_file() for k in KNOWN) and not any(apo.glob("op_summary_*.csv")) and dbs:
        from reportgen.parsers.ascend.sqlite import load_db_rank

        with tolerated(meta, dbs[0]):
            return load_db_rank(dbs[0], rank, meta)
        return empty_commands(), None, VendorOutput(), None
    vendor = VendorOutput()
    host = trace_cmds = memory = None
    tv = apo / "trace_view.json"
    if tv.is_file():
        with tolerated(meta, tv):
            data = ct.read_trace(tv)
            prof = ct.build_profile([data], [rank], "ascend", str(tv))
            meta.warnings.extend(prof.meta.warnings)
            host, memory = prof.host, prof.memory_events
            if len(host):
                host = host.assign(level=host_levels(host, data.process_names))
            trace_cmds = count_communication(prof.commands, meta, str(tv))
            vendor.overlap_lanes = overlap_lanes(data.events, data.process_names, data.thread_names, rank)
    kd = apo / "kernel_details.csv"
    summaries = sorted(apo.glob("op_summary_*.csv"))
    src = kd if kd.is_file() else (summaries[0] if summaries else None)
    cmds = trace_cmds if trace_cmds is not None else empty_commands()
    if src is not None:
        with tolerated(meta, src):
            rows, vendor.kernel_details = kernel_commands(read_csv(src), rank, meta, src)
            links = None
            if trace_cmds is not None and len(trace_cmds):
                links = trace_cmds[["start_ns", "core", "engine", "launch_row", "op_row", "kernel"]].copy()
                links["engine"] = links["engine"].astype(str)
                links["core"] = links["core"].astype(np.int64)
            rows["engine"] = rows["engine"].astype(str)
            rows["core"] = rows["core"].astype(np.int64)
            cmds = finish_commands(rows, links)
    if len(cmds):
        cmds = cmds.assign(level=command_levels(cmds))
    od = apo / "operator_details.csv"
    if od.is_file():
        with tolerated(meta, od):
            vendor.operator_calls = operator_calls(read_csv(od))
    for fname, tname in AS_READ:
        if (apo / fname).is_file():
            with tolerated(meta, apo / fname):
                vendor.tables[tname] = numeric_table(read_csv(apo / fname))
    read_memory_files(apo, vendor, meta)
    vendor.tables.update(communication_tables(apo, meta))
    return cmds, host, vendor, memory


#: lanes of communication tasks (CANN's "HCCL" process: the op lane and its planes; DB exports'
#: "HCCL Plane N")
COMMUNICATION_LANE = r"^HCCL "


def count_communication(commands: pd.DataFrame, meta: Meta, where: str) -> pd.DataFrame:
    """Communication lanes are device busy: every slice of an HCCL lane (the communication op
    and its plane tasks, waits for peers included, as HCCL counts communication time) counts
    for busy time (``lane_busy``), so a lane's busy is the union of its slices. They stay out of
    the kernel tables (``is_sys``): the plane tasks repeat the streams' own tasks."""
    if commands.empty:
        return commands
    lane = commands["engine"].astype(str).str.contains(COMMUNICATION_LANE).to_numpy()
    if lane.any():
        commands = commands.assign(lane_busy=lane)
        meta.warn("communication-lanes", f"{int(lane.sum())} slices on HCCL lanes (communication "
                  "ops and plane tasks, waits included) count as communication busy time (each "
                  "HCCL lane's busy = the union of its slices), not as kernels", where)
    return commands


def finish_profile(profile: Profile) -> None:
    """Core count, and a warning when nothing at all was found."""
    profile.meta.num_cores = int(profile.commands["core"].nunique()) if len(profile.commands) else 0
    no_memory = profile.memory_events is None or profile.memory_events.empty
    if profile.commands.empty and profile.host.empty and no_memory and not profile.source_tables \
            and all(v.is_empty() for v in profile.vendor_outputs.values()):
        profile.meta.warn("empty-trace", "no device tasks, host operators or tables found",
                          profile.meta.input_path)
