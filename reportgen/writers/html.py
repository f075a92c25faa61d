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
  charts (Plotly figure dicts);
* every analysis table of ``profile.tables`` (framework traces) column by column as one
  gzip+base64 JSON block (see :func:`table_payload`), drawn by the Tables tab as sortable
  tables; :func:`read_tables` is the Python twin of the page's reader.

PMU profiles (``meta.source`` in :data:`PMU_SOURCES`) get the engine overview. Other sources
have streams instead of TIU/GDMA/SDMA, so their overview shows the "Device lanes" table and
charts drawn from the analysis tables (top operators, kernel share, ranks, memory) and leaves
out the PMU-only charts.

The browser draws timelines with the level-of-detail rule of ``analysis.timeline``: an
occupancy heatmap while many commands are visible, real bars with hover when few are. Numbers
shown come from ``engine_summary`` (the summary table), ``analysis.timeline`` (charts) and
``profile.tables`` (framework tables and charts: values as stored, only formatted); nothing is
recomputed here.
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
# Framework views: every analysis table (profile.tables) and the charts drawn from them
# --------------------------------------------------------------------------------------------

#: Sources whose commands are TIU/GDMA/SDMA/CDMA engine queues: their overview is the engine
#: summary. ``synthetic`` is reportgen.testing.make_profile, a generated PMU dump. Any other
#: source (chrome, ascend, mindspore) has streams, not PMU engines: its overview shows the
#: "Device lanes" table and the framework charts instead.
PMU_SOURCES = frozenset({"pmu", "synthetic"})
#: Rows drawn per table at once (the page says how many rows exist).
TABLE_ROWS_SHOWN = 500
#: Rows embedded per table: sorting a column sorts all of them. Longer tables keep their first
#: rows in the page (the workbook and tables/*.csv have every row) and the page says so.
TABLE_ROWS_EMBEDDED = 20_000
#: Definitions of tables that are not framework analyses (analysis.framework has the others).
EXTRA_DEFINITIONS = {
    "Device lanes": "One row per (device, stream/lane): commands, busy = union of the lane's "
                    "slice intervals (ns), util = busy / span of the whole profile; Overall sums "
                    "every lane.",
}
TOP_OPERATORS = 20
TOP_KERNELS = 15
LABEL_CHARS = 60          # chart axis labels are cut here (hover shows the whole name)


def is_pmu(profile: Profile) -> bool:
    return profile.meta.source in PMU_SOURCES


def table_definition(name: str) -> str:
    from reportgen.analysis.framework import TABLE_DEFINITIONS

    return TABLE_DEFINITIONS.get(name) or EXTRA_DEFINITIONS.get(name, "")


def table_order(profile: Profile) -> list[str]:
    """Device lanes first (it is the framework overview), then the analyses in their own order."""
    names = list(profile.tables)
    return [n for n in names if n == "Device lanes"] + [n for n in names if n != "Device lanes"]


def column_format(name: str, values: pd.Series) -> dict[str, Any]:
    """How the page shows a column: ``kind`` int | bigint | float | frac | text, ``decimals``.

    Numbers are shown as the analysis stored them (same unit as the column name says); only the
    number of decimals is chosen here: none for whole numbers, 2 for percentages, 3 otherwise
    (µs to the ns). A 0..1 utilisation column (``util``) is shown as a percentage.
    """
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype):
        return {"kind": "text", "decimals": 0}
    if pd.api.types.is_integer_dtype(dtype):
        # beyond 2**53 (epoch nanoseconds) a JavaScript number is not exact: the page gets the
        # digits as text and formats and sorts them as BigInt
        known = values.dropna()
        big = len(known) and max(abs(int(known.min())), abs(int(known.max()))) > 2**53
        return {"kind": "bigint" if big else "int", "decimals": 0}
    arr = values.to_numpy(np.float64, na_value=np.nan)
    finite = arr[np.isfinite(arr)]
    if name == "util" or name.endswith("_util"):
        return {"kind": "frac", "decimals": 2}
    if len(finite) and np.all(finite == np.round(finite)) and np.abs(finite).max() < 2**53:
        return {"kind": "int", "decimals": 0}
    return {"kind": "float", "decimals": 2 if "%" in name else 3}


