"""The timeline payload: every device command and host event as byte-shuffled, lane-delta
encoded columns in one gzip stream (see :func:`encode_items`).

``decodeItems`` in ``templates/codec.js`` reads it in the browser;
``reportgen.testing.html_page.decode_items`` is its Python twin, used by the tests.
"""
from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis import timeline
from reportgen.model import Profile
from reportgen.writers.html.palette import assign_colors

#: Per-command bandwidth is stored implicitly as bytes / (duration + pad) when that agrees with
#: the model to this tolerance (GB/s; the page prints 2 decimals); other values are stored
#: explicitly, so the page always shows the model's number.
BW_TOLERANCE = 5e-4
#: uArch rate is stored in units of 1e-4 (0.01 %), the page prints 2 decimals of a percent.
URATE_SCALE = 10_000

_INT_TYPES = [np.dtype(t) for t in ("<i1", "<u1", "<i2", "<u2", "<i4", "<u4")]
_DTYPE_CODE = {"int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4",
               "uint32": "u4", "float32": "f4", "float64": "f8"}


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


def _lane_delta(values: np.ndarray, lane_start: np.ndarray) -> np.ndarray:
    """values[i] - values[i-1] inside a lane; the first item of a lane keeps its value."""
    d = np.empty_like(values)
    if len(values):
        d[0] = values[0]
        d[1:] = values[1:] - values[:-1]
        d[lane_start] = values[lane_start]
    return d


#: Columns stored grouped by op (all items of op 0 in item order, then op 1, ...): a command's
#: duration, gap, size and uArch rate depend mostly on what it does, so gzip sees similar values
#: side by side (at 3.3M commands this takes ~13 % off the payload). The page undoes it from the
#: ``op`` column (``by_op`` in the column's head).
BY_OP = ("gap", "dur", "bytes", "urate")
#: Of those, the columns grouped by op and then by a second key (the head's ``then``): a gap by
#: the op of the item before on the same lane (``prev_op``: none for a lane's first item; what a
#: command waits for depends on what ran before it), a duration by the command's byte count
#: (a transfer's time depends on its size). At 3.3M commands: -105 KB and -150 KB of payload.
THEN_BY = {"gap": "prev_op", "dur": "bytes"}


def prev_ops(op: np.ndarray, lane_first: np.ndarray) -> np.ndarray:
    """Per item, the op of the item before it on its lane + 1; 0 for a lane's first item."""
    prev = np.zeros(len(op), np.int64)
    if len(op):
        prev[1:] = op[:-1] + 1
        prev[lane_first] = 0
    return prev


def op_grouping(op: np.ndarray, then: np.ndarray | None = None) -> np.ndarray:
    """The item order of the op-grouped columns: ``values[op_grouping(op)]`` groups them; with
    ``then`` (non-negative ints, e.g. :func:`prev_ops`), by op and then by ``then`` (both
    stable: item order within)."""
    if then is None:
        key = op
    else:
        span = int(then.max(initial=0)) + 1
        if (int(op.max(initial=0)) + 1) * span >= 2 ** 62:
            return np.lexsort((then, op))
        key = op.astype(np.int64) * span + then
    # a stable sort of the narrowest int type: numpy radix-sorts 8- and 16-bit keys
    return np.argsort(_narrow(key), kind="stable")


