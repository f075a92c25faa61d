"""Ascend outputs -> Profile: torch_npu / MindSpore ``ASCEND_PROFILER_OUTPUT`` folders, CANN
``PROF_*`` msprof timelines, legacy MindSpore ``profiler/`` folders, single card or several
ranks (framework-traces.md §3-4).

One rank is one "core".  Device tasks come from ``kernel_details.csv`` (richest: core type,
block dim, shapes) or, without it, from the "Ascend Hardware" lanes of ``trace_view.json`` /
``msprof_*.json`` / ``ascend_timeline_display_*.json``; host operators come from
``trace_view.json`` (read by :mod:`reportgen.parsers.chrome`).  The vendor's own summary
files (operator_details, op_statistic, step_trace_time, memory_record, operator_memory,
npu_module_mem, communication.json) are kept per rank as read, numbers cleaned
(``Profile.vendor_outputs``); the tables shown from them are derived in
:mod:`reportgen.analysis.framework`.

CSV quirks handled for every file (mapped by header name, never by position): trailing tabs
inside numbers, CRLF, ``N/A``, shapes wrapped in tripled quotes, optional/renamed columns.
Times are validated as in every trace (:mod:`reportgen.parsers.times`: rows with unusable
times are dropped and counted); other numbers that are infinite are missing.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.errors import InputError
from reportgen.model import Meta, Profile, VendorOutput, empty_commands, finalize_commands
from reportgen.options import MAX_INPUT_MB
from reportgen.parsers import chrome as ct
from reportgen.parsers import limits
from reportgen.parsers.times import parse_us, points, spans

APO = "ASCEND_PROFILER_OUTPUT"
#: legacy MindSpore device timelines (ascend_/gpu_ prefixes, old unprefixed name)
MS_TIMELINE = re.compile(r"^(?:ascend_|gpu_)?timeline_display_(\d+)\.json$")
MSPROF_TIMELINE = re.compile(r"^msprof_(\d+)_.*\.json$|^msprof_.*\.json$")


# ============================================================================================
# CSV helpers
# ============================================================================================
def read_csv(path: Path) -> pd.DataFrame:
    """An Ascend CSV as clean strings: headers and cells stripped of spaces/tabs/quotes,
    ``N/A`` and empty cells as missing."""
    limits.check_file(path, limits.current(None))
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True,
                         encoding="utf-8-sig")
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"not a readable CSV ({exc})") from None
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    df.columns = [str(c).strip() for c in df.columns]
    for c in df.columns:
        s = df[c].astype(str).str.strip().str.strip('"').str.strip()
        df[c] = s.where(~s.isin(["", "N/A", "NA", "nan", "None"]), None)
    return df


def num(s: pd.Series | None) -> pd.Series:
    """A column's numbers; text that is no number and infinities ("inf", "1e400") missing."""
    if s is None:
        return pd.Series(dtype=float)
    v = pd.to_numeric(s, errors="coerce")
    return v.where(np.isfinite(v.astype(np.float64)))


def col(df: pd.DataFrame, *names: str) -> pd.Series | None:
    """First column present among header variants (Block Dim / Block Num, ...)."""
    for n in names:
        if n in df.columns:
            return df[n]
    return None


def numeric_table(df: pd.DataFrame) -> pd.DataFrame:
    """Columns that are entirely numbers become numbers; the rest stays text."""
    out = df.copy()
    for c in out.columns:
        v = num(out[c])
        if v.notna().sum() == out[c].notna().sum() and out[c].notna().any():
            out[c] = v
    return out


# ============================================================================================
# discovery
# ============================================================================================
def find_rank_dirs(path: Path) -> list[Path]:
    """Folders that each hold one rank's ASCEND_PROFILER_OUTPUT (or are one)."""
    if path.name == APO:
        return [path.parent]
    if (path / APO).is_dir():
        return [path]
    found = sorted({p.parent for p in path.glob(f"*/{APO}") if p.is_dir()} |
                   {p.parent for p in path.glob(f"*/*/{APO}") if p.is_dir()})
    return found


