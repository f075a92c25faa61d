"""The operator tables torch itself prints for a Kineto trace: ``key_averages()`` by name, by
name + input shapes and by name + the top N stack frames (docs/metrics.md "Torch operator
tables").

torch's events, as its profiler builds them (``_parse_kineto_results``), are every CPU slice of
the trace (framework ops, annotations, python frames, runtime calls, Kineto ``overhead``), every
device slice (kernels, copies, sets, syncs, device annotations) and the allocator events no CPU
slice holds.  Its tree (``EventList._build_tree``) nests all CPU slices of a thread (python
frames included) with torch's rule (:func:`reportgen.intervals.operator_parents`), then folds a
lone child named as its parent into the parent (``_remove_dup_nodes``).  Everything here is
whole-array work: no Python step per slice.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.call_stacks import call_stack_tables
from reportgen.analysis.calltree import first_category, nearest_ancestor, subtree_sum
from reportgen.analysis.operators import key_names
from reportgen.intervals import operator_parents
from reportgen.model import Profile

#: categories of torch's CPU events (device type CPU in its profiler)
CPU_CATS = ("cpu_op", "operator", "user_annotation", "python_function", "cuda_runtime", "runtime",
            "cuda_driver", "overhead", "mtia_runtime", "xpu_runtime", "privateuse1_runtime",
            "hip_runtime")
#: CPU events that are framework-level (linked to nothing; device work links to them)
FRONTEND_CATS = ("cpu_op", "operator", "user_annotation", "python_function", "overhead")
#: categories of torch's device events
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "cuda_sync",
               "cuda_profiler_range")
#: names torch leaves out of its events (profiler_util._filter_name)
FILTERED_NAMES = ("profiler::_record_function_enter", "profiler::_record_function_enter_new",
                  "profiler::_record_function_exit", "aten::is_leaf", "aten::output_nr",
                  "aten::_version")
#: stack frames torch drops (profiler_util._filter_stack_entry): (file part, function part)
FILTERED_FRAMES = (("autograd/__init__", "_make_grads"), ("autograd/__init__", "backward"),
                   ("torch/tensor", "backward"), ("_internal/common_utils", "prof_callable"),
                   ("_internal/common_utils", "prof_func_call"),
                   ("_internal/common_utils", "prof_meth_call"))
#: allocator device types counted as CPU memory / device memory (torch's DeviceType numbers)
CPU_MEMORY_TYPES = (0, 2, 5)
DEVICE_MEMORY_TYPES = (1, 6, 12, 20)
STACK_N = 5
STACK_SEP = " | "

#: the table columns, in order (after the key columns)
VALUE_COLUMNS = ["Self CPU %", "Self CPU (us)", "CPU total %", "CPU total (us)",
                 "CPU time avg (us)", "Self Device (us)", "Self Device %", "Device total (us)",
                 "Device time avg (us)", "CPU Mem (B)", "Self CPU Mem (B)", "Device Mem (B)",
                 "Self Device Mem (B)", "# of Calls"]


def is_kineto(profile: Profile) -> bool:
    """Whether the trace has torch's events (its categories), so these tables apply."""
    host, cmds = profile.host, profile.commands
    if len(host) and _isin(first_category(host["category"]), CPU_CATS).any():
        return True
    return bool(len(cmds)) and _isin(first_category(cmds["func_type"]), DEVICE_CATS).any()


def _isin(values: np.ndarray, wanted) -> np.ndarray:
    """Membership of object values (hashing, not numpy's sort-based isin on objects)."""
    return pd.Series(values, dtype=object).isin(wanted).to_numpy(bool)


def _ids(s: pd.Series) -> np.ndarray:
    return pd.to_numeric(s, errors="coerce").fillna(0).to_numpy(np.int64)


