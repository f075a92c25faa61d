"""The cluster report's analysis: many devices' digests side by side (docs/metrics.md "Cluster").

Input: one :class:`DeviceRun` per run: a PMU dump or a framework (Kineto / Chrome) trace, with
its name, status and the small tables a worker sent back: engine summary rows (dumps), Device
lanes rows (traces) and kernel rows, see analysis/digest.py. Output: the :class:`Cluster` tables
that index.html, cluster.xlsx and cluster.json show:

* ``devices``: one row per run: its kind, status, span, busy and utilisation per lane: the
  engines' Overall rows for a dump, the union of its device lanes (``device``) for a trace;
* ``heat``: utilisation per run, core and engine (a trace: per device, its union of streams);
* ``stragglers``: runs whose span exceeds the median span of the good runs of the same kind by
  more than :data:`STRAGGLER_EXCESS`, with the lane furthest above its own median;
* ``kernels``: per kernel name, its command time on each device: min / median / max and where;
* ``calls``: devices captured in several calls (``-C``), each call against the device's first.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reportgen.analysis.digest import ENGINES

#: a device is a straggler when its span is more than this fraction above the median span
STRAGGLER_EXCESS = 0.10
STRAGGLER_RULE = (f"span is more than {STRAGGLER_EXCESS:.0%} above the median span of the devices "
                  "of its kind (dumps, traces) that reported (at least 2)")
#: a framework trace's one lane in the cluster tables: the union of a device's streams
DEVICE_LANE = "device"
#: the kinds of run, in the order their lanes are shown, and their lanes
KIND_LANES = {"dump": ENGINES, "trace": (DEVICE_LANE,)}
_DEV_CALL = re.compile(r"dev(\d+)-(\d+)$")


@dataclass
class DeviceRun:
    """What the client keeps of one run (a few kB)."""
    name: str                       # the dump's (trace's) path below the run folder
    input: str
    output: str                     # its own report folder
    status: str                     # "ok" or the one-line error
    seconds: float = 0.0
    files: int = 0
    meta: dict = field(default_factory=dict)      # chip, cores, mode, commands, warnings
    engines: list[dict] = field(default_factory=list)   # engine summary rows (per core + Overall)
    kernels: list[dict] = field(default_factory=list)   # digest kernel rows
    lanes: list[dict] = field(default_factory=list)     # digest lane rows (traces: Device lanes)
    kind: str = "dump"                                   # a KIND_LANES key
    steps: list[dict] = field(default_factory=list)     # Ascend/MindSpore Rank Step Breakdown rows
    #: the top findings of each of its devices (rank, rule, severity, device, value, text)
    findings: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def device_and_call(name: str) -> tuple[str, int | None]:
    """``cdm_profile_data_dev3-1`` -> ("3", 1); a folder named otherwise is its own device."""
    leaf = name.rstrip("/").rsplit("/", 1)[-1]
    m = _DEV_CALL.search(leaf)
    if not m:
        return name, None
    prefix = name[: len(name) - len(leaf)]
    return prefix + m.group(1), int(m.group(2))


@dataclass
class Cluster:
    devices: pd.DataFrame
    heat: pd.DataFrame
    stragglers: pd.DataFrame
    kernels: pd.DataFrame
    calls: pd.DataFrame
    median_span_ns: float | None    # None when dumps and traces are mixed (a median per kind)
    rule: str = STRAGGLER_RULE
    #: every run's per-rank step breakdown (Ascend / MindSpore, docs/metrics.md), with its run
    rank_steps: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: each run's devices' top findings (FINDING_CLUSTER_COLUMNS), most severe first per run
    findings: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FINDING_CLUSTER_COLUMNS))

    @property
    def failed(self) -> int:
        return int((self.devices["status"] != "ok").sum())

    @property
    def lanes(self) -> tuple[str, ...]:
        """The lanes with columns: the engines when there are dumps, ``device`` when traces."""
        return lanes_of(self.devices["kind"])


def lanes_of(kinds) -> tuple[str, ...]:
    present = set(kinds)
    return tuple(lane for kind, lanes in KIND_LANES.items() if kind in present for lane in lanes)


def _union_rows(run: DeviceRun) -> list[dict]:
    """A trace's per-device union rows (Device lanes, docs/metrics.md "Framework traces")."""
    return [r for r in run.lanes if str(r.get("core")) != "Overall" and str(r.get("engine")).endswith("(union)")]


