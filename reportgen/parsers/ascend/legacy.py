"""Legacy MindSpore (≤ 2.2) ``profiler/`` / ``profiler_data/rank_N/profiler`` folders and CANN
``PROF_*`` folders (framework-traces.md §3.4, §4).  The device timeline is every slice of
``*timeline_display_{r}.json`` (``msprof_*.json`` for CANN); the other files of the MindSpore
guide's list become tables (:mod:`.mindspore`), the cluster files too (:mod:`.cluster`)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.errors import InputError
from reportgen.model import Meta, Profile, VendorOutput
from reportgen.parsers import chrome as ct
from reportgen.parsers.ascend.mindspore import read_rank_files
from reportgen.parsers.ascend.layout import MS_TIMELINE, rank_id
from reportgen.parsers.ascend.commands import finish_commands
from reportgen.parsers.ascend.rank import count_communication, finish_profile
from reportgen.parsers.walk import glob_below


#: legacy MindSpore timeline processes (profiler integrator): pid -> (lane prefix, task kind);
#: any other pid of an Ascend timeline is an AI CPU / host queue lane
MS_ASCEND_PIDS = {"1": ("Stream", "AI_CORE"), "10000": ("Step trace", "STEP_TRACE")}
MS_STEP_TRACE_NAME = r"^stream_\d+_parallel_\d+"


def _mindspore_lanes(ev: pd.DataFrame, gpu: bool) -> tuple[np.ndarray, np.ndarray]:
    """Lane and task kind of each slice of a legacy MindSpore timeline: AI Core streams (pid 1),
    step-trace intervals (pid 10000, named stream_<id>_parallel_<n>: iteration markers), AI
    CPU lanes; in a GPU timeline (gpu_timeline_display_*.json), GPU kernels on stream lanes."""
    pid = ev["pid"].astype(str).to_numpy()
    tid = ev["tid"].astype(str).to_numpy()
    if gpu:
        return "GPU stream " + tid.astype(object), np.full(len(ev), "GPU_KERNEL", object)
    prefix = np.full(len(ev), "AI_CPU", object)
    kind = np.full(len(ev), "AI_CPU", object)
    for p, (lane, k) in MS_ASCEND_PIDS.items():
        prefix[pid == p], kind[pid == p] = lane, k
    steps = ev["name"].astype(str).str.match(MS_STEP_TRACE_NAME).to_numpy()
    prefix[steps], kind[steps] = "Step trace", "STEP_TRACE"
    return prefix + " " + tid, kind


def _mindspore_rank(folder: Path, r: int, rank: int, meta: Meta) -> tuple[pd.DataFrame, dict]:
    """Legacy MindSpore profiler folder, files suffixed ``_{r}``: every timeline slice is a
    device lane's slice, labelled by :func:`_mindspore_lanes`."""
    tl = [p for p in folder.iterdir() if MS_TIMELINE.match(p.name) and int(MS_TIMELINE.match(p.name).group(1)) == r]
    rows = []
    for p in tl:
        data = ct.read_trace(p)
        for code, message in data.warnings:
            meta.warn(code, message, data.path)
        ev = data.events
        ev = ev[ev["ph"] == "X"]
        args = ev["args"]
        op_type = [a.get("type") if isinstance(a, dict) else None for a in args]
        lane, kind = _mindspore_lanes(ev, gpu=p.name.startswith("gpu_"))
        step_trace = kind == "STEP_TRACE"
        if step_trace.any():
            meta.warn("non-work-device", f"{int(step_trace.sum())} step-trace intervals "
                      "(pid 10000, stream_*_parallel_*) are iteration markers, not work; kept "
                      "out of kernel time, busy time and utilisation", str(p))
        rows.append(pd.DataFrame({
            "core": rank, "engine": lane, "start_ns": ev["ts_ns"].to_numpy(np.int64),
            "end_ns": (ev["ts_ns"] + ev["dur_ns"]).to_numpy(np.int64),
            "func_type": kind, "func_name": ev["name"].astype(str).to_numpy(), "op_type": op_type,
            "core_type": kind, "is_sys": step_trace, "sys_wait": False,
        }))
    tables = read_rank_files(folder, r, meta)
    cmds = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    return cmds, tables