def function_events(profile: Profile, stack_n: int = STACK_N) -> pd.DataFrame:
    """One row per torch FunctionEvent after ``_build_tree`` (CPU slices left after the
    duplicate fold, device slices, stray allocator events) with its own numbers in ns/bytes:
    ``self_cpu``, ``cpu``, ``self_dev``, ``dev``, ``cpu_mem``, ``self_cpu_mem``, ``dev_mem``,
    ``self_dev_mem``; key columns ``name``, ``kind`` (cpu/device), ``annotation``, ``shapes``
    (as torch prints them) and ``stack`` (top ``stack_n`` frames joined by STACK_SEP)."""
    host, cmds = profile.host, profile.commands
    cat = first_category(host["category"]) if len(host) else np.empty(0, object)
    names = host["name"].astype(str).to_numpy(object) if len(host) else np.empty(0, object)
    cpu = _isin(cat, CPU_CATS) & ~_isin(names, FILTERED_NAMES)
    rows = np.flatnonzero(cpu)
    h = host.iloc[rows]
    c = cat[rows]
    start = h["start_ns"].to_numpy(np.int64)
    end = h["end_ns"].to_numpy(np.int64)
    # torch groups a trace's CPU events by thread id only (a file per rank: rank too)
    thread = pd.factorize(pd.Series(h["rank"].astype(str).to_numpy(object)) + "\x1f"
                          + h["tid"].astype(str).to_numpy(object))[0].astype(np.int64)
    order = np.lexsort((np.arange(len(rows)), -(end - start), start, thread))
    rows, c, start, end, thread = rows[order], c[order], start[order], end[order], thread[order]
    h = host.iloc[rows]
    key = key_names(h["name"])
    parent, _ = operator_parents(thread, start, end)

    # _remove_dup_nodes: a lone child named as its parent is folded into it; its children
    # become the parent's, and the parent takes over the child's kernels (not its own)
    n = len(rows)
    nchild = np.bincount(parent[parent >= 0], minlength=n)
    p0 = np.maximum(parent, 0)
    dup = (parent >= 0) & (key == key[p0]) & (nchild[p0] == 1)
    kept = ~dup
    # a kept slice's parent after the fold; a folded one's: the top of its chain
    final_parent = nearest_ancestor(parent, kept)

    # device work: durations by linked id (External id; 2021 traces: via the runtime call)
    dev_rows = np.flatnonzero(_isin(first_category(cmds["func_type"]), DEVICE_CATS)) \
        if len(cmds) else np.zeros(0, np.int64)
    use_device = len(dev_rows) > 0 or (profile.device_annotations is not None
                                       and len(profile.device_annotations) > 0)
    kern = np.zeros(n, np.int64)
    if len(dev_rows):
        d = cmds.iloc[dev_rows]
        linked = _ids(d["external_id"])
        runtime = ~_isin(c, FRONTEND_CATS)
        corr_to_ext = pd.Series(_ids(h["external_id"])[runtime], index=_ids(h["correlation"])[runtime])
        corr_to_ext = corr_to_ext[~corr_to_ext.index.duplicated()]
        via = pd.Series(_ids(d["correlation"])).map(corr_to_ext).fillna(0).to_numpy(np.int64)
        linked = np.where(linked > 0, linked, via)
        ddur = (d["end_ns"] - d["start_ns"]).to_numpy(np.int64)
        per_id = pd.Series(ddur[linked > 0]).groupby(linked[linked > 0]).sum()
        # a CPU event is frontend when linked to nothing: framework events, and runtime calls
        # without External id (their id is then their correlation, as torch has it)
        ext = _ids(h["external_id"])
        fid = np.where(runtime, _ids(h["correlation"]), ext)
        frontend = ~runtime | (ext == 0)
        kern = np.where(frontend & (fid > 0),
                        pd.Series(fid).map(per_id).fillna(0).to_numpy(np.int64), 0)
    # the top of a folded chain takes the kernels of its bottom
    bottom = np.flatnonzero(dup & (np.bincount(parent[dup], minlength=n)[np.arange(n)] == 0)) \
        if dup.any() else np.zeros(0, np.int64)
    kern_final = kern.copy()
    if len(bottom):
        kern_final[final_parent[bottom]] = kern[bottom]
    kern_final[dup] = 0

    cpu_mem, dev_mem, stray = _memory_usage(profile, h, start, end)
    dur = end - start
    fp = final_parent[kept]  # kept rows only
    pos = np.full(n, -1, np.int64)
    pos[kept] = np.arange(int(kept.sum()))
    fpk = np.where(fp >= 0, pos[np.maximum(fp, 0)], -1)
    has = fpk >= 0

    def minus_children(v):
        return v - np.bincount(fpk[has], v[has], minlength=len(fpk)).astype(np.int64)

    kd, kc, kdm = dur[kept], cpu_mem[kept], dev_mem[kept]
    dev_total = subtree_sum(fpk, kern_final[kept]).astype(np.int64) if use_device \
        else np.zeros(len(fpk), np.int64)
    kh = h.iloc[np.flatnonzero(kept)]
    stack = _stacks(kh["args"], stack_n)
    frames, frame_rows = _python_frames(np.where(kept, final_parent, -1), c == "python_function",
                                        key, stack_n)
    no_arg = (stack == "") & (c[kept] != "python_function")
    stack[no_arg] = frames[kept][no_arg]
    # the python frame slices of each level (innermost first) where they made the stack
    frame_rows = np.where(no_arg[:, None], frame_rows[kept], -1)
    out = pd.DataFrame({
        "name": key[kept], "kind": "cpu",
        "annotation": c[kept] == "user_annotation",
        "shapes": _shapes(kh["args"]), "stack": stack,
        "self_cpu": minus_children(kd), "cpu": kd,
        "self_dev": minus_children(dev_total), "dev": dev_total,
        "cpu_mem": kc, "self_cpu_mem": minus_children(kc),
        "dev_mem": kdm, "self_dev_mem": minus_children(kdm),
    })
    for k in range(frame_rows.shape[1]):     # analysis.call_stacks: calls and time per frame
        out[f"frame{k}"] = frame_rows[:, k]
        out[f"frame{k}_ns"] = np.where(frame_rows[:, k] >= 0, dur[np.maximum(frame_rows[:, k], 0)], 0)
    parts = [out]
    dev_parts = []
    if len(dev_rows):
        d = cmds.iloc[dev_rows]
        dev_parts.append(pd.DataFrame({"name": d["func_name"].astype(str).to_numpy(object),
                                       "dur": (d["end_ns"] - d["start_ns"]).to_numpy(np.int64),
                                       "annotation": False}))
    ann = profile.device_annotations
    if ann is not None and len(ann):
        dev_parts.append(pd.DataFrame({"name": key_names(ann["name"]),
                                       "dur": (ann["end_ns"] - ann["start_ns"]).to_numpy(np.int64),
                                       "annotation": True}))
    for dp in dev_parts:
        z = np.zeros(len(dp), np.int64)
        parts.append(pd.DataFrame({"name": dp["name"].to_numpy(object), "kind": "device",
                                   "annotation": dp["annotation"].to_numpy(bool),
                                   "shapes": "[]", "stack": "", "self_cpu": z, "cpu": z,
                                   "self_dev": dp["dur"].to_numpy(np.int64),
                                   "dev": dp["dur"].to_numpy(np.int64), "cpu_mem": z,
                                   "self_cpu_mem": z, "dev_mem": z, "self_dev_mem": z}))
    if len(stray):
        z = np.zeros(len(stray), np.int64)
        parts.append(pd.DataFrame({"name": "[memory]", "kind": "cpu", "annotation": False,
                                   "shapes": "[]", "stack": "", "self_cpu": z, "cpu": z,
                                   "self_dev": z, "dev": z,
                                   "cpu_mem": stray["cpu"].to_numpy(np.int64),
                                   "self_cpu_mem": stray["cpu"].to_numpy(np.int64),
                                   "dev_mem": stray["dev"].to_numpy(np.int64),
                                   "self_dev_mem": stray["dev"].to_numpy(np.int64)}))
    return pd.concat(parts, ignore_index=True)