def format_cell(value: Any, fmt: dict[str, Any]) -> str:
    """The text of one cell (the page's ``fmtCell`` does the same for the Tables tab)."""
    if value is None or value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    kind, d = fmt["kind"], fmt["decimals"]
    if kind == "text":
        return str(value)
    if kind == "frac":
        return f"{float(value) * 100:,.{d}f}%"
    return f"{float(value):,.{d}f}" if kind == "float" else f"{int(value):,}"   # int, bigint


def _column_values(values: pd.Series, kind: str) -> list[Any]:
    """JSON-ready values of one column: numbers as numbers (exact), text as text, missing None."""
    if kind == "text":
        obj = values.astype("object")
        return [None if (v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)))
                else str(v) for v in obj.tolist()]
    if kind in ("int", "bigint"):
        missing = values.isna().to_numpy(bool)
        ints = [None if m else int(v) for v, m in zip(values.astype("object").tolist(), missing)]
        return ints if kind == "int" else [None if v is None else str(v) for v in ints]
    out = values.to_numpy(np.float64, na_value=np.nan).tolist()
    return [None if not math.isfinite(v) else v for v in out]


def table_payload(profile: Profile) -> tuple[list[dict[str, Any]], bytes]:
    """Every table of ``profile.tables`` column by column, as one gzip'd JSON document.

    Returns the per-table headers (name, definition, rows, embedded rows, columns with their
    format), which the page also shows statically, and the compressed document ``[{"columns":
    [[values...], ...]}, ...]`` in the same order. :func:`read_tables` reads it back.
    """
    heads, bodies = [], []
    for i, name in enumerate(table_order(profile)):
        df = profile.tables[name]
        part = df.iloc[:TABLE_ROWS_EMBEDDED]
        cols, values = [], []
        for j, col in enumerate(df.columns):
            fmt = column_format(str(col), df.iloc[:, j])
            cols.append({"name": str(col), **fmt})
            values.append(_column_values(part.iloc[:, j], fmt["kind"]))
        heads.append({"id": f"t{i}", "name": name, "definition": table_definition(name),
                      "rows": int(len(df)), "embedded": int(len(part)), "columns": cols})
        bodies.append({"columns": values})
    raw = json.dumps(bodies, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    return heads, gzip.compress(raw, compresslevel=6, mtime=0)


def static_table(profile: Profile, name: str) -> dict[str, Any] | None:
    """A table formatted in Python for the static page (the framework overview's Device lanes)."""
    df = profile.tables.get(name)
    if df is None:
        return None
    fmts = [column_format(str(c), df.iloc[:, j]) for j, c in enumerate(df.columns)]
    rows = []
    for rec in df.itertuples(index=False):
        rows.append({"overall": str(rec[0]) == "Overall",
                     "cells": [format_cell(v, f) for v, f in zip(rec, fmts)]})
    return {"name": name, "definition": table_definition(name),
            "columns": [{"name": str(c), "text": f["kind"] == "text"} for c, f in zip(df.columns, fmts)],
            "rows": rows}


def _label(text: Any) -> str:
    text = str(text)
    return _esc(text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…")


def _numeric(df: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(df[col], errors="coerce").to_numpy(np.float64)


def _hbar_layout(n: int, x_title: str) -> dict[str, Any]:
    layout = dict(_BASE_LAYOUT, height=max(260, 70 + 22 * n), showlegend=False,
                  xaxis={"title": {"text": x_title}, "gridcolor": "#e3e7ea", "rangemode": "tozero"},
                  yaxis={"autorange": "reversed", "tickvals": list(range(n)), "automargin": True,
                         "tickfont": {"size": 11}})
    layout["margin"] = dict(_BASE_LAYOUT["margin"], l=10)
    return layout


def operators_chart(tables: dict[str, pd.DataFrame]) -> dict[str, Any] | None:
    """The 20 operators with the largest self device time (self CPU time when no operator ran
    on the device), as the "Operators" table has them."""
    ops = tables.get("Operators")
    if ops is None or ops.empty or "Name" not in ops:
        return None
    metric = next((c for c in ("Self Device (us)", "Self CPU (us)")
                   if c in ops and np.nansum(_numeric(ops, c)) > 0), None)
    if metric is None:
        return {"empty": "No operator has a self device or self CPU time."}
    values = _numeric(ops, metric)
    top = ops.iloc[np.argsort(-np.nan_to_num(values, nan=-np.inf), kind="stable")[:TOP_OPERATORS]]
    share = metric.replace(" (us)", " %")                  # "Self Device %" / "Self CPU %"
    shares = _numeric(top, share) if share in top else np.full(len(top), np.nan)
    calls = top["# of Calls"].tolist() if "# of Calls" in top else [None] * len(top)
    custom = [[_esc(n), _clean(float(s)), None if c is None else int(c)]
              for n, s, c in zip(top["Name"], shares, calls)]
    what = "self device" if metric.startswith("Self Device") else "self CPU"
    trace = {"type": "bar", "orientation": "h", "y": list(range(len(top))),
             "x": _typed(_numeric(top, metric), "f8"), "customdata": custom,
             "marker": {"color": "#4E79A7" if what == "self device" else "#59A14F"},
             "hovertemplate": f"%{{customdata[0]}}<br>{what} %{{x:,.3f}} µs"
                              + (" (%{customdata[1]:.2f}%)" if share in top else "")
                              + (" in %{customdata[2]:,} calls" if "# of Calls" in top else "") + "<extra></extra>"}
    layout = _hbar_layout(len(top), f"{what} time (µs)")
    layout["yaxis"]["ticktext"] = [_label(n) for n in top["Name"]]
    return {"data": [trace], "layout": layout, "metric": metric}


def kernels_chart(tables: dict[str, pd.DataFrame]) -> dict[str, Any] | None:
    """Share of all device time of the 15 kernels with the largest share ("Kernels" table)."""
    k = tables.get("Kernels")
    if k is None or k.empty or "Share %" not in k or "Name" not in k:
        return None
    share = _numeric(k, "Share %")
    top = k.iloc[np.argsort(-np.nan_to_num(share, nan=-np.inf), kind="stable")[:TOP_KERNELS]]
    extra = [c for c in ("Grid", "Block", "Accelerator Core", "Block Dim") if c in top]

    def detail(row) -> str:
        return " · ".join(f"{c} {_esc(row[c])}" for c in extra if pd.notna(row[c]))

    custom = [[_esc(row["Name"]), _clean(float(row["Total (us)"])) if "Total (us)" in top else None,
               int(row["Calls"]) if "Calls" in top else None, detail(row)] for _, row in top.iterrows()]
    trace = {"type": "bar", "orientation": "h", "y": list(range(len(top))),
             "x": _typed(_numeric(top, "Share %"), "f8"), "customdata": custom,
             "marker": {"color": "#F28E2B"},
             "hovertemplate": "%{customdata[0]}<br>%{x:.2f}% of device time · %{customdata[1]:,.3f} µs"
                              " in %{customdata[2]:,} calls<br>%{customdata[3]}<extra></extra>"}
    layout = _hbar_layout(len(top), "share of all device time (%)")
    layout["yaxis"]["ticktext"] = [_label(n) for n in top["Name"]]
    return {"data": [trace], "layout": layout}


def ranks_chart(tables: dict[str, pd.DataFrame]) -> dict[str, Any] | None:
    """Grouped bars per rank: the "Ranks" table's times (µs, upper plot) and percentages (lower)."""
    r = tables.get("Ranks")
    if r is None or r.empty:
        return None
    key = "Rank" if "Rank" in r else r.columns[0]
    x = [f"rank {v}" for v in r[key]]
    times = [c for c in r.columns if str(c).endswith("(us)")]
    pcts = [c for c in r.columns if str(c).endswith("%")]
    data = []
    for axis, cols, unit in (("y", times, "µs"), ("y2", pcts, "%")):
        for i, col in enumerate(cols):
            fmt = ",.3f" if unit == "µs" else ".2f"
            data.append({"type": "bar", "name": _esc(col), "x": x, "y": _typed(_numeric(r, col), "f8"),
                         "yaxis": axis, "xaxis": "x" if axis == "y" else "x2",
                         "marker": {"color": PALETTE[(i + (0 if unit == "µs" else len(times))) % len(PALETTE)]},
                         "hovertemplate": f"%{{x}} {_esc(col)}: %{{y:{fmt}}}<extra></extra>"})
    if not data:
        return {"empty": "The Ranks table has no time or percentage columns."}
    layout = dict(_BASE_LAYOUT, barmode="group", height=520 if times and pcts else 340,
                  legend={"orientation": "v", "x": 1.02, "y": 1})
    if times and pcts:
        layout["yaxis"] = {"title": {"text": "µs"}, "domain": [0.45, 1], "gridcolor": "#e3e7ea"}
        layout["yaxis2"] = {"title": {"text": "%"}, "domain": [0, 0.33], "gridcolor": "#e3e7ea"}
        layout["xaxis"] = {"anchor": "y"}
        layout["xaxis2"] = {"anchor": "y2", "matches": "x"}
    else:
        for t in data:
            t["yaxis"], t["xaxis"] = "y", "x"
        layout["yaxis"] = {"title": {"text": "µs" if times else "%"}, "gridcolor": "#e3e7ea"}
    return {"data": data, "layout": layout}


def memory_chart(tables: dict[str, pd.DataFrame], t0_ns: int) -> dict[str, Any] | None:
    """Allocated (solid) and reserved (dotted) memory over time per device, from "Memory
    Timeline", with each device's peak from "Memory Peak" marked when it has a time."""
    mt = tables.get("Memory Timeline")
    if mt is None or mt.empty or "Time (ns)" not in mt:
        return None
    allocated = next((c for c in mt.columns if str(c).startswith("Total Allocated")), None)
    reserved = next((c for c in mt.columns if str(c).startswith("Total Reserved")), None)
    if allocated is None:
        return None
    unit = str(allocated)[len("Total Allocated"):].strip(" ()") or "bytes"
    keys = [c for c in ("Rank", "Device", "Component") if c in mt]
    groups = mt.groupby(keys, sort=False, dropna=False) if keys else [((), mt)]
    data = []
    for n, (key, g) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        name = _esc(" ".join(f"{k.lower()} {v}" for k, v in zip(keys, key)) or "memory")
        x = (g["Time (ns)"].to_numpy(np.int64) - t0_ns) / 1e6
        colour = PALETTE[n % len(PALETTE)]
        for col, dash in ((allocated, "solid"), (reserved, "dot")):
            if col is None:
                continue
            label = "allocated" if col == allocated else "reserved"
            # a short series (Ascend records a few samples per component) shows its samples too
            mode = "lines+markers" if len(g) < 50 else "lines"
            data.append({"type": "scatter", "mode": mode, "name": f"{name} {label}", "legendgroup": name,
                         "x": _typed(x, "f8"), "y": _typed(_numeric(g, col), "f8"),
                         "line": {"color": colour, "dash": dash, "width": 1.4, "shape": "hv"},
                         "hovertemplate": f"{name} {label}: %{{y:,.0f}} {unit} at %{{x:,.3f}} ms<extra></extra>"
                         if unit == "bytes" else
                         f"{name} {label}: %{{y:,.3f}} {unit} at %{{x:,.3f}} ms<extra></extra>"})
    peak = tables.get("Memory Peak")
    pcol = f"Peak Allocated ({unit})"
    if peak is not None and not peak.empty and "Peak Time (ns)" in peak and pcol in peak:
        at = peak["Operator at Peak"].astype("object").fillna("?").map(_esc).tolist() \
            if "Operator at Peak" in peak else [""] * len(peak)
        data.append({"type": "scatter", "mode": "markers", "name": "peak",
                     "x": _typed((peak["Peak Time (ns)"].to_numpy(np.int64) - t0_ns) / 1e6, "f8"),
                     "y": _typed(_numeric(peak, pcol), "f8"), "customdata": at,
                     "marker": {"symbol": "triangle-down", "size": 11, "color": "#C62828"},
                     "hovertemplate": f"peak %{{y:,.0f}} {unit} at %{{x:,.3f}} ms<br>%{{customdata}}<extra></extra>"})
    layout = dict(_BASE_LAYOUT, height=360, hovermode="closest",
                  xaxis={"title": {"text": "time since first event (ms)"}, "gridcolor": "#e3e7ea"},
                  yaxis={"title": {"text": unit}, "rangemode": "tozero", "gridcolor": "#e3e7ea",
                         "tickformat": "~s" if unit == "bytes" else ",.0f"})
    return {"data": data, "layout": layout}


#: Framework overview charts: id -> card title (drawn when their table exists).
FRAMEWORK_CHARTS = {
    "operators": "Top operators",
    "kernels": "Kernel share of device time",
    "ranks": "Ranks compared",
    "memory": "Memory over time",
}


def framework_charts(profile: Profile, t0_ns: int) -> dict[str, dict[str, Any]]:
    t = profile.tables
    figs = {"operators": operators_chart(t), "kernels": kernels_chart(t), "ranks": ranks_chart(t),
            "memory": memory_chart(t, t0_ns)}
    return {k: v for k, v in figs.items() if v is not None}


def read_tables(text: str) -> dict[str, pd.DataFrame]:
    """The tables embedded in a written page, as the page decodes them (Python twin)."""
    data, _ = read_page(text, items=False)
    m = re.search(r'<script id="rg-tables" type="[^"]+">(.*?)</script>', text, re.DOTALL)
    if not m:
        return {}
    bodies = json.loads(gzip.decompress(base64.b64decode(m.group(1))))
    out = {}
    for head, body in zip(data["tables"], bodies):
        out[head["name"]] = pd.DataFrame({
            c["name"]: pd.array([None if x is None else int(x) for x in v], dtype="Int64")
            if c["kind"] in ("int", "bigint") else v
            for c, v in zip(head["columns"], body["columns"])})
    return out


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


def _views_and_tabs(profile: Profile, lane_specs: list[dict[str, Any]], overview_charts: list[str]):
    """Tabs: Overview, Tables (when the profile has analysis tables), one per core, all cores.

    A PMU profile keeps its engine charts; other sources call a core a device and leave out the
    PMU-only charts (DMA bandwidth, engine busy/idle).
    """
    pmu = is_pmu(profile)
    unit = "Core" if pmu else "Device"
    host = [i for i, s in enumerate(lane_specs) if s["host"]]
    device = [i for i, s in enumerate(lane_specs) if not s["host"]]
    cores = sorted({k for i in device for k in lane_specs[i]["cores"]})
    views, tabs = [], [{"id": "overview", "title": "Overview", "charts": overview_charts, "views": []}]
    if profile.tables:
        tabs.append({"id": "tables", "title": "Tables", "charts": [], "views": [], "tables": True})
    for k in cores:
        mine = [i for i in device if k in lane_specs[i]["cores"]]
        own = [i for i in mine if lane_specs[i]["engine"] != "CDMA"]
        ports = [i for i in mine if lane_specs[i]["engine"] == "CDMA"]
        views.append({"id": f"core-{k}", "lanes": host + own + ports})
        tabs.append({"id": f"core-{k}", "title": f"{unit} {k}", "charts": [], "views": [f"core-{k}"],
                     "heading": f"{unit} {k}: one lane per " + ("engine" if pmu else "stream") +
                                (" (plus the CDMA ports it submitted commands to)" if ports else "")})
    views.append({"id": "all", "lanes": host + device})
    tabs.append({"id": "compare", "title": "All cores" if pmu else "All devices",
                 "charts": ["bandwidth", "busyidle"] if pmu else [], "views": ["all"]})
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
    pmu = is_pmu(profile)
    step("charts")
    if pmu:
        charts = {
            "util": utilisation_chart(summary),
            "functype": functype_chart(timeline.time_by_func_type(profile), types),
            "busyidle": busy_idle_chart(summary),
            "bandwidth": bandwidth_chart(timeline.bandwidth_over_time(profile, BANDWIDTH_BUCKETS)),
        }
        overview_charts = ["util", "functype"]
    else:
        charts = framework_charts(profile, t0)
        overview_charts = list(charts)
    views, tabs = _views_and_tabs(profile, lane_specs, overview_charts)
    table_heads, table_blob = table_payload(profile) if profile.tables else ([], b"")
    data = {
        "version": __version__, "t0_ns": str(t0), "span_ns": span, "bar_limit": BAR_LIMIT,
        "urate_scale": URATE_SCALE, "types": types, "ops": ops, "kernels": kernels,
        "lanes": lane_specs, "views": views, "tabs": tabs, "charts": charts,
        "payload": header,
        "overview": {"buckets": OVERVIEW_BUCKETS, "b64": base64.b64encode(overview_u1.tobytes()).decode("ascii")},
    }
    if table_heads:
        data["tables"] = table_heads
        data["table_rows_shown"] = TABLE_ROWS_SHOWN
    step("page")
    m = profile.meta
    # the last two path parts name a capture better than "input" alone
    where = "/".join(Path(m.input_path).parts[-2:]) if m.input_path else None
    title = " · ".join(x for x in [m.chip or None, where, f"{len(profile.commands):,} commands"] if x)
    return _environment().get_template("result.html.j2").render(
        title=title, version=__version__, css=_asset("report.css"), js=_asset("report.js"),
        meta_rows=meta_rows(profile, span), warnings=m.warnings, accounting=accounting_table(profile),
        summary=summary_table(summary), tabs=tabs, input_name=m.input_path or "memory",
        pmu=pmu, lanes_table=None if pmu else static_table(profile, "Device lanes"),
        chart_titles={k: FRAMEWORK_CHARTS.get(k, k) for k in overview_charts},
        chart_notes=_chart_notes(charts), tables=table_heads, rows_shown=TABLE_ROWS_SHOWN,
        tables_b64=base64.b64encode(table_blob).decode("ascii") if table_heads else None,
        data_json=_json_for_script(_clean(data)), items_b64=base64.b64encode(blob).decode("ascii"),
        plotly_b64=plotly_bundle_b64())


def _chart_notes(charts: dict[str, Any]) -> dict[str, str]:
    """One line under each framework chart saying which table and column it shows."""
    notes = {"kernels": "From the Kernels table: Share % of the 15 kernels (name + launch geometry) "
                        "with the largest share.",
             "ranks": "From the Ranks table: the time columns (µs) above, the percentages below.",
             "memory": "From the Memory Timeline table (solid: allocated, dotted: reserved)" +
                       ("; triangles: Memory Peak." if any(t.get("name") == "peak"
                                                          for t in charts.get("memory", {}).get("data", []))
                        else ".")}
    ops = charts.get("operators")
    if ops and "metric" in ops:
        notes["operators"] = (f"From the Operators table: the {TOP_OPERATORS} largest {ops['metric']}"
                              + ("" if ops["metric"].startswith("Self Device") else
                                 " (no operator launched device work)") + ".")
    return notes


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

def read_page(text: str, items: bool = True) -> tuple[dict[str, Any], pd.DataFrame | None]:
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
    if not items:
        return data, None
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