def is_output_dir(path: Path) -> bool:
    """A bare Ascend output folder (kernel_details.csv / op_summary_*.csv / trace_view.json)."""
    return any((path / n).is_file() for n in ("kernel_details.csv", "trace_view.json",
                                              "operator_details.csv", "step_trace_time.csv")) \
        or any(path.glob("op_summary_*.csv")) or (path / "cluster_step_trace_time.csv").is_file()


def rank_id(rank_dir: Path, default: int) -> int:
    """Rank: profiler_info_{r}.json rank_id, else the name (rank_N), else the Device_id of
    kernel_details.csv (single-card runs record no rank), else default."""
    for info in sorted(rank_dir.glob("profiler_info*.json")):
        limits.check_file(info, limits.current(None))
        try:
            data = json.loads(info.read_text(encoding="utf-8"))
            r = data.get("rank_id")
            if isinstance(r, int) and r >= 0:
                return r
        except (OSError, ValueError):
            pass
        m = re.search(r"profiler_info_(\d+)\.json$", info.name)
        if m:
            return int(m.group(1))
    m = re.search(r"rank[_-]?(\d+)", rank_dir.name, re.I)
    if m:
        return int(m.group(1))
    kd = (rank_dir / APO if (rank_dir / APO).is_dir() else rank_dir) / "kernel_details.csv"
    if kd.is_file():
        try:
            head = pd.read_csv(kd, nrows=1, dtype=str, encoding="utf-8-sig")
        except (ValueError, OSError, UnicodeDecodeError):
            return default
        head.columns = [str(c).strip() for c in head.columns]
        if "Device_id" in head.columns and len(head):
            v = pd.to_numeric(head["Device_id"].str.strip(), errors="coerce").iloc[0]
            if pd.notna(v):
                return int(v)
    return default


# ============================================================================================
# one rank
# ============================================================================================
def kernel_commands(df: pd.DataFrame, rank: int, meta: Meta, path: Path) -> pd.DataFrame:
    """kernel_details.csv or op_summary_*.csv rows -> command rows (not finalized); rows whose
    times are unusable are dropped with a counted warning (:mod:`reportgen.parsers.times`)."""
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
    return out


def _finish_commands(rows: pd.DataFrame, links: pd.DataFrame | None) -> pd.DataFrame:
    """Sort, number per sheet, finalize; attach host links and Ascend columns."""
    if rows.empty:
        return empty_commands()
    rows = rows.sort_values(["core", "engine", "start_ns"], kind="stable").reset_index(drop=True)
    sheet = rows["engine"].astype(str) + "_" + rows["core"].astype(str)
    rows["sheet"] = sheet
    rows["global_idx"] = rows.groupby("sheet").cumcount()
    rows["cmd_id"] = rows["global_idx"] + 1
    rows["cycles"] = rows["end_ns"] - rows["start_ns"]  # trace clock: 1 ns
    rows["launch_row"] = -1
    rows["op_row"] = -1
    if links is not None and len(links):
        # the trace's hardware tasks carry the async_npu links; kernel_details rows are the
        # same tasks, matched by core, lane and start (the flow id is the start in ns)
        l = links.sort_values("start_ns")
        r = rows.reset_index().sort_values("start_ns")
        m = pd.merge_asof(r, l[["start_ns", "core", "engine", "launch_row", "op_row", "kernel"]],
                          on="start_ns", by=["core", "engine"], tolerance=500, direction="nearest",
                          suffixes=("_x", ""))
        m = m.set_index("index").sort_index()
        rows["launch_row"] = m["launch_row"].fillna(-1).astype(np.int64).to_numpy()
        rows["op_row"] = m["op_row"].fillna(-1).astype(np.int64).to_numpy()
        rows["kernel"] = m["kernel"].to_numpy()
    out = finalize_commands(rows)
    return out