def _memory_usage(profile: Profile, h: pd.DataFrame, start: np.ndarray, end: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Bytes of the allocator events inside each CPU event's [start, end] (bounds inclusive,
    any thread of its trace) by CPU / device memory, and the events inside none."""
    n = len(h)
    cpu_mem = np.zeros(n, np.int64)
    dev_mem = np.zeros(n, np.int64)
    mem = profile.memory_events
    if mem is None or not len(mem):
        return cpu_mem, dev_mem, pd.DataFrame({"cpu": [], "dev": []})
    nbytes = pd.to_numeric(mem["bytes"], errors="coerce").fillna(0).to_numpy(np.int64)
    dtype = pd.to_numeric(mem["device_type"], errors="coerce").fillna(-1).to_numpy(np.int64)
    mc = np.where(np.isin(dtype, CPU_MEMORY_TYPES), nbytes, 0)
    md = np.where(np.isin(dtype, DEVICE_MEMORY_TYPES), nbytes, 0)
    mts = mem["ts_ns"].to_numpy(np.int64)
    mrank = mem["rank"].astype(str).to_numpy(object)
    hrank = h["rank"].astype(str).to_numpy(object)
    stray = np.zeros(len(mem), bool)
    for r in np.unique(mrank):
        mi = np.flatnonzero(mrank == r)
        mi = mi[np.argsort(mts[mi], kind="stable")]
        t = mts[mi]
        cc = np.concatenate([[0], np.cumsum(mc[mi])])
        cd = np.concatenate([[0], np.cumsum(md[mi])])
        hi = np.flatnonzero(hrank == r)
        lo = np.searchsorted(t, start[hi], "left")
        up = np.searchsorted(t, end[hi], "right")
        cpu_mem[hi] = cc[up] - cc[lo]
        dev_mem[hi] = cd[up] - cd[lo]
        # held by some event: the latest-starting-before event reach (running max of ends)
        o = np.argsort(start[hi], kind="stable")
        s_sorted = start[hi][o]
        reach = np.maximum.accumulate(end[hi][o]) if len(o) else np.zeros(0, np.int64)
        k = np.searchsorted(s_sorted, t, "right") - 1
        held = (k >= 0) & (reach[np.maximum(k, 0)] >= t) if len(o) else np.zeros(len(t), bool)
        stray[mi[~held]] = True
    return cpu_mem, dev_mem, pd.DataFrame({"cpu": mc[stray], "dev": md[stray]})


def _python_frames(parent: np.ndarray, is_python: np.ndarray, names: np.ndarray, n: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per slice, the names of the (at most ``n``) python frames enclosing it in the tree
    ``parent``, innermost first, joined by STACK_SEP; torch's frame filter applied.  Also
    those frames' slices, one column per level (innermost first, -1: none)."""
    codes, uniq = pd.factorize(pd.Series(names, dtype=object).astype(str))
    dropped = np.array([any(a in s and b in s for a, b in FILTERED_FRAMES) for s in uniq] + [False], bool)
    ok = is_python & ~dropped[codes]
    cols, ids = [], []
    cur = nearest_ancestor(parent, ok) if n > 0 else np.full(len(parent), -1, np.int64)
    for _ in range(n):
        if not (cur >= 0).any():
            break
        cols.append(np.where(cur >= 0, names[np.maximum(cur, 0)], None))
        ids.append(cur)
        nxt = nearest_ancestor(parent, ok, np.maximum(cur, 0))
        cur = np.where(cur >= 0, nxt, -1)
    rows = np.stack(ids, axis=1) if ids else np.full((len(parent), 0), -1, np.int64)
    if not cols:
        return np.full(len(parent), "", object), rows
    return np.array([STACK_SEP.join(f for f in row if f is not None) for row in zip(*cols)], object), rows


