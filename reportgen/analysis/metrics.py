"""Per core x engine metrics: busy, idle, utilisation, bytes, bandwidth, uArch rate.

Every number that more than one output shows is computed here, once. Definitions are in
docs/metrics.md; the column names below are the contract the writers use.

The result of :func:`engine_summary` is one row per core (``core`` = 0..N-1) plus a last row
``core = "Overall"``. Columns (``<e>`` is tiu, gdma, sdma, cdma):

* ``span_ns``          wall window: first command start to last command end over the whole
                       profile (all cores, engines and ports); the same for every row.
* ``<e>_cmds``         commands shown (system commands included)
* ``<e>_busy_ns``      union of the intervals of the engine's non-system commands
* ``<e>_idle_ns``      span_ns - busy_ns
* ``<e>_util``         busy_ns / span_ns (0..1)
* ``<dma>_ddr_bytes``  bytes of non-system commands whose direction touches DDR
* ``<dma>_l2m_bytes``  bytes of non-system commands touching L2M but not DDR
* ``<dma>_ddr_read_bytes`` / ``_ddr_write_bytes``  DDR is the source / the destination
* ``<dma>_ddr_bw_busy``  ddr_bytes / (summed duration of those commands), GB/s
* ``<dma>_ddr_bw_wall``  ddr_bytes / span_ns, GB/s
* ``<dma>_l2m_bw_busy``, ``<dma>_l2m_bw_wall``  likewise for L2M
* ``<dma>_stall_cycles`` summed stall counter
* ``<dma>_bytes``      bytes of non-system commands, every direction (also unknown: mode 0)
* ``<dma>_xfer_ns``    summed duration of the non-system commands that moved bytes
* ``<dma>_bw_busy``    bytes / xfer_ns, GB/s (all directions; the vendor's mode-0 DMA figure)
* ``<dma>_ddr_read_bw_busy`` / ``_ddr_write_bw_busy``  DDR read / write bytes / ddr_busy_ns
* ``tiu_alg_ops``, ``tiu_uarch_ops``  sums over TIU commands whose ops are modelled
* ``tiu_uarch_rate``   tiu_alg_ops / tiu_uarch_ops; NaN ("n/a") when no command is modelled
* ``parallelism``      (tiu + gdma + sdma busy) / span_ns; can exceed 1 (engines overlap)
* ``compute_ratio``    tiu busy / (gdma + sdma busy); NaN when no data movement

CDMA traffic belongs to ports, not cores: the per-core rows count the CDMA commands a core
submitted (``core`` column of the command); the Overall row counts all ports.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.model import Profile

ENGINE_KEYS = ("tiu", "gdma", "sdma", "cdma")
DMA_KEYS = ("gdma", "sdma", "cdma")


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length covered by the intervals [start, end) (overlaps counted once)."""
    if len(starts) == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    s = starts[order].astype(np.int64)
    e = ends[order].astype(np.int64)
    run_end = np.maximum.accumulate(e)
    # a new merged interval begins where the start passes every end seen before it
    new = np.empty(len(s), bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    # run_end never decreases: a merged interval ends at the run_end of its last member
    # (times may be negative, so no maximum over a zero-filled array)
    last = np.append(np.flatnonzero(new)[1:] - 1, len(s) - 1)
    return int((run_end[last] - s[new]).sum())


def _div(a: float, b: float) -> float:
    return float(a) / float(b) if b else float("nan")


def _direction_flags(direction: pd.Series) -> dict[str, np.ndarray]:
    """Per-row DDR / L2M flags from the direction categories (computed once per category)."""
    cat = direction.astype("category")
    names = [str(c) for c in cat.cat.categories]
    codes = cat.cat.codes.to_numpy()

    def per_row(test) -> np.ndarray:
        table = np.array([test(n) for n in names] + [False], bool)   # code -1: unknown
        return table[codes]

    ddr = per_row(lambda n: "DDR" in n)
    return {
        "ddr": ddr,
        "l2m": per_row(lambda n: "L2M" in n) & ~ddr,
        "src_ddr": per_row(lambda n: n.split("->")[0] == "DDR"),
        "dst_ddr": per_row(lambda n: n.split("->")[-1] == "DDR"),
    }


def _engine_stats(a: dict[str, np.ndarray], key: str, span: int) -> dict[str, float]:
    """Metrics of the rows in ``a`` (one engine of one core, or of all cores)."""
    out: dict[str, float] = {f"{key}_cmds": len(a["start"])}
    work = ~a["is_sys"]
    busy = union_length(a["start"][work], a["end"][work])
    out[f"{key}_busy_ns"] = busy
    out[f"{key}_idle_ns"] = span - busy
    out[f"{key}_util"] = _div(busy, span)
    if key in DMA_KEYS:
        nbytes, dur = a["bytes"], a["end"] - a["start"]
        ddr, l2m = work & a["ddr"], work & a["l2m"]
        out[f"{key}_ddr_bytes"] = int(nbytes[ddr].sum())
        out[f"{key}_l2m_bytes"] = int(nbytes[l2m].sum())
        out[f"{key}_ddr_read_bytes"] = int(nbytes[work & a["src_ddr"]].sum())
        out[f"{key}_ddr_write_bytes"] = int(nbytes[work & a["dst_ddr"]].sum())
        out[f"{key}_ddr_busy_ns"] = int(dur[ddr & (nbytes > 0)].sum())
        out[f"{key}_l2m_busy_ns"] = int(dur[l2m & (nbytes > 0)].sum())
        out[f"{key}_ddr_bw_busy"] = _div(out[f"{key}_ddr_bytes"], out[f"{key}_ddr_busy_ns"])
        out[f"{key}_l2m_bw_busy"] = _div(out[f"{key}_l2m_bytes"], out[f"{key}_l2m_busy_ns"])
        out[f"{key}_ddr_bw_wall"] = _div(out[f"{key}_ddr_bytes"], span)
        out[f"{key}_l2m_bw_wall"] = _div(out[f"{key}_l2m_bytes"], span)
        out[f"{key}_stall_cycles"] = int(a["stall"][work].sum())
        # all directions, also unknown ones (mode 0: the bytes are counted, the direction is not)
        moved = work & (nbytes > 0)
        out[f"{key}_bytes"] = int(nbytes[work].sum())
        out[f"{key}_xfer_ns"] = int(dur[moved].sum())
        out[f"{key}_bw_busy"] = _div(out[f"{key}_bytes"], out[f"{key}_xfer_ns"])
        out[f"{key}_ddr_read_bw_busy"] = _div(out[f"{key}_ddr_read_bytes"], out[f"{key}_ddr_busy_ns"])
        out[f"{key}_ddr_write_bw_busy"] = _div(out[f"{key}_ddr_write_bytes"], out[f"{key}_ddr_busy_ns"])
    if key == "tiu":
        ops = work & a["modelled"]
        out["tiu_alg_ops"] = float(a["alg"][ops].sum())
        out["tiu_uarch_ops"] = float(a["uarch"][ops].sum())
        out["tiu_modelled_cmds"] = int(ops.sum())
        out["tiu_uarch_rate"] = (_div(out["tiu_alg_ops"], out["tiu_uarch_ops"])
                                 if ops.any() else float("nan"))
    return out


def _rows(a: dict[str, np.ndarray], idx: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[idx] for k, v in a.items()}


def _derived(row: dict[str, float], span: int, cores: int) -> None:
    busy = row["tiu_busy_ns"] + row["gdma_busy_ns"] + row["sdma_busy_ns"]
    row["parallelism"] = _div(busy, span * cores)
    row["compute_ratio"] = _div(row["tiu_busy_ns"], row["gdma_busy_ns"] + row["sdma_busy_ns"])


def _arrays(c: pd.DataFrame) -> dict[str, np.ndarray]:
    """The columns the metrics need, as plain numpy arrays, flags computed once."""
    a = {
        "start": c["start_ns"].to_numpy(np.int64), "end": c["end_ns"].to_numpy(np.int64),
        "is_sys": c["is_sys"].to_numpy(bool),
        "bytes": c["bytes"].astype("Float64").fillna(0).to_numpy(float),
        "stall": c["stall_cycles"].astype("Float64").fillna(0).to_numpy(float),
        "alg": c["alg_ops"].to_numpy(float), "uarch": c["uarch_ops"].to_numpy(float),
        "core": c["core"].to_numpy(np.int64),
    }
    a["modelled"] = ~np.isnan(a["alg"]) & ~np.isnan(a["uarch"])
    a.update(_direction_flags(c["direction"]))
    return a


def _engine_index(engine: pd.Series) -> np.ndarray:
    """Per row, the position of its engine in ENGINE_KEYS (-1: another engine)."""
    cat = engine.astype("category")
    table = np.array([ENGINE_KEYS.index(str(n).lower()) if str(n).lower() in ENGINE_KEYS else -1
                      for n in cat.cat.categories] + [-1], np.int64)
    return table[cat.cat.codes.to_numpy()]


def engine_summary(profile: Profile) -> pd.DataFrame:
    """One row per core plus ``Overall``; see the module docstring for the columns."""
    c = profile.commands
    ncores = max(profile.meta.num_cores, int(c["core"].max()) + 1 if len(c) else 0)
    span = int(c["end_ns"].max() - c["start_ns"].min()) if len(c) else 0
    a = _arrays(c)
    # the rows of each (core, engine), found with one sort instead of a mask per pair
    engine = _engine_index(c["engine"])
    group = np.where(engine >= 0, a["core"] * len(ENGINE_KEYS) + engine, -1)
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(ncores * len(ENGINE_KEYS) + 1))
    rows = []
    for k in range(ncores):
        row: dict[str, float] = {"core": k, "span_ns": span}
        for e, key in enumerate(ENGINE_KEYS):
            g = k * len(ENGINE_KEYS) + e
            row.update(_engine_stats(_rows(a, order[bounds[g]:bounds[g + 1]]), key, span))
        _derived(row, span, 1)
        rows.append(row)
    overall: dict[str, float] = {"core": "Overall", "span_ns": span}
    for e, key in enumerate(ENGINE_KEYS):
        stats = _engine_stats(_rows(a, np.flatnonzero(engine == e)), key, span)
        # busy time of an engine over all cores: the per-core unions added up (cores, and the
        # CDMA ports they submit to, run in parallel, so a union across them would hide work)
        stats[f"{key}_busy_ns"] = int(sum(r[f"{key}_busy_ns"] for r in rows))
        stats[f"{key}_idle_ns"] = span * ncores - stats[f"{key}_busy_ns"]
        stats[f"{key}_util"] = _div(stats[f"{key}_busy_ns"], span * ncores)
        overall.update(stats)
    _derived(overall, span, max(ncores, 1))
    rows.append(overall)
    return pd.DataFrame(rows)


