"""Decoded traces -> Profile: host slices with their call trees into ``host``, device work
into ``commands`` (core = the device, or the rank of the trace), allocator events into
``memory_events`` and CANN/MindSpore "Step Trace" lanes into ``source_tables``."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.model import Meta, Profile, empty_commands, finalize_commands
from reportgen.parsers.chrome.classify import (ASCEND_SYNC_TASKS, DEVICE_MARKER_CATS,
                                               DEVICE_PROCESSES, DEVICE_WAIT_CATS,
                                               HOST_ROLES, DEVICE_PROCESS_NAME_NUM, PID_DEVICE_LABEL,
                                               classify, per_unique, role_category)
from reportgen.parsers.chrome.device_props import capacities
from reportgen.parsers.chrome.events import TraceData
from reportgen.parsers.chrome.link import Forest, host_tree, link_devices, track_of


def arg_column(args: pd.Series, *keys: str) -> pd.Series:
    """First present key of each args dict (alternative spellings tried in order only where
    the earlier ones are missing).  Inline comprehensions: this runs once per event."""
    arr = args.to_numpy()
    first = keys[0]
    out = [a.get(first) if type(a) is dict else None for a in arr]
    for k in keys[1:]:
        miss = [i for i, v in enumerate(out) if v is None]
        if not miss:
            break
        for i in miss:
            a = arr[i]
            if type(a) is dict:
                out[i] = a.get(k)
    return pd.Series(out, index=args.index, dtype=object)


def int_ids(s: pd.Series) -> pd.Series:
    """Link ids (correlation, External id, flow id) as Int64; strings of digits accepted.  An
    id that is not finite or does not fit int64 is missing (it would wrap onto another id)."""
    f = pd.to_numeric(s, errors="coerce").astype("Float64")
    return f.where(f.abs() < 2.0 ** 63).round().astype("Int64")


def build_profile(traces: list[TraceData], cores: list[int | None] | None = None,
                  source: str = "chrome", input_path: str = "") -> Profile:
    """Profile from one or several decoded traces; trace i's device work goes to ``cores[i]``
    (a rank) or, when None, to the device index the trace gives."""
    meta = Meta(source=source, input_path=input_path or (traces[0].path if traces else ""))
    cores = cores if cores is not None else [None] * len(traces)
    host_parts, dev_parts, mem_parts, annotation_parts = [], [], [], []
    for fi, (data, core) in enumerate(zip(traces, cores)):
        for code, msg in data.warnings:
            meta.warn(code, msg, data.path)
        h, d, m, counts, a = _split_trace(data, fi, core, meta)
        annotation_parts.append(a)
        meta.accounting[Path(data.path).name if len(traces) == 1 else f"{fi}:{Path(data.path).name}"] = counts
        host_parts.append(h)
        dev_parts.append(d)
        mem_parts.append(m)
    host = pd.concat(host_parts, ignore_index=True) if host_parts else pd.DataFrame()
    dev = pd.concat(dev_parts, ignore_index=True) if dev_parts else pd.DataFrame()
    flows = pd.concat([_flows(t, fi) for fi, t in enumerate(traces)], ignore_index=True) \
        if traces else pd.DataFrame()
    mem = pd.concat(mem_parts, ignore_index=True) if mem_parts else pd.DataFrame()

    host, forest = host_tree(host, meta)
    dev = link_devices(host, dev, flows, forest, meta)
    commands = _commands(dev, host)
    host_out = host.drop(columns=["_track", "_file"])
    profile = Profile(commands=commands, host=host_out, meta=meta)
    if len(mem):
        profile.memory_events = _memory(mem, host, forest)
    if any(len(a) for a in annotation_parts):
        profile.device_annotations = pd.concat(annotation_parts, ignore_index=True)
    steps = _step_trace(traces)
    if len(steps):
        profile.source_tables["Step Trace"] = steps
    meta.num_cores = int(commands["core"].nunique()) if len(commands) else 0
    memory = capacities(traces, cores)     # deviceProperties: what each device holds
    if memory:
        meta.arch["device_memory_bytes"] = memory
    if not len(commands) and not len(host_out) and not len(steps):
        meta.warn("empty-trace", "no slices found in the trace", meta.input_path)
    return profile


#: device ids accepted from a trace (args "device", a "GPU n" label, a small pid)
MAX_DEVICE_ID = 4095


def _device_ids(values: pd.Series) -> pd.Series:
    """Numbers that can be a device index (0..MAX_DEVICE_ID, whole); anything else missing."""
    v = pd.to_numeric(values, errors="coerce")
    return v.where(v.between(0, MAX_DEVICE_ID) & (v % 1 == 0))


def _split_trace(data: TraceData, fi: int, core: int | None, meta: Meta):
    ev = data.events
    role = classify(data)
    x = (ev["ph"] == "X").to_numpy()
    hmask = x & role.isin(HOST_ROLES).to_numpy()
    dmask = x & (role == "device").to_numpy()
    args = ev["args"]

    h = ev.loc[hmask, ["name", "cat", "pid", "tid", "ts_ns", "dur_ns", "args"]].copy()
    h["role"] = role[hmask].to_numpy()
    h["_file"] = fi
    h["correlation"] = int_ids(arg_column(args[hmask], "correlation", "correlation_id"))
    h["external_id"] = int_ids(arg_column(args[hmask], "External id", "external id"))
    h["rank"] = core if core is not None else 0
    # the thread's name from the trace metadata (thread_name M events), for host lanes
    codes, uniq = pd.factorize(h["pid"].astype(str) + "\x1f" + h["tid"].astype(str))
    names = {f"{p}\x1f{t}": v for (p, t), v in data.thread_names.items()}
    h["thread_name"] = np.array([names.get(k) for k in uniq] + [None], dtype=object)[codes]

    d = ev.loc[dmask, ["name", "cat", "pid", "tid", "ts_ns", "dur_ns", "args"]].copy()
    d["_file"] = fi
    da = args[dmask]
    d["correlation"] = int_ids(arg_column(da, "correlation"))
    d["external_id"] = int_ids(arg_column(da, "External id", "external id"))
    tn = pd.Series([data.thread_names.get(k) for k in zip(d["pid"], d["tid"])], index=d.index,
                   dtype=object)
    stream = arg_column(da, "stream", "Stream Id")
    engine = tn.where(tn.notna() & (tn != ""),
                      ("stream " + stream.astype(str)).where(stream.notna(), "tid " + d["tid"].astype(str)))
    pname = d["pid"].map(data.process_names).astype(object).fillna("").astype(str)
    hccl = pname.str.lower() == "hccl"
    engine = engine.where(~hccl, "HCCL " + engine.astype(str))
    d["engine"] = engine.astype(str).str.strip()
    d["stream"] = stream
    if core is None:
        given = arg_column(da, "device")
        devid = _device_ids(given)
        odd = given.notna() & devid.isna()
        if odd.any():
            meta.warn("bad-device-id", f"{int(odd.sum())} device events give an args 'device' "
                                       f"that is no device index (0..{MAX_DEVICE_ID}); placed by "
                                       "their process instead", data.path)
        label = d["pid"].map(data.process_labels).astype(object).fillna("").astype(str).str.extract(
            PID_DEVICE_LABEL)[0]
        # a process named "TPU 1" says its device too
        named = pname.str.extract(DEVICE_PROCESS_NAME_NUM)[0]
        label = label.fillna(named)
        small_pid = _device_ids(d["pid"])
        # Ascend/CANN pids are synthetic; a device label or the args say which device
        is_ascend = pname.str.lower().isin(DEVICE_PROCESSES)
        small_pid = small_pid.where(~is_ascend)
        d["core"] = devid.fillna(_device_ids(label)).fillna(small_pid).fillna(0)
    else:
        d["core"] = core
    cat = pd.Series(per_unique(d["cat"], role_category), index=d.index)
    task = arg_column(da, "Task Type", "task type").astype(object)
    d["func_type"] = task.where(task.notna() & cat.isin(["", "none"]), d["cat"].where(d["cat"] != "", pname))
    task_upper = task.astype(str).str.upper()
    # CANN's HCCL process repeats, per plane, the tasks its Ascend Hardware streams run (and one
    # "Communication Kernel" slice spanning them): a view, counted once on the streams
    hccl_view = hccl.to_numpy() & (pname.str.lower() == "ascend hardware").any()
    kind = pd.Series(np.select([cat.isin(DEVICE_WAIT_CATS).to_numpy(), cat.isin(DEVICE_MARKER_CATS).to_numpy(),
                                hccl_view, task_upper.isin(ASCEND_SYNC_TASKS).to_numpy()],
                               [cat.to_numpy(object), cat.to_numpy(object),
                                np.full(len(d), "HCCL plane view", object), task_upper.to_numpy(object)], ""),
                     index=d.index)
    d["is_sys"] = (kind != "").to_numpy()
    _count_non_work(kind[kind != ""], meta, data.path)
    d["sys_wait"] = cat.isin(DEVICE_WAIT_CATS).to_numpy() | task_upper.str.contains("WAIT").to_numpy()
    nbytes = pd.to_numeric(arg_column(da, "bytes", "size"), errors="coerce")
    d["bytes"] = nbytes.where(cat.isin(["gpu_memcpy", "memcpy", "gpu_memset", "memset"]))
    d["grid"] = _dims(arg_column(da, "grid"))
    d["block"] = _dims(arg_column(da, "block"))

    mmask = (role == "memory").to_numpy()
    m = ev.loc[mmask, ["pid", "tid", "ts_ns", "args"]].copy()
    m["_file"] = fi
    m["rank"] = core if core is not None else 0
    # records line of the summary: every event is shown as a slice or says why not
    vc = role.value_counts()
    counts = {"read": int(len(ev)), "shown": int(hmask.sum() + dmask.sum())}
    why = {"flow": "flow points (used as links)", "memory": "memory events (memory tables)",
           "counter": "counters", "instant": "instant markers", "derived": "derived/summary lanes",
           "device_annotation": "device copies of annotations", "other": "async/object/sample events"}
    for r, label in why.items():
        if vc.get(r, 0):
            counts[f"dropped: {label}"] = int(vc[r])
    return h, d, m, counts, _device_annotations(ev, role, core)


def _device_annotations(ev: pd.DataFrame, role: pd.Series, core: int | None) -> pd.DataFrame:
    """Kineto's device copies of annotations (gpu_user_annotation X slices)."""
    m = (ev["ph"] == "X").to_numpy() & (role == "device_annotation").to_numpy()
    start = ev["ts_ns"].to_numpy(np.int64)[m]
    return pd.DataFrame({"name": ev["name"].to_numpy(object)[m],
                         "rank": core if core is not None else 0,
                         "start_ns": start, "end_ns": start + ev["dur_ns"].to_numpy(np.int64)[m]})


