"""``PerfWeb/result.html``: one self-contained, mailable report page.

The page is rendered from the Jinja2 templates in ``templates/`` (``result.html.j2`` with
``report.js`` and ``report.css`` inlined) and carries everything it needs:

* plotly.js, inlined once from the installed ``plotly`` package, gzip+base64 (the browser
  inflates it with ``DecompressionStream``; 2 MB instead of 4.8 MB);
* every command and host event as one compact binary *payload*: byte-shuffled columns, delta
  encoded per lane, gzip+base64 (see :func:`encode_items`), decoded by ``decodeItems`` in
  ``report.js``; :func:`decode_items` is its Python twin so tests check the round trip without
  a browser;
* small JSON for the rest: names tables, lanes, views, the summary table and the overview
  charts (Plotly figure dicts).

The browser draws timelines with the level-of-detail rule of ``analysis.timeline``: an
occupancy heatmap while many commands are visible, real bars with hover when few are. Numbers
shown come from ``engine_summary`` (the summary table) and ``analysis.timeline`` (charts);
nothing is recomputed here.
"""
from __future__ import annotations

import base64
import functools
import gzip
import html as html_lib
import json
import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reportgen import __version__
from reportgen.analysis import timeline
from reportgen.errors import OutputError
from reportgen.model import ENGINES, Profile
from reportgen.writers.atomic import atomic_open

#: Engine colours, fixed (lane labels, utilisation charts).
ENGINE_COLORS = {"TIU": "#2E7D32", "GDMA": "#EF6C00", "SDMA": "#5C6BC0", "CDMA": "#C62828",
                 "host": "#546E7A"}
OTHER_ENGINE_COLOR = "#6D4C41"

#: Function Type palette: the known types get fixed, distinct colours so the same type has the
#: same colour in every report; other names are hashed onto the same palette (stable, may share).
PALETTE = ["#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F", "#EDC948", "#B07AA1",
           "#FF9DA7", "#9C755F", "#A0CBE8", "#FFBE7D", "#8CD17D", "#B6992D", "#499894",
           "#86BCB6", "#D37295", "#F1CE63", "#D4A6C8", "#1F77B4", "#2CA02C", "#9467BD",
           "#8C564B", "#17BECF", "#BCBD22", "#E377C2", "#AEC7E8", "#FF7F0E", "#98DF8A"]
KNOWN_TYPES = ["sMM2", "DMA_tensor", "sCONV", "DMA_matrix", "sAR", "DMA_general", "sSFU",
               "sPorD", "sLIN", "DMA_cw_transpose", "sCMP", "DMA_gather", "sVC", "DMA_scatter",
               "sCW", "sBC", "sSGL", "sSG", "sRQ", "sDQ", "sMM", "sCONV_BW", "DMA_compress",
               "DMA_lossy_compress", "DMA_nonzero", "DMA_masked_select", "DMA_reverse",
               "DMA_randmask"]
SYSTEM_COLOR = "#A8A8A8"
UNKNOWN_COLOR = "#7F7F7F"

#: Commands visible at once below which the timeline draws real bars with hover.
BAR_LIMIT = 3000
#: Buckets of the full-span occupancy strip in each timeline's range slider.
OVERVIEW_BUCKETS = 600
#: Time buckets of the bandwidth-over-time chart.
BANDWIDTH_BUCKETS = 1000
#: Per-command bandwidth is stored implicitly as bytes / (duration + pad) when that agrees with
#: the model to this tolerance (GB/s; the page prints 2 decimals); other values are stored
#: explicitly, so the page always shows the model's number.
BW_TOLERANCE = 5e-4
#: uArch rate is stored in units of 1e-4 (0.01 %), the page prints 2 decimals of a percent.
URATE_SCALE = 10_000


def type_color(name: str | None, is_sys: bool = False, taken: set[str] | None = None) -> str:
    """Colour of a Function Type (or host category).

    Known types have fixed colours; system types are grey; any other name starts at the palette
    slot given by a hash of the name and moves on past colours already ``taken`` in this report,
    so the same set of names always gets the same colours and distinct names stay distinct
    while the palette lasts.
    """
    if name is None:
        return UNKNOWN_COLOR
    if is_sys or name.lower() in ("sys", "sdma_sys", "scdma_sys", "dma_sys") or name.upper() == "SYS":
        return SYSTEM_COLOR
    if name in KNOWN_TYPES:
        return PALETTE[KNOWN_TYPES.index(name) % len(PALETTE)]
    first = zlib.crc32(name.encode("utf-8")) % len(PALETTE)
    for step in range(len(PALETTE)):
        colour = PALETTE[(first + step) % len(PALETTE)]
        if not taken or colour not in taken:
            return colour
    return PALETTE[first]


def engine_color(engine: str) -> str:
    return ENGINE_COLORS.get(engine, OTHER_ENGINE_COLOR)


# --------------------------------------------------------------------------------------------
# Binary payload: columns of all items (device commands, then host events), sorted by lane/start
# --------------------------------------------------------------------------------------------

