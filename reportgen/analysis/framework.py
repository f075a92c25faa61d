"""Every table of a framework trace, derived once from what the parsers read
(framework-traces.md §6): :func:`attach_framework_tables` fills ``profile.tables`` under stable
names that the writers show as they are.

* ``Host-Device`` / ``Host-Device Self``: the seed tool's table (``$$`` call paths of a monitored
  category, host / device / launch durations), total and self attribution, summed per path
  (per-call rows: :func:`reportgen.analysis.host_device.host_device_table`, written by the seed
  CSV writer).
* ``Operators`` / ``Operators by Shape``: torch ``key_averages``-style table; from an Ascend
  operator_details.csv when there is one (its own self/total numbers are the authority).
* ``Kernels``: per kernel calls and total/avg/min/max duration with launch geometry;
  ``Op Statistic``: Ascend-style (OP Type, Core Type) task statistics.
* ``Memory``, ``Memory Peak``, ``Memory Timeline``: allocations per operator, peaks, curve.
* ``Ranks``: per rank/device comparison; ``Steps``: ProfilerStep host ranges and their device span.
* the tables the source holds (``Profile.source_tables``) and the vendor's per-rank summaries
  (``Profile.vendor_outputs``, with a Rank column when there are several ranks); a vendor table
  replaces the derived table of the same name.

Definitions for legends: :data:`TABLE_DEFINITIONS`; report order: :data:`TABLE_ORDER`.
"""
from __future__ import annotations

import pandas as pd

from reportgen.analysis.ascend import ai_core_operators, ascend_rank_tables
from reportgen.analysis import torch_tables
from reportgen.analysis.host_device import host_device_summary, host_device_table, seed_categories
from reportgen.analysis.kernels import kernel_table, op_statistic
from reportgen.analysis.memory import memory_tables, vendor_memory_tables
from reportgen.analysis.memory_allocations import allocation_tables
from reportgen.analysis.operators import key_averages, key_averages_from_calls
from reportgen.analysis.steps import rank_table, step_table
from reportgen.model import Profile, VendorOutput

#: report order of the framework tables (writers show ``profile.tables`` in dict order)
TABLE_ORDER = ("Operators", "Operators by Shape", "Operators by Stack", "Call Stacks", "Kernels",
               "Op Statistic", "Steps", "Trace Windows", "Ranks", "Host-Device", "Host-Device Self", "Memory", "Memory Peak", "Memory Timeline",
               "Memory Allocations", "Memory at Peak")

#: one-line definition per table, for legends and tooltips (framework-traces.md §6)
TABLE_DEFINITIONS = {
    "Operators": "torch key_averages semantics (torch's operator tree; ProfilerStep#N counted as "
                 "ProfilerStep*): Self CPU = duration minus direct child calls; "
                 "CPU total % divides by the sum of Self CPU (as torch does); Self Device = device "
                 "slices launched by the op itself; Device total adds its sub-calls. Times in us.",
    "Operators by Shape": "Operators grouped by name and input shapes (shapes ';'-joined, dims ','; "
                          "Kineto traces: as torch prints them, [[5, 64], []]).",
    "Operators by Stack": "torch key_averages(group_by_stack_n=N): operators grouped by name and the "
                          "top N frames (innermost first) of their call stack, the Source Location; "
                          "Stack Id: its frames in Call Stacks.",
    "Call Stacks": "The frames of each Operators by Stack row (Stack Id), outermost first (Level 1): "
                   "Frame Calls = distinct python frame slices at that level holding the row's "
                   "operators, Frame CPU total = their summed duration (us); empty for frames "
                   "named only by a Call stack arg.",
    "Kernels": "Device work (no waits, syncs or markers) grouped by name and launch geometry: "
               "calls, total/avg/min/max (us), share of all device work time; occupancy columns "
               "are duration-weighted means.",
    "Op Statistic": "Device tasks per (OP Type, Core Type): count, total/min/avg/max (us), "
                    "Ratio = share of the device's total task time.",
    "Steps": "ProfilerStep#N host ranges; device step = first start to last end of the device "
             "slices launched inside the step.",
    "Ranks": "Per rank/device: busy = union of device slice intervals (compute / communication / "
             "memory-op split), span, utilisation, host slices, mean step.",
    "Host-Device": "Seed parser table summed per '$$' call path of the monitored category: host "
                   "time, device time of slices launched inside (total attribution, includes "
                   "deeper monitored calls), launch (runtime) time. ms.",
    "Host-Device Self": "As Host-Device, but launches and device slices count only for the "
                        "innermost monitored call that holds them (sums never double count).",
    "Memory": "Per operator (innermost op at the event): allocations, bytes allocated/freed, size "
              "increase, peak total allocated, mean allocation lifetime.",
    "Memory Peak": "Peak allocated (and reserved) memory per device, with the operator running at "
                   "the peak.",
    "Memory Timeline": "Allocated/reserved memory curve, downsampled keeping each bucket's maximum.",
    "Trace Windows": "A folder of one process's window files (torch.profiler schedule: one file per "
                     "active window): one row per file, its time range (ns since the first window) "
                     "and its slices; the files are one report.",
    "Memory Allocations": "One row per allocation: operator it happened in, size, device, allocation "
                          "and release time (ns, trace clock), duration (us); 'not released' when no "
                          "later event frees that address in the trace.",
    "Memory at Peak": "Per device, the allocations live at its peak of allocated memory (allocated at "
                      "or before the peak, released after it or never), largest first (50 at most).",
}