def load_rank(rank_dir: Path, rank: int, meta: Meta
              ) -> tuple[pd.DataFrame, pd.DataFrame, VendorOutput, pd.DataFrame | None]:
    """One rank folder -> (commands, host, vendor summary files, memory events)."""
    apo = rank_dir / APO if (rank_dir / APO).is_dir() else rank_dir
    known = ("trace_view.json", "kernel_details.csv", "operator_details.csv", "op_statistic.csv",
             "step_trace_time.csv", "memory_record.csv", "operator_memory.csv", "npu_module_mem.csv",
             "communication.json", "communication_matrix.json", "api_statistic.csv")
    if not any((apo / k).is_file() for k in known) and not any(apo.glob("op_summary_*.csv")) \
            and any(apo.glob("*.db")):
        raise InputError(str(apo), "only SQLite DB exports found (not supported); export the "
                                   "profile as text (trace_view.json and CSV files)")
    vendor = VendorOutput()
    host = None
    trace_cmds = None
    memory = None
    tv = apo / "trace_view.json"
    if tv.is_file():
        data = ct.read_trace(tv)
        prof = ct.build_profile([data], [rank], "ascend", str(tv))
        meta.warnings.extend(prof.meta.warnings)
        host = prof.host
        trace_cmds = prof.commands
        memory = prof.memory_events
    kd = apo / "kernel_details.csv"
    summaries = sorted(apo.glob("op_summary_*.csv"))
    src = kd if kd.is_file() else (summaries[0] if summaries else None)
    if src is not None:
        rows = kernel_commands(read_csv(src), rank, meta, src)
        links = None
        if trace_cmds is not None and len(trace_cmds):
            links = trace_cmds[["start_ns", "core", "engine", "launch_row", "op_row", "kernel"]].copy()
            links["engine"] = links["engine"].astype(str)
            links["core"] = links["core"].astype(np.int64)
        rows["engine"] = rows["engine"].astype(str)
        rows["core"] = rows["core"].astype(np.int64)
        cmds = _finish_commands(rows, links)
    elif trace_cmds is not None:
        cmds = trace_cmds
    else:
        cmds = empty_commands()

    od = apo / "operator_details.csv"
    if od.is_file():
        vendor.operator_calls = _operator_calls(read_csv(od))
    for fname, tname in (("op_statistic.csv", "Op Statistic"), ("step_trace_time.csv", "Steps"),
                         ("api_statistic.csv", "API Statistic")):
        f = apo / fname
        if f.is_file():
            vendor.tables[tname] = numeric_table(read_csv(f))
    _read_memory_files(apo, vendor, meta)
    vendor.tables.update(_communication_tables(apo))
    return cmds, host, vendor, memory


def _operator_calls(df: pd.DataFrame) -> pd.DataFrame:
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
    })
    return out


def _read_memory_files(apo: Path, vendor: VendorOutput, meta: Meta) -> None:
    """memory_record.csv (allocator curve), operator_memory.csv (allocations per operator) and
    npu_module_mem.csv (reserved memory per component), as read."""
    mr = apo / "memory_record.csv"
    if mr.is_file():
        df = read_csv(mr)
        t = parse_us(df["Timestamp(us)"].to_numpy(object) if "Timestamp(us)" in df else [None] * len(df))
        ok, warnings = points(t, np.arange(1, len(df) + 1), unit="row", noun="rows",
                              field="Timestamp(us)")
        for code, message in warnings:
            meta.warn(code, message, str(mr))
        vendor.memory_record = pd.DataFrame({
            "Device": df.get("Device Type", pd.Series([""] * len(df))).fillna("").to_numpy(),
            "Component": df.get("Component").to_numpy(),
            "Time (ns)": t.ns,
            "Total Allocated (MB)": num(df.get("Total Allocated(MB)")).to_numpy(),
            "Total Reserved (MB)": num(df.get("Total Reserved(MB)")).to_numpy(),
        })[ok]
    om = apo / "operator_memory.csv"
    if om.is_file():
        df = read_csv(om)
        vendor.operator_memory = pd.DataFrame({
            "Name": df.get("Name"), "Size (KB)": num(df.get("Size(KB)")),
            "Duration (us)": num(df.get("Duration(us)")),
            "Total Allocated (MB)": num(df.get("Allocation Total Allocated(MB)")),
            "Device": df.get("Device Type", pd.Series([""] * len(df))).fillna("")})
    nm = apo / "npu_module_mem.csv"
    if nm.is_file():
        df = read_csv(nm)
        vendor.module_memory = pd.DataFrame({
            "Device": df.get("Device", pd.Series([""] * len(df))).fillna(""),
            "Component": df.get("Component"), "Total Reserved (MB)": num(df.get("Total Reserved(MB)"))})