def _lane_figures(run: DeviceRun) -> dict:
    """Overall busy and utilisation per lane of one run that reported."""
    if run.kind == "trace":
        overall = next((r for r in run.lanes if str(r.get("core")) == "Overall"), {})
        return {f"{DEVICE_LANE}_busy_ns": overall.get("busy_ns"), f"{DEVICE_LANE}_util": overall.get("util")}
    overall = run.engines[-1] if run.engines else {}
    return {f"{e.lower()}_{m}": overall.get(f"{e.lower()}_{m}") for e in ENGINES for m in ("busy_ns", "util")}


def _devices(runs: list[DeviceRun]) -> pd.DataFrame:
    lanes = lanes_of(r.kind for r in runs)
    rows = []
    for r in runs:
        device, call = device_and_call(r.name)
        overall = r.engines[-1] if r.ok and r.engines else {}
        figures = _lane_figures(r) if r.ok else {}
        row = {"name": r.name, "kind": r.kind, "device": device, "call": call, "status": r.status,
               "chip": r.meta.get("chip"), "cores": r.meta.get("cores"),
               "commands": r.meta.get("commands"), "warnings": r.meta.get("warnings"),
               "seconds": round(r.seconds, 3), "span_ns": overall.get("span_ns")}
        for lane in lanes:
            for m in ("busy_ns", "util"):
                row[f"{lane.lower()}_{m}"] = figures.get(f"{lane.lower()}_{m}")
        rows.append(row)
    frame = pd.DataFrame(rows)
    for col in frame.columns:      # counts and ns stay whole numbers beside a failed dump's gaps
        if col.endswith("_util"):
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("float64")
        elif col.endswith("_ns") or col in ("call", "cores", "commands", "warnings"):
            frame[col] = pd.to_numeric(frame[col], errors="coerce").round().astype("Int64")
    return frame


def _heat(runs: list[DeviceRun]) -> pd.DataFrame:
    rows = [{"name": r.name, "core": row["core"], "engine": e,
             "util": row.get(f"{e.lower()}_util")}
            for r in runs if r.ok and r.kind == "dump" for row in r.engines[:-1] for e in ENGINES
            if row.get(f"{e.lower()}_cmds")]
    rows += [{"name": r.name, "core": row["core"], "engine": DEVICE_LANE, "util": row.get("util")}
             for r in runs if r.ok and r.kind == "trace" for row in _union_rows(r)]
    frame = pd.DataFrame(rows, columns=["name", "core", "engine", "util"])
    frame["util"] = pd.to_numeric(frame["util"], errors="coerce")
    return frame


def _stragglers(devices: pd.DataFrame) -> tuple[pd.DataFrame, float | None]:
    """The straggler rule within each kind of run (a dump's span and a trace's are not alike);
    the median span returned is the one kind's, None when kinds are mixed."""
    cols = ["name", "span_ns", "median_span_ns", "excess_pct", "engine", "engine_excess_pct"]
    good_all = devices[(devices["status"] == "ok") & devices["span_ns"].notna()]
    rows, medians_of_kinds = [], []
    for kind, good in good_all.groupby("kind", sort=False):
        if len(good) < 2:
            continue
        median = float(good["span_ns"].median())
        medians_of_kinds.append(median)
        slow = good[good["span_ns"] > median * (1 + STRAGGLER_EXCESS)]
        busy = {e: good[f"{e.lower()}_busy_ns"] for e in KIND_LANES[kind]}
        medians = {e: float(b.median()) for e, b in busy.items() if b.notna().any()}
        for i, d in slow.iterrows():
            excess = {e: (d[f"{e.lower()}_busy_ns"] / m - 1) for e, m in medians.items()
                      if m > 0 and pd.notna(d[f"{e.lower()}_busy_ns"])}
            engine = max(excess, key=excess.get) if excess else None
            rows.append({"name": d["name"], "span_ns": int(d["span_ns"]), "median_span_ns": median,
                         "excess_pct": 100 * (d["span_ns"] / median - 1), "engine": engine,
                         "engine_excess_pct": 100 * excess[engine] if engine else np.nan})
    out = pd.DataFrame(rows, columns=cols)
    median = medians_of_kinds[0] if good_all["kind"].nunique() == 1 and medians_of_kinds else None
    return out.sort_values("excess_pct", ascending=False, kind="stable").reset_index(drop=True), median


