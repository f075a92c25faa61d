"""The NPU plugin's and MindSpore's tables that the vendor files allow beyond what they state
(docs/metrics.md "Ascend and MindSpore tables"), derived once from ``Profile.vendor_outputs``:

* ``Operators`` gains the plugin's AI Core columns: **AI Cores Eligible** (Yes when any call
  of the group ran device time on AI Core), **AI Cores Self (%)** = Σ Device Self Duration With
  AICore / Σ Device Self Duration × 100, **AI Cores Total (%)** likewise with the totals -
  sums over the group's rows of operator_details.csv; ``Operators by Call Stack`` groups the
  calls by name, input shapes and call stack;
* ``Accelerator Core Utilization``: per operator type (kernel_details.csv ``Type``) the share
  of its device time on each accelerator core type (sums to 100 % per type; an ``(all)`` type
  row set gives the shares of all device time);
* ``Kernel Shapes``: kernel_details.csv grouped by name, type, core type and every input /
  output shape, data type and format: calls, total / avg / min / max (us), block dims, and the
  mean of each PMU column (named with its unit);
* ``Memory Allocations`` (operator_memory.csv as the plugin lists it, one row per allocation)
  and ``Component Peaks`` (npu_module_mem.csv: each component's peak reserved memory per
  device and when it was reached);
* ``Rank Step Breakdown``: each rank's steps split into computation, communication (all /
  not overlapped), overlapped, free, bubble and stage time in ms, from step_trace_time.csv (µs)
  or MindSpore's ascend_cluster_analyse (10 ns ticks) - with a Rank column, the per-rank view
  a cluster user opens first;
* ``Overlap Analysis``: trace_view.json's precomputed lanes (Computing, Communication,
  Communication(Not Overlapped), Free): slices and the union of their intervals (us);
* ``Input Pipeline Summary`` (MindSpore device queue): steps, empty-queue steps, their ratio,
  and the verdict "the data pipeline is the bottleneck" when the queue was empty on more than
  :data:`EMPTY_QUEUE_BOTTLENECK` of the steps (MindInsight's rule).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.metrics import union_length
from reportgen.model import Profile, VendorOutput

#: share of steps with an empty device queue above which the data pipeline is the bottleneck
#: (MindInsight's minddata analysis: 0.7)
EMPTY_QUEUE_BOTTLENECK = 0.7
#: kernel_details.csv columns a kernel group is keyed by
KERNEL_KEYS = ("Name", "Type", "Accelerator Core", "Input Shapes", "Input Data Types",
               "Input Formats", "Output Shapes", "Output Data Types", "Output Formats")


def ai_core_columns(calls: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``: AI Cores Eligible / Self (%) / Total (%) (module doc)."""
    g = calls.groupby(keys, sort=False, dropna=False)
    agg = g.agg(self_=("device_self_us", "sum"), total=("device_total_us", "sum"),
                self_ai=("device_self_aicore_us", "sum"), total_ai=("device_total_aicore_us", "sum"),
                any_ai=("device_total_aicore_us", lambda s: bool((s.fillna(0) > 0).any()))).reset_index()
    out = agg[keys].copy()
    out["AI Cores Eligible"] = np.where(agg["any_ai"].astype(bool), "Yes", "No")
    out["AI Cores Self (%)"] = 100 * agg["self_ai"] / agg["self_"].where(agg["self_"] > 0)
    out["AI Cores Total (%)"] = 100 * agg["total_ai"] / agg["total"].where(agg["total"] > 0)
    return out


def call_stack_table(calls: pd.DataFrame) -> pd.DataFrame:
    """Calls grouped by name, input shapes and call stack: calls and summed times (us)."""
    keys = ["Name", "Input Shapes", "Call Stack"]
    g = calls.groupby(keys, sort=False, dropna=False)
    out = g.agg(**{"Calls": ("host_total_us", "size"), "Host Self (us)": ("host_self_us", "sum"),
                   "Host Total (us)": ("host_total_us", "sum"), "Device Self (us)": ("device_self_us", "sum"),
                   "Device Total (us)": ("device_total_us", "sum")}).reset_index()
    out = out.merge(ai_core_columns(calls, keys), on=keys, how="left")
    return out.sort_values("Device Total (us)", ascending=False, kind="stable").reset_index(drop=True)