#: order of one rank's vendor tables (as their files are read); across ranks a table comes
#: where it first appears
VENDOR_TABLE_ORDER = ("Op Statistic", "Steps", "API Statistic", "AI CPU", "Memory Timeline",
                      "Memory Peak", "Memory", "Component Memory", "Communication Matrix",
                      "Communication")


def attach_framework_tables(profile: Profile, *, min_depth: int | None = None,
                            max_depth: int | None = None, categories: dict | None = None,
                            stack_frames: int = 5) -> None:
    """Compute every applicable framework table into ``profile.tables`` (see module doc).
    ``min_depth``/``max_depth``: call depths kept in the Host-Device tables; ``categories``:
    the ``-mc/-hc/-dc`` values (monitor, launch, device; None: fitting the trace)."""
    tables = profile.tables
    tables.update(profile.source_tables)
    host = profile.host
    if not host.empty:
        args = dict(**seed_categories(profile, **(categories or {})),
                    min_depth=min_depth, max_depth=max_depth)
        # per path; one row per call would swamp the workbook (the seed CSV keeps them)
        tables["Host-Device"] = host_device_summary(host_device_table(profile, **args))
        tables["Host-Device Self"] = host_device_summary(host_device_table(profile, self_only=True, **args))
        if torch_tables.is_kineto(profile):   # torch's own tables (docs/metrics.md)
            tables.update(torch_tables.operator_tables(profile, stack_frames))
        else:
            tables["Operators"] = key_averages(profile)
            # stops at the first slice with shapes
            if any(isinstance(a, dict) and "Input Dims" in a for a in host["args"].to_numpy(object)):
                tables["Operators by Shape"] = key_averages(profile, group_by_input_shape=True)
        steps = step_table(profile)
        if len(steps):
            tables["Steps"] = steps
    if not profile.commands.empty:
        tables["Kernels"] = kernel_table(profile)
        stat = op_statistic(profile)
        if len(stat):
            tables["Op Statistic"] = stat   # a vendor op_statistic.csv, when present, replaces it
    mem = profile.memory_events
    if mem is not None and len(mem):
        tables.update(memory_tables(mem, host))
        tables.update(allocation_tables(mem, host))
    ncores = profile.commands["core"].nunique() if len(profile.commands) else 0
    nranks = host["rank"].nunique() if "rank" in host.columns and len(host) else 0
    if max(ncores, nranks) > 1:
        tables["Ranks"] = rank_table(profile)
    _attach_vendor_tables(profile)
    order_tables(profile)


def _rank_tables(vendor: VendorOutput) -> dict[str, pd.DataFrame]:
    """One rank's vendor tables as shown, in :data:`VENDOR_TABLE_ORDER`."""
    shown = {**vendor.tables, **vendor_memory_tables(vendor), **ascend_rank_tables(vendor)}
    position = {name: i for i, name in enumerate(VENDOR_TABLE_ORDER)}
    return {name: shown[name] for name in sorted(shown, key=lambda n: position.get(n, len(position)))}


def _attach_vendor_tables(profile: Profile) -> None:
    """The vendor tables of every rank (with a Rank column when there are several)."""
    outputs = profile.vendor_outputs
    multi = len(outputs) > 1
    merged: dict[str, list] = {}
    for r, vendor in outputs.items():
        for name, t in _rank_tables(vendor).items():
            merged.setdefault(name, []).append(t.assign(Rank=r) if multi else t)
    for name, parts in merged.items():
        profile.tables[name] = pd.concat(parts, ignore_index=True)
    calls = [v.operator_calls.assign(Rank=r) if multi else v.operator_calls
             for r, v in outputs.items() if v.operator_calls is not None]
    if calls:
        # torch_npu's own per-call self/total numbers are the authority for Ascend
        t = pd.concat(calls, ignore_index=True)
        profile.tables["Operators"] = key_averages_from_calls(t)
        if t["Input Shapes"].astype(str).str.len().gt(0).any():
            profile.tables["Operators by Shape"] = key_averages_from_calls(t, True)
        ai_core_operators(profile, t)   # the NPU plugin's AI Core columns


def order_tables(profile: Profile) -> None:
    """Known tables in :data:`TABLE_ORDER`, any others (vendor tables) after them."""
    known = [k for k in TABLE_ORDER if k in profile.tables]
    rest = [k for k in profile.tables if k not in TABLE_ORDER]
    profile.tables = {k: profile.tables[k] for k in known + rest}
