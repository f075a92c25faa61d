"""What each TIU and DMA command reads and writes in local memory (spec ``lmem-view.md`` §2, §5).

One *access* = (command, R or W, operand, local address, shape, element size, layout). From the
decoded descriptor fields (``Profile.registers``, mode 2 and bmodel) this module lists every
access of every command whose class has an operand model, and its lane-local geometry (§2.4):
start lane, lanes, lane offset, extent (the lane-local byte range touched), data bytes per lane,
first and last bank, a 64-bit lane mask. The operand models are one table (:data:`TIU_OPERANDS`)
read class by class, each operand one vectorised pass over the commands of that class.

What cannot be placed is listed, never guessed: classes without an operand model, SYS_TR_ACC
general-control-register operands (``opd4``/``opd5`` with ``opt_rq``), static memory (SMEM). Those
rows have ``decoded`` False and a ``note`` saying why.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
from numba import njit

from reportgen.model import Profile

LANES = 64
LANE_BYTES = 1 << 18            # 256 KiB per lane (Tpu Lmem Addr Width 18)
BANK_BYTES = 1 << 14            # 16 banks of 16 KiB (Tpu Bank Addr Width 14)
BANKS = LANE_BYTES // BANK_BYTES
LOCAL_TAG = 31                  # DMA address bits 44..40: 31 = on-chip memory
#: element size in bytes of a TIU precision / DMA data-format code (op-metrics.md §1.2); INT4 0.5
ELEMENT_BYTES = np.array([1, 2, 4, 2, 4, 2, 0.5, 1, 2.5, 4] + [np.nan] * 6)
#: CONV kernel IC alignment (cube) per element size
_CUBE = {0.5: 128, 1.0: 64, 2.0: 32, 4.0: 1}
# layouts: short_*_str codes 0-3, then the special ones of spec §2.3
ALIGNED, COMPACT, OFFSET, FREE, LINE_ALIGNED, IC_ALIGNED = 0, 1, 2, 3, 4, 5

ACCESS_COLUMNS = ("row", "core", "engine", "global_idx", "cmd_id", "func", "start_ns", "end_ns",
                  "access", "operand", "local_addr", "start_lane", "lanes", "lane_offset",
                  "extent_bytes", "data_bytes_per_lane", "first_bank", "last_bank", "lane_mask",
                  "decoded", "note")
#: the columns the local-memory view reads (sweep, conflict candidates, same-bank operands)
VIEW_COLUMNS = ("row", "core", "start_ns", "end_ns", "access", "operand", "lane_offset", "extent_bytes",
                "first_bank", "last_bank", "lane_mask", "decoded")


class Fields:
    """The register fields of a set of commands (rows ``sel`` of an engine's table) as int64
    arrays (absent field: ``default``). Each column is converted once per engine (``cache``), in
    its own width (mostly one byte: a million-command TIU table's fields would take 8x more as
    int64), and widened to int64 for the rows asked."""

    def __init__(self, table: pd.DataFrame, prefix: str, sel: np.ndarray | None = None,
                 cache: dict | None = None):
        self.t, self.p = table, prefix
        self.sel = None if sel is None else np.flatnonzero(sel)
        self.n = len(table) if sel is None else len(self.sel)
        self.cache = {} if cache is None else cache
        self.mine: dict = {}                    # the rows asked, as int64: operands share fields

    def __call__(self, name: str, default: int = 0) -> np.ndarray:
        col = self.p + name
        if col not in self.t:
            return np.full(self.n, default, np.int64)
        if (col, default) not in self.mine:
            if (col, default) not in self.cache:
                column = self.t[col]
                width = getattr(column.dtype, "numpy_dtype", None)        # nullable UInt8 .. UInt64
                keep = width if width is not None and width.kind in "iu" and 0 <= default <= 1 else np.int64
                self.cache[(col, default)] = column.to_numpy(keep, na_value=default)
            full = self.cache[(col, default)]
            self.mine[(col, default)] = (full if self.sel is None else full[self.sel]).astype(np.int64)
        return self.mine[(col, default)]

@dataclass(frozen=True)
class Operand:
    """One operand of a TIU class: which field holds its address and how to read its shape.

    ``shape`` returns (n, c, h, w) from the fields, ``layout`` a layout code (array or int),
    ``prec`` the precision-code array, ``when`` a mask of the commands that have it (the const
    flag is applied on top)."""
    name: str
    access: str                             # "R" or "W"
    addr: str
    shape: Callable
    prec: Callable
    layout: Callable = lambda f: ALIGNED
    const: str | None = None
    when: Callable | None = None
    strides: str | None = None              # prefix of *_n_str.. fields for the free layout
    note: str = ""


def _res(f):
    return f("res0_n", 1), f("res0_c", 1), f("res0_h", 1), f("res0_w", 1)


def _mat(rows, cols):
    return 1, rows, 1, cols


def _p(name):
    return lambda f: f(name)


def _eu(f, *codes):
    return np.isin(f("tsk_eu_typ"), codes)


_SHORT = lambda name: (lambda f: f(name))                      # layout from a short_*_str field
_RQ_WORDS = lambda f: np.where(_eu(f, 1, 4), 3, 2)             # rq1/dq1: 3 words per channel

#: class -> operands (spec §5.2). Shapes of the operands the spec marks approximate carry a note.
TIU_OPERANDS: dict[str, tuple[Operand, ...]] = {
    "sAR": (
        Operand("opd0", "R", "opd0_addr", _res, _p("opt_opd0_prec"), _SHORT("short_opd0_str"),
                "opt_opd0_const", strides="opd0"),
        Operand("opd1", "R", "opd1_addr", _res, _p("opt_opd1_prec"), _SHORT("short_opd1_str"),
                "opt_opd1_const", when=lambda f: f("tsk_opd_num") >= 2, strides="opd1"),
        Operand("opd2", "R", "opd2_addr", lambda f: (1, f("res0_c", 1), 1, 1), _p("opt_opd2_prec"),
                lambda f: COMPACT, "opt_opd2_const", when=lambda f: f("tsk_opd_num") == 3),
        Operand("res0", "W", "res0_addr", _res, _p("opt_res0_prec"), _SHORT("short_res0_str"),
                strides="res0"),
    ),
    "sMM2": (
        Operand("res0(acc)", "R", "res0_addr", lambda f: _mat(f("res0_c"), f("res0_w")),
                _p("opt_res0_prec"), when=lambda f: f("opt_res_add") == 1),
        Operand("opd0", "R", "opd0_addr",
                lambda f: _mat(np.where(_eu(f, 6), f("opd1_w"), f("res0_c")),
                               np.where(_eu(f, 5), f("opd1_w"), np.where(_eu(f, 6), f("res0_c"), f("opd1_c")))),
                _p("opt_opd0_prec"), const="opt_opd0_const"),
        Operand("opd1", "R", "opd1_addr", lambda f: _mat(f("opd1_c"), f("opd1_w")), _p("opt_opd1_prec"),
                const="opt_opd1_const"),
        Operand("opd2", "R", "opd2_addr",
                lambda f: (1, np.where(_eu(f, 6), f("res0_w"), LANES), 1, np.where(_eu(f, 6), 1, f("res0_w"))),
                _p("opt_opd2_prec"), lambda f: np.where(_eu(f, 6), COMPACT, ALIGNED), "opt_opd2_const"),
        Operand("res0", "W", "res0_addr", lambda f: _mat(f("res0_c"), f("res0_w")), _p("opt_res0_prec")),
    ),
    "sCONV": (
        Operand("res0(acc)", "R", "res0_addr", _res, _p("opt_res0_prec"), when=lambda f: f("opt_res_add") == 1),
        Operand("opd0", "R", "opd0_addr", lambda f: (f("res0_n", 1), f("opd0_c"), f("opd0_h"), f("opd0_w")),
                _p("opt_opd0_prec"), _SHORT("short_opd0_str"), strides="opd0"),
        Operand("opd1", "R", "opd1_addr", lambda f: ("conv", f("res0_c"), f("opd0_c"), f("opd1_h"), f("opd1_w")),
                _p("opt_opd1_prec"), lambda f: IC_ALIGNED, "opt_opd1_const", note="weights"),
        Operand("opd2", "R", "opd2_addr", lambda f: (1, f("res0_c"), 1, 1), lambda f: 4,
                lambda f: COMPACT, "opt_opd2_const", note="bias"),
        Operand("opd3", "R", "opd3_addr", lambda f: (1, f("res0_c"), 1, 2), _p("opt_opd0_prec"),
                lambda f: COMPACT, "opt_opd3_const", note="approximate: element size of opd0"),
        Operand("res0", "W", "res0_addr", _res, _p("opt_res0_prec")),
    ),
    "sPorD": (
        Operand("opd0", "R", "opd0_addr", lambda f: (f("res0_n", 1), f("res0_c"), f("opd0_h"), f("opd0_w")),
                _p("opt_opd0_prec")),
        Operand("opd1", "R", "opd1_addr", lambda f: (1, f("res0_c"), f("opd1_h"), f("opd1_w")),
                _p("opt_opd0_prec"), lambda f: COMPACT, "opt_opd1_const", when=lambda f: _eu(f, 0, 1, 5, 6),
                note="approximate: element size of opd0"),
        Operand("opd2", "R", "opd2_addr", lambda f: (1, f("res0_c"), 1, 1), _p("opt_opd2_prec"),
                lambda f: COMPACT, "opt_opd2_const", when=lambda f: _eu(f, 0, 5, 6, 7, 8)),
        Operand("opd3", "R", "opd3_addr", lambda f: (1, f("res0_c"), 1, 2), _p("opt_opd0_prec"),
                lambda f: COMPACT, "opt_opd3_const", note="approximate: element size of opd0"),
        Operand("res0", "W", "res0_addr", _res, _p("opt_res0_prec")),
    ),
    "sCW&sBC": (
        Operand("opd0", "R", "opd0_addr",
                lambda f: (f("res0_n", 1),
                           np.where(_eu(f, 0, 1), f("res0_w"), np.where(_eu(f, 3), 1, f("res0_c"))),
                           f("res0_h", 1),
                           np.where(_eu(f, 0, 1), f("res0_c"), f("res0_w"))),
                _p("opt_res0_prec"), lambda f: np.where(_eu(f, 0), LINE_ALIGNED, ALIGNED)),
        Operand("res0", "W", "res0_addr",
                lambda f: (np.where(_eu(f, 4, 5), 1, f("res0_n", 1)), f("res0_c"),
                           np.where(_eu(f, 4, 5), 1, f("res0_h", 1)), np.where(_eu(f, 5), 1, f("res0_w"))),
                _p("opt_res0_prec"), lambda f: np.where(_eu(f, 5), COMPACT, ALIGNED)),
    ),
    "sSFU": (
        Operand("opd0", "R", "opd0_addr", _res, _p("opt_opd0_prec")),
        Operand("opd1", "R", "opd1_addr", lambda f: (1, LANES, 1, f("opd1_n")), _p("opt_opd0_prec"),
                lambda f: COMPACT, when=lambda f: _eu(f, 12, 13), note="approximate: coefficient table"),
        Operand("res0", "W", "res0_addr", _res, _p("opt_res0_prec")),
    ),
    "sRQ&sDQ": (
        Operand("opd0", "R", "opd0_addr", _res, _p("opt_opd0_prec")),
        Operand("opd1..", "R", "opd1_addr", lambda f: (1, f("res0_c"), 1, _RQ_WORDS(f)), lambda f: 4,
                lambda f: COMPACT, "opt_opd1_const", note="per-channel parameters"),
        Operand("res0", "W", "res0_addr", _res, _p("opt_res0_prec")),
    ),
    "sLIN": (
        Operand("opd0", "R", "opd0_addr", _res, _p("opt_opd0_prec")),
        Operand("opd1", "R", "opd1_addr", lambda f: (1, f("res0_c"), 1, 1), _p("opt_opd0_prec"),
                lambda f: COMPACT, "opt_opd1_const"),
        Operand("opd2", "R", "opd2_addr", lambda f: (1, f("res0_c"), 1, 1), _p("opt_opd0_prec"),
                lambda f: COMPACT, "opt_opd2_const", when=lambda f: _eu(f, 1)),
        Operand("res0", "W", "res0_addr", _res, _p("opt_res0_prec")),
    ),
    "sCMP": (
        *(Operand(f"opd{i}", "R", f"opd{i}_addr", _res,
                  _p("opt_opd0_prec") if i < 2 else _p("opt_opd2_prec"),
                  (lambda f, i=i: np.where(f(f"short_opd{i}_str") == 3, OFFSET, ALIGNED)) if i < 2
                  else (lambda f: ALIGNED), f"opt_opd{i}_const") for i in range(4)),
        Operand("res0", "W", "res0_addr", _res, _p("opt_opd2_prec"), note="approximate: element size of opd2"),
        Operand("res1", "W", "res1_addr", _res, _p("opt_opd0_prec"), when=lambda f: ~_eu(f, 23, 24, 26),
                note="approximate: element size of opd0"),
    ),
    "sVC": (
        Operand("opd0", "R", "opd0_addr", lambda f: (1, f("opd0_c"), 1, f("opd0_w")), _p("opt_opd0_prec")),
        Operand("opd1", "R", "opd1_addr", lambda f: (1, f("res0_c"), 1, f("res0_w")), _p("opt_opd1_prec")),
        Operand("res0", "W", "res0_addr",
                lambda f: ((f("opd0_c") - 1) * f("opd0_w") + f("opd1_w"), f("res0_c"), 1, f("res0_w")),
                _p("opt_res0_prec")),
    ),
}
TIU_OPERANDS["sCONV_BW"] = TIU_OPERANDS["sCONV"]
#: classes with no local-memory access at all
NO_ACCESS = {"SYS", "SYS_TR_ACC", "sDMA_sys", "sCDMA_sys", "sys"}


def _align(x, a):
    return -(-x // a) * a


def geometry(addr: np.ndarray, shape, esize: np.ndarray, layout, strides=None) -> dict[str, np.ndarray]:
    """The lane-local quantities of spec §2.4 for accesses at 26-bit local ``addr`` (one
    compiled pass, :func:`_geometry`)."""
    k = len(addr)
    addr, esize = _column(addr, k), _column(esize, k, np.float64)
    if isinstance(shape[0], str):                                 # CONV kernel: IC-aligned (§2.3)
        _, oc, ic, kh, kw = shape
        sizes = np.array(list(_CUBE), float)
        at = np.searchsorted(sizes, esize).clip(0, len(sizes) - 1)
        cube = np.where(sizes[at] == esize, np.array(list(_CUBE.values()), np.int64)[at], 1)
        shape = (1, np.minimum(oc, LANES), 1, -(-oc // LANES) * kh * kw * _align(ic, np.maximum(cube, 1)))
    # whole contiguous arrays: one signature of the compiled pass (one cache entry to load)
    n, c, h, w = (_column(x, k) for x in shape)
    layout = _column(layout, k)
    per64 = np.where(esize > 0, np.round(64 / np.where(esize > 0, esize, 1)), 1).astype(np.int64)
    free = strides is not None
    strides = tuple(_column(x, k) for x in strides) if free else (n,) * 4
    out = _geometry(addr, n, c, h, w, esize, per64, layout, *strides, free)
    return dict(zip(("start_lane", "lanes", "lane_offset", "extent_bytes", "data_bytes_per_lane",
                     "first_bank", "last_bank", "lane_mask", "ok"), out))


def _column(x, k: int, dtype=np.int64) -> np.ndarray:
    """``x`` (array of ``k`` or scalar) as a contiguous, writable array of ``k`` values (one
    array type: no broadcast views, which are read-only)."""
    a = np.asarray(x, dtype)
    return np.full(k, a, dtype) if a.ndim == 0 else np.require(a, dtype, ["C", "W"])


@njit(cache=True)
def _geometry(addr, n, c, h, w, esize, per64, layout, sn, sc, sh, sw, free):
    """Per access: start lane, lanes, lane offset, extent, data bytes per lane, first and last
    bank, lane mask, ok (spec §2.3-§2.4; ``free``: the FREE layout takes ``sn..sw``)."""
    k = len(addr)
    lane, lanes, off = np.empty(k, np.int64), np.empty(k, np.int64), np.empty(k, np.int64)
    extent, data = np.empty(k, np.int64), np.empty(k, np.int64)
    b0, b1 = np.empty(k, np.int64), np.empty(k, np.int64)
    mask, ok = np.empty(k, np.uint64), np.empty(k, np.bool_)
    for i in range(k):
        L = (addr[i] >> 18) & (LANES - 1)
        A = addr[i] & (LANE_BYTES - 1)
        ni, ci, hi, wi, s, lay, e = n[i], c[i], h[i], w[i], esize[i], layout[i], per64[i]
        rows = (L + ci - 1) // LANES + 1
        if lay == OFFSET:
            ns, cs, hs, ws = 0, 1, 0, 0
        else:
            ws = 1
            if lay == LINE_ALIGNED:
                hs = -(-wi // e) * e
                cs = hi * hs
            else:
                hs = wi
                cs = hi * wi if lay == COMPACT else -(-(hi * wi) // e) * e
            ns = rows * cs
        if free and lay == FREE:
            ns, cs, hs, ws = sn[i], sc[i], sh[i], sw[i]
        last = (ni - 1) * ns + (rows - 1) * cs + (hi - 1) * hs + (wi - 1) * ws
        x = np.ceil((last + 1) * s)
        ext = np.int64(x) if np.isfinite(x) else np.iinfo(np.int64).min   # numpy's cast of NaN
        d = np.ceil(ni * (-(-ci // LANES)) * hi * wi * s)
        lane[i], off[i], extent[i] = L, A, ext
        data[i] = np.int64(d) if np.isfinite(d) else np.iinfo(np.int64).min
        lanes[i] = min(ci, LANES)
        b0[i], b1[i] = A >> 14, (A + max(ext, 1) - 1) >> 14
        ok[i] = ni > 0 and ci > 0 and hi > 0 and wi > 0 and s > 0 and ext > 0
        count = np.uint64(min(max(lanes[i], 0), LANES))
        base = np.uint64(0xFFFFFFFFFFFFFFFF) if count >= 64 else (np.uint64(1) << count) - np.uint64(1)
        sh_ = np.uint64(L & 63)
        mask[i] = base if sh_ == 0 else (base << sh_) | (base >> ((np.uint64(64) - sh_) & np.uint64(63)))
    return lane, lanes, off, extent, data, b0, b1, mask, ok


def _frame(rows, access, operand, local_addr, geo, note, decoded) -> dict[str, np.ndarray]:
    """One part of the accesses as columns, access and operand one text each (one frame is
    built at the end, :func:`accesses`)."""
    d = {"row": rows, "access": access, "operand": operand,
         "local_addr": local_addr, **{c: geo[c] for c in ("start_lane", "lanes", "lane_offset",
                                                           "extent_bytes", "data_bytes_per_lane",
                                                           "first_bank", "last_bank", "lane_mask")}}
    d["decoded"], d["note"] = decoded, np.asarray(note, object)
    return d


def _tiu_accesses(rows: np.ndarray, cls: str, f: Fields) -> list[dict]:
    out = []
    for op in TIU_OPERANDS[cls]:
        have = np.ones(f.n, bool) if op.when is None else np.asarray(op.when(f), bool)
        if op.const is not None:
            have &= f(op.const) == 0
        if not have.any():
            continue
        sel = np.flatnonzero(have)

        def pick(x):                            # the commands that have the operand only
            return x[sel] if isinstance(x, np.ndarray) and x.ndim == 1 and len(x) == f.n else x
        addr = pick(f(op.addr))
        esize = ELEMENT_BYTES[np.clip(np.broadcast_to(np.asarray(op.prec(f)), (f.n,)), 0, 15)][sel]
        strides = None
        if op.strides:
            strides = tuple(pick(f(f"{op.strides}_{d}_str")) for d in "nchw")
        geo = geometry(addr & ((1 << 26) - 1), tuple(pick(x) for x in op.shape(f)), esize, pick(op.layout(f)),
                       strides)
        smem = ((addr >> 26) & 1) == 1
        ok = geo["ok"] & ~smem
        note = _notes(smem, geo["ok"], op.note)
        note = _join(note, ok & (geo["lane_offset"] + geo["extent_bytes"] > LANE_BYTES), "exceeds the lane")
        out.append(_frame(rows[sel], op.access, op.name, addr & ((1 << 26) - 1), geo, note, ok))
        if cls in ("sMM2", "sCONV", "sPorD") and op.access == "W":
            rq = np.flatnonzero(have & (f("opt_rq") == 1))
            if len(rq):
                out.append(_undecoded(rows[rq], "R", "opd4/opd5",
                                      "requant operands: address in a TIU general-control register "
                                      "(SYS_TR_ACC), not decodable here"))
    return out


def _notes(smem: np.ndarray, ok: np.ndarray, placed: str) -> np.ndarray:
    """Per access its note as an object array (a table lookup: no fixed-width text arrays)."""
    texts = np.array([placed, "empty shape", "static memory (SMEM): not local memory"], object)
    return texts[np.where(smem, 2, np.where(ok, 0, 1))]


def _join(note: np.ndarray, where: np.ndarray, text: str) -> np.ndarray:
    """``note`` with ``text`` appended on the rows of ``where`` (the others untouched)."""
    note = note.astype(object)
    idx = np.flatnonzero(where)
    if len(idx):
        old = note[idx].astype(str)
        note[idx] = np.where(old == "", text, np.char.add(old, "; " + text))
    return note


def _undecoded(rows, access, operand, why) -> dict:
    k = len(rows)
    z = np.zeros(k, np.int64)
    geo = {c: z for c in ("start_lane", "lanes", "lane_offset", "extent_bytes", "data_bytes_per_lane",
                          "first_bank", "last_bank")}
    geo["lane_mask"] = np.zeros(k, np.uint64)
    return _frame(rows, access, operand, z, geo, np.full(k, why, object), np.zeros(k, bool))


def _dma_accesses(rows: np.ndarray, f: Fields) -> list[dict]:
    """DMA_tensor local sides (spec §5.1); other DMA classes: undecoded."""
    out = []
    ctype, special = f("cmd_type"), f("cmd_special_function")
    tensor = ctype == 0
    rest = np.flatnonzero(~tensor & (ctype != 6))
    if len(rest):
        out.append(_undecoded(rows[rest], "R/W", "local side",
                              "DMA class without an operand model (matrix, general, gather, ...)"))
    esize = ELEMENT_BYTES[np.clip(f("src_data_format"), 0, 15)]
    mask = (f("localmem_mask_h32").astype(np.uint64) << np.uint64(32)) | f("localmem_mask_l32").astype(np.uint64)
    src_shape = tuple(f(f"src_{d}size") for d in "nchw")
    for side, access in (("src", "R"), ("dst", "W")):
        hi, lo = f(f"{side}_start_addr_h13"), f(f"{side}_start_addr_l32")
        local = tensor & ((hi >> 8) == LOCAL_TAG)
        if not local.any():
            continue
        addr = ((hi << 32) | lo) & ((1 << 27) - 1)
        shape = src_shape if side == "src" else tuple(
            np.where(f("nchw_copy") == 1, s, f(f"dst_{d}size")) for s, d in zip(src_shape, "nchw"))
        if side == "dst":                                    # NC transpose: (c, n, h, w) of the source
            nc = special == 1
            shape = (np.where(nc, src_shape[1], shape[0]), np.where(nc, src_shape[0], shape[1]), *shape[2:])
        strides = tuple(f(f"{side}_{d}stride") for d in "nchw")
        if side == "dst":
            strides = strides[:3] + (np.where(special == 1, 1, strides[3]),)
        geo = geometry(addr & ((1 << 26) - 1), shape, esize, FREE, strides)
        broadcast = special == 3
        masked = ~broadcast & (mask != 0) & (mask != np.uint64(0xFFFFFFFFFFFFFFFF))
        geo["lane_mask"] = np.where(masked, geo["lane_mask"] & mask, geo["lane_mask"])
        smem = ((addr >> 26) & 1) == 1
        ok = geo["ok"] & ~smem
        note = _notes(smem, geo["ok"], "")
        note = _join(note, ok & ~broadcast & (mask == 0), "lane mask 0x0")
        note = _join(note, ok & np.isin(special, (2, 4, 5, 6)), "approximate: special function")
        note = _join(note, ok & (geo["lane_offset"] + geo["extent_bytes"] > LANE_BYTES), "exceeds the lane")
        sel = np.flatnonzero(local)
        out.append(_frame(rows[sel], access, side, (addr & ((1 << 26) - 1))[sel],
                          {k: v[sel] for k, v in geo.items()}, note[sel].astype(object), ok[sel]))
    return out


def accesses(profile: Profile, columns=ACCESS_COLUMNS) -> pd.DataFrame:
    """Every local-memory access of the commands with descriptors, in command order; empty when
    the capture has none (modes 0 and 1). ``columns``: those of :data:`ACCESS_COLUMNS` to keep
    (the view itself needs :data:`VIEW_COLUMNS`: a third less memory at a million commands)."""
    c = profile.commands
    parts: list[dict] = []
    ftype = c["func_type"].astype("category")
    # class names by code (category -1, missing: "")
    ftype = ([str(x) for x in ftype.cat.categories] + [""], ftype.cat.codes.to_numpy().astype(np.int64))
    for engine, rows, fields in _field_sources(profile, ftype):
        if engine == "TIU":
            for cls, sel, f in fields:                         # class by class, in row order
                if cls in TIU_OPERANDS:
                    parts += _tiu_accesses(rows[sel], cls, f)
                elif cls not in NO_ACCESS:
                    parts.append(_undecoded(rows[sel], "R/W", "operands",
                                            f"{cls}: no operand model (spec lmem-view.md §5.3)"))
        elif engine in ("GDMA", "SDMA"):
            parts += _dma_accesses(rows, fields)
        else:
            parts.append(_undecoded(rows, "R/W", "local side", f"{engine}: no operand model"))
    if not parts:
        return pd.DataFrame(columns=list(ACCESS_COLUMNS))
    # access and operand are constant per part: categories straight from the parts
    text = {}
    for k in ("access", "operand"):
        names = list(dict.fromkeys(p[k] for p in parts))
        text[k] = (np.repeat([names.index(p[k]) for p in parts], [len(p["row"]) for p in parts]), names)
    col = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k not in text and k in columns}
    del parts                                   # the memory of one copy at a time (a million commands)
    r = col["row"].astype(np.int64)
    # command order with reads before writes; text columns as categories (few distinct values)
    codes, names = text["access"]
    order = np.argsort(2 * r + np.array([x == "W" for x in names])[codes], kind="stable")
    r = r[order]
    out = {k: col.pop(k)[order] for k in list(col)}
    out["row"] = r
    for k, (codes, names) in text.items():
        out[k] = pd.Categorical.from_codes(codes[order], categories=names)
    if "note" in out:
        out["note"] = pd.Categorical(out["note"])
    # the command's own columns
    own = {"core": lambda: c["core"].to_numpy(np.int64)[r], "engine": lambda: _labels(c["engine"], r),
           "global_idx": lambda: c["global_idx"].to_numpy(np.int64)[r],
           "cmd_id": lambda: c["cmd_id"].to_numpy(np.int64)[r], "func": lambda: _labels(c["func_name"], r),
           "start_ns": lambda: c["start_ns"].to_numpy(np.int64)[r], "end_ns": lambda: c["end_ns"].to_numpy(np.int64)[r]}
    out.update({k: f() for k, f in own.items() if k in columns})
    # fresh arrays, owned by nothing else: no consolidating copy (a third of a second at 2.6M rows)
    return pd.DataFrame({k: out[k] for k in ACCESS_COLUMNS if k in columns}, copy=False)


def _labels(col: pd.Series, rows: np.ndarray | None = None):
    """A categorical column as text per row (category codes through the category names); with
    ``rows``: a categorical of those rows (the codes taken, never the text)."""
    cat = col.astype("category")
    if rows is not None:
        return pd.Categorical.from_codes(cat.cat.codes.to_numpy()[rows], dtype=cat.dtype)
    names = np.array([str(x) for x in cat.cat.categories] + [""], object)
    return names[cat.cat.codes.to_numpy()]


def _field_sources(profile: Profile, ftype: tuple[list[str], np.ndarray]):
    """Per engine with descriptors: (engine, rows, fields). TIU: ``fields`` lists (class,
    selection of ``rows``, :class:`Fields` of those rows) in the order of each class's first
    row; other engines: one :class:`Fields` of all ``rows``. Read straight from the descriptor
    batches while the register tables are not built (parsers/pmu/describe.py
    ``RegisterTables.batches``: only the fields asked are decoded, no table is assembled), else
    from the tables (the same values: tests/test_lmem_direct.py)."""
    names, codes = ftype
    batches = getattr(profile.registers, "batches", lambda: None)()
    if batches is None:
        for engine in list(profile.registers):
            table = profile.registers[engine]
            if not len(table):
                continue
            rows = table.index.to_numpy(np.int64)
            if engine != "TIU":
                yield engine, rows, Fields(table, "")
                continue
            cache: dict = {}
            classes = codes[rows]
            yield engine, rows, [(names[k], classes == k, Fields(table, "des_", classes == k, cache))
                                 for k in pd.unique(classes)]
        return
    for engine, chunks in batches.items():
        if not chunks:
            continue
        if engine != "TIU":
            yield engine, np.concatenate([pos for pos, _ in chunks]), BatchFields([f.fields for _, f in chunks])
            continue
        # a batch holds one op: one class (split only if its rows say otherwise)
        by_class: dict[int, list] = {}
        for pos, f in chunks:
            k = codes[pos]
            for u in ([k[0]] if (k == k[0]).all() else np.unique(k)):
                one = k == u
                by_class.setdefault(int(u), []).append((pos, f.fields) if one.all() else
                                                       (pos[one], f.fields.take(one)))
        order = sorted(by_class, key=lambda k: min(int(pos.min()) for pos, _ in by_class[k]))
        rows = np.concatenate([pos for k in order for pos, _ in by_class[k]])
        ends = np.cumsum([0] + [sum(len(pos) for pos, _ in by_class[k]) for k in order])
        yield engine, rows, [(names[k], slice(a, b), BatchFields([f for _, f in by_class[k]]))
                             for k, a, b in zip(order, ends[:-1], ends[1:])]


class BatchFields(Fields):
    """:class:`Fields` read from descriptor batches (``parsers.pmu.descriptors.Fields``, one
    per batch; rows: theirs one after the other). A field is decoded from the descriptor words
    when first asked, privately (nothing stays on the profile); a batch without it reads
    ``default``."""

    def __init__(self, batches: list):
        self.parts = [b.unread() for b in batches]
        self.n = sum(b.rows for b in self.parts)
        self.mine: dict = {}

    def __call__(self, name: str, default: int = 0) -> np.ndarray:
        key = (name, default)
        if key not in self.mine:
            if not any(name in b for b in self.parts):
                return np.full(self.n, default, np.int64)
            self.mine[key] = np.concatenate([b[name].astype(np.int64) if name in b
                                             else np.full(b.rows, default, np.int64) for b in self.parts])
        return self.mine[key]