def accelerator_core_utilisation(details: pd.DataFrame) -> pd.DataFrame:
    """Per operator type and accelerator core: calls, device time (us) and its share of the
    type's device time (%)."""
    d = details.assign(Type=details["Type"].fillna("(none)"),
                       **{"Accelerator Core": details["Accelerator Core"].fillna("(none)")})
    d = pd.concat([d, d.assign(Type="(all)")], ignore_index=True)
    t = d.groupby(["Type", "Accelerator Core"], sort=True).agg(
        **{"Calls": ("Duration (us)", "size"), "Total (us)": ("Duration (us)", "sum")}).reset_index()
    per_type = t.groupby("Type")["Total (us)"].transform("sum")
    t["Utilization (%)"] = 100 * t["Total (us)"] / per_type.where(per_type > 0)
    return t


def kernel_shapes(details: pd.DataFrame) -> pd.DataFrame:
    """kernel_details.csv grouped by :data:`KERNEL_KEYS` (module doc)."""
    keys = [k for k in KERNEL_KEYS if k in details.columns]
    d = details.copy()
    d[keys] = d[keys].fillna("")
    pmu = [c for c in d.columns if c not in keys and c not in ("Duration (us)", "Block Dim", "Mix Block Dim", "Span")
           and pd.api.types.is_numeric_dtype(d[c])]
    spec = {"Calls": ("Duration (us)", "size"), "Total (us)": ("Duration (us)", "sum"),
            "Avg (us)": ("Duration (us)", "mean"), "Min (us)": ("Duration (us)", "min"),
            "Max (us)": ("Duration (us)", "max"),
            **{c: (c, "max") for c in ("Block Dim", "Mix Block Dim") if c in d.columns},
            **{f"Mean {c}": (c, "mean") for c in pmu}}
    out = d.groupby(keys, sort=False).agg(**spec).reset_index()
    return out.sort_values("Total (us)", ascending=False, kind="stable").reset_index(drop=True)


def memory_allocations(om: pd.DataFrame) -> pd.DataFrame:
    """operator_memory.csv as the plugin's table: Name, Size, Allocation / Release Time,
    Duration, Device (allocation order)."""
    cols = ["Name", "Size (KB)", "Allocation Time (us)", "Release Time (us)", "Duration (us)",
            "Total Allocated (MB)", "Total Reserved (MB)", "Device"]
    return om[[c for c in cols if c in om.columns]].sort_values("Allocation Time (us)", kind="stable") \
        .reset_index(drop=True)


def component_peaks(mm: pd.DataFrame) -> pd.DataFrame:
    """Per device and component: peak reserved memory (MB) and when it was first reached."""
    m = mm.dropna(subset=["Total Reserved (MB)"])
    idx = m.groupby(["Device", "Component"], sort=True)["Total Reserved (MB)"].idxmax()
    out = m.loc[idx, ["Device", "Component", "Total Reserved (MB)"] +
                (["Time (us)"] if "Time (us)" in m.columns else [])]
    return out.rename(columns={"Total Reserved (MB)": "Peak Reserved (MB)",
                               "Time (us)": "Peak Time (us)"}).reset_index(drop=True)


def input_pipeline_summary(queue: pd.DataFrame) -> pd.DataFrame:
    """Per queue file: steps, empty-queue steps, empty ratio and the verdict (module doc)."""
    rows = []
    for source, q in queue.groupby("Source", sort=False):
        steps, empty = int(q["Step"].nunique()), int(q.loc[q["Queue Empty"], "Step"].nunique())
        ratio = empty / steps if steps else np.nan
        rows.append({"Source": source, "Steps": steps, "Empty Queue Steps": empty,
                     "Empty Queue Ratio": ratio,
                     "Data Pipeline Bottleneck": "Yes" if ratio > EMPTY_QUEUE_BOTTLENECK else "No"})
    return pd.DataFrame(rows)