def _shapes(args: pd.Series) -> np.ndarray:
    """Input shapes as torch prints them (``str`` of the list: ``[[5, 64], []]``)."""
    dims = [a.get("Input Dims") if type(a) is dict else None for a in args.to_numpy(object)]
    return np.array([str(d) if type(d) is list else "[]" for d in dims], dtype=object)


def _stacks(args: pd.Series, n: int) -> np.ndarray:
    """The top ``n`` frames (innermost first) of the ``Call stack`` arg, torch's filter applied."""
    def one(s):
        frames = [f for f in s.split(";") if f and
                  not any(a in f and b in f for a, b in FILTERED_FRAMES)]
        return STACK_SEP.join(frames[:n])
    vals = [a.get("Call stack") if type(a) is dict else None for a in args.to_numpy(object)]
    return np.array([one(v) if isinstance(v, str) and n > 0 else "" for v in vals], dtype=object)


def key_averages(events: pd.DataFrame, by: str = "name") -> pd.DataFrame:
    """torch's ``key_averages`` table from :func:`function_events`: ``by`` "name", "shapes"
    (name + input shapes) or "stack" (name + stack).  Rows sorted by device total, then CPU
    total; percentages as torch's ``table()`` (Self CPU % and CPU total % over the sum of Self
    CPU, Self Device % over the sum of Self Device)."""
    extra = {"name": [], "shapes": ["shapes"], "stack": ["stack"]}[by]
    keys = ["name", "kind", "annotation"] + extra
    g = events.groupby(keys, sort=False, dropna=False)
    sums = g[["self_cpu", "cpu", "self_dev", "dev", "cpu_mem", "self_cpu_mem", "dev_mem",
              "self_dev_mem"]].sum()
    calls = g.size()
    a = sums.reset_index()
    calls = calls.to_numpy()
    tot_self, tot_dev = a["self_cpu"].sum(), a["self_dev"].sum()
    out = pd.DataFrame({"Name": a["name"].to_numpy(object)})
    if by == "shapes":
        out["Input Shapes"] = a["shapes"].to_numpy(object)
    if by == "stack":
        out["Source Location"] = a["stack"].to_numpy(object)
    out["Device Type"] = np.where(a["kind"] == "cpu", "CPU", "Device")
    out["Annotation"] = a["annotation"].to_numpy(bool)
    out["Self CPU %"] = 100 * a["self_cpu"] / tot_self if tot_self else np.nan
    out["Self CPU (us)"] = a["self_cpu"] / 1e3
    out["CPU total %"] = 100 * a["cpu"] / tot_self if tot_self else np.nan
    out["CPU total (us)"] = a["cpu"] / 1e3
    out["CPU time avg (us)"] = a["cpu"] / calls / 1e3
    out["Self Device (us)"] = a["self_dev"] / 1e3
    out["Self Device %"] = 100 * a["self_dev"] / tot_dev if tot_dev else np.nan
    out["Device total (us)"] = a["dev"] / 1e3
    out["Device time avg (us)"] = a["dev"] / calls / 1e3
    out["CPU Mem (B)"] = a["cpu_mem"].to_numpy(np.int64)
    out["Self CPU Mem (B)"] = a["self_cpu_mem"].to_numpy(np.int64)
    out["Device Mem (B)"] = a["dev_mem"].to_numpy(np.int64)
    out["Self Device Mem (B)"] = a["self_dev_mem"].to_numpy(np.int64)
    out["# of Calls"] = calls.astype(np.int64)
    sort = "Device total (us)" if tot_dev else "CPU total (us)"
    return out.sort_values([sort, "CPU total (us)"], ascending=False, kind="stable") \
        .reset_index(drop=True)


def totals(events: pd.DataFrame) -> dict[str, float]:
    """torch's "Self CPU time total" and "Self <device> time total" (µs)."""
    return {"self_cpu_us": float(events["self_cpu"].sum()) / 1e3,
            "self_device_us": float(events["self_dev"].sum()) / 1e3}


def operator_tables(profile: Profile, stack_frames: int = STACK_N) -> dict[str, pd.DataFrame]:
    """The "Operators" tables of a Kineto trace: by name, by input shapes (when the trace
    recorded shapes) and by stack (when its operators carry a call stack)."""
    events = function_events(profile, stack_frames)
    out = {"Operators": key_averages(events, "name")}
    if (events["shapes"] != "[]").any():
        out["Operators by Shape"] = key_averages(events, "shapes")
    if (events["stack"] != "").any():
        out["Operators by Stack"], out["Call Stacks"] = call_stack_tables(
            events, key_averages(events, "stack"), STACK_SEP)
    return out
