"""Describe bound PMU records as rows of the command model, and assemble the rows.

``describe_records`` turns one stream's records (with what binding found for each: a full
descriptor, a dynamic node, or nothing) into the model's columns: names, direction, data type,
bytes and bandwidth, TIU ops. ``assemble`` prunes system commands at stream edges, numbers the
rows of each sheet and builds the register side tables.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial

import numpy as np
import pandas as pd

from reportgen.heap import release_free_memory
from reportgen.model import NODE_COLUMNS as NODE_COLUMN_NAMES, COMMAND_COLUMNS, LazyTables, Meta, \
    finalize_commands, narrow_int
from reportgen.parsers.pmu import descriptors as D
from reportgen.parsers.pmu import chip_dma, match
from reportgen.parsers.pmu.chips import Chip
from reportgen.parsers.pmu.labels import CODE, LABELS, MODE
from reportgen.parsers.pmu.records import DTYPE_NAMES
from reportgen.parsers.pmu.rvt_names import cv84x6_rvt
from reportgen.parsers.pmu.streams import Stream
from reportgen.parsers.pmu.tiu_ops import tiu_ops
from reportgen.parsers.pmu.tiu_ops_chips import CHIP_TIU_COLUMNS, CONSTANTS as OPS_CHIPS, \
    tiu_extras_chip, tiu_ops_chip

SYS_TYPE = {"TIU": 15, "GDMA": 6, "SDMA": 6, "CDMA": 7}
NAME_ENGINE = {"TIU": "TIU", "GDMA": "DMA", "SDMA": "DMA", "CDMA": "CDMA"}
#: (send, wait) codes given to unbound system-looking records, per engine
SYS_LABEL_CODES = {"TIU": (8, 9), "GDMA": (3, 4), "SDMA": (3, 4), "CDMA": (3, 4)}
#: model columns that describe_records fills with label codes
LABEL_COLUMNS = ("func_type", "func_name", "kernel", "mode", "direction", "dtype")
#: model columns holding a dynamic node's fields (node-bound TIU / GDMA / SDMA commands), -1 none
NODE_COLUMNS = dict(zip(NODE_COLUMN_NAMES, ("tsk_typ", "eu", "extra_info")))
#: a column of at least this many bytes gives its parts' pages back once assembled
TRIM_BYTES = 8 << 20
#: what binding found for a record (``rec["source"]``)
UNBOUND, NODE, DESC = 0, 1, 2


@dataclass
class Binding:
    """The described records of one stream: model columns as numpy arrays (one row per record);
    text columns as label codes (labels.LABELS)."""

    engine: str
    cols: dict[str, np.ndarray] = field(default_factory=dict)
    #: register fields per op: (row positions, their fields in register order, decoded when read)
    regs: list[tuple[np.ndarray, "RegisterFields"]] = field(default_factory=list)
    anchored: bool = False
    #: Function Type -> its register fields in register order (for the RegInfo layout)
    field_order: dict[str, list[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.cols["start_ns"]) if self.cols else 0

    def take(self, keep: np.ndarray) -> "Binding":
        """Rows ``keep`` (sorted positions), registers renumbered to match."""
        regs = []
        for pos, fields in self.regs:
            sel = np.isin(pos, keep)
            if sel.any():
                regs.append((np.searchsorted(keep, pos[sel]), fields.take(sel)))
        return Binding(self.engine, {k: v[keep] for k, v in self.cols.items()}, regs, self.anchored,
                       self.field_order)


#: DMA / CDMA addresses shown whole beside their parts: (high part, low part, name)
ADDRESS_PARTS = (("src_start_addr_h13", "src_start_addr_l32", "src_start_addr"),
                 ("dst_start_addr_h13", "dst_start_addr_l32", "dst_start_addr"),
                 ("src_start_addr_h8", "src_start_addr_l32", "src_start_addr"),
                 ("dst_start_addr_h8", "dst_start_addr_l32", "dst_start_addr"))


class RegisterFields(Mapping):
    """The register columns of a batch of same-op descriptors, as RegInfo and the workbook name
    them: a TIU field ``f`` as ``des_f``; DMA / CDMA addresses also whole (high part << 32 | low
    part), after the fields. Decoded when read (only a report that shows the register tables
    reads them): until then a batch costs its descriptors' bytes."""

    def __init__(self, fields: D.Fields, kind: str):
        self.fields, self.kind = fields, kind
        prefix = "des_" if kind == "TIU" else ""
        self._names: dict[str, str | tuple[str, str]] = {prefix + k: k for k in fields}
        if kind != "TIU":
            for hi, lo, name in ADDRESS_PARTS:
                if hi in fields:
                    self._names[name] = (hi, lo)

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self):
        return iter(self._names)

    def __contains__(self, name) -> bool:
        return name in self._names

    def __getitem__(self, name: str) -> np.ndarray:
        source = self._names[name]
        if isinstance(source, tuple):
            hi, lo = source
            return (self.fields[hi].astype(np.uint64) << np.uint64(32)) | self.fields[lo]
        return self.fields[source]

    def take(self, sel: np.ndarray) -> "RegisterFields":
        return RegisterFields(self.fields.take(sel), self.kind)