_INT_TYPES = [np.dtype(t) for t in ("<i1", "<u1", "<i2", "<u2", "<i4", "<u4")]
_DTYPE_CODE = {"int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4",
               "uint32": "u4", "float32": "f4", "float64": "f8"}
_CODE_DTYPE = {v: np.dtype("<" + v) for v in _DTYPE_CODE.values()}


def _narrow(values: np.ndarray) -> np.ndarray:
    """Smallest little-endian int type holding ``values``; float64 (exact below 2**53) if none."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return values.astype("<f8")
    lo, hi = (int(values.min()), int(values.max())) if len(values) else (0, 0)
    for t in _INT_TYPES:
        info = np.iinfo(t)
        if info.min <= lo and hi <= info.max:
            return values.astype(t)
    return values.astype("<f8")


def _shuffle(arr: np.ndarray) -> bytes:
    """Byte planes (all first bytes, then all second bytes, ...): deltas' high bytes are mostly
    zero, so gzip finds long runs (as in blosc/HDF5 shuffle)."""
    k = arr.dtype.itemsize
    return np.ascontiguousarray(arr.view(np.uint8).reshape(-1, k).T).tobytes()


def _unshuffle(raw: bytes, dtype: np.dtype, n: int) -> np.ndarray:
    k = dtype.itemsize
    planes = np.frombuffer(raw, np.uint8).reshape(k, n)
    return np.ascontiguousarray(planes.T).view(dtype).reshape(n)


def _lane_delta(values: np.ndarray, lane_start: np.ndarray) -> np.ndarray:
    """values[i] - values[i-1] inside a lane; the first item of a lane keeps its value."""
    d = np.empty_like(values)
    if len(values):
        d[0] = values[0]
        d[1:] = values[1:] - values[:-1]
        d[lane_start] = values[lane_start]
    return d


def _lane_undelta(deltas: np.ndarray, lane_off: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_lane_delta`: prefix sums restarting at each lane."""
    out = np.cumsum(deltas.astype(np.float64 if deltas.dtype.kind == "f" else np.int64))
    lane_of = np.repeat(np.arange(len(lane_off) - 1), np.diff(lane_off))
    before = np.concatenate([[0], out])[lane_off[:-1]]     # running sum before each lane
    return out - before[lane_of]


@dataclass
class Items:
    """Device commands and host events as parallel arrays, before encoding (one row per item)."""

    lane: np.ndarray        # int lane index (device lanes first, then host lanes)
    start: np.ndarray       # int64 ns relative to t0
    end: np.ndarray
    op: np.ndarray          # index into ops
    kernel: np.ndarray      # index into kernels + 1; 0 = unknown
    gidx: np.ndarray        # global_idx (host: row of profile.host)
    cmd: np.ndarray         # cmd_id (host: 0)
    nbytes: np.ndarray      # bytes + 1; 0 = unknown
    bw: np.ndarray          # float64 GB/s, NaN when the command has none
    urate: np.ndarray       # round(uarch_rate * URATE_SCALE) + 1; 0 = unknown


