"""A run's digest: the small tables that compare two runs or many devices without the commands.

A digest is what a report keeps of a run for later comparison (summary.json ``breakdown``, beside
the engine summary) and what a cluster worker sends back to the client (a few kB per dump,
whatever the number of commands):

* ``engines``: the engine summary (docs/metrics.md), one row per core plus ``Overall``;
* ``kernels``: per kernel name, core and engine: calls and command time (``total_ns``);
* ``function_types``: the same per Function Type;
* ``timeline``: busy fraction per core and engine in :data:`TIMELINE_BUCKETS` equal buckets of
  the span (for the Compare tab's timelines, aligned at their start).

Kernel and Function Type time is "command time": the summed ``end_ns − start_ns`` of the work
commands (system commands excluded), so engines running side by side each count (docs/metrics.md
"Run digest").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.analysis.timeline import occupancy
from reportgen.model import Profile

TIMELINE_BUCKETS = 100
#: engines in display order; a lane of the digest timeline is (core, engine)
ENGINES = ("TIU", "GDMA", "SDMA", "CDMA")
KEY_COLUMNS = {"kernels": "kernel", "function_types": "func_type"}
BREAKDOWN_COLUMNS = ("core", "engine", "calls", "cmds", "total_ns")


@dataclass
class Digest:
    """The comparable tables of one run (see the module docstring)."""
    source: str                     # what the run was read from (input path)
    engines: pd.DataFrame           # the engine summary (per core + Overall)
    kernels: pd.DataFrame           # kernel, core, engine, calls, cmds, total_ns
    function_types: pd.DataFrame    # func_type, core, engine, calls, cmds, total_ns
    timeline: dict                  # {"span_ns", "buckets", "lanes": [[core, engine]], "busy": [[..]]}

    @property
    def span_ns(self) -> int:
        return int(self.engines["span_ns"].iloc[-1]) if len(self.engines) else 0


def _breakdown(work: pd.DataFrame, key: str) -> pd.DataFrame:
    """Calls (distinct kernel scopes), commands and command time per key, core and engine."""
    cols = [key, *BREAKDOWN_COLUMNS]
    frame = work[work[key].notna()]
    if frame.empty:
        return pd.DataFrame(columns=cols)
    dur = (frame["end_ns"] - frame["start_ns"]).astype("int64")
    keys = [frame[key].astype(str), frame["core"].astype("int64"), frame["engine"].astype(str)]
    g = pd.DataFrame({"scope": frame["func_scope"], "dur": dur}).groupby(keys, observed=True, sort=True)
    out = pd.DataFrame({"calls": g["scope"].nunique(), "cmds": g["dur"].size(),
                        "total_ns": g["dur"].sum()}).reset_index()
    out.columns = cols
    return out.astype({"calls": "int64", "cmds": "int64", "total_ns": "int64"})


def _timeline(work: pd.DataFrame, span: int) -> dict:
    lanes = sorted({(int(c), str(e)) for c, e in zip(work["core"], work["engine"].astype(str))},
                   key=lambda ce: (ce[0], ENGINES.index(ce[1]) if ce[1] in ENGINES else 9, ce[1]))
    index = {ce: i for i, ce in enumerate(lanes)}
    lane = pd.MultiIndex.from_arrays([work["core"].astype("int64"), work["engine"].astype(str)]) \
        .map(index.get).to_numpy(np.int64) if len(work) else np.zeros(0, np.int64)
    busy = occupancy(work["start_ns"].to_numpy(), work["end_ns"].to_numpy(), lane, len(lanes),
                     0.0, float(max(span, 1)), TIMELINE_BUCKETS)
    return {"span_ns": int(span), "buckets": TIMELINE_BUCKETS, "lanes": [list(ce) for ce in lanes],
            "busy": np.round(busy, 3).tolist()}


def run_digest(profile: Profile, summary: pd.DataFrame) -> Digest:
    """The digest of an analysed profile (``summary`` = its engine summary)."""
    c = profile.commands
    work = c.loc[~c["is_sys"], ["core", "engine", "kernel", "func_type", "func_scope", "start_ns",
                                "end_ns"]] if len(c) else c
    span = int(summary["span_ns"].iloc[-1]) if len(summary) and "span_ns" in summary else 0
    return Digest(profile.meta.input_path or "", summary.reset_index(drop=True),
                  _breakdown(work, "kernel"), _breakdown(work, "func_type"),
                  _timeline(work, span) if len(work) else
                  {"span_ns": span, "buckets": TIMELINE_BUCKETS, "lanes": [], "busy": []})


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()}
            for r in frame.to_dict("records")]


def breakdown_document(d: Digest) -> dict:
    """summary.json's ``breakdown``: everything of the digest that the engine summary is not."""
    return {"kernels": _records(d.kernels), "function_types": _records(d.function_types),
            "timeline": d.timeline}


def digest_from_document(doc: dict, source: str) -> Digest:
    """A digest rebuilt from a report's summary.json (its ``summary`` and ``breakdown`` keys)."""
    b = doc.get("breakdown") or {}
    frames = {}
    for name, key in KEY_COLUMNS.items():
        frames[name] = pd.DataFrame(b.get(name) or [], columns=[key, *BREAKDOWN_COLUMNS])
    engines = pd.DataFrame(doc.get("summary") or [])
    for col in engines.columns:           # JSON null = unknown: float NaN, as in the live frame
        if col != "core":
            engines[col] = pd.to_numeric(engines[col], errors="coerce")
    return Digest(source, engines, frames["kernels"], frames["function_types"],
                  b.get("timeline") or {"span_ns": 0, "buckets": TIMELINE_BUCKETS, "lanes": [], "busy": []})