def lane_summary(profile: Profile) -> pd.DataFrame:
    """Per device (core): one row per lane, then the device itself; the last row is Overall.

    For framework traces a "core" is a device or rank and an "engine" a stream or hardware lane,
    so the PMU columns of :func:`engine_summary` (TIU, GDMA, ...) do not apply; this table does.
    A lane's busy = union of its work (non-system) intervals; the device row's busy = union of
    the work of all its lanes (streams run concurrently: their sum could exceed the span), so
    busy <= span_ns always; idle = span_ns - busy; util = busy / span_ns, with span_ns the whole
    profile's wall window. Overall adds the devices' busy times (devices run in parallel) over
    span_ns x devices.
    """
    c = profile.commands
    cols = ["core", "engine", "commands", "busy_ns", "idle_ns", "util", "span_ns"]
    if c.empty:
        return pd.DataFrame(columns=cols)
    span = int(c["end_ns"].max() - c["start_ns"].min())
    a = _arrays(c)
    engine = c["engine"].astype(str).to_numpy()
    # communication lanes (``lane_busy``: HCCL ops and planes) are busy although no kernel work
    work_all = ~a["is_sys"] | (c["lane_busy"].fillna(False).to_numpy(bool) if "lane_busy" in c.columns else False)

    def row(core, label, sel) -> dict:
        busy = union_length(a["start"][sel & work_all], a["end"][sel & work_all])
        return {"core": core, "engine": label, "commands": int(sel.sum()), "busy_ns": busy,
                "idle_ns": span - busy, "util": _div(busy, span), "span_ns": span}

    rows, devices = [], []
    keys = pd.DataFrame({"core": a["core"], "engine": engine}).drop_duplicates()
    for core, lanes in keys.sort_values(["core", "engine"]).groupby("core", sort=True)["engine"]:
        on_core = a["core"] == core
        rows += [row(int(core), eng, on_core & (engine == eng)) for eng in lanes]
        devices.append(row(int(core), f"device: {len(lanes)} lanes (union)", on_core))
        rows.append(devices[-1])
    total = sum(d["busy_ns"] for d in devices)
    rows.append({"core": "Overall", "engine": f"{len(devices)} devices", "commands": len(c),
                 "busy_ns": total, "idle_ns": span * len(devices) - total,
                 "util": _div(total, span * len(devices)), "span_ns": span})
    return pd.DataFrame(rows, columns=cols)
