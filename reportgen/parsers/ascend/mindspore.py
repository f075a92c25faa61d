"""The files of the MindSpore profiler guide's list beside a legacy timeline (suffix ``_{r}``),
each into the table it belongs to (framework-traces.md §4; MindInsight reads them the same way):

=================================  ==============================================================
file                               table
=================================  ==============================================================
aicore_intermediate_{r}_type.csv   "Op Statistic" (execution_time in ms, as written)
aicore_intermediate_{r}_detail.csv "AI Core Ops" (per full op name, joined to framework_raw)
framework_raw_{r}.csv              "Op Shapes": task/stream id -> op, type, block dim, and every
                                   input/output's shape, data type and format from op_info
                                   (joined to the timeline's tasks by op name: Kernel Shapes)
aicpu_intermediate_{r}.csv         "AI CPU"
step_trace_raw_{r}_detail_time.csv "Steps": ticks of 10 ns (device system counter) -> ms
ascend_cluster_analyse_*_{r}.csv   "Cluster Step" (same 10 ns ticks -> ms)
hccl_raw_{r}.csv                   "Communication" (per step and per op: cost / wait in ms, link
                                   time, size and bandwidth per link type)
flops_{r}.txt, flops_summary_{r}   "FLOPs" per kernel, "FLOPs Summary"
minddata_pipeline_raw_{r}.csv,     "Input Pipeline Ops" (per dataset op: workers, output queue
pipeline_profiling_{r}.json        usage, mean throughput)
device_queue_profiling_{r}.txt /   "Input Pipeline" (per step: queue size / capacity, get / push /
dataset_iterator_profiling_{r}.txt total time in ms)
minddata_cpu_utilization_{r}.json  "Input Pipeline CPU" (mean utilisation per series, %)
parallel_strategy_{r}.json,        "Facts" rows (file, key, value)
dynamic_shape_info_{r}.json
cpu_op_*_{r}.csv, operator_memory_ "CPU Ops", "Operator Memory (MindSpore)", "CPU Memory"
{r}.csv, cpu_ms_memory_record_{r}  (read as written, numbers typed)
=================================  ==============================================================

Every file is optional; a broken one is a warning naming it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.model import Meta
from reportgen.parsers import limits
from reportgen.parsers.ascend.files import num, numeric_table, read_csv, read_json, tolerated

#: MindSpore step_trace_raw / ascend_cluster_analyse values count ticks of the device system
#: counter, 10 ns each (MindInsight divides by 1e5 to show ms)
TICKS_PER_MS = 1e5


def read_rank_files(folder: Path, r: int, meta: Meta) -> dict[str, pd.DataFrame]:
    """Every table of rank suffix ``r`` in a legacy MindSpore profiler folder (module doc)."""
    tables: dict[str, pd.DataFrame] = {}
    for pattern, reader in READERS:
        for f in sorted(folder.glob(pattern.format(r=r))):
            with tolerated(meta, f):
                for name, t in reader(f).items():
                    if t is not None and len(t):
                        tables[name] = pd.concat([tables[name], t], ignore_index=True) \
                            if name in tables else t
    if "Op Shapes" in tables and "AI Core Ops" in tables:
        shapes = tables["Op Shapes"].drop_duplicates("Full Op Name")
        tables["AI Core Ops"] = tables["AI Core Ops"].merge(
            shapes.drop(columns=["Task ID", "Stream ID", "Op Name"], errors="ignore"), on="Full Op Name",
            how="left")
    return tables


def _as_read(name: str):
    return lambda f: {name: numeric_table(read_csv(f))}


def _ticks_to_ms(name: str):
    """A CSV whose time columns count 10 ns ticks: every number but step numbers in ms."""
    def read(f: Path) -> dict[str, pd.DataFrame]:
        t = numeric_table(read_csv(f))
        for c in t.columns:
            if c != "step_num" and pd.api.types.is_numeric_dtype(t[c]):
                t[c] = t[c] / TICKS_PER_MS
        return {name: t.rename(columns={c: f"{c} (ms)" for c in t.columns if c != "step_num"})}
    return read


def _ai_core_detail(f: Path) -> dict[str, pd.DataFrame]:
    t = numeric_table(read_csv(f))
    name = "full_op_name" if "full_op_name" in t else "full_kernel_name"
    out = pd.DataFrame({"Full Op Name": t[name], "Execution Time (ms)": t["execution_time"]})
    if "execution_frequency" in t:
        out["Calls"] = t["execution_frequency"]
    return {"AI Core Ops": out}


def _framework_raw(f: Path) -> dict[str, pd.DataFrame]:
    """framework_raw: one row per graph op; op_info (JSON) -> 'Input Shapes', 'Input Data
    Types', 'Input Formats' and the output equivalents, ';'-joined in input_N order."""
    t = read_csv(f)
    cols = {k: [] for k in ("Input Shapes", "Input Data Types", "Input Formats",
                            "Output Shapes", "Output Data Types", "Output Formats")}
    for info in t["op_info"].fillna("{}"):
        try:
            d = json.loads(info)
        except ValueError:
            d = {}
        for side in ("input", "output"):
            keys = sorted((k for k in d if re.fullmatch(side + r"_\d+", k)), key=lambda k: int(k.split("_")[1]))
            parts = [d[k] if isinstance(d[k], dict) else {} for k in keys]
            label = side.capitalize()
            cols[f"{label} Shapes"].append(";".join(str(p.get("shape", "")) for p in parts))
            cols[f"{label} Data Types"].append(";".join(str(p.get("data_type", "")) for p in parts))
            cols[f"{label} Formats"].append(";".join(str(p.get("format", "")) for p in parts))
    out = pd.DataFrame({"Task ID": num(t["task_id"]), "Stream ID": num(t["stream_id"]),
                        "Full Op Name": t["full_op_name"], "Op Name": t["op_name"], "Op Type": t["op_type"],
                        "Block Dim": num(t.get("block_dim")), **cols})
    return {"Op Shapes": out}


