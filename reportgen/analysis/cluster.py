"""The cluster report's analysis: many devices' digests side by side (docs/metrics.md "Cluster").

Input: one :class:`DeviceRun` per dump (its name, status and the small tables a worker sent back:
engine summary rows and kernel breakdown rows, see analysis/digest.py). Output: the
:class:`Cluster` tables that index.html, cluster.xlsx and cluster.json show:

* ``devices``: one row per dump: status, span, busy and utilisation per engine (Overall rows);
* ``heat``: utilisation per device, core and engine (the heat map);
* ``stragglers``: devices whose span exceeds the median span of the good devices by more than
  :data:`STRAGGLER_EXCESS`, with the engine furthest above its own median;
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
                  "that reported (at least 2)")
_DEV_CALL = re.compile(r"dev(\d+)-(\d+)$")


@dataclass
class DeviceRun:
    """What the client keeps of one dump (a few kB)."""
    name: str                       # the dump's path below the run folder
    input: str
    output: str                     # its own report folder
    status: str                     # "ok" or the one-line error
    seconds: float = 0.0
    files: int = 0
    meta: dict = field(default_factory=dict)      # chip, cores, mode, commands, warnings
    engines: list[dict] = field(default_factory=list)   # engine summary rows (per core + Overall)
    kernels: list[dict] = field(default_factory=list)   # digest kernel rows

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
    median_span_ns: float | None
    rule: str = STRAGGLER_RULE

    @property
    def failed(self) -> int:
        return int((self.devices["status"] != "ok").sum())


def _devices(runs: list[DeviceRun]) -> pd.DataFrame:
    rows = []
    for r in runs:
        device, call = device_and_call(r.name)
        overall = r.engines[-1] if r.ok and r.engines else {}
        row = {"name": r.name, "device": device, "call": call, "status": r.status,
               "chip": r.meta.get("chip"), "cores": r.meta.get("cores"),
               "commands": r.meta.get("commands"), "warnings": r.meta.get("warnings"),
               "seconds": round(r.seconds, 3), "span_ns": overall.get("span_ns")}
        for e in ENGINES:
            row[f"{e.lower()}_busy_ns"] = overall.get(f"{e.lower()}_busy_ns")
            row[f"{e.lower()}_util"] = overall.get(f"{e.lower()}_util")
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
            for r in runs if r.ok for row in r.engines[:-1] for e in ENGINES
            if row.get(f"{e.lower()}_cmds")]
    frame = pd.DataFrame(rows, columns=["name", "core", "engine", "util"])
    frame["util"] = pd.to_numeric(frame["util"], errors="coerce")
    return frame


def _stragglers(devices: pd.DataFrame) -> tuple[pd.DataFrame, float | None]:
    cols = ["name", "span_ns", "median_span_ns", "excess_pct", "engine", "engine_excess_pct"]
    good = devices[(devices["status"] == "ok") & devices["span_ns"].notna()]
    if len(good) < 2:
        return pd.DataFrame(columns=cols), None
    median = float(good["span_ns"].median())
    slow = good[good["span_ns"] > median * (1 + STRAGGLER_EXCESS)]
    busy = {e: good[f"{e.lower()}_busy_ns"] for e in ENGINES}
    medians = {e: float(b.median()) for e, b in busy.items() if b.notna().any()}
    rows = []
    for i, d in slow.iterrows():
        excess = {e: (d[f"{e.lower()}_busy_ns"] / m - 1) for e, m in medians.items()
                  if m > 0 and pd.notna(d[f"{e.lower()}_busy_ns"])}
        engine = max(excess, key=excess.get) if excess else None
        rows.append({"name": d["name"], "span_ns": int(d["span_ns"]), "median_span_ns": median,
                     "excess_pct": 100 * (d["span_ns"] / median - 1), "engine": engine,
                     "engine_excess_pct": 100 * excess[engine] if engine else np.nan})
    out = pd.DataFrame(rows, columns=cols)
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
    cols = ["device", "call", "name", "span_ns", *(f"{e.lower()}_busy_ns" for e in ENGINES),
            "span_vs_first_pct"]
    d = devices[devices["call"].notna() & (devices["status"] == "ok")]
    d = d[d.groupby("device")["call"].transform("size") > 1]
    if d.empty:
        return pd.DataFrame(columns=cols)
    d = d.sort_values(["device", "call"], kind="stable")
    first = d.groupby("device", sort=False)["span_ns"].transform("first")
    d = d.assign(span_vs_first_pct=(100 * (d["span_ns"] / first - 1)).astype("float64"))
    return d[cols].reset_index(drop=True)


def cluster_analysis(runs: list[DeviceRun]) -> Cluster:
    devices = _devices(runs)
    stragglers, median = _stragglers(devices)
    return Cluster(devices, _heat(runs), stragglers, _kernels(runs), _calls(devices), median)
