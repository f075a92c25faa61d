"""A run's digest: the small tables that compare two runs or many devices without the commands.

A digest is what a report keeps of a run for later comparison (summary.json ``digest``, beside
the engine summary) and what a cluster worker sends back to the client (a few kB per dump,
whatever the number of commands):

* ``engines``: the engine summary (docs/metrics.md), one row per core plus ``Overall``;
* ``kernels``: per kernel name and core: calls (``count``) and their summed wall time
  (``total_ns``), from the diagnosis' device kernel calls (docs/metrics.md "Kernels");
* ``function_types``: per Function Type, core and engine: work commands (``count``) and busy
  time (``total_ns``: the union of their intervals), the diagnosis' breakdown;
* ``timeline``: busy fraction per core and engine in :data:`TIMELINE_BUCKETS` equal buckets of
  the span (for the Compare tab's timelines, aligned at their start);
* ``layers``: per layer (subnet_id, file_line) of a layer capture, its opcode, busy time and
  TIU/GDMA commands: ``Profile.layer_view``'s own figures, the unattributed row included.
  summary.json already holds them (key ``layers``, every column of the layer view), so a report
  folder's digest reads them from there rather than keeping a second copy.

Kernels and Function Types come from ``Profile.diagnosis`` (PMU captures). A framework trace
has no engines and no diagnosis: its lanes are its Device lanes (streams), its kernels and
operators its Kernels and Operators tables (docs/metrics.md "Run digest").
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reportgen.analysis.timeline import occupancy
from reportgen.model import Profile

TIMELINE_BUCKETS = 100
#: engines in display order; a lane of the digest timeline is (core, engine)
ENGINES = ("TIU", "GDMA", "SDMA", "CDMA")
#: kernels: calls and summed wall time of the calls per kernel name and core
KERNEL_COLUMNS = ("kernel", "core", "count", "total_ns")
#: Function Types: work commands and busy time (union) per core and engine
FUNCTION_TYPE_COLUMNS = ("func_type", "core", "engine", "count", "total_ns")
#: framework traces: operators' calls and device time
OPERATOR_COLUMNS = ("operator", "count", "total_ns")
#: layer captures: a layer's figures from Profile.layer_view (docs/metrics.md "Layers")
LAYER_COLUMNS = ("subnet_id", "file_line", "opcode", "busy_ns", "tiu_cmds", "gdma_cmds")
#: per (core, engine) lane, the metrics a comparison reads; ``core`` "Overall" = all cores
LANE_COLUMNS = ("core", "engine", "busy_ns", "util", "ddr_bw", "uarch_rate")
#: engine-summary column of each lane metric (PMU captures)
SUMMARY_COLUMN = {"busy_ns": "{e}_busy_ns", "util": "{e}_util", "ddr_bw": "{e}_ddr_bw_busy",
                  "uarch_rate": "{e}_uarch_rate"}


@dataclass
class Digest:
    """The comparable tables of one run (see the module docstring)."""
    source: str                     # what the run was read from (input path)
    engines: pd.DataFrame           # the engine summary (per core + Overall)
    lanes: pd.DataFrame             # LANE_COLUMNS
    kernels: pd.DataFrame           # KERNEL_COLUMNS
    function_types: pd.DataFrame    # FUNCTION_TYPE_COLUMNS
    operators: pd.DataFrame         # OPERATOR_COLUMNS (framework traces)
    timeline: dict                  # {"span_ns", "buckets", "lanes": [[core, engine]], "busy": [[..]]}
    layers: pd.DataFrame = field(default_factory=lambda: _layer_frame([]))   # LAYER_COLUMNS; empty: no layers

    @property
    def span_ns(self) -> int:
        return int(self.engines["span_ns"].iloc[-1]) if len(self.engines) else 0


def _layer_frame(rows) -> pd.DataFrame:
    """LAYER_COLUMNS of a layer table (or of summary.json's ``layers`` records), typed."""
    frame = pd.DataFrame(rows, columns=list(LAYER_COLUMNS))
    return frame.astype({"subnet_id": "int64", "file_line": "int64", "opcode": "object",
                         "busy_ns": "int64", "tiu_cmds": "int64", "gdma_cmds": "int64"})


def _layers(profile: Profile) -> pd.DataFrame:
    """The layer view's layers and its unattributed row, as computed there."""
    view = profile.layer_view
    if view is None:
        return _layer_frame([])
    return _layer_frame(pd.concat([view.layers[list(LAYER_COLUMNS)], view.unattributed[list(LAYER_COLUMNS)]],
                                  ignore_index=True))


def lanes_from_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """The engine summary as (core, engine) lanes: the engines it has columns for."""
    rows, records = [], summary.to_dict("records")
    for e in ENGINES:
        if f"{e.lower()}_busy_ns" not in summary:
            continue
        for r in records:
            rows.append({"core": r["core"], "engine": e,
                         **{m: r.get(col.format(e=e.lower()), np.nan) for m, col in SUMMARY_COLUMN.items()}})
    return pd.DataFrame(rows, columns=list(LANE_COLUMNS))


def _framework_lanes(profile: Profile) -> pd.DataFrame:
    """A framework trace's Device lanes table (streams): busy and utilisation per lane; the
    Overall row keyed "all lanes" so traces with different stream counts still line up."""
    t = profile.tables.get("Device lanes")
    if t is None or t.empty:
        return pd.DataFrame(columns=list(LANE_COLUMNS))
    overall = t["core"].astype(str) == "Overall"
    return pd.DataFrame({"core": t["core"], "engine": np.where(overall, "all lanes", t["engine"].astype(str)),
                         "busy_ns": t["busy_ns"], "util": t["util"], "ddr_bw": np.nan,
                         "uarch_rate": np.nan})


def _framework_totals(profile: Profile, table: str, name: str, count: str, total_us: str,
                      cols: tuple) -> pd.DataFrame:
    """Calls and device time per name of a framework analysis table (µs -> ns)."""
    t = profile.tables.get(table)
    if t is None or t.empty or not {name, count, total_us} <= set(t.columns):
        return pd.DataFrame(columns=list(cols))
    out = pd.DataFrame({cols[0]: t[name].astype(str), "count": t[count].astype("int64"),
                        "total_ns": (pd.to_numeric(t[total_us], errors="coerce").fillna(0) * 1000)
                        .round().astype("int64")})
    if "core" in cols:
        out.insert(1, "core", 0)
    return out[list(cols)]


def _kernels(profile: Profile) -> pd.DataFrame:
    """Calls and wall time per kernel name and core, from the diagnosis' device kernel calls
    (framework traces: their Kernels table)."""
    cols = list(KERNEL_COLUMNS)
    if not profile.meta.is_pmu:
        return _framework_totals(profile, "Kernels", "Name", "Calls", "Total (us)", KERNEL_COLUMNS)
    d = profile.diagnosis
    calls = d.kernel_calls[d.kernel_calls["source"] == "device"] if d is not None else None
    if calls is None or calls.empty:
        return pd.DataFrame(columns=cols)
    g = calls.groupby([calls["name"].astype(str), calls["core"].astype("int64")], sort=True)["wall_ns"]
    out = pd.DataFrame({"count": g.size(), "total_ns": g.sum()}).reset_index()
    out.columns = cols
    return out.astype({"count": "int64", "total_ns": "int64"})


def _function_types(profile: Profile) -> pd.DataFrame:
    """Commands and busy time per Function Type, core and engine (work rows of the diagnosis'
    breakdown; its Overall rows are sums of these)."""
    cols = list(FUNCTION_TYPE_COLUMNS)
    d = profile.diagnosis
    if d is None or d.breakdown.empty:
        return pd.DataFrame(columns=cols)
    b = d.breakdown
    b = b[(b["category"] == "work") & (b["core"].astype(str) != "Overall")]
    out = pd.DataFrame({"func_type": b["func_type"].astype(str), "core": b["core"].astype("int64"),
                        "engine": b["engine"].astype(str), "count": b["count"].astype("int64"),
                        "total_ns": b["busy_ns"].round().astype("int64")})
    return out[cols].reset_index(drop=True)


def _timeline(c: pd.DataFrame, work: np.ndarray, span: int) -> dict:
    """Busy fraction per (core, engine) lane in TIMELINE_BUCKETS buckets over the rows ``work``
    of ``c``; lanes in core order, engines in display order (streams by name after them). Whole
    arrays, no loop per command."""
    engine = c["engine"]
    if isinstance(engine.dtype, pd.CategoricalDtype):
        engine, codes = engine.array, engine.array.codes[work]
    else:
        engine = pd.Categorical(engine.to_numpy()[work])
        codes = engine.codes
    names = [str(x) for x in engine.categories]
    order = sorted(range(len(names)), key=lambda i: (ENGINES.index(names[i]) if names[i] in ENGINES
                                                      else len(ENGINES), names[i]))
    rank = np.empty(len(names), np.int64)
    rank[order] = np.arange(len(names))
    key = c["core"].to_numpy(np.int64)[work] * max(len(names), 1) + rank[codes]
    if key.min() >= 0:            # lanes numbered in key order (np.unique's, without its sort)
        seen = np.bincount(key)
        keys = np.flatnonzero(seen)
        number = np.cumsum(seen > 0) - 1
        lane = number[key]
    else:
        keys, lane = np.unique(key, return_inverse=True)
    lanes = [[int(k // len(names)), names[order[k % len(names)]]] for k in keys.tolist()]
    busy = occupancy(c["start_ns"].to_numpy()[work], c["end_ns"].to_numpy()[work], lane, len(lanes),
                     0.0, float(max(span, 1)), TIMELINE_BUCKETS)
    return {"span_ns": int(span), "buckets": TIMELINE_BUCKETS, "lanes": lanes,
            "busy": np.round(busy, 3).tolist()}


def run_digest(profile: Profile, summary: pd.DataFrame) -> Digest:
    """The digest of an analysed profile (``summary`` = its engine summary)."""
    c = profile.commands
    work = np.flatnonzero(~c["is_sys"].to_numpy(bool)) if len(c) else np.zeros(0, np.int64)
    span = int(summary["span_ns"].iloc[-1]) if len(summary) and "span_ns" in summary else 0
    pmu = profile.meta.is_pmu
    return Digest(profile.meta.input_path or "", summary.reset_index(drop=True),
                  lanes_from_summary(summary) if pmu else _framework_lanes(profile),
                  _kernels(profile), _function_types(profile),
                  pd.DataFrame(columns=list(OPERATOR_COLUMNS)) if pmu else
                  _framework_totals(profile, "Operators", "Name", "# of Calls", "Device total (us)",
                                    OPERATOR_COLUMNS),
                  _timeline(c, work, span) if len(work) else
                  {"span_ns": span, "buckets": TIMELINE_BUCKETS, "lanes": [], "busy": []},
                  layers=_layers(profile))


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()}
            for r in frame.to_dict("records")]


def digest_document(d: Digest, with_lanes: bool) -> dict:
    """summary.json's ``digest``: everything of the digest that the engine summary is not
    (``with_lanes``: the lanes too, for a framework trace whose lanes are its streams)."""
    doc = {"kernels": _records(d.kernels), "function_types": _records(d.function_types),
           "timeline": d.timeline}
    if not d.operators.empty:
        doc["operators"] = _records(d.operators)
    if with_lanes:
        doc["lanes"] = _records(d.lanes)
    return doc


def digest_from_document(doc: dict, source: str) -> Digest:
    """A digest rebuilt from a report's summary.json (its ``summary`` and ``digest`` keys, and
    ``layers`` for a layer capture)."""
    b = doc.get("digest") or {}
    frames = {name: pd.DataFrame(b.get(name) or [], columns=list(cols))
              for name, cols in (("kernels", KERNEL_COLUMNS), ("function_types", FUNCTION_TYPE_COLUMNS),
                                 ("operators", OPERATOR_COLUMNS), ("lanes", LANE_COLUMNS))}
    engines = pd.DataFrame(doc.get("summary") or [])
    for col in engines.columns:           # JSON null = unknown: float NaN, as in the live frame
        if col != "core":
            engines[col] = pd.to_numeric(engines[col], errors="coerce")
    lanes = frames["lanes"] if "lanes" in b else lanes_from_summary(engines)
    for col in LANE_COLUMNS[2:]:
        lanes[col] = pd.to_numeric(lanes[col], errors="coerce").astype("float64")
    return Digest(source, engines, lanes, frames["kernels"], frames["function_types"], frames["operators"],
                  b.get("timeline") or {"span_ns": 0, "buckets": TIMELINE_BUCKETS, "lanes": [], "busy": []},
                  layers=_layer_frame([{k: r.get(k) for k in LAYER_COLUMNS} for r in doc.get("layers") or []]))