def _item_order(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray | None:
    """The (lane, start, end) order of the items, stable; None when they are in it already (a
    PMU profile's usual order: at 3.3M commands the check takes ~30 ms, the sort ~0.65 s)."""
    if len(lane) > 1:
        dl, ds = np.diff(lane), np.diff(start)
        if np.all((dl > 0) | ((dl == 0) & ((ds > 0) | ((ds == 0) & (np.diff(end) >= 0))))):
            return None
        return np.lexsort((end, start, lane))
    return None


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


def _sorted_codes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` by hashing (pandas.factorize) and sorting only
    the few distinct values: no sort of every command's key."""
    codes, uniq = pd.factorize(key)
    order = np.argsort(uniq, kind="stable")
    rank = np.empty(len(uniq), np.int64)
    rank[order] = np.arange(len(uniq))
    return np.asarray(uniq)[order], rank[codes]


def _device_items(c: pd.DataFrame, lanes: timeline.Lanes, t0: int, add_type):
    """The commands' items (lane, op and kernel codes as int32; each intermediate freed once
    used: at 3.3M commands every int64 column is 26 MB), the ops and the kernel names."""
    ft_codes, ft_names = _codes(c["func_type"])
    fn_codes, fn_names = _codes(c["func_name"])
    dir_codes, dir_names = _codes(c["direction"])
    ddr = c["ddr_bw"].to_numpy(np.float64)
    l2m = c["l2m_bw"].to_numpy(np.float64)
    bwkind = np.where(~np.isnan(ddr), 1, np.where(~np.isnan(l2m), 2, 0))
    bw = np.where(bwkind == 1, ddr, np.where(bwkind == 2, l2m, np.nan))
    # a Function Type is a system type when every command of it is (counted, no sort)
    not_sys = np.bincount(ft_codes + 1, weights=~c["is_sys"].to_numpy(bool), minlength=len(ft_names) + 1)
    present = np.bincount(ft_codes + 1, minlength=len(ft_names) + 1) > 0
    ft_to_type = {code: add_type(ft_names[code] if code >= 0 else None, "device", bool(not_sys[code + 1] == 0))
                  for code in (np.flatnonzero(present) - 1).tolist()}
    # an op = (Function Type, Function Name, direction, bandwidth kind): few distinct values
    key = ((ft_codes + 1) * (len(fn_names) + 1) + fn_codes + 1) * (len(dir_names) + 1) + dir_codes + 1
    del ft_codes, fn_codes, dir_codes
    key = key * 3 + bwkind
    del bwkind
    uniq, dev_op = _sorted_codes(key)
    del key
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
    kern_codes, kern_names = _codes(c["kernel"])
    nbytes = c["bytes"].to_numpy(np.float64, na_value=np.nan)
    # bytes + 1 and the rate code as int32 when they fit (the encoder narrows every column to the
    # smallest type anyway): 4 bytes per command less of each in the web writer's process
    nbytes = _int32_if_fits(np.where(np.isnan(nbytes), 0, nbytes + 1))
    urate = c["uarch_rate"].to_numpy(np.float64)
    return Items(
        lane=lanes.of_command,
        start=c["start_ns"].to_numpy(np.int64) - t0,
        end=c["end_ns"].to_numpy(np.int64) - t0,
        op=dev_op.astype(np.int32),
        kernel=(kern_codes + 1).astype(np.int32),
        gidx=c["global_idx"].to_numpy(np.int64),
        cmd=c["cmd_id"].to_numpy(np.int64),
        nbytes=nbytes,
        bw=bw,
        urate=_int32_if_fits(np.where(np.isnan(urate), 0, np.round(np.nan_to_num(urate) * URATE_SCALE) + 1)),
    ), ops, kern_names


def _int32_if_fits(values: np.ndarray) -> np.ndarray:
    """Whole numbers (>= 0) as int32 when every one fits, else int64."""
    return values.astype(np.int32 if values.max(initial=0) <= np.iinfo(np.int32).max else np.int64)


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
    dev, ops, kern_names = _device_items(c, lanes, t0, add_type)
    # -- host events --------------------------------------------------------------------------
    n_dev_lanes, n_dev_ops = len(lanes.names), len(ops)
    if len(h):
        cat = h["category"].astype("object").where(h["category"].notna(), None)
        name = h["name"].astype("object").where(h["name"].notna(), None)
        pairs = pd.DataFrame({"c": cat.astype(str).where(cat.notna(), "\0"), "n": name.astype(str).where(name.notna(), "\0")})
        host_op, uniq_pairs = pd.factorize(pd.MultiIndex.from_frame(pairs))
        for cat_name, ev_name in uniq_pairs:
            t = add_type(None if cat_name == "\0" else cat_name, "host", False)
            ops.append([t, None if ev_name == "\0" else ev_name, None, ""])
        host_op = host_op.astype(np.int64) + n_dev_ops
        nh = len(h)
        host = Items(
            lane=hlanes.of_event.astype(np.int64) + n_dev_lanes,
            start=h["start_ns"].to_numpy(np.int64) - t0, end=h["end_ns"].to_numpy(np.int64) - t0,
            op=host_op, kernel=np.zeros(nh, np.int64), gidx=np.arange(nh, dtype=np.int64),
            cmd=np.zeros(nh, np.int64), nbytes=np.zeros(nh, np.int64), bw=np.full(nh, np.nan),
            urate=np.zeros(nh, np.int64))
        dev = Items(*[np.concatenate([getattr(dev, f), getattr(host, f)]) for f in Items.__dataclass_fields__])
    assign_colors(types)
    return dev, t0, types, ops, kern_names



def encode_items(items: Items, n_lanes: int, pads_ns: tuple[float, ...] = (0.0,),
                 extra: dict[str, np.ndarray] | None = None) -> tuple[dict[str, Any], bytes]:
    """Sort items by (lane, start) and pack them; returns the header and the gzip stream.

    Columns (per lane, in start order): ``gap`` start minus the previous item's end, ``dur``,
    ``op``, ``kernel``, ``gidx``/``cmd`` as deltas, ``bytes`` (+1), ``urate`` (+1, 1e-4 units),
    and bandwidth exceptions ``bwx_pos``/``bwx_val`` for the commands whose model bandwidth is
    not bytes / (duration + pad) within BW_TOLERANCE. ``pad`` is the one of ``pads_ns`` that
    predicts most commands (a parser may count the last clock cycle, as the vendor does); it is
    written to the header as ``bw_pad_ns``. Each column has the smallest dtype that holds it.
    ``extra`` columns (one value per item, e.g. the layer view's ``layer``) follow, in the same order.
    The columns named in ``BY_OP`` are stored grouped by op (:func:`op_grouping`), those in
    ``THEN_BY`` by op and then by their second key.
    """
    order = _item_order(items.lane, items.start, items.end)

    def ordered(values: np.ndarray) -> np.ndarray:
        return values if order is None else values[order]

    lane = ordered(items.lane)
    counts = np.bincount(lane, minlength=n_lanes) if len(lane) else np.zeros(n_lanes, np.int64)
    n = len(lane)
    del lane
    lane_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    first = lane_off[:-1][counts > 0]
    start, end = ordered(items.start), ordered(items.end)
    dur = end - start
    nbytes = ordered(items.nbytes)
    bw = ordered(items.bw)
    has_bw = ~np.isnan(bw)
    best = None
    for pad in pads_ns:
        with np.errstate(divide="ignore", invalid="ignore"):
            predicted = (nbytes - 1) / (dur + pad)
        implicit = has_bw & (nbytes > 0) & (dur + pad > 0) & (np.abs(predicted - bw) <= BW_TOLERANCE)
        del predicted
        if best is None or implicit.sum() > best[1].sum():
            best = (pad, implicit)
        del implicit
    pad, implicit = best if best is not None else (0.0, np.zeros(len(bw), bool))
    explicit = np.flatnonzero(has_bw & ~implicit)
    del best, implicit, has_bw
    op = ordered(items.op)

    def gap() -> np.ndarray:
        prev_end = np.empty_like(end)
        if len(end):
            prev_end[0] = 0
            prev_end[1:] = end[:-1]
            prev_end[first] = 0
        return start - prev_end

    # each column made when it is written (so only one is allocated at a time besides these)
    columns = {
        "gap": gap,
        "dur": lambda: dur,
        "op": lambda: op,
        "kernel": lambda: ordered(items.kernel),
        "gidx": lambda: _lane_delta(ordered(items.gidx), first),
        "cmd": lambda: _lane_delta(ordered(items.cmd), first),
        "bytes": lambda: nbytes,
        "urate": lambda: ordered(items.urate),
        "bwx_pos": lambda: np.diff(explicit, prepend=0) if len(explicit) else explicit,
        "bwx_val": lambda: bw[explicit].astype("<f8"),
        **{name: (lambda values=values: ordered(values)) for name, values in (extra or {}).items()},
    }
    second = {"prev_op": lambda: prev_ops(op, first), "bytes": lambda: nbytes}
    grouping: dict[str | None, np.ndarray] = {}        # the latest op grouping (one at a time)
    specs, offset = [], 0
    # each column deflated as it is made (a gzip stream; the same bytes as gzip.compress of the
    # columns joined, level 4: within 1 % of level 6 on these byte planes, 4x faster)
    deflate = zlib.compressobj(4, zlib.DEFLATED, 31)
    deflated = []
    for name, make in columns.items():
        values = make()
        arr = _narrow(values) if name != "bwx_val" else values
        del values
        if name in BY_OP:
            then = THEN_BY.get(name)
            if then not in grouping:
                grouping.clear()
                grouping[then] = op_grouping(op, second[then]() if then else None)
            arr = arr[grouping[then]]
        if name == "dur":
            del dur
        raw = _shuffle(arr)
        specs.append({"name": name, "dtype": _DTYPE_CODE[arr.dtype.name], "n": int(len(arr)),
                      "offset": offset, **({"by_op": True} if name in BY_OP else {}),
                      **({"then": THEN_BY[name]} if name in THEN_BY else {})})
        deflated.append(deflate.compress(raw))
        offset += len(raw)
    blob = b"".join([*deflated, deflate.flush()])
    header = {"n": int(n), "lane_off": lane_off.tolist(), "columns": specs,
              "bw_pad_ns": float(pad)}
    return header, blob


class BinaryBlock:
    """Arrays packed into one gzip'd block for the page: ``put(values)`` appends one array,
    byte-shuffled, and returns its head (dtype, byte offset, length) for the page's decoder;
    ``gzipped()`` the block."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.offset = 0

    def put(self, values: np.ndarray) -> dict[str, Any]:
        raw = _shuffle(values)
        self.chunks.append(raw)
        head = {"dtype": values.dtype.str[1:], "offset": self.offset, "n": int(len(values))}
        self.offset += len(raw)
        return head

    def gzipped(self) -> bytes:
        return gzip.compress(b"".join(self.chunks), compresslevel=6, mtime=0)
