"""Mode-2 descriptors: the register tables of reportgen/parsers/pmu/data/<arch>.csv, one generic
vectorised bit packer (and its inverse, for tests) and the field values of every register
layout the generator emits."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.testing.synth.catalogue import DTYPE_SIZE, MEM_TAG, OP_DST_TAG, OP_EU, OP_SRC_TAG, OP_TYP

DATA_DIR = Path(__file__).resolve().parents[2] / "parsers" / "pmu" / "data"


@dataclass(frozen=True)
class Layout:
    op: str
    nbits: int
    fields: dict[str, tuple[int, int]]   # field -> (bit offset, width)

    @property
    def nbytes(self) -> int:
        return self.nbits // 8


@lru_cache(maxsize=None)
def register_layouts(arch: str) -> dict[str, Layout]:
    """Register-table op name (full-width suffix like '（0x000）' removed) -> Layout."""
    table = pd.read_csv(DATA_DIR / f"{arch}.csv")
    out = {}
    for op, rows in table.groupby("op", sort=False):
        name = str(op).split("（")[0]
        fields = {}
        for r in rows.itertuples(index=False):
            fields.setdefault(r.field, (int(r.bit_offset), int(r.bit_width)))
        out[name] = Layout(name, int(rows["descriptor_bits"].iloc[0]), fields)
    return out


def pack_descriptors(layout: Layout, n: int, values: dict[str, object]) -> np.ndarray:
    """Pack ``n`` descriptors of one layout; ``values`` maps field -> scalar or (n,) array.

    Fields the layout does not have are ignored (so one value dict serves AKS and AKSV), missing
    fields are 0. Returns an (n, nbytes) uint8 array, little endian, bit 0 = LSB of byte 0.
    """
    nwords = (layout.nbits + 63) // 64
    words = np.zeros((n, nwords), np.uint64)
    for name, value in values.items():
        if name not in layout.fields:
            continue
        off, width = layout.fields[name]
        v = np.broadcast_to(np.asarray(value, dtype=np.int64).astype(np.uint64), (n,))
        if width < 64:
            v = v & np.uint64((1 << width) - 1)
        wi, sh = divmod(off, 64)
        words[:, wi] |= v << np.uint64(sh)
        if sh and sh + width > 64:
            words[:, wi + 1] |= v >> np.uint64(64 - sh)
    return words.astype("<u8").view(np.uint8).reshape(n, nwords * 8)[:, :layout.nbytes]


def unpack_descriptors(layout: Layout, raw: np.ndarray) -> dict[str, np.ndarray]:
    """Inverse of :func:`pack_descriptors` for an (n, nbytes) uint8 array (used by tests)."""
    n = raw.shape[0]
    nwords = (layout.nbits + 63) // 64
    buf = np.zeros((n, nwords * 8), np.uint8)
    buf[:, :raw.shape[1]] = raw
    words = buf.view("<u8")
    out = {}
    for name, (off, width) in layout.fields.items():
        wi, sh = divmod(off, 64)
        v = words[:, wi] >> np.uint64(sh)
        if sh and sh + width > 64:
            v = v | (words[:, wi + 1] << np.uint64(64 - sh))
        if width < 64:
            v = v & np.uint64((1 << width) - 1)
        out[name] = v
    return out


def _addr(tag: np.ndarray, offset: np.ndarray) -> np.ndarray:
    return (tag.astype(np.int64) << 40) | (offset.astype(np.int64) & ((1 << 40) - 1))


def descriptor_values(layout: str, c: dict[str, np.ndarray]) -> dict[str, object]:
    """Field values of one register layout for the command rows ``c`` (all same layout)."""
    n = len(c["op"])
    typ, eu = OP_TYP[c["op"]], OP_EU[c["op"]]
    dep = c["dep"]
    if layout == "SYS":
        msg = 0x1FF
        return {"tsk_typ": typ, "tsk_eu_typ": eu, "cmd_id_dep": dep,
                "imm": msg | (8 << 16)}
    if layout == "sDMA_sys":
        return {"cmd_short": 1, "cmd_type": typ, "cmd_special_function": eu,
                "constant_value": np.where(eu == 3, 1022, 1023), "cmd_id_dep": 0}
    if layout == "sCDMA_sys":
        return {"cmd_type": typ, "cmd_special_function": eu, "constant_value_l32": 0x10001}
    ch, hh, ww = c["c"], c["h"], c["w"]
    it = np.maximum(c["iter"], 0)
    if layout.startswith("CDMA"):
        elems = c["bytes"] // DTYPE_SIZE.get(2, 4)
        addr = _addr(np.full(n, MEM_TAG["DDR"]), (it * 0x100000 + 0x2000000))
        common = {"cmd_type": typ, "cmd_special_function": eu, "src_data_format": 2}
        if layout == "CDMA_send":
            return {**common, "src_start_addr_h13": addr >> 32, "src_start_addr_l32":
                    addr & 0xFFFFFFFF, "src_nstride": elems, "src_cstride": 1, "src_hstride": 1,
                    "src_nsize": 1, "src_csize": 1, "src_hsize": 1, "src_wsize": elems}
        return {**common, "dst_start_addr_h8": addr >> 32, "dst_start_addr_l32":
                addr & 0xFFFFFFFF, "dst_nstride": elems, "dst_cstride": 1, "dst_hstride": 1,
                "dst_nsize": 1, "dst_csize": 1, "dst_hsize": 1, "dst_wsize": elems}
    if layout.startswith("DMA"):
        src, dst = OP_SRC_TAG[c["op"]], OP_DST_TAG[c["op"]]
        bcast = eu == 3
        hw = hh * ww
        src_off = np.where(src == MEM_TAG["LMEM"], (it % 4) * 0x10000, it * ch * hw * 2 + 0x1000)
        dst_off = np.where(dst == MEM_TAG["LMEM"], (it % 4) * 0x10000 + 0x80000,
                           it * ch * hw * 2 + 0x4000000)
        s_addr, d_addr = _addr(src, src_off), _addr(dst, dst_off)
        return {
            "cmd_type": typ, "cmd_special_function": eu, "src_data_format": c["dtype"],
            "cmd_id_dep": np.where(dep > 0, (1 << 20) | dep, 0),
            "src_nstride": ch * hw, "src_cstride": hw, "src_hstride": ww, "src_wstride": 1,
            "dst_nstride": ch * hw, "dst_cstride": hw, "dst_hstride": ww, "dst_wstride": 1,
            "src_nsize": 1, "src_csize": np.where(bcast, 1, ch),
            "src_hsize": np.where(bcast, 1, hh), "src_wsize": np.where(bcast, 64, ww),
            "dst_nsize": 1, "dst_csize": ch, "dst_hsize": np.where(bcast, 1, hh),
            "dst_wsize": np.where(bcast, 64, ww),
            "src_start_addr_l32": s_addr & 0xFFFFFFFF, "src_start_addr_h13": s_addr >> 32,
            "dst_start_addr_l32": d_addr & 0xFFFFFFFF, "dst_start_addr_h13": d_addr >> 32,
            "localmem_mask_l32": 0xFFFFFFFF, "localmem_mask_h32": 0xFFFFFFFF,
        }
    # short TIU operations: one tile (n=1, c, h, w), LMEM operand/result addresses
    prec = c["prec"]
    base = (it % 4) * 0x8000
    vals = {
        "cmd_short": 1, "tsk_typ": typ, "tsk_eu_typ": eu, "cmd_id_dep": dep,
        "opt_res0_prec": prec, "opt_opd0_prec": prec, "opt_opd1_prec": prec,
        "opt_opd2_prec": prec, "opt_res0_sign": 1, "opt_opd0_sign": 1, "opt_opd1_sign": 1,
        "res0_n": 1, "res0_c": ch, "res0_h": hh, "res0_w": ww,
        "opd0_c": ch, "opd0_h": hh, "opd0_w": ww, "opd0_w_str": 1,
        "res0_addr": base + 0x40000, "opd0_addr": base, "opd1_addr": base + 0x20000,
        "tsk_opd_num": 2, "res_op_x_str": 1, "res_op_y_str": 1,
    }
    if layout == "sCONV":
        vals.update({"opd1_h": 3, "opd1_w": 3, "opd0_up_pad": 1, "opd0_dn_pad": 1,
                     "opd0_lf_pad": 1, "opd0_rt_pad": 1})
    elif layout == "sPorD":
        vals.update({"opd1_h": 2, "opd1_w": 2, "res0_h": np.maximum(hh // 2, 1),
                     "res0_w": np.maximum(ww // 2, 1)})
    elif layout == "sMM2":      # res0 (M x N) = opd0 (M x K) . opd1 (K x N)
        vals.update({"res0_c": ch, "res0_w": hh * ww, "opd1_c": ch, "opd1_w": hh * ww})
    elif layout == "sSFU":
        vals.update({"opd1_n": 4})
    return vals