# -- description -------------------------------------------------------------------------------

def _names(chip: Chip, engine: str, ctype: np.ndarray, eu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Function Type / Name from the mode-1 table; unknown pairs as cmd_type_<t> / <type>_<eu>."""
    ft_table, fn_table = _name_tables(chip.name, NAME_ENGINE[engine], chip.dma_type_fixes)
    key = (ctype.astype(np.int64) & 31) * 32 + (eu.astype(np.int64) & 31)
    return ft_table[key], fn_table[key]


@lru_cache(maxsize=None)
def _name_tables(chip: str, eng: str, dma_type_fixes=()) -> tuple[np.ndarray, np.ndarray]:
    """Label codes of Function Type / Name over every (cmd type, eu) pair: 32 x 32 entries.
    ``dma_type_fixes``: (cmd_type, Function Type) pairs that replace the table's DMA types."""
    fixes = dict(dma_type_fixes) if eng == "DMA" else {}
    table = D.mode1_names(chip)
    types = {t: ft for (e, t, _), (ft, _) in table.items() if e == eng}
    # BM1688 / CV84X6 DMA: Type from entry (cmd_type, 0), unknown pairs "unknown" (spec
    # chips-bm1688-cv84x6.md §8.1); AKS/AKSV: cmd_type_<t> / <type>_<eu>
    v2_dma = eng == "DMA" and chip in ("BM1688", "CV84X6")
    ft_u, fn_u = [], []
    for t in range(32):
        for e in range(32):
            hit = table.get((eng, t, e))
            if v2_dma:
                ft = fixes.get(t) or table.get((eng, t, 0), ("unknown",))[0]
                ft_u.append(ft)
                fn_u.append(hit[1] if hit else "unknown")
                continue
            ft = hit[0] if hit else types.get(t, f"cmd_type_{t}")
            ft_u.append(ft)
            fn_u.append(hit[1] if hit else f"{ft}_{e}")
    return LABELS.codes(ft_u), LABELS.codes(fn_u)


@lru_cache(maxsize=None)
def _mode2_names(op: str, chip: str) -> np.ndarray:
    """Label codes of a decoded TIU op's Function Name by tsk_eu_typ (0..31)."""
    return LABELS.codes(D.mode2_name_table(op, chip))


#: memory codes (node extra_info order; descriptor address tags map onto them); -1 unknown
MEMS = ("DDR", "L2M", "LMEM", "MEM3")
DDR, L2M, LMEM = 0, 1, 2
#: label codes of "SRC->DST" by src * 4 + dst; entry 16 (unknown) is -1
_DIRECTIONS = np.append(LABELS.codes(f"{a}->{b}" for a in MEMS for b in MEMS), -1).astype(CODE)
_TENSOR_NAMES = LABELS.codes(["tensorLd", "tensorSt", "tensorMv", "tensor"])


def _direction(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    return _DIRECTIONS[np.where((src >= 0) & (dst >= 0), src * 4 + dst, 16)]


def _tensor_name(fname: np.ndarray, ctype: np.ndarray, sp: np.ndarray, src, dst) -> np.ndarray:
    """DMA_tensor / DMA_matrix special 0: tensorLd / tensorSt / tensorMv / tensor by direction."""
    sel = (ctype <= 1) & (sp == 0)
    if not sel.any():
        return fname
    out = fname.copy()
    ld = (src == DDR) & ((dst == LMEM) | (dst == DDR))
    st = (src == LMEM) & (dst == DDR)
    mv = (src == LMEM) & (dst == LMEM)
    out[sel] = _TENSOR_NAMES[np.where(ld, 0, np.where(st, 1, np.where(mv, 2, 3)))[sel]]
    return out


def _mem_from_tag(tag: np.ndarray) -> np.ndarray:
    return np.where(tag == 31, LMEM, np.where(tag == 30, L2M, DDR))


#: CV84X6's L2 SRAM window in the low 40 address bits (spec chips-bm1688-cv84x6.md §8.2)
CV84X6_L2 = (0x26D20000, 0x26D20000 + (1 << 20))


def _memory(chip: str, fields: dict, side: str, n: int) -> np.ndarray:
    """Memory code of a DMA descriptor's ``side`` ("src"/"dst") address, by the chip's rule."""
    if chip == "BM1688":        # 40-bit address: bit 39 set = global memory (spec §8.2)
        h8 = fields.get(f"{side}_start_addr_h8")
        return np.full(n, DDR) if h8 is None else np.where(h8.astype(np.int64) >> 7 == 1, DDR, LMEM)
    hi = fields.get(f"{side}_start_addr_h13")
    if hi is None:
        return np.full(n, DDR)
    tag = hi.astype(np.int64) >> 8
    if chip == "CV84X6":        # tag 1/2 global; tag 30 or the L2 window: L2; anything else local
        low = ((hi.astype(np.int64) & 0xFF) << 32) | fields[f"{side}_start_addr_l32"].astype(np.int64)
        l2 = (tag == 30) | ((low >= CV84X6_L2[0]) & (low < CV84X6_L2[1]))
        return np.where((tag == 1) | (tag == 2), DDR, np.where(l2, L2M, LMEM))
    return _mem_from_tag(tag)


_DTYPE_TEXT = [DTYPE_NAMES.get(c, f"dtype_{c}") for c in range(128)]
_DTYPES = LABELS.codes(_DTYPE_TEXT)
#: TIU node data type "X -> X" by the node's 7-bit result type
_DTYPE_SAME = LABELS.codes(f"{a} -> {a}" for a in _DTYPE_TEXT)
#: TIU descriptor "opd -> res" by opd * 8 + res (3-bit precisions), and "opd -> None" by opd
_DTYPE_PAIRS = LABELS.codes(f"{a} -> {b}" for a in _DTYPE_TEXT[:8] for b in _DTYPE_TEXT[:8])
_DTYPE_TO_NONE = LABELS.codes(f"{a} -> None" for a in _DTYPE_TEXT[:8])


def _dtype_name(codes: np.ndarray) -> np.ndarray:
    return _DTYPES[codes & 0xF]


def describe_records(s: Stream, rec, engine: str, core_index: int, chip: Chip, meta: Meta,
              file: np.ndarray, port: int | None = None) -> Binding:
    n = len(s)
    cols: dict[str, np.ndarray] = {
        "core": np.full(n, core_index, np.int16),
        "port": np.full(n, port if port is not None else -1, np.int64),
        "cmd_id": s["id"] if engine == "CDMA" else s["id"] + 1,   # ids after 16-bit unwrap
        "start_ns": s["start_ns"].copy(), "end_ns": s["end_ns"].copy(), "cycles": s["cycles"],
        "kernel": rec["kernel"], "func_scope": rec["scope"], "batch": rec["batch"], "mode": rec["mode"],
    }
    ctype = np.full(n, 31, np.int64)          # unknown
    sub = np.zeros(n, np.int64)
    ftype = np.full(n, -1, CODE)              # label codes, -1 unknown
    fname = np.full(n, -1, CODE)
    src = np.full(n, -1, np.int64)            # memory codes (MEMS), -1 unknown
    dst = np.full(n, -1, np.int64)
    dtype = np.full(n, -1, CODE)
    alg = np.full(n, np.nan)
    uarch = np.full(n, np.nan)
    acyc = np.full(n, np.nan)
    dep = np.full(n, -1, np.int64)
    # BM1688 / CV84X6 TIU: initial cycles, message ids, modelled bank conflicts (spec §8.3)
    chip_tiu = engine == "TIU" and chip.name in OPS_CHIPS
    extras = {k: np.full(n, v) for k, v in CHIP_TIU_COLUMNS.items()} if chip_tiu else {}

    # 1) PMU only: label system-looking unbound records send / wait
    unbound = rec["source"] == UNBOUND
    label = match.label_system(unbound & s["sys_like"], s["end_ns"] - s["start_ns"])
    send_c, wait_c = SYS_LABEL_CODES[engine]
    ctype[label > 0] = SYS_TYPE[engine]
    sub[label == 1], sub[label == 2] = send_c, wait_c
    # 2) dynamic node only (mode 1, RVT, CDMA in every TDI mode)
    node = rec["source"] == NODE
    node_src = rec.get("node_fields")
    if node.any():
        nf = node_src
        ctype[node], sub[node] = nf["tsk_typ"][node], nf["eu"][node]
        xi = nf["extra_info"][node]
        is_sys = ctype[node] == SYS_TYPE[engine]
        if engine == "TIU":
            res = xi & 0x7F
            dtype[node] = np.where(is_sys, -1, _DTYPE_SAME[res])
        else:
            src[node] = np.where(is_sys, -1, (xi >> 4) & 3)
            dst[node] = np.where(is_sys, -1, (xi >> 6) & 3)
            dtype[node] = np.where(is_sys, -1, _dtype_name(xi))
        if engine != "CDMA":          # the node's own fields, as RegInfo shows them (mode 1)
            for key, field_ in NODE_COLUMNS.items():
                cols[key] = np.full(n, -1, np.int64)
                cols[key][node] = nf[field_][node]
    ftype_all, fname_all = _names(chip, engine, ctype, sub)
    rvt = np.flatnonzero(node & (rec["mode"] == MODE["RVT"])) if chip.name == "CV84X6" else []
    if len(rvt):                                   # generator / variant names (spec §5)
        ftype_all[rvt], fname_all[rvt], way = cv84x6_rvt(
            node_src["tsk_typ"][rvt], node_src["eu"][rvt], node_src["extra_info"][rvt])
        if engine != "TIU":
            src[rvt] = np.where(way == 1, DDR, np.where(way == 2, LMEM, src[rvt]))
            dst[rvt] = np.where(way == 1, LMEM, np.where(way == 2, DDR, dst[rvt]))
        ctype[rvt] = 31      # a generator index, not a command type: never system, never "tensor"
    keep_name = rec["source"] != DESC
    ftype[keep_name], fname[keep_name] = ftype_all[keep_name], fname_all[keep_name]
    # 3) full descriptors (mode 2, DES, bmodel)
    desc = np.flatnonzero(rec["source"] == DESC)
    regs: list[tuple[np.ndarray, RegisterFields]] = []
    field_order: dict[str, list[str]] = {}
    if len(desc):
        kind = "CDMA" if engine == "CDMA" else ("TIU" if engine == "TIU" else "DMA")
        d_off, d_len = rec["desc_off"][desc], rec["desc_len"][desc]
        ops = {"TIU": D.classify_tiu, "DMA": D.classify_dma, "CDMA": D.classify_cdma}[kind](
            D.gather(file, d_off, d_len, 8), chip.name)
        lay, op_names = D.layouts(chip.name), D.op_names(chip.name)
        unknown = desc[ops < 0]
        if len(unknown):
            # an undecodable descriptor must not sink the run: keep the record, named from its
            # dynamic node (or "unknown"), and say so
            ftype[unknown], fname[unknown] = ftype_all[unknown], fname_all[unknown]
            meta.warn("undecodable", f"{engine} core {core_index}: {len(unknown)} descriptor(s) of "
                      "no known op; those commands are described from their PMU record only")
        present = np.flatnonzero(np.bincount(ops[ops >= 0], minlength=len(op_names)))
        for op in sorted(op_names[c] for c in present):
            sel = ops == op_names.index(op)
            rows = desc[sel]
            fields = D.Fields(D.gather(file, d_off[sel], d_len[sel], lay[op].nbytes), lay[op])
            if kind == "TIU":
                eu = fields["tsk_eu_typ"].astype(np.int64)
                ftype[rows] = LABELS.code(op)
                fname[rows] = _mode2_names(op, chip.name)[eu & 31]
                ctype[rows] = fields["tsk_typ"].astype(np.int64)
                sub[rows] = eu
                a, u, c = (tiu_ops_chip(chip.name, op, fields) if chip.name in OPS_CHIPS
                           else tiu_ops(op, fields))
                alg[rows], uarch[rows], acyc[rows] = a, u, c
                for k, v in (tiu_extras_chip(chip.name, op, fields) if chip_tiu else {}).items():
                    extras.setdefault(k, np.full(n, np.nan))[rows] = v
                dtype[rows] = _tiu_dtype(op, fields)
                if "cmd_id_dep" in fields:
                    dep[rows] = fields["cmd_id_dep"].astype(np.int64)
            else:
                ct = fields.get("cmd_type", np.zeros(len(rows))).astype(np.int64)
                sp = fields.get("cmd_special_function", np.zeros(len(rows))).astype(np.int64)
                ctype[rows], sub[rows] = ct, sp
                src[rows] = _memory(chip.name, fields, "src", len(rows))
                dst[rows] = _memory(chip.name, fields, "dst", len(rows))
                if "src_data_format" in fields:
                    dtype[rows] = _dtype_name(fields["src_data_format"].astype(np.int64))
                ft, fn = _names(chip, engine, ct, sp)
                ftype[rows], fname[rows] = ft, fn
                if "cmd_id_dep" in fields:
                    d = fields["cmd_id_dep"].astype(np.int64)
                    if kind == "DMA" and chip.name == "BM1688":   # a plain 24-bit TIU id, 0 none
                        dep[rows] = np.where(d > 0, d, -1)
                    else:
                        dep[rows] = np.where(d >> 20 & 1, d & 0xFFFFF, -1) if kind == "DMA" else d
            reg = RegisterFields(fields.unread(), kind)
            regs.append((rows, reg))
            field_order[LABELS.name(int(ftype[rows[0]]))] = list(reg)
    is_sys_row = (ctype == SYS_TYPE[engine]) & (cols["mode"] != MODE["RVT"])
    if engine != "TIU":
        sys_rows = ctype == SYS_TYPE[engine]
        src[sys_rows] = -1
        dst[sys_rows] = -1
        dtype[sys_rows] = -1
        direction = _direction(src, dst)
        if engine != "CDMA":
            fname = _tensor_name(fname, ctype, sub, src, dst)
        cols["bytes"] = s["bytes"]
        cols["stall_cycles"] = s["stall"]
        cols["gmem_xact"] = s["xact"]
        if "stall_desc" in s.cols:                # BM1688: other counters with a descriptor
            with_desc = rec["source"] == DESC
            cols["stall_cycles"] = np.where(with_desc, s["stall_desc"], s["stall"])
            cols["gmem_xact"] = np.where(with_desc, s["xact_desc"], s["xact"])
        mhz = meta.dma_freq_mhz
        dur_ns = s["cycles"] * 1000.0 / mhz
        bw = np.round(s["bytes"] / np.maximum(dur_ns, 1e-9), 4)
        known = (src >= 0) & (dst >= 0)
        ddr = known & ((src == DDR) | (dst == DDR))
        l2m = known & ((src == L2M) | (dst == L2M)) & ~ddr
        cols["ddr_bw"] = np.where(ddr, bw, np.nan)
        cols["l2m_bw"] = np.where(l2m, bw, np.nan)
        cols["sys_wait"] = sys_rows & np.isin(sub, (4, 6) if engine == "CDMA" else (4,))
        if engine == "GDMA":          # BM1688 / CV84X6 per-port counters (spec §8.2)
            cols.update(chip_dma.describe(chip.name, s, rec["source"] == DESC, ddr, known, dur_ns))
        is_sys_row = sys_rows
    else:
        direction = np.full(n, -1, CODE)
        cols["sys_wait"] = is_sys_row & (sub == 9)
    cols.update(func_type=ftype, func_name=fname, is_sys=is_sys_row, direction=direction, dtype=dtype,
                alg_ops=alg, uarch_ops=uarch, alg_cycle=acyc,
                uarch_rate=np.where(uarch > 0, alg / np.where(uarch > 0, uarch, 1), np.nan),
                dep_cmd_id=dep)
    if "bank_conflict" in s.cols:     # CV84X6 TIU records count bank-conflict cycles (spec §4.3)
        cols["bank_conflict"], cols["thread_id"] = s["bank_conflict"], s["thread_id"]
        cols["bank_conflict_ratio"] = s["bank_conflict"] / np.maximum(s["cycles"], 1)
    modelled = extras.pop("bank_conflict_model", None)
    if modelled is not None:          # BM1688: the simulator's bank conflicts (descriptors only)
        cols["bank_conflict_ratio"] = modelled / np.maximum(s["cycles"], 1)
    cols.update(extras)
    cols["_id"] = s["id"]
    return Binding(engine, cols=cols, regs=regs, field_order=field_order)


def _tiu_dtype(op: str, fields) -> np.ndarray:
    """Label codes of a decoded TIU op's data type, "opd -> res" (-1 for system ops)."""
    n = len(next(iter(fields.values())))
    if op in ("SYS", "SYS_TR_ACC", "SYS_TR_WR"):
        return np.full(n, -1, CODE)
    res = fields.get("opt_res0_prec")
    opd = fields.get("opt_opd0_prec")
    if res is None and op.endswith("CMP"):
        res = fields.get("opt_opd2_prec")          # CMP results take the opd2 precision
    if res is None:
        return _DTYPE_TO_NONE[opd & 7] if opd is not None else np.full(n, -1, CODE)
    r = res.astype(np.int64) & 7
    o = opd.astype(np.int64) & 7 if opd is not None else r
    return _DTYPE_PAIRS[o * 8 + r]


def _edge_prune(ids: np.ndarray, is_sys: np.ndarray) -> np.ndarray:
    """Rows removed by the edge clean-up: a trailing (or leading) pair of records with ids
    (x, x+1) starting a new id run, whose first record is a system command; repeated."""
    n = len(ids)
    drop = np.zeros(n, bool)
    lo, hi = 0, n
    changed = True
    while changed and hi - lo >= 2:
        changed = False
        a = hi - 2
        if (ids[a + 1] == ids[a] + 1 and is_sys[a] and (a == lo or ids[a] <= ids[a - 1])):
            drop[a:hi] = True
            hi = a
            changed = True
        if hi - lo >= 2:
            b = lo
            if (ids[b + 1] == ids[b] + 1 and is_sys[b] and (b + 2 >= hi or ids[b + 2] <= ids[b + 1])):
                drop[b:b + 2] = True
                lo = b + 2
                changed = True
    return drop


# -- assembly ----------------------------------------------------------------------------------

def assemble(bindings: list[Binding], meta: Meta):
    """Concatenate the bound streams, prune system commands at their edges, number the rows
    of each sheet (global_idx) and build the register side tables per engine. The bindings
    are used up: each column is freed once it is in the commands (no second copy of them all)."""
    any_cdma = any(b.engine == "CDMA" for b in bindings)
    parts: list[Binding] = []
    sheets: list[str] = []
    for b in bindings:
        is_sys = b.cols["is_sys"].astype(bool)
        drop = _edge_prune(b.cols["_id"], is_sys)
        if not any_cdma and len(b) <= 2:
            drop |= is_sys
        sheet = _sheet_of(b)
        meta.count(sheet, "dropped: system command at the stream edge", int(drop.sum()))
        if drop.any():
            whole, b = b, b.take(np.flatnonzero(~drop))
            whole.cols, whole.regs = {}, []
        del b.cols["_id"]
        b.cols["global_idx"] = np.arange(len(b))
        meta.count(sheet, "shown", len(b))
        if len(b):
            parts.append(b)
            sheets.append(sheet)
    if not parts:
        return finalize_commands({"core": np.zeros(0, np.int16), "global_idx": np.zeros(0, np.int64),
                                  "cmd_id": np.zeros(0, np.int64), "start_ns": np.zeros(0, np.int64),
                                  "end_ns": np.zeros(0, np.int64), "cycles": np.zeros(0, np.int64)}), {}
    names = list(dict.fromkeys(k for p in parts for k in p.cols))
    missing = {"bytes": -1, "stall_cycles": -1, "gmem_xact": -1, "ddr_bw": np.nan, "l2m_bw": np.nan,
               "bank_conflict": -1, "thread_id": -1, "bank_conflict_ratio": np.nan, **CHIP_TIU_COLUMNS,
               **chip_dma.COLUMNS, **dict.fromkeys(NODE_COLUMNS, -1)}
    nullable = {"func_scope", "batch", "dep_cmd_id", "port", "bytes", "stall_cycles", "gmem_xact",
                "bank_conflict", "thread_id", "msg_id", "sd_wt_count", *chip_dma.INT_COLUMNS,
                *NODE_COLUMNS}
    sizes = [len(p) for p in parts]
    data = {}
    for k in names:
        v = np.concatenate([p.cols.pop(k) if k in p.cols else np.full(size, missing[k])
                            for p, size in zip(parts, sizes)])
        if k in nullable:
            small = k == "port" or k in NODE_COLUMNS          # a port, node fields of <= 12 bits
            unknown = v < 0
            np.maximum(v, 0, out=v)
            wide = narrow_int(v) if COMMAND_COLUMNS.get(k) == "Int64" else np.int64
            v = pd.arrays.IntegerArray(v.astype(np.int16 if small else wide, copy=False), unknown)
        elif k in LABEL_COLUMNS:
            v = LABELS.categorical(v)
        data[k] = v
        if v.nbytes >= TRIM_BYTES:
            release_free_memory()     # the parts' copies, else held by glibc beside the column
    # engine and sheet are constant per part: categoricals straight from the part's position
    data["engine"] = _constant_per_part(sizes, [p.engine for p in parts])
    data["sheet"] = _constant_per_part(sizes, sheets)
    commands = finalize_commands(data)
    orders: dict[str, dict[str, list[str]]] = {}
    for p in parts:
        orders.setdefault(p.engine, {}).update(p.field_order)
    meta.register_field_order = orders
    regs = [(p.engine, p.regs) for p in parts]
    names = list(dict.fromkeys(engine for engine, chunks in regs if any(len(pos) for pos, _ in chunks)))
    return commands, RegisterTables(regs, sizes, names)


def _sheet_of(b: Binding) -> str:
    return f"CDMA_{int(b.cols['port'][0])}" if b.engine == "CDMA" else f"{b.engine}_{int(b.cols['core'][0])}"


def _constant_per_part(sizes: list[int], labels: list[str]) -> pd.Categorical:
    """A categorical holding ``labels[i]`` on every row of the ``i``th part (``sizes[i]`` rows)."""
    cats = list(dict.fromkeys(labels))
    codes = np.repeat(np.array([cats.index(x) for x in labels], np.int16), sizes)
    return pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object))