def _hccl_raw(f: Path) -> dict[str, pd.DataFrame]:
    """hccl_raw: per step communication cost / wait (ms) and, per link type, transit time
    (ms), size (MB) and bandwidth (GB/s); per op the same per step (MindInsight's reading)."""
    t = read_csv(f)
    steps, ops = [], []
    for _, row in t.iterrows():
        step = row.get("step_num")
        rec = {"Step": step, "Operator": "(all)", "Cost (ms)": num(pd.Series([row.get("communication_cost")]))[0],
               "Wait (ms)": num(pd.Series([row.get("wait_cost")]))[0]}
        rec.update(_links(row.get("link_info")))
        steps.append(rec)
        try:
            per_op = json.loads(row.get("communication_operator_cost") or "{}")
        except ValueError:
            per_op = {}
        for op, vals in (per_op or {}).items():
            if isinstance(vals, list) and len(vals) >= 3:
                r = {"Step": step, "Operator": op, "Cost (ms)": vals[1], "Wait (ms)": vals[2]}
                r.update(_links(vals[3] if len(vals) > 3 else None))
                ops.append(r)
    return {"Communication": numeric_table(pd.DataFrame(steps + ops).astype(object))}


def _links(info) -> dict:
    """``{"src-dst": {"SDMA": [time ms, size MB, bandwidth GB/s]}}`` -> per link type sums
    (time, size) and the size-weighted bandwidth."""
    if isinstance(info, str):
        try:
            info = json.loads(info)
        except ValueError:
            info = None
    out: dict[str, float] = {}
    for pair in (info or {}).values() if isinstance(info, dict) else ():
        for kind, v in (pair or {}).items() if isinstance(pair, dict) else ():
            if isinstance(v, list) and len(v) >= 2:
                out[f"{kind} Time (ms)"] = out.get(f"{kind} Time (ms)", 0.0) + float(v[0])
                out[f"{kind} Size (MB)"] = out.get(f"{kind} Size (MB)", 0.0) + float(v[1])
    for kind in {k.split(" ")[0] for k in out}:
        time = out[f"{kind} Time (ms)"]
        out[f"{kind} Bandwidth (GB/s)"] = out[f"{kind} Size (MB)"] / time if time else np.nan
    return out


def _flops(f: Path) -> dict[str, pd.DataFrame]:
    """flops_{r}.txt: ``full_kernel_name, MFLOPs(10^6), GFLOPS(10^9), FLOPS utilization(%)``
    (header says the units; read by header)."""
    t = numeric_table(read_csv(f))
    return {"FLOPs": t}


def _flops_summary(f: Path) -> dict[str, pd.DataFrame]:
    d = read_json(f)
    return {"FLOPs Summary": pd.DataFrame([d]) if isinstance(d, dict) else None}


def _queue(f: Path) -> dict[str, pd.DataFrame]:
    """device_queue_profiling / dataset_iterator_profiling lines (MindData tracing):
    ``1 capacity step size [ts]`` = queue size at a step, ``0 kind step cost_ms [ts]`` = time
    (kind 0 get, 1 push, 2 total)."""
    limits.check_file(f, limits.current(None))
    queue, times = {}, {}
    for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
        p = line.split()
        if len(p) < 4:
            continue
        if p[0] == "1":
            queue[int(p[2])] = (int(p[1]), int(p[3]))
        elif p[0] == "0" and p[1] in ("0", "1", "2"):
            times.setdefault(int(p[2]), {})[("Get", "Push", "Total")[int(p[1])] + " Time (ms)"] = float(p[3])
    rows = [{"Step": s, "Queue Capacity": queue.get(s, (np.nan, np.nan))[0],
             "Queue Size": queue.get(s, (np.nan, np.nan))[1], **times.get(s, {})}
            for s in sorted(set(queue) | set(times))]
    out = pd.DataFrame(rows)
    if len(out):
        out["Queue Empty"] = out["Queue Size"] == 0
        out.insert(0, "Source", f.name.rsplit("_", 1)[0])
    return {"Input Pipeline": out}