def _count_non_work(kinds: pd.Series, meta: Meta, where: str) -> None:
    """One warning naming the device slices that are no work (syncs, waits, profiler ranges):
    shown on the timeline, kept out of kernel time, busy time and utilisation."""
    if len(kinds):
        counts = ", ".join(f"{k}: {n}" for k, n in kinds.astype(str).value_counts().items())
        meta.warn("non-work-device", f"{len(kinds)} device slices are waits, syncs or markers, "
                                     f"not work ({counts}); kept out of kernel time, busy time and "
                                     "utilisation", where)


def _step_trace(traces: list[TraceData]) -> pd.DataFrame:
    """CANN/MindSpore "Step Trace" lanes (iteration, FP/BP, refresh, reduce slices) as a table."""
    parts = []
    for data in traces:
        ev = data.events
        names = list(data.thread_names.values()) + list(data.process_names.values())
        if ev.empty or not any(n.startswith("Step Trace") for n in names):
            continue
        tnames = {f"{p}\x1f{t}": v for (p, t), v in data.thread_names.items()}
        lane = pd.Series(per_unique(ev["pid"].astype(str) + "\x1f" + ev["tid"].astype(str),
                                    lambda k: tnames.get(k, "")), index=ev.index)
        pname = pd.Series(per_unique(ev["pid"], lambda p: data.process_names.get(p, "")), index=ev.index)
        m = (ev["ph"] == "X").to_numpy() & (lane.str.startswith("Step Trace") |
                                            pname.str.startswith("Step Trace")).to_numpy()
        if m.any():
            parts.append(pd.DataFrame({"Name": ev["name"][m].to_numpy(), "Category": ev["cat"][m].to_numpy(),
                                       "Start (ns)": ev["ts_ns"][m].to_numpy(),
                                       "Duration (us)": ev["dur_ns"][m].to_numpy() / 1e3}))
    return pd.concat(parts, ignore_index=True).sort_values("Start (ns)", kind="stable") \
        .reset_index(drop=True) if parts else pd.DataFrame()