class RegisterTables(LazyTables):
    """The register side tables, built on first read, that also lend the undecoded batches
    they are built from (:meth:`batches`): a reader of a few fields (analysis/lmem_access.py)
    decodes those straight from the descriptors instead of assembling every table."""

    def __init__(self, regs: list[tuple[str, list]], lengths: list[int], names: list[str]):
        super().__init__(partial(_register_tables, regs, lengths), names)

    def batches(self) -> dict[str, list[tuple[np.ndarray, RegisterFields]]] | None:
        """Per engine: (rows in ``Profile.commands``, register fields) of each same-op batch;
        None once the tables are built or released (read the tables then)."""
        build = self._build
        if not isinstance(build, partial):
            return None
        regs, lengths = build.args
        out: dict[str, list] = {}
        for (engine, chunks), off in zip(regs, np.cumsum([0] + lengths[:-1])):
            for pos, fields in chunks:
                if len(pos):
                    out.setdefault(engine, []).append((pos + off, fields))
        return out


def _register_tables(regs: list[tuple[str, list]], lengths: list[int]) -> dict[str, pd.DataFrame]:
    """One table per engine: the union of its ops' register fields (nullable, narrowest
    unsigned type), indexed by the command's row in ``Profile.commands``. ``regs`` holds each
    assembled part's engine and register chunks; ``lengths`` the parts' row counts."""
    offsets = np.cumsum([0] + lengths[:-1])
    by_engine: dict[str, list] = {}
    for (engine, chunks), off in zip(regs, offsets):
        for pos, fields in chunks:
            by_engine.setdefault(engine, []).append((pos + off, fields))
    tables = {}
    for engine, chunks in by_engine.items():
        rows = np.concatenate([pos for pos, _ in chunks])
        index = np.sort(rows)
        dest = [np.searchsorted(index, pos) for pos, _ in chunks]   # each chunk's rows in the table
        columns = list(dict.fromkeys(k for _, fields in chunks for k in fields))
        table = {}
        for name in columns:
            have = [(d, fields[name]) for d, (_, fields) in zip(dest, chunks) if name in fields]
            # most fields are a few bits wide: store each in the smallest unsigned type
            top = max(int(v.max()) if len(v) else 0 for _, v in have)
            values = np.zeros(len(rows), np.min_scalar_type(top))
            mask = np.ones(len(rows), bool)
            for d, v in have:
                values[d] = v
                mask[d] = False
            table[name] = pd.arrays.IntegerArray(values, mask)
        tables[engine] = pd.DataFrame(table, index=pd.Index(index), copy=False)
    return tables