def _pipeline_raw(f: Path) -> dict[str, pd.DataFrame]:
    return {"Input Pipeline Ops": numeric_table(read_csv(f))}


def _pipeline_json(f: Path) -> dict[str, pd.DataFrame]:
    """pipeline_profiling: per dataset op its mean output-queue throughput (batches/s as
    sampled) -> merged into Input Pipeline Ops by op_id (see read_rank_files)."""
    d = read_json(f)
    rows = []
    for op in d.get("op_info", []):
        q = ((op.get("metrics") or {}).get("output_queue") or {})
        tp = [x for x in q.get("throughput", []) if isinstance(x, (int, float))]
        rows.append({"op_id": op.get("op_id"), "op_type": op.get("op_type"),
                     "num_workers": op.get("num_workers"),
                     "Mean Throughput": float(np.mean(tp)) if tp else np.nan})
    return {"Input Pipeline Throughput": pd.DataFrame(rows)}


def _cpu_utilization(f: Path) -> dict[str, pd.DataFrame]:
    d = read_json(f)
    rows = []
    for scope in ("device_info", "process_info"):
        for k, v in (d.get(scope) or {}).items():
            if isinstance(v, list) and v and k.endswith("utilization"):
                rows.append({"Scope": scope.replace("_info", ""), "Series": k, "Mean (%)": float(np.mean(v)),
                             "Max (%)": float(np.max(v)), "Samples": len(v)})
    for op in d.get("op_info", []) or []:
        for k, v in ((op or {}).get("metrics") or {}).items():
            if isinstance(v, list) and v:
                rows.append({"Scope": f"op {op.get('op_id')}", "Series": k, "Mean (%)": float(np.mean(v)),
                             "Max (%)": float(np.max(v)), "Samples": len(v)})
    return {"Input Pipeline CPU": pd.DataFrame(rows)}


def _facts(f: Path) -> dict[str, pd.DataFrame]:
    """A JSON file of settings (parallel strategy, dynamic shapes) as (File, Key, Value) rows,
    nested keys joined by '.'; lists longer than 8 items are counted, not listed."""
    rows = []

    def walk(prefix, v):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(f"{prefix}.{k}" if prefix else str(k), x)
        elif isinstance(v, list) and len(v) > 8:
            rows.append((prefix, f"{len(v)} items"))
        else:
            rows.append((prefix, json.dumps(v) if isinstance(v, (list, dict)) else v))
    walk("", read_json(f))
    return {"Facts": pd.DataFrame([{"File": f.name, "Key": k, "Value": str(v)} for k, v in rows])}


#: file pattern (``{r}`` = rank suffix) -> reader, in reading order
READERS = (
    ("aicore_intermediate_{r}_type.csv", _as_read("Op Statistic")),
    ("aicore_intermediate_{r}_detail.csv", _ai_core_detail),
    ("framework_raw_{r}.csv", _framework_raw),
    ("aicpu_intermediate_{r}.csv", _as_read("AI CPU")),
    ("step_trace_raw_{r}_detail_time.csv", _ticks_to_ms("Steps")),
    ("ascend_cluster_analyse_*_{r}.csv", _ticks_to_ms("Cluster Step")),
    ("hccl_raw_{r}.csv", _hccl_raw),
    ("flops_{r}.txt", _flops),
    ("flops_summary_{r}.json", _flops_summary),
    ("minddata_pipeline_raw_{r}.csv", _pipeline_raw),
    ("pipeline_profiling_{r}.json", _pipeline_json),
    ("device_queue_profiling_{r}.txt", _queue),
    ("dataset_iterator_profiling_{r}.txt", _queue),
    ("minddata_cpu_utilization_{r}.json", _cpu_utilization),
    ("parallel_strategy_{r}.json", _facts),
    ("dynamic_shape_info_{r}.json", _facts),
    ("cpu_op_*_{r}.csv", _as_read("CPU Ops")),
    ("operator_memory_{r}.csv", _as_read("Operator Memory (MindSpore)")),
    ("cpu_ms_memory_record_{r}.txt", _as_read("CPU Memory")),
)
