"""Chrome Trace Event JSON (PyTorch/Kineto of every era, ROCm, MTIA, DeepLink, tpudnn, Ascend
trace_view.json, CANN msprof and MindSpore timelines, generic Chrome traces) -> Profile.

* :mod:`.reader`: the file (gzip, zip, plain; never the file name) and its JSON, array or
  object form, an array whose closing ``]`` is missing;
* :mod:`.events`: events as a frame, ``ts``/``dur`` (µs as int, float or decimal string) as
  integer nanoseconds, ``B``/``E`` pairs as complete slices;
* :mod:`.classify`: each event's role by category (era-aware, case-insensitive) and, where
  categories say nothing, by its process (Ascend "Ascend Hardware", a "GPU n" label);
* :mod:`.link`: per-thread call trees, and host <-> device links (correlation, then flows, then
  External id);
* :mod:`.build`: device work into ``commands``, host slices into ``host``, memory events;
* :mod:`.host_trace`: the ``--trace_file`` host trace merged over a PMU dump.

The framework tables are derived from the Profile by :mod:`reportgen.analysis.framework`.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from reportgen.errors import InputError
from reportgen.model import Profile
from reportgen.parsers.chrome.build import build_profile
from reportgen.parsers.chrome.classify import (ANNOTATION_CATS, ASCEND_SYNC_TASKS, DEVICE_PROCESSES,
                                               OP_CATS, per_unique, rank_of, role_category)
from reportgen.parsers.chrome.events import TraceData, read_trace, read_trace_events, to_ns
from reportgen.parsers.limits import InputTooLarge, bounded
from reportgen.options import MAX_INPUT_MB


def load_chrome_trace(path: str | Path, *, max_input_mb: int = MAX_INPUT_MB) -> Profile:
    """One trace file -> Profile (core = device index)."""
    with bounded(max_input_mb):
        data = read_trace(path)
    # a trace_view.json / msprof timeline handed over on its own is still an Ascend profile
    ascend = any(n.strip().lower() in DEVICE_PROCESSES | {"cann"} for n in data.process_names.values())
    profile = build_profile([data], None, "ascend" if ascend else "chrome", str(path))
    rank = rank_of(data)
    if rank is not None:
        profile.meta.rank = rank
    return profile


def _host_pids(data: TraceData) -> frozenset:
    """Processes that ran framework ops (the identity of a worker across its window files)."""
    ev = data.events
    cat = pd.Series(per_unique(ev["cat"], role_category), index=ev.index)
    return frozenset(ev["pid"][cat.isin(OP_CATS | ANNOTATION_CATS)].unique())


def load_chrome_traces(paths: list[Path], input_path: str, *, max_input_mb: int = MAX_INPUT_MB
                       ) -> Profile:
    """Several trace files of one run (one per rank) -> one Profile, core = rank;
    ``max_input_mb`` bounds each file."""
    datas, rejected = [], []
    for p in paths:
        try:
            with bounded(max_input_mb):
                datas.append(read_trace(p))
        except InputTooLarge:
            raise
        except InputError as exc:  # e.g. an execution trace stored next to its Kineto trace
            rejected.append(str(exc))
    if not datas:
        raise InputError(input_path, "no readable trace in the folder: " + "; ".join(rejected))
    ranks = [rank_of(d) for d in datas]
    warn = None
    if any(r is None for r in ranks) or len(set(ranks)) != len(ranks):
        pids = [_host_pids(d) for d in datas]
        if len(datas) > 1 and pids[0] and all(p == pids[0] for p in pids):
            # schedule(repeat=N) writes one file per active window of the same process
            common = ranks[0] if ranks[0] is not None and len(set(ranks)) == 1 else 0
            ranks = [common] * len(datas)
            warn = (f"{len(datas)} trace files come from the same process (profiling windows); "
                    f"merged as rank {common}")
        else:
            warn = (f"rank ids are missing or repeated across {len(paths)} trace files; "
                    "ranks numbered by sorted file name instead")
            ranks = list(range(len(datas)))
    profile = build_profile(datas, ranks, "chrome", input_path)
    if warn and warn.startswith(f"{len(datas)} trace files come from the same process"):
        profile.source_tables["Trace Windows"] = _windows(datas)
    if warn:
        profile.meta.warn("rank-ids", warn, input_path)
    for r in rejected:
        profile.meta.warn("skipped-file", "not a timeline trace, skipped: " + r, input_path)
    return profile


def _windows(datas: list[TraceData]) -> pd.DataFrame:
    """One row per window file of one process (``schedule``'s ``on_trace_ready`` writes a file
    per active window, i.e. per recorded step range): its file, time range and slice counts."""
    rows = []
    for k, d in enumerate(datas):
        x = d.events[d.events["ph"] == "X"]
        start = int(x["ts_ns"].min()) if len(x) else 0
        end = int((x["ts_ns"] + x["dur_ns"]).max()) if len(x) else 0
        rows.append({"Window": k + 1, "File": Path(d.path).name, "Start (ns)": start,
                     "End (ns)": end, "Duration (us)": (end - start) / 1e3, "Slices": len(x)})
    t0 = min(r["Start (ns)"] for r in rows)
    out = pd.DataFrame(rows)
    out["Start (ns since first window)"] = out.pop("Start (ns)") - t0
    out["End (ns since first window)"] = out.pop("End (ns)") - t0
    return out[["Window", "File", "Start (ns since first window)", "End (ns since first window)",
                "Duration (us)", "Slices"]]


__all__ = ["ASCEND_SYNC_TASKS", "TraceData", "build_profile", "load_chrome_trace",
           "load_chrome_traces", "read_trace", "read_trace_events", "to_ns"]