def kernel_details_of(cmds: pd.DataFrame, shapes: pd.DataFrame | None) -> pd.DataFrame | None:
    """The timeline's device tasks (no step-trace markers) in kernel_details.csv's columns, with
    framework_raw's shapes, data types and formats joined by op name (``MatMul-op19``)."""
    if cmds.empty:
        return None
    work = cmds[~cmds["is_sys"].to_numpy(bool)]
    out = pd.DataFrame({"Name": work["func_name"].to_numpy(), "Type": work["op_type"].to_numpy(),
                        "Accelerator Core": work["core_type"].to_numpy(),
                        "Duration (us)": (work["end_ns"] - work["start_ns"]).to_numpy() / 1e3})
    if shapes is None or shapes.empty:
        return out
    keep = shapes.drop_duplicates("Op Name").set_index("Op Name")
    for c in ("Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
              "Output Formats", "Block Dim"):
        out[c] = out["Name"].map(keep[c]).to_numpy()
    out["Type"] = out["Type"].where(out["Type"].notna(), out["Name"].map(keep["Op Type"]))
    return out


def load_mindspore_legacy(path: Path, only: Path | None = None) -> Profile:
    """``profiler/`` (single card) or ``profiler_data/`` with ``rank_N/profiler`` folders;
    ``only``: just that one timeline file (and its rank's CSVs)."""
    folders = [path] if any(MS_TIMELINE.match(p.name) for p in path.iterdir()) else \
        sorted({p.parent for p in glob_below(path, "*timeline_display_*.json")})
    meta = Meta(source="mindspore", input_path=str(path))
    parts, vendor_outputs = [], {}
    for i, folder in enumerate(folders):
        suffixes = sorted({int(MS_TIMELINE.match(p.name).group(1)) for p in folder.iterdir()
                           if MS_TIMELINE.match(p.name) and (only is None or p == only)})
        for r in suffixes:
            rank = rank_id(folder.parent if folder.name == "profiler" else folder, r) \
                if len(folders) > 1 else r
            cmds, tables = _mindspore_rank(folder, r, rank, meta)
            parts.append(cmds)
            vendor_outputs[rank] = VendorOutput(tables=tables,
                                                kernel_details=kernel_details_of(cmds, tables.get("Op Shapes")))
    if not parts:
        raise InputError(str(path), "MindSpore profiler folder without *timeline_display_*.json")
    rows = pd.concat(parts, ignore_index=True)
    rows["engine"] = rows["engine"].astype(str)
    commands = finish_commands(rows, None)
    profile = Profile(commands=commands, meta=meta, vendor_outputs=vendor_outputs)
    finish_profile(profile)
    return profile


def load_cann_prof(path: Path) -> Profile:
    """CANN ``PROF_*`` folder(s): ``device_N/timeline/msprof_*.json`` per device (core = N)."""
    dev_dirs = [p for p in glob_below(path, "device_*") if (p / "timeline").is_dir()]
    traces, cores = [], []
    for d in dev_dirs:
        m = re.search(r"device_(\d+)", d.name)
        core = int(m.group(1)) if m else len(cores)
        files = sorted((d / "timeline").glob("msprof_*.json"))
        if not files:  # older layouts: per-kind files
            files = sorted(p for p in (d / "timeline").glob("*.json")
                           if p.name.startswith(("task_time", "hccl")))
        for f in files:
            traces.append(ct.read_trace(f))
            cores.append(core)
    if not traces:  # newer CANN: exported timelines under mindstudio_profiler_output/
        for f in glob_below(path, "mindstudio_profiler_output/msprof_*.json"):
            m = re.search(r"device_(\d+)", str(f))
            traces.append(ct.read_trace(f))
            cores.append(int(m.group(1)) if m else 0)
    if not traces:
        raise InputError(str(path), "CANN PROF folder without device_*/timeline/msprof_*.json")
    profile = ct.build_profile(traces, cores, "ascend", str(path))
    profile.commands = count_communication(profile.commands, profile.meta, str(path))
    finish_profile(profile)
    return profile