def _codes(s: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Category codes (-1 = unknown) and the category names, for any column."""
    cat = s.astype("category") if s.dtype.name != "category" else s
    return cat.cat.codes.to_numpy(np.int64), [str(v) for v in cat.cat.categories]


def collect_items(profile: Profile, lanes: timeline.Lanes, hlanes: timeline.HostLanes):
    """Gather the item columns and the name tables the page needs (types, ops, kernels)."""
    c = profile.commands
    h = profile.host
    firsts = [int(df["start_ns"].min()) for df in (c, h) if len(df)]
    t0 = min(firsts) if firsts else 0
    types: list[dict[str, Any]] = []
    type_index: dict[tuple[str, str], int] = {}

    def add_type(name: str | None, group: str, is_sys: bool) -> int:
        key = (group, name if name is not None else "\0unknown")
        if key not in type_index:
            type_index[key] = len(types)
            types.append({"name": name if name is not None else "(unknown)", "group": group,
                          "color": "", "sys": bool(is_sys), "_raw": name})
        return type_index[key]

    # -- device commands --------------------------------------------------------------------
    ft_codes, ft_names = _codes(c["func_type"])
    fn_codes, fn_names = _codes(c["func_name"])
    dir_codes, dir_names = _codes(c["direction"])
    kern_codes, kern_names = _codes(c["kernel"])
    ddr = c["ddr_bw"].to_numpy(np.float64)
    l2m = c["l2m_bw"].to_numpy(np.float64)
    bwkind = np.where(~np.isnan(ddr), 1, np.where(~np.isnan(l2m), 2, 0))
    sys_by_type = (pd.DataFrame({"t": ft_codes, "s": c["is_sys"].to_numpy(bool)})
                   .groupby("t")["s"].all().to_dict()) if len(c) else {}
    ft_to_type = {code: add_type(ft_names[code] if code >= 0 else None, "device",
                                 bool(sys_by_type.get(code, False)))
                  for code in (np.unique(ft_codes) if len(c) else [])}
    # an op = (Function Type, Function Name, direction, bandwidth kind): few distinct values
    key = ((ft_codes + 1) * (len(fn_names) + 1) + fn_codes + 1) * (len(dir_names) + 1) + dir_codes + 1
    key = key * 3 + bwkind
    uniq, dev_op = np.unique(key, return_inverse=True)
    ops: list[list[Any]] = []
    for k in uniq.tolist():
        kind = k % 3
        k //= 3
        d = k % (len(dir_names) + 1) - 1
        k //= len(dir_names) + 1
        fn = k % (len(fn_names) + 1) - 1
        ft = k // (len(fn_names) + 1) - 1
        ops.append([ft_to_type[ft], fn_names[fn] if fn >= 0 else None,
                    dir_names[d] if d >= 0 else None, ["", "DDR", "L2M"][kind]])
    nbytes = c["bytes"].astype("Float64").to_numpy(np.float64, na_value=np.nan)
    urate = c["uarch_rate"].to_numpy(np.float64)
    dev = Items(
        lane=lanes.of_command.astype(np.int64),
        start=c["start_ns"].to_numpy(np.int64) - t0,
        end=c["end_ns"].to_numpy(np.int64) - t0,
        op=dev_op.astype(np.int64),
        kernel=kern_codes + 1,
        gidx=c["global_idx"].to_numpy(np.int64),
        cmd=c["cmd_id"].to_numpy(np.int64),
        nbytes=np.where(np.isnan(nbytes), 0, nbytes + 1).astype(np.int64) if len(c) else np.zeros(0, np.int64),
        bw=np.where(bwkind == 1, ddr, np.where(bwkind == 2, l2m, np.nan)),
        urate=np.where(np.isnan(urate), 0, np.round(np.nan_to_num(urate) * URATE_SCALE) + 1).astype(np.int64),
    )
    # -- host events --------------------------------------------------------------------------
    n_dev_lanes = len(lanes.names)
    if len(h):
        cat = h["category"].astype("object").where(h["category"].notna(), None)
        name = h["name"].astype("object").where(h["name"].notna(), None)
        pairs = pd.DataFrame({"c": cat.astype(str).where(cat.notna(), "\0"), "n": name.astype(str).where(name.notna(), "\0")})
        host_op, uniq_pairs = pd.factorize(pd.MultiIndex.from_frame(pairs))
        for cat_name, ev_name in uniq_pairs:
            t = add_type(None if cat_name == "\0" else cat_name, "host", False)
            ops.append([t, None if ev_name == "\0" else ev_name, None, ""])
        host_op = host_op.astype(np.int64) + len(uniq)
        nh = len(h)
        host = Items(
            lane=hlanes.of_event.astype(np.int64) + n_dev_lanes,
            start=h["start_ns"].to_numpy(np.int64) - t0, end=h["end_ns"].to_numpy(np.int64) - t0,
            op=host_op, kernel=np.zeros(nh, np.int64), gidx=np.arange(nh, dtype=np.int64),
            cmd=np.zeros(nh, np.int64), nbytes=np.zeros(nh, np.int64), bw=np.full(nh, np.nan),
            urate=np.zeros(nh, np.int64))
        dev = Items(*[np.concatenate([getattr(dev, f), getattr(host, f)]) for f in Items.__dataclass_fields__])
    _assign_colors(types)
    return dev, t0, types, ops, kern_names


def _assign_colors(types: list[dict[str, Any]]) -> None:
    """Known types first (fixed colours), then the other names in name order, each avoiding the
    colours already taken."""
    taken: set[str] = set()
    order = sorted(types, key=lambda t: (t["_raw"] not in KNOWN_TYPES, t["group"], t["name"]))
    for t in order:
        t["color"] = type_color(t.pop("_raw"), t["sys"], taken)
        taken.add(t["color"])


def encode_items(items: Items, n_lanes: int, pads_ns: tuple[float, ...] = (0.0,)) -> tuple[dict[str, Any], bytes]:
    """Sort items by (lane, start) and pack them; returns the header and the gzip stream.

    Columns (per lane, in start order): ``gap`` start minus the previous item's end, ``dur``,
    ``op``, ``kernel``, ``gidx``/``cmd`` as deltas, ``bytes`` (+1), ``urate`` (+1, 1e-4 units),
    and bandwidth exceptions ``bwx_pos``/``bwx_val`` for the commands whose model bandwidth is
    not bytes / (duration + pad) within BW_TOLERANCE. ``pad`` is the one of ``pads_ns`` that
    predicts most commands (a parser may count the last clock cycle, as the vendor does); it is
    written to the header as ``bw_pad_ns``. Each column has the smallest dtype that holds it.
    """
    order = np.lexsort((items.end, items.start, items.lane))
    lane = items.lane[order]
    counts = np.bincount(lane, minlength=n_lanes) if len(lane) else np.zeros(n_lanes, np.int64)
    lane_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    first = lane_off[:-1][counts > 0]
    start, end = items.start[order], items.end[order]
    prev_end = np.empty_like(end)
    if len(end):
        prev_end[0] = 0
        prev_end[1:] = end[:-1]
        prev_end[first] = 0
    dur = end - start
    nbytes = items.nbytes[order]
    bw = items.bw[order]
    has_bw = ~np.isnan(bw)
    best = None
    for pad in pads_ns:
        with np.errstate(divide="ignore", invalid="ignore"):
            predicted = (nbytes - 1) / (dur + pad)
        implicit = has_bw & (nbytes > 0) & (dur + pad > 0) & (np.abs(predicted - bw) <= BW_TOLERANCE)
        if best is None or implicit.sum() > best[1].sum():
            best = (pad, implicit)
    pad, implicit = best if best is not None else (0.0, np.zeros(len(bw), bool))
    explicit = np.flatnonzero(has_bw & ~implicit)
    columns = {
        "gap": start - prev_end,
        "dur": dur,
        "op": items.op[order],
        "kernel": items.kernel[order],
        "gidx": _lane_delta(items.gidx[order], first),
        "cmd": _lane_delta(items.cmd[order], first),
        "bytes": nbytes,
        "urate": items.urate[order],
        "bwx_pos": np.diff(explicit, prepend=0) if len(explicit) else explicit,
        "bwx_val": bw[explicit].astype("<f8"),
    }
    specs, chunks, offset = [], [], 0
    for name, values in columns.items():
        arr = _narrow(values) if name != "bwx_val" else values
        raw = _shuffle(arr)
        specs.append({"name": name, "dtype": _DTYPE_CODE[arr.dtype.name], "n": int(len(arr)),
                      "offset": offset})
        chunks.append(raw)
        offset += len(raw)
    # level 4: within 1 % of level 6 on these byte planes, 4x faster
    blob = gzip.compress(b"".join(chunks), compresslevel=4, mtime=0)
    header = {"n": int(len(order)), "lane_off": lane_off.tolist(), "columns": specs,
              "bw_pad_ns": float(pad)}
    return header, blob


def decode_items(header: dict[str, Any], blob: bytes) -> dict[str, np.ndarray]:
    """Python twin of ``decodeItems`` in report.js: the arrays the page works with.

    Returns ``lane, start, end`` (ns relative to t0), ``op, kernel`` (0 = unknown), ``gidx``,
    ``cmd``, ``bytes`` (NaN = unknown), ``bw`` (GB/s, NaN = none) and ``urate`` (0..1, NaN).
    """
    raw = gzip.decompress(blob)
    cols = {}
    for spec in header["columns"]:
        dt = _CODE_DTYPE[spec["dtype"]]
        size = spec["n"] * dt.itemsize
        cols[spec["name"]] = _unshuffle(raw[spec["offset"]:spec["offset"] + size], dt, spec["n"])
    lane_off = np.asarray(header["lane_off"], np.int64)
    n = header["n"]
    lane = np.repeat(np.arange(len(lane_off) - 1), np.diff(lane_off))
    gap = cols["gap"].astype(np.int64) if cols["gap"].dtype.kind != "f" else cols["gap"]
    dur = cols["dur"].astype(np.int64) if cols["dur"].dtype.kind != "f" else cols["dur"]
    # start = previous end + gap, end = start + dur: per lane, start_i = sum(gap) + sum(dur before i)
    step = gap + dur
    end = _lane_undelta(step, lane_off)
    start = end - dur
    nbytes = cols["bytes"].astype(np.float64)
    nbytes = np.where(nbytes > 0, nbytes - 1, np.nan)
    urate = cols["urate"].astype(np.float64)
    urate = np.where(urate > 0, (urate - 1) / URATE_SCALE, np.nan)
    ops_kind = np.array([op[3] for op in header["ops"]], object) if n else np.zeros(0, object)
    op = cols["op"].astype(np.int64)
    has_bw = ops_kind[op] != "" if n else np.zeros(0, bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where(has_bw, nbytes / (dur + header["bw_pad_ns"]), np.nan)
    pos = np.cumsum(cols["bwx_pos"].astype(np.int64))
    bw[pos] = cols["bwx_val"]
    return {"lane": lane, "start": start, "end": end, "op": op,
            "kernel": cols["kernel"].astype(np.int64),
            "gidx": _lane_undelta(cols["gidx"], lane_off), "cmd": _lane_undelta(cols["cmd"], lane_off),
            "bytes": nbytes, "bw": bw, "urate": urate}


# --------------------------------------------------------------------------------------------
# Static parts: capture facts, the summary table, chart figures
# --------------------------------------------------------------------------------------------

@dataclass
class SummaryColumn:
    group: str       # engine header above the column ("" for core-wide columns)
    label: str
    column: str      # engine_summary column
    fmt: str         # int | us | pct | gbps | ratio | text
    help: str


def summary_columns(summary: pd.DataFrame) -> list[SummaryColumn]:
    cols = [SummaryColumn("", "Core", "core", "text", "core id; Overall = all cores"),
            SummaryColumn("", "Span (µs)", "span_ns", "us", "first command start to last command end, whole profile"),
            SummaryColumn("", "Parallelism", "parallelism", "pct",
                          "(TIU + GDMA + SDMA busy) / span; above 100% when engines overlap"),
            SummaryColumn("", "Compute ratio", "compute_ratio", "ratio", "TIU busy / (GDMA + SDMA busy)")]
    engines = [("TIU", "tiu"), ("GDMA", "gdma"), ("SDMA", "sdma")]
    if "cdma_cmds" in summary and summary["cdma_cmds"].fillna(0).sum() > 0:
        engines.append(("CDMA", "cdma"))
    for label, key in engines:
        cols += [SummaryColumn(label, "cmds", f"{key}_cmds", "int", "commands shown, system commands included"),
                 SummaryColumn(label, "busy (µs)", f"{key}_busy_ns", "us",
                               "union of the non-system commands' intervals"),
                 SummaryColumn(label, "util", f"{key}_util", "pct", "busy / span")]
        if key == "tiu":
            cols.append(SummaryColumn(label, "uArch rate", "tiu_uarch_rate", "pct",
                                      "sum of algorithmic ops / sum of uArch ops (n/a when not modelled)"))
        else:
            cols += [SummaryColumn(label, "DDR GB/s", f"{key}_ddr_bw_busy", "gbps",
                                   "DDR bytes / summed duration of the DDR commands"),
                     SummaryColumn(label, "L2M GB/s", f"{key}_l2m_bw_busy", "gbps",
                                   "L2M bytes / summed duration of the L2M commands (DDR<->L2M counts as DDR)")]
    return [c for c in cols if c.column in summary.columns]


def format_value(value: Any, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "n/a"
    if fmt == "text":
        return str(value)
    if fmt == "int":
        return f"{int(value):,}"
    if fmt == "us":
        return f"{float(value) / 1e3:,.3f}"
    if fmt == "pct":
        return f"{float(value) * 100:.2f}%"
    if fmt == "gbps":
        return f"{float(value):.2f}"
    if fmt == "ratio":
        return f"{float(value):.3f}"
    raise ValueError(fmt)


def summary_table(summary: pd.DataFrame) -> dict[str, Any]:
    cols = summary_columns(summary)
    groups: list[list[Any]] = []
    for c in cols:
        if groups and groups[-1][0] == c.group:
            groups[-1][1] += 1
        else:
            groups.append([c.group, 1])
    rows = []
    for rec in summary.to_dict("records"):
        rows.append({"overall": str(rec.get("core")) == "Overall",
                     "cells": [format_value(rec.get(c.column), c.fmt) for c in cols]})
    return {"columns": [{"label": c.label, "help": c.help} for c in cols], "groups": groups,
            "group_colors": {e: engine_color(e) for e in ENGINES}, "rows": rows,
            "note": "Busy = union of the non-system commands of an engine; util = busy / span. "
                    "Overall: busy summed over cores, util over span x cores, bandwidths over all cores. "
                    "Same numbers as summary.txt and the Engine Summary sheet."}


def meta_rows(profile: Profile, span_ns: int) -> list[tuple[str, str]]:
    m = profile.meta
    c = profile.commands
    chip = m.chip + (f" ({m.chip_alias})" if m.chip_alias else "")
    rows = [("Chip", chip or "unknown"), ("Source", m.source), ("Input", m.input_path or "-"),
            ("Cores", str(m.num_cores)),
            ("CDMA ports", ", ".join(str(p) for p in m.cdma_ports) or "none"),
            ("TIU clock", f"{m.tiu_freq_mhz:g} MHz"), ("DMA clock", f"{m.dma_freq_mhz:g} MHz"),
            ("Capture mode", m.mode or "unknown"),
            ("Commands", f"{len(c):,}"),
            ("Span", f"{span_ns / 1e3:,.3f} µs")]
    if len(profile.host):
        rows[-1] = ("Timeline span", f"{span_ns / 1e3:,.3f} µs (commands and host events)")
        rows.append(("Host events", f"{len(profile.host):,}"))
    return rows


def accounting_table(profile: Profile) -> dict[str, Any] | None:
    acc = profile.meta.accounting
    if not acc:
        return None
    columns: list[str] = []
    for counts in acc.values():
        columns += [k for k in counts if k not in columns]
    return {"columns": columns,
            "rows": [(sheet, [f"{counts.get(k, 0):,}" for k in columns]) for sheet, counts in acc.items()]}


def _typed(values: np.ndarray, dtype: str = "f4") -> dict[str, str]:
    """A plotly.js typed array ({dtype, bdata}): compact, no float-to-text round trip."""
    arr = np.ascontiguousarray(np.asarray(values, dtype="<" + dtype))
    return {"dtype": dtype, "bdata": base64.b64encode(arr.tobytes()).decode("ascii")}


def _esc(text: Any) -> str:
    """Input text shown by Plotly (which reads a few HTML tags): escape it, Plotly decodes entities."""
    return html_lib.escape(str(text), quote=False)


_BASE_LAYOUT = {"margin": {"l": 60, "r": 20, "t": 10, "b": 50}, "height": 340,
                "legend": {"orientation": "h", "y": -0.2}, "plot_bgcolor": "#fafbfc",
                "font": {"size": 12}}


def _engine_keys(summary: pd.DataFrame) -> list[tuple[str, str]]:
    """Summary engines that have commands (framework traces have none of them)."""
    keys = [("TIU", "tiu"), ("GDMA", "gdma"), ("SDMA", "sdma"), ("CDMA", "cdma")]
    return [(label, key) for label, key in keys
            if f"{key}_cmds" in summary and summary[f"{key}_cmds"].fillna(0).sum() > 0]


NO_ENGINES = {"empty": "No TIU, GDMA, SDMA or CDMA commands in this profile."}


def utilisation_chart(summary: pd.DataFrame) -> dict[str, Any]:
    if not _engine_keys(summary):
        return NO_ENGINES
    per_core = summary[summary["core"].astype(str) != "Overall"]
    x = [f"core {k}" for k in per_core["core"]]
    data = [{"type": "bar", "name": label, "x": x, "y": _typed(per_core[f"{key}_util"].to_numpy(float) * 100),
             "marker": {"color": engine_color(label)},
             "hovertemplate": f"%{{x}} {label}: %{{y:.2f}}%<extra></extra>"}
            for label, key in _engine_keys(summary)]
    layout = dict(_BASE_LAYOUT, barmode="group",
                  yaxis={"title": {"text": "busy / span (%)"}, "rangemode": "tozero", "gridcolor": "#e3e7ea"})
    return {"data": data, "layout": layout}


def functype_chart(by_type: pd.DataFrame, types: list[dict[str, Any]]) -> dict[str, Any]:
    if by_type.empty:
        return {"empty": "No commands in this profile."}
    engines = list(dict.fromkeys(by_type["engine"]))
    color = {t["name"]: t["color"] for t in types if t["group"] == "device"}
    data = []
    for ftype, rows in by_type.groupby("func_type", sort=False):
        total = rows.set_index("engine")["total_ns"].reindex(engines).fillna(0).to_numpy(float) / 1e3
        cmds = rows.set_index("engine")["cmds"].reindex(engines).fillna(0).to_numpy(float)
        name = _esc(ftype)
        data.append({"type": "bar", "orientation": "h", "name": name, "y": [_esc(e) for e in engines],
                     "x": _typed(total, "f8"), "customdata": _typed(cmds, "f8"),
                     "marker": {"color": color.get(str(ftype), UNKNOWN_COLOR)},
                     "hovertemplate": f"%{{y}} {name}: %{{x:,.3f}} µs in %{{customdata:,}} commands<extra></extra>"})
    layout = dict(_BASE_LAYOUT, barmode="stack",
                  height=max(260, 120 + 40 * len(engines)),
                  xaxis={"title": {"text": "summed duration (µs)"}, "gridcolor": "#e3e7ea"},
                  yaxis={"autorange": "reversed"}, legend={"orientation": "v", "x": 1.02, "y": 1})
    layout["margin"] = dict(_BASE_LAYOUT["margin"], l=70)
    return {"data": data, "layout": layout}


def busy_idle_chart(summary: pd.DataFrame) -> dict[str, Any]:
    if not _engine_keys(summary):
        return NO_ENGINES
    per_core = summary[summary["core"].astype(str) != "Overall"]
    x = [f"core {k}" for k in per_core["core"]]
    data = []
    for label, key in _engine_keys(summary):
        busy = per_core[f"{key}_busy_ns"].to_numpy(float) / 1e3
        idle = per_core[f"{key}_idle_ns"].to_numpy(float) / 1e3
        data.append({"type": "bar", "name": f"{label} busy", "x": x, "y": _typed(busy, "f8"),
                     "offsetgroup": label, "legendgroup": label, "marker": {"color": engine_color(label)},
                     "hovertemplate": f"%{{x}} {label} busy %{{y:,.3f}} µs<extra></extra>"})
        data.append({"type": "bar", "name": f"{label} idle", "x": x, "y": _typed(idle, "f8"),
                     "base": _typed(busy, "f8"), "offsetgroup": label, "legendgroup": label,
                     "marker": {"color": engine_color(label), "opacity": 0.25},
                     "hovertemplate": f"%{{x}} {label} idle %{{y:,.3f}} µs<extra></extra>"})
    layout = dict(_BASE_LAYOUT, barmode="group",
                  yaxis={"title": {"text": "µs (busy + idle = span)"}, "gridcolor": "#e3e7ea"})
    return {"data": data, "layout": layout}


def bandwidth_chart(bw: dict[str, Any]) -> dict[str, Any]:
    if not bw["series"]:
        return {"empty": "No DMA traffic with a known size and direction in this profile."}
    edges = bw["edges_ns"]
    centres = (edges[:-1] + edges[1:]) / 2 / 1e3
    kinds = [k for k in ("DDR", "L2M") if any(s["kind"] == k for s in bw["series"])]
    names = list(dict.fromkeys(s["name"] for s in bw["series"]))
    data = []
    for s in bw["series"]:
        axis = "y" if kinds.index(s["kind"]) == 0 else "y2"
        colour = PALETTE[names.index(s["name"]) % len(PALETTE)]
        data.append({"type": "scatter", "mode": "lines", "line": {"shape": "hv", "width": 1.2, "color": colour},
                     "name": f"{_esc(s['name'])} {s['kind']}", "legendgroup": _esc(s["name"]),
                     "x": _typed(centres, "f8"), "y": _typed(s["gbps"], "f4"), "yaxis": axis,
                     "hovertemplate": f"{_esc(s['name'])} {s['kind']}: %{{y:.2f}} GB/s at %{{x:.3f}} µs<extra></extra>"})
    layout = dict(_BASE_LAYOUT, height=200 + 160 * max(len(kinds), 1), hovermode="closest",
                  xaxis={"title": {"text": "time since first event (µs)"}, "gridcolor": "#e3e7ea"})
    if len(kinds) == 2:
        layout["yaxis"] = {"title": {"text": f"{kinds[0]} GB/s"}, "domain": [0.55, 1], "rangemode": "tozero"}
        layout["yaxis2"] = {"title": {"text": f"{kinds[1]} GB/s"}, "domain": [0, 0.45], "rangemode": "tozero"}
        layout["xaxis"]["anchor"] = "y2"     # the time axis under the lower plot
    else:
        layout["yaxis"] = {"title": {"text": f"{kinds[0] if kinds else 'DMA'} GB/s"}, "rangemode": "tozero"}
    return {"data": data, "layout": layout}


# --------------------------------------------------------------------------------------------
# Page assembly
# --------------------------------------------------------------------------------------------

def _template_dir() -> Path:
    """templates/ is packaged as reportgen.templates; in a source checkout it sits beside reportgen/."""
    try:
        import reportgen.templates as packaged  # type: ignore[import-not-found]

        return Path(packaged.__file__).parent
    except ImportError:
        return Path(__file__).resolve().parents[2] / "templates"


@functools.lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(_template_dir())),
                              autoescape=True, trim_blocks=False, keep_trailing_newline=True)


def _asset(name: str) -> str:
    text = (_template_dir() / name).read_text(encoding="utf-8")
    if re.search(r"<script|</script|</style|<!--", text, re.IGNORECASE):
        raise RuntimeError(f"templates/{name} is inlined: it must not contain '<script', '</script', "
                           "'</style' or '<!--'")
    return text


@functools.lru_cache(maxsize=1)
def plotly_bundle_b64() -> str:
    """The installed plotly.py's plotly.min.js, gzip+base64 (computed once per process)."""
    from importlib import resources

    raw = resources.files("plotly").joinpath("package_data", "plotly.min.js").read_bytes()
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def _json_for_script(obj: Any) -> str:
    """JSON safe inside <script>: '<', '>' and '&' as \\u escapes, so no input text can end the
    block, and no NaN (not JSON)."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _lane_specs(profile: Profile, lanes: timeline.Lanes, hlanes: timeline.HostLanes) -> list[dict[str, Any]]:
    specs = []
    for name, engine, cores in zip(lanes.names, lanes.engines, lanes.cores):
        group = "cdma" if engine == "CDMA" else f"core{cores[0] if cores else ''}"
        specs.append({"name": name, "engine": engine, "color": engine_color(engine), "host": False,
                      "group": group, "cores": cores})
    for name in hlanes.names:
        specs.append({"name": name, "engine": "host", "color": engine_color("host"), "host": True,
                      "group": "host", "cores": []})
    return specs


def _views_and_tabs(profile: Profile, lane_specs: list[dict[str, Any]]):
    host = [i for i, s in enumerate(lane_specs) if s["host"]]
    device = [i for i, s in enumerate(lane_specs) if not s["host"]]
    cores = sorted({k for i in device for k in lane_specs[i]["cores"]})
    views, tabs = [], [{"id": "overview", "title": "Overview", "charts": ["util", "functype"], "views": []}]
    for k in cores:
        mine = [i for i in device if k in lane_specs[i]["cores"]]
        own = [i for i in mine if lane_specs[i]["engine"] != "CDMA"]
        ports = [i for i in mine if lane_specs[i]["engine"] == "CDMA"]
        views.append({"id": f"core-{k}", "lanes": host + own + ports})
        tabs.append({"id": f"core-{k}", "title": f"Core {k}", "charts": [], "views": [f"core-{k}"],
                     "heading": f"Core {k}: one lane per engine" +
                                (" (plus the CDMA ports it submitted commands to)" if ports else "")})
    views.append({"id": "all", "lanes": host + device})
    tabs.append({"id": "compare", "title": "All cores", "charts": ["bandwidth", "busyidle"], "views": ["all"]})
    return views, tabs


def render(profile: Profile, summary: pd.DataFrame, progress=None) -> str:
    """The complete result.html text. ``progress(stage)`` is called as each stage starts."""
    step = progress or (lambda stage: None)
    step("encode commands")
    lanes = timeline.device_lanes(profile)
    hlanes = timeline.host_lanes(profile)
    n_lanes = len(lanes.names) + len(hlanes.names)
    items, t0, types, ops, kernels = collect_items(profile, lanes, hlanes)
    # bandwidth predictors: bytes / duration, or bytes / (duration + one DMA clock period)
    dma_period = 1e3 / profile.meta.dma_freq_mhz if profile.meta.dma_freq_mhz else 0.0
    header, blob = encode_items(items, n_lanes, pads_ns=(0.0, dma_period))
    span = int(items.end.max()) if len(items.end) else 0
    overview = timeline.occupancy(items.start, items.end, items.lane, n_lanes, 0.0, float(max(span, 1)),
                                  OVERVIEW_BUCKETS)
    overview_u1 = np.round(overview * 255).astype(np.uint8)
    lane_specs = _lane_specs(profile, lanes, hlanes)
    views, tabs = _views_and_tabs(profile, lane_specs)
    step("charts")
    charts = {
        "util": utilisation_chart(summary),
        "functype": functype_chart(timeline.time_by_func_type(profile), types),
        "busyidle": busy_idle_chart(summary),
        "bandwidth": bandwidth_chart(timeline.bandwidth_over_time(profile, BANDWIDTH_BUCKETS)),
    }
    data = {
        "version": __version__, "t0_ns": str(t0), "span_ns": span, "bar_limit": BAR_LIMIT,
        "urate_scale": URATE_SCALE, "types": types, "ops": ops, "kernels": kernels,
        "lanes": lane_specs, "views": views, "tabs": tabs, "charts": charts,
        "payload": header,
        "overview": {"buckets": OVERVIEW_BUCKETS, "b64": base64.b64encode(overview_u1.tobytes()).decode("ascii")},
    }
    step("page")
    m = profile.meta
    # the last two path parts name a capture better than "input" alone
    where = "/".join(Path(m.input_path).parts[-2:]) if m.input_path else None
    title = " · ".join(x for x in [m.chip or None, where, f"{len(profile.commands):,} commands"] if x)
    return _environment().get_template("result.html.j2").render(
        title=title, version=__version__, css=_asset("report.css"), js=_asset("report.js"),
        meta_rows=meta_rows(profile, span), warnings=m.warnings, accounting=accounting_table(profile),
        summary=summary_table(summary), tabs=tabs, input_name=m.input_path or "memory",
        data_json=_json_for_script(_clean(data)), items_b64=base64.b64encode(blob).decode("ascii"),
        plotly_b64=plotly_bundle_b64())


def _clean(obj: Any) -> Any:
    """NaN/inf -> None and numpy scalars -> Python, recursively (for strict JSON)."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write(profile: Profile, summary: pd.DataFrame, out_dir, *, quiet: bool = False) -> Path:
    """Write ``out_dir/PerfWeb/result.html`` atomically and return its path."""
    import sys

    from tqdm import tqdm

    target = Path(out_dir) / "PerfWeb" / "result.html"
    with tqdm(total=4, desc="html", unit="stage", file=sys.stderr, disable=quiet, leave=False) as bar:
        def progress(stage: str) -> None:      # called as each of the 4 stages starts
            bar.set_postfix_str(stage, refresh=False)
            bar.update(1)

        text = render(profile, summary, progress)
        progress("write")
        try:
            with atomic_open(target, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        except OSError as err:
            raise OutputError(f"{target}: cannot write the HTML report ({err.strerror or err})") from err
    return target


# --------------------------------------------------------------------------------------------
# Reading a written page back (tests, scripts): the Python twin of the page's decoder
# --------------------------------------------------------------------------------------------

def read_page(text: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """The page's JSON data and its items as a DataFrame, decoded the way report.js does.

    Columns: ``sheet`` (lane name), ``host``, ``global_idx`` (host: row of profile.host),
    ``cmd_id``, ``start_ns``/``end_ns`` (absolute), ``func_type`` (host: category),
    ``func_name`` (host: event name), ``direction``, ``bw_kind``, ``kernel``, ``bytes``, ``bw``,
    ``uarch_rate``.
    """
    def block(ident: str) -> str:
        m = re.search(rf'<script id="{ident}" type="[^"]+">(.*?)</script>', text, re.DOTALL)
        if not m:
            raise ValueError(f"no <script id={ident}> block in the page")
        return m.group(1)

    data = json.loads(block("rg-data"))
    blob = base64.b64decode(block("rg-items"))
    header = dict(data["payload"], ops=data["ops"])
    arr = decode_items(header, blob)
    ops, types, lanes = data["ops"], data["types"], data["lanes"]
    op = arr["op"]
    t0 = int(data["t0_ns"])
    kernels = np.array([None] + data["kernels"], object)
    frame = pd.DataFrame({
        "sheet": np.array([l["name"] for l in lanes], object)[arr["lane"]] if len(op) else [],
        "host": np.array([l["host"] for l in lanes], bool)[arr["lane"]] if len(op) else [],
        "global_idx": arr["gidx"], "cmd_id": arr["cmd"],
        "start_ns": arr["start"] + t0, "end_ns": arr["end"] + t0,
        "func_type": np.array([types[o[0]]["name"] for o in ops], object)[op] if len(op) else [],
        "func_name": np.array([o[1] for o in ops], object)[op] if len(op) else [],
        "direction": np.array([o[2] for o in ops], object)[op] if len(op) else [],
        "bw_kind": np.array([o[3] for o in ops], object)[op] if len(op) else [],
        "kernel": kernels[arr["kernel"]], "bytes": arr["bytes"], "bw": arr["bw"],
        "uarch_rate": arr["urate"],
    })
    return data, frame