def _dims(values: pd.Series) -> pd.Series:
    """Kernel grid/block lists as text ("[32, 1, 1]"), other values unchanged."""
    return pd.Series([str(v) if type(v) is list else v for v in values.to_numpy()],
                     index=values.index, dtype=object)


def _flows(data: TraceData, fi: int) -> pd.DataFrame:
    ev = data.events
    f = ev[np.isin(ev["ph"].to_numpy(), ["s", "t", "f"])]
    out = f[["ph", "cat", "pid", "tid", "ts_ns", "id", "bp"]].copy()
    out["_file"] = fi
    out["flow_id"] = out["id"].astype(str)
    return out


def _commands(dev: pd.DataFrame, host: pd.DataFrame) -> pd.DataFrame:
    if dev.empty:
        return empty_commands()
    dev = dev.sort_values(["core", "engine", "ts_ns"], kind="stable").reset_index(drop=True)
    start = dev["ts_ns"].to_numpy(np.int64)
    end = start + dev["dur_ns"].to_numpy(np.int64)
    core = dev["core"].astype(np.int64).to_numpy()
    engine = dev["engine"].astype(str)
    sheet = engine + "_" + pd.Series(core).astype(str)
    gidx = pd.Series(np.arange(len(dev))).groupby(sheet.to_numpy()).cumcount().to_numpy()
    op_row = dev["op_row"].to_numpy(np.int64)
    hnames = host["name"].to_numpy(object) if len(host) else np.empty(0, object)
    kernel = np.where(op_row >= 0, hnames[np.maximum(op_row, 0)] if len(hnames) else None, None)
    frame = pd.DataFrame({
        "core": core, "engine": engine.to_numpy(), "sheet": sheet.to_numpy(),
        "global_idx": gidx, "cmd_id": gidx + 1, "start_ns": start, "end_ns": end,
        # traces carry no cycle counter: the trace clock is 1 GHz (ns)
        "cycles": end - start,
        "func_type": dev["func_type"].astype(object).to_numpy(),
        "func_name": dev["name"].astype(str).to_numpy(),
        "is_sys": dev["is_sys"].to_numpy(bool), "sys_wait": dev["sys_wait"].to_numpy(bool),
        "kernel": kernel, "bytes": dev["bytes"].to_numpy(),
    })
    out = finalize_commands(frame)
    out["correlation"] = dev["correlation"].to_numpy()
    out["external_id"] = dev["external_id"].to_numpy()
    out["launch_row"] = dev["launch_row"].to_numpy(np.int64)
    out["op_row"] = op_row
    out["stream"] = dev["stream"].to_numpy()
    out["grid"] = dev["grid"].to_numpy()
    out["block"] = dev["block"].to_numpy()
    out["args"] = dev["args"].to_numpy()
    for extra in ("core_type", "op_type", "block_dim", "input_shapes"):
        if extra in dev.columns:
            out[extra] = dev[extra].to_numpy()
    return out