def _read_json(f: Path):
    limits.check_file(f, limits.current(None))
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(str(f), f"invalid JSON ({exc})") from None


def _communication_tables(apo: Path) -> dict[str, pd.DataFrame]:
    """communication.json (time and bandwidth per op) and communication_matrix.json (per
    src-dst link) as flat tables."""
    out: dict[str, pd.DataFrame] = {}
    fm = apo / "communication_matrix.json"
    if fm.is_file():
        links = []
        for step, kinds in (_read_json(fm) or {}).items():
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
        if links:
            out["Communication Matrix"] = pd.DataFrame(links)
    f = apo / "communication.json"
    if not f.is_file():
        return out
    data = _read_json(f)
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
    if rows:
        out["Communication"] = pd.DataFrame(rows)
    return out


# ============================================================================================
# legacy MindSpore and CANN PROF_ folders
# ============================================================================================
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
    tables: dict[str, pd.DataFrame] = {}
    for pattern, tname in ((f"aicore_intermediate_{r}_type.csv", "Op Statistic"),
                           (f"step_trace_raw_{r}_detail_time.csv", "Steps"),
                           (f"aicpu_intermediate_{r}.csv", "AI CPU"),
                           (f"flops_summary_{r}.json", None)):
        f = folder / pattern
        if f.is_file() and tname:
            tables[tname] = numeric_table(read_csv(f))
    cmds = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    return cmds, tables


def load_mindspore_legacy(path: Path, only: Path | None = None) -> Profile:
    """``profiler/`` (single card) or ``profiler_data/`` with ``rank_N/profiler`` folders;
    ``only``: just that one timeline file (and its rank's CSVs)."""
    folders = [path] if any(MS_TIMELINE.match(p.name) for p in path.iterdir()) else \
        sorted({p.parent for p in path.glob("**/*timeline_display_*.json")})
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
            vendor_outputs[rank] = VendorOutput(tables=tables)
    if not parts:
        raise InputError(str(path), "MindSpore profiler folder without *timeline_display_*.json")
    rows = pd.concat(parts, ignore_index=True)
    rows["engine"] = rows["engine"].astype(str)
    commands = _finish_commands(rows, None)
    profile = Profile(commands=commands, meta=meta, vendor_outputs=vendor_outputs)
    _finish(profile)
    return profile


def load_cann_prof(path: Path) -> Profile:
    """CANN ``PROF_*`` folder(s): ``device_N/timeline/msprof_*.json`` per device (core = N)."""
    dev_dirs = sorted(p for p in path.glob("**/device_*") if (p / "timeline").is_dir())
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
        for f in sorted(path.glob("**/mindstudio_profiler_output/msprof_*.json")):
            m = re.search(r"device_(\d+)", str(f))
            traces.append(ct.read_trace(f))
            cores.append(int(m.group(1)) if m else 0)
    if not traces:
        raise InputError(str(path), "CANN PROF folder without device_*/timeline/msprof_*.json")
    profile = ct.build_profile(traces, cores, "ascend", str(path))
    _finish(profile)
    return profile


# ============================================================================================
# entry points
# ============================================================================================
def load_ascend(path: str | Path, *, max_input_mb: int = MAX_INPUT_MB) -> Profile:
    """An Ascend output folder of any supported layout -> Profile (see module doc); no file of
    it larger than ``max_input_mb`` MB (or a compressed one expanding beyond) is read."""
    with limits.bounded(max_input_mb):
        return _load_ascend(Path(path))