def _kernels(runs: list[DeviceRun]) -> pd.DataFrame:
    cols = ["kernel", "devices", "min_ns", "min_device", "median_ns", "max_ns", "max_device",
            "spread_pct"]
    parts = [pd.DataFrame(r.kernels).assign(name=r.name) for r in runs if r.ok and r.kernels]
    if not parts:
        return pd.DataFrame(columns=cols)
    k = pd.concat(parts, ignore_index=True)
    per = k.groupby(["kernel", "name"], sort=False)["total_ns"].sum().reset_index()
    g = per.groupby("kernel", sort=True)["total_ns"]
    lo, hi = per.loc[g.idxmin()], per.loc[g.idxmax()]
    out = pd.DataFrame({"kernel": lo["kernel"].to_numpy(), "devices": g.size().to_numpy(),
                        "min_ns": lo["total_ns"].to_numpy(), "min_device": lo["name"].to_numpy(),
                        "median_ns": g.median().to_numpy(), "max_ns": hi["total_ns"].to_numpy(),
                        "max_device": hi["name"].to_numpy()})
    with np.errstate(divide="ignore", invalid="ignore"):
        out["spread_pct"] = np.where(out["median_ns"] > 0,
                                     100 * (out["max_ns"] - out["min_ns"]) / out["median_ns"], np.nan)
    return out.sort_values("spread_pct", ascending=False, kind="stable").reset_index(drop=True)[cols]


def _calls(devices: pd.DataFrame) -> pd.DataFrame:
    cols = ["device", "call", "name", "span_ns", *(f"{e.lower()}_busy_ns" for e in ENGINES if
                                                   f"{e.lower()}_busy_ns" in devices),
            "span_vs_first_pct"]
    d = devices[devices["call"].notna() & (devices["status"] == "ok")]
    d = d[d.groupby("device")["call"].transform("size") > 1]
    if d.empty:
        return pd.DataFrame(columns=cols)
    d = d.sort_values(["device", "call"], kind="stable")
    first = d.groupby("device", sort=False)["span_ns"].transform("first")
    d = d.assign(span_vs_first_pct=(100 * (d["span_ns"] / first - 1)).astype("float64"))
    return d[cols].reset_index(drop=True)


#: columns of Cluster.findings; TOP_FINDINGS per device of a run are kept (batch.run_one)
FINDING_CLUSTER_COLUMNS = ["name", "device", "rank", "rule", "severity", "value", "threshold",
                           "unit", "text"]
TOP_FINDINGS = 3


def top_findings(findings: pd.DataFrame) -> list[dict]:
    """A run's ranked findings (PMU or framework form), the first TOP_FINDINGS of each device
    (``core``; a finding about no device counts for the run as a whole)."""
    if findings is None or findings.empty:
        return []
    f = findings.assign(device=findings["core"].astype(object).where(findings["core"].notna(), None))
    keep = f.groupby(f["device"].astype(str), sort=False).cumcount() < TOP_FINDINGS
    cols = [c for c in FINDING_CLUSTER_COLUMNS if c != "name"]
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
            for r in f.loc[keep, cols].to_dict("records")]


def _findings(runs: list[DeviceRun]) -> pd.DataFrame:
    rows = [{"name": r.name, **f} for r in runs if r.ok for f in r.findings]
    return pd.DataFrame(rows, columns=FINDING_CLUSTER_COLUMNS)


def cluster_analysis(runs: list[DeviceRun]) -> Cluster:
    devices = _devices(runs)
    stragglers, median = _stragglers(devices)
    steps = pd.DataFrame([{"run": r.name, **row} for r in runs if r.ok for row in r.steps])
    return Cluster(devices, _heat(runs), stragglers, _kernels(runs), _calls(devices), median,
                   rank_steps=steps, findings=_findings(runs))