def _memory(mem: pd.DataFrame, host: pd.DataFrame, forest: Forest) -> pd.DataFrame:
    """``[memory]`` instants with the op (innermost framework op on its thread) they happened in."""
    a = mem["args"]
    out = pd.DataFrame({
        "rank": mem["rank"].to_numpy(),
        "ts_ns": mem["ts_ns"].to_numpy(np.int64),
        "device_type": pd.to_numeric(arg_column(a, "Device Type"), errors="coerce").to_numpy(),
        "device_id": pd.to_numeric(arg_column(a, "Device Id"), errors="coerce").to_numpy(),
        "addr": pd.to_numeric(arg_column(a, "Addr"), errors="coerce").to_numpy(),
        "bytes": pd.to_numeric(arg_column(a, "Bytes"), errors="coerce").to_numpy(),
        "total_allocated": pd.to_numeric(arg_column(a, "Total Allocated"), errors="coerce").to_numpy(),
        "total_reserved": pd.to_numeric(arg_column(a, "Total Reserved"), errors="coerce").to_numpy(),
    })
    qt = track_of(mem, forest.track_codes)
    row = forest.enclosing_row(qt, out["ts_ns"].to_numpy(np.int64))
    op = np.where(row >= 0, host["op_row"].to_numpy()[np.maximum(row, 0)] if len(host) else -1, -1)
    out["op_row"] = op
    return out.sort_values("ts_ns", kind="stable").reset_index(drop=True)
