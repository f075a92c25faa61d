"""Merge a host chrome trace (``--trace_file``) into a Profile, on the device timeline.

:func:`reportgen.parsers.chrome.host_trace.read_host_trace` reads a tpudnn / tpu-train / PyTorch
chrome trace into ``profile.host_trace`` (its complete events, host clock) and
:func:`align_host_trace` fills ``profile.host`` (``model.HOST_COLUMNS``) with times in the
device frame (device time 0 = the first command of the dump).  The HTML and the Perfetto
writers only draw ``profile.host``; neither aligns again.

The profiler bookkeeping events ``PyTorch Profiler (0)``, ``enable_profile``,
``my_ops::enable_profile``, ``disable_profile``, ``my_ops::disable_profile`` are dropped (as the
reference does, pmu-dump-format.md §12.3).

Alignment, i.e. the host time ``offset_ns`` of device time 0 (device = host − offset):

1. ``tail_offset`` (preferred): the runtime writes ``tail_offset_ns`` into global.profile, the CPU
   time between the PMU pause and the end of ``disable_profile``.  When the trace has a tpudnn
   ``disable_profile`` event and the dump gave both ``meta.tail_offset_ns`` and ``meta.pmu_tail_ns``
   (end of the last PMU record, device frame): ``offset = disable_end − tail_offset_ns −
   pmu_tail_ns``, so the last PMU record ends ``tail_offset_ns`` before ``disable_profile`` ends.
2. ``estimated_start`` (the reference's fallback and 0.3.0's only rule): device time 0 is the end
   of the first remaining tpudnn event.  We take the *earliest* one by ``ts`` (the reference takes
   the first in file order, which is the same for a time-sorted trace).  A warning says the
   placement is an estimate.
3. ``host_start`` (no tpudnn event at all; the reference then drops the host trace): device time
   0 = start of the earliest host event, with a warning that the placement is unknown.

The rule, the offset and the event counts are recorded in ``profile.meta.host_alignment``.

Nesting: per (pid, tid), events are sorted by (start, longest first); ``depth`` is the number of
earlier events still open at an event's start and ``parent`` the row of the innermost one
(:func:`reportgen.intervals.nest`).  An event that starts inside another but ends after it is
not properly nested; it keeps the stack depth, is counted in ``host_alignment["improper"]``
(with everything inside it in ``["overflow"]``) and the writers move it to an overflow lane.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.errors import InputError
from reportgen.intervals import improper, nest
from reportgen.model import HOST_COLUMNS, HostTrace, Profile

#: Events of the profiling machinery itself, not of the workload (reference behaviour).
PROFILER_EVENTS = frozenset({"PyTorch Profiler (0)", "enable_profile", "my_ops::enable_profile",
                             "disable_profile", "my_ops::disable_profile"})
DISABLE_EVENTS = frozenset({"disable_profile", "my_ops::disable_profile"})
TPUDNN_CATEGORY = "tpudnn"


def align_host_trace(profile: Profile, trace: HostTrace) -> None:
    """Fill ``profile.host`` from a host trace as read, aligned to the device timeline."""
    path = trace.path
    meta = profile.meta
    for code, message in trace.warnings:
        meta.warn(code, message, path)
    df = trace.events
    cat = df["cat"].astype(str)
    tpudnn = (cat == TPUDNN_CATEGORY).to_numpy(bool)
    disable = tpudnn & df["name"].isin(DISABLE_EVENTS).to_numpy(bool)
    keep = ~df["name"].isin(PROFILER_EVENTS).to_numpy(bool)
    if not keep.any():
        raise InputError(path, "no complete ('ph': 'X') host events besides the profiler markers")

    host = df[keep]
    start_host = host["start_ns"].to_numpy(np.int64)
    end_host = host["end_ns"].to_numpy(np.int64)
    info: dict = {"trace_path": path, "events_read": trace.events_read, "events_kept": int(keep.sum()),
                  "tail_offset_ns": meta.tail_offset_ns, "pmu_tail_ns": meta.pmu_tail_ns}

    if disable.any() and meta.tail_offset_ns is not None and meta.pmu_tail_ns is not None:
        disable_end = int(df["end_ns"].to_numpy(np.int64)[disable].max())
        offset = disable_end - int(meta.tail_offset_ns) - int(meta.pmu_tail_ns)
        info.update(rule="tail_offset", disable_end_ns=disable_end)
    elif tpudnn[keep].any():
        t = np.flatnonzero(tpudnn[keep])
        first = t[np.argmin(start_host[t])]
        offset = int(end_host[first])
        info.update(rule="estimated_start", anchor_event=str(host["name"].iloc[first]))
        missing = [k for k, v in (("a tpudnn disable_profile event", disable.any()),
                                  ("tail_offset_ns in global.profile", meta.tail_offset_ns is not None),
                                  ("the PMU tail time", meta.pmu_tail_ns is not None)) if not v]
        meta.warn("host-align-estimated",
                  "host trace aligned on the end of the first tpudnn event (estimate); missing: "
                  + ", ".join(missing), str(path))
    else:
        offset = int(start_host.min())
        info.update(rule="host_start")
        meta.warn("host-align-unknown",
                  "host trace has no tpudnn events: its first event is placed at device time 0 "
                  "(alignment unknown)", str(path))
    info["offset_ns"] = offset

    start = start_host - offset
    end = end_host - offset
    pid = host["pid"].to_numpy(object)
    tid = host["tid"].to_numpy(object)
    thread = pd.factorize(host["pid"].astype(str) + "\x1f" + host["tid"].astype(str))[0]
    # rows in (thread, start, longest first) order, so a parent row precedes its children
    order = np.lexsort((np.arange(len(start)), -end, start, thread))
    depth, parent = nest(thread[order], start[order], end[order])
    bad = improper(parent, end[order], depth)
    has = parent >= 0
    roots = int((end[order][has] > end[order][parent[has]]).sum())
    info["improper"], info["overflow"] = roots, int(bad.sum())
    if roots:
        meta.warn("host-overlap", f"{roots} host events overlap an enclosing event without nesting in "
                  f"it; they and the events inside them ({int(bad.sum())} in all) are drawn on "
                  "overflow lanes", str(path))

    frame = pd.DataFrame({
        "name": host["name"].to_numpy(object)[order],
        "category": pd.Categorical(cat[keep].to_numpy(object)[order]),
        "pid": pid[order], "tid": tid[order],
        "start_ns": start[order], "end_ns": end[order],
        "depth": depth.astype(np.int32), "parent": parent.astype(np.int64),
        "args": [a if isinstance(a, dict) else None for a in host["args"].to_numpy(object)[order]],
    })
    for col, dtype in HOST_COLUMNS.items():
        if dtype != "category":
            frame[col] = frame[col].astype(dtype)
    profile.host = frame[list(HOST_COLUMNS)].reset_index(drop=True)
    meta.host_alignment = info