#: the per-rank step breakdown's columns and, per source table, the column each comes from
#: and its unit divisor to ms: torch_npu step_trace_time.csv (µs), MindSpore
#: step_trace_raw / ascend_cluster_analyse (already ms: their 10 ns ticks are converted on
#: reading); the first that fits a rank is used
STEP_BREAKDOWN = (
    ("Steps", 1e3, {"Step": "Step", "Computation (ms)": "Computing",
                    "Communication (ms)": "Communication",
                    "Communication Not Overlapped (ms)": "Communication(Not Overlapped)",
                    "Overlapped (ms)": "Overlapped", "Free (ms)": "Free", "Bubble (ms)": "Bubble",
                    "Stage (ms)": "Stage"}),
    ("Steps", 1.0, {"Step": "step_num", "Total (ms)": "total (ms)",
                    "Iteration Interval (ms)": "iteration_interval (ms)",
                    "FP and BP (ms)": "fp_and_bp (ms)", "Tail (ms)": "tail (ms)"}),
    ("Cluster Step", 1.0, {"Computation (ms)": "computation_time (ms)",
                           "Communication Not Overlapped (ms)": "communication_alone_time (ms)",
                           "Stage (ms)": "stage_time (ms)", "Bubble (ms)": "receive_alone_time (ms)",
                           "Iteration Interval (ms)": "iteration_interval (ms)",
                           "FP and BP (ms)": "fp_and_bp (ms)", "Tail (ms)": "tail (ms)"}),
)


def step_breakdown(v: VendorOutput) -> pd.DataFrame:
    """One rank's steps split into computation / communication / free / bubble / stage (ms),
    from whichever of its step files holds them (:data:`STEP_BREAKDOWN`)."""
    for table, to_ms, cols in STEP_BREAKDOWN:
        t = v.tables.get(table)
        if t is None or not len(t) or not any(c in t.columns for n, c in cols.items() if n != "Step"):
            continue
        out = pd.DataFrame({"Source": table}, index=t.index)
        for name, c in cols.items():
            if c in t.columns:
                vals = pd.to_numeric(t[c], errors="coerce")
                out[name] = vals if name == "Step" else vals / to_ms
        return out.reset_index(drop=True)
    return pd.DataFrame()


def overlap_table(lanes: pd.DataFrame) -> pd.DataFrame:
    """trace_view.json's Overlap Analysis lanes: per lane, slices and the union of their
    intervals (us)."""
    rows = []
    for lane, g in lanes.groupby("lane", sort=False):
        rows.append({"Lane": lane, "Slices": len(g),
                     "Time (us)": union_length(g["start_ns"].to_numpy(np.int64), g["end_ns"].to_numpy(np.int64)) / 1e3})
    return pd.DataFrame(rows)


def ascend_rank_tables(v: VendorOutput) -> dict[str, pd.DataFrame]:
    """One rank's tables of this module (merged across ranks by analysis.framework)."""
    out: dict[str, pd.DataFrame] = {}
    if v.operator_calls is not None and "Call Stack" in v.operator_calls and \
            v.operator_calls["Call Stack"].astype(str).str.len().gt(0).any():
        out["Operators by Call Stack"] = call_stack_table(v.operator_calls)
    if v.kernel_details is not None and len(v.kernel_details):
        out["Accelerator Core Utilization"] = accelerator_core_utilisation(v.kernel_details)
        out["Kernel Shapes"] = kernel_shapes(v.kernel_details)
    if v.operator_memory is not None and len(v.operator_memory):
        out["Memory Allocations"] = memory_allocations(v.operator_memory)
    if v.module_memory is not None and len(v.module_memory):
        out["Component Peaks"] = component_peaks(v.module_memory)
    if v.overlap_lanes is not None and len(v.overlap_lanes):
        out["Overlap Analysis"] = overlap_table(v.overlap_lanes)
    steps = step_breakdown(v)
    if len(steps):
        out["Rank Step Breakdown"] = steps
    queue = v.tables.get("Input Pipeline")
    if queue is not None and len(queue):
        out["Input Pipeline Summary"] = input_pipeline_summary(queue)
    return out


def ai_core_operators(profile: Profile, calls: pd.DataFrame) -> None:
    """The AI Core columns onto the Operators table built from operator_details.csv ``calls``
    (all ranks)."""
    if "Operators" in profile.tables and "Name" in profile.tables["Operators"]:
        profile.tables["Operators"] = profile.tables["Operators"].merge(
            ai_core_columns(calls, ["Name"]), on="Name", how="left")