def _load_ascend(path: Path) -> Profile:
    if path.is_file() and MS_TIMELINE.match(path.name):
        return load_mindspore_legacy(path.parent, only=path)
    if not path.is_dir():
        raise InputError(str(path), "expected an Ascend profiler output folder")
    # torch_npu/MindSpore rank folders hold both ASCEND_PROFILER_OUTPUT and the raw PROF_*
    # data: the processed output wins
    rank_dirs = find_rank_dirs(path)
    if not rank_dirs:
        if path.name.startswith("PROF_") or any(path.glob("PROF_*/device_*/timeline")) or \
                any(path.glob("**/mindstudio_profiler_output/msprof_*.json")):
            return load_cann_prof(path)
        if any(MS_TIMELINE.match(p.name) for p in path.iterdir()) or \
                any(path.glob("rank_*/profiler")) or any(path.glob("profiler/*timeline_display_*.json")):
            return load_mindspore_legacy(path)
    if not rank_dirs and is_output_dir(path):
        rank_dirs = [path]
    if not rank_dirs:
        raise InputError(str(path), f"no {APO} folder, kernel_details.csv or trace_view.json found")
    meta = Meta(source="ascend", input_path=str(path))
    ranks = [rank_id(d, i) for i, d in enumerate(rank_dirs)]
    if len(set(ranks)) != len(ranks):
        meta.warn("rank-ids", "rank ids repeat across rank folders; numbered by folder order", str(path))
        ranks = list(range(len(rank_dirs)))
    cmd_parts, host_parts, memory_parts, vendor_outputs = [], [], [], {}
    offset = 0
    for d, r in zip(rank_dirs, ranks):
        cmds, host, vendor, memory = load_rank(d, r, meta)
        if memory is not None:
            memory_parts.append(memory)
        if host is not None and len(host):
            host = _shift_rows(host, offset)
            cmds = cmds.copy()
            for c in ("launch_row", "op_row"):
                if c in cmds.columns:
                    cmds[c] = np.where(cmds[c].to_numpy() >= 0, cmds[c].to_numpy() + offset, -1)
            offset += len(host)
            host_parts.append(host)
        cmd_parts.append(cmds)
        vendor_outputs[r] = vendor
    commands = pd.concat([c for c in cmd_parts if len(c)], ignore_index=True) if any(len(c) for c in cmd_parts) \
        else empty_commands()
    if len(commands):
        commands = commands.sort_values(["core", "engine", "start_ns"], kind="stable")
        commands = _renumber(commands)
    host = pd.concat(host_parts, ignore_index=True) if host_parts else Profile().host
    profile = Profile(commands=commands, host=host, meta=meta, vendor_outputs=vendor_outputs)
    if memory_parts:
        profile.memory_events = pd.concat(memory_parts, ignore_index=True)
    cl = next((c for c in (path / "cluster_step_trace_time.csv",
                           path / "cluster_analysis_output" / "cluster_step_trace_time.csv") if c.is_file()), None)
    if cl is not None:
        profile.source_tables["Cluster Steps"] = numeric_table(read_csv(cl))
    _finish(profile)
    return profile


def _shift_rows(host: pd.DataFrame, offset: int) -> pd.DataFrame:
    host = host.copy()
    for c in ("parent", "op_row"):
        v = host[c].to_numpy()
        host[c] = np.where(v >= 0, v + offset, -1)
    host.index = host.index + offset
    return host


def _renumber(commands: pd.DataFrame) -> pd.DataFrame:
    commands = commands.reset_index(drop=True)
    commands["global_idx"] = commands.groupby(commands["sheet"].astype(str)).cumcount().astype(np.int64)
    commands["cmd_id"] = commands["global_idx"] + 1
    return commands


def _finish(profile: Profile) -> None:
    """Core count, and a warning when nothing at all was found."""
    profile.meta.num_cores = int(profile.commands["core"].nunique()) if len(profile.commands) else 0
    no_memory = profile.memory_events is None or profile.memory_events.empty
    if profile.commands.empty and profile.host.empty and no_memory and not profile.source_tables \
            and all(v.is_empty() for v in profile.vendor_outputs.values()):
        profile.meta.warn("empty-trace", "no device tasks, host operators or tables found",
                          profile.meta.input_path)
