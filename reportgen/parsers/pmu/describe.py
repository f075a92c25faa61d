"""Describe bound PMU records as rows of the command model, and assemble the rows.

``describe_records`` turns one stream's records (with what binding found for each: a full
descriptor, a dynamic node, or nothing) into the model's columns: names, direction, data type,
bytes and bandwidth, TIU ops. ``assemble`` prunes system commands at stream edges, numbers the
rows of each sheet and builds the register side tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd

from reportgen.model import Meta, finalize_commands
from reportgen.parsers.pmu import descriptors as D
from reportgen.parsers.pmu import match
from reportgen.parsers.pmu.chips import Chip
from reportgen.parsers.pmu.records import DTYPE_NAMES
from reportgen.parsers.pmu.streams import Stream
from reportgen.parsers.pmu.tiu_ops import tiu_ops

SYS_TYPE = {"TIU": 15, "GDMA": 6, "SDMA": 6, "CDMA": 7}
NAME_ENGINE = {"TIU": "TIU", "GDMA": "DMA", "SDMA": "DMA", "CDMA": "CDMA"}
#: (send, wait) codes given to unbound system-looking records, per engine
SYS_LABEL_CODES = {"TIU": (8, 9), "GDMA": (3, 4), "SDMA": (3, 4), "CDMA": (3, 4)}


@dataclass
class Binding:
    """The described records of one stream: model columns as numpy arrays (one row per record)."""

    cols: dict[str, np.ndarray] = field(default_factory=dict)
    #: register fields per op: (row positions, {field: uint64 values}) in register order
    regs: list[tuple[np.ndarray, dict[str, np.ndarray]]] = field(default_factory=list)
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
                regs.append((np.searchsorted(keep, pos[sel]), {k: v[sel] for k, v in fields.items()}))
        return Binding({k: v[keep] for k, v in self.cols.items()}, regs, self.anchored, self.field_order)


# -- description -------------------------------------------------------------------------------

def _names(chip: Chip, engine: str, ctype: np.ndarray, eu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Function Type / Name from the mode-1 table; unknown pairs as cmd_type_<t> / <type>_<eu>."""
    ft_table, fn_table = _name_tables(chip.name, NAME_ENGINE[engine])
    key = (ctype.astype(np.int64) & 31) * 32 + (eu.astype(np.int64) & 31)
    return ft_table[key], fn_table[key]


@lru_cache(maxsize=None)
def _name_tables(chip: str, eng: str) -> tuple[np.ndarray, np.ndarray]:
    """Lookup arrays over every (cmd type, eu) pair: 32 x 32 entries."""
    table = D.mode1_names(chip)
    types = {t: ft for (e, t, _), (ft, _) in table.items() if e == eng}
    ft_u = np.empty(32 * 32, object)
    fn_u = np.empty(32 * 32, object)
    for t in range(32):
        for e in range(32):
            hit = table.get((eng, t, e))
            ft = hit[0] if hit else types.get(t, f"cmd_type_{t}")
            ft_u[t * 32 + e] = ft
            fn_u[t * 32 + e] = hit[1] if hit else f"{ft}_{e}"
    return ft_u, fn_u


def _tensor_name(fname: np.ndarray, ctype: np.ndarray, sp: np.ndarray, src, dst) -> np.ndarray:
    """DMA_tensor / DMA_matrix special 0: tensorLd / tensorSt / tensorMv / tensor by direction."""
    sel = (ctype <= 1) & (sp == 0)
    if not sel.any():
        return fname
    out = fname.copy()
    ld = (src == "DDR") & ((dst == "LMEM") | (dst == "DDR"))
    st = (src == "LMEM") & (dst == "DDR")
    mv = (src == "LMEM") & (dst == "LMEM")
    out[sel] = np.where(ld, "tensorLd", np.where(st, "tensorSt", np.where(mv, "tensorMv", "tensor")))[sel]
    return out


def _mem_from_tag(tag: np.ndarray) -> np.ndarray:
    return np.where(tag == 31, "LMEM", np.where(tag == 30, "L2M", "DDR")).astype(object)


def _dtype_name(codes: np.ndarray) -> np.ndarray:
    return np.array([DTYPE_NAMES.get(int(c), f"dtype_{int(c)}") for c in range(16)], object)[codes & 0xF]


def describe_records(s: Stream, rec, engine: str, core_index: int, chip: Chip, meta: Meta,
              file: np.ndarray, port: int | None = None) -> Binding:
    n = len(s)
    cols: dict[str, np.ndarray] = {
        "core": np.full(n, core_index, np.int64), "engine": np.full(n, engine, object),
        "port": np.full(n, port if port is not None else -1, np.int64),
        "cmd_id": s["id"] if engine == "CDMA" else s["id"] + 1,   # ids after 16-bit unwrap
        "start_ns": s["start_ns"].copy(), "end_ns": s["end_ns"].copy(), "cycles": s["cycles"],
        "kernel": rec["kernel"], "func_scope": rec["scope"], "batch": rec["batch"], "mode": rec["mode"],
    }
    ctype = np.full(n, 31, np.int64)          # unknown
    sub = np.zeros(n, np.int64)
    ftype = np.full(n, None, object)
    fname = np.full(n, None, object)
    direction = np.full(n, None, object)
    src = np.full(n, None, object)
    dst = np.full(n, None, object)
    dtype = np.full(n, None, object)
    alg = np.full(n, np.nan)
    uarch = np.full(n, np.nan)
    acyc = np.full(n, np.nan)
    dep = np.full(n, -1, np.int64)

    # 1) PMU only: label system-looking unbound records send / wait
    unbound = rec["source"] == ""
    label = match.label_system(unbound & s["sys_like"], s["end_ns"] - s["start_ns"])
    send_c, wait_c = SYS_LABEL_CODES[engine]
    ctype[label > 0] = SYS_TYPE[engine]
    sub[label == 1], sub[label == 2] = send_c, wait_c
    # 2) dynamic node only (mode 1, RVT, CDMA in every TDI mode)
    node = rec["source"] == "node"
    node_src = rec.get("node_fields")
    if node.any():
        nf = node_src
        ctype[node], sub[node] = nf["tsk_typ"][node], nf["eu"][node]
        xi = nf["extra_info"][node]
        is_sys = ctype[node] == SYS_TYPE[engine]
        if engine == "TIU":
            res = xi & 0x7F
            names = np.array([DTYPE_NAMES.get(int(c), f"dtype_{int(c)}") for c in range(128)], object)[res]
            dtype[node] = np.where(is_sys, None, names + " -> " + names)
        else:
            sm, dm = (xi >> 4) & 3, (xi >> 6) & 3
            mem = np.array(["DDR", "L2M", "LMEM", "MEM3"], object)
            src[node] = np.where(is_sys, None, mem[sm])
            dst[node] = np.where(is_sys, None, mem[dm])
            dtype[node] = np.where(is_sys, None, _dtype_name(xi))
    ftype_all, fname_all = _names(chip, engine, ctype, sub)
    keep_name = rec["source"] != "desc"
    ftype[keep_name], fname[keep_name] = ftype_all[keep_name], fname_all[keep_name]
    # 3) full descriptors (mode 2, DES, bmodel)
    desc = np.flatnonzero(rec["source"] == "desc")
    regs: list[tuple[np.ndarray, dict[str, np.ndarray]]] = []
    field_order: dict[str, list[str]] = {}
    if len(desc):
        kind = "CDMA" if engine == "CDMA" else ("TIU" if engine == "TIU" else "DMA")
        d_off, d_len = rec["desc_off"][desc], rec["desc_len"][desc]
        ops = {"TIU": D.classify_tiu, "DMA": D.classify_dma, "CDMA": D.classify_cdma}[kind](
            D.gather(file, d_off, d_len, 8), chip.name)
        lay = D.layouts(chip.name)
        unknown = desc[ops == None]  # noqa: E711 (object array comparison)
        if len(unknown):
            # an undecodable descriptor must not sink the run: keep the record, named from its
            # dynamic node (or "unknown"), and say so
            ftype[unknown], fname[unknown] = ftype_all[unknown], fname_all[unknown]
            meta.warn("undecodable", f"{engine} core {core_index}: {len(unknown)} descriptor(s) of "
                      "no known op; those commands are described from their PMU record only")
        for op in sorted({o for o in ops if o is not None}):
            sel = ops == op
            rows = desc[sel]
            fields = D.decode_fields(D.gather(file, d_off[sel], d_len[sel], lay[op].nbytes), lay[op])
            reg = {("des_" if kind == "TIU" else "") + k: v for k, v in fields.items()}
            if kind == "TIU":
                eu = fields["tsk_eu_typ"].astype(np.int64)
                ftype[rows] = op
                fname[rows] = D.mode2_name_table(op)[eu & 31]
                ctype[rows] = fields["tsk_typ"].astype(np.int64)
                sub[rows] = eu
                a, u, c = tiu_ops(op, fields)
                alg[rows], uarch[rows], acyc[rows] = a, u, c
                dtype[rows] = _tiu_dtype(op, fields)
                if "cmd_id_dep" in fields:
                    dep[rows] = fields["cmd_id_dep"].astype(np.int64)
            else:
                ct = fields.get("cmd_type", np.zeros(len(rows))).astype(np.int64)
                sp = fields.get("cmd_special_function", np.zeros(len(rows))).astype(np.int64)
                ctype[rows], sub[rows] = ct, sp
                stag = fields.get("src_start_addr_h13")
                dtag = fields.get("dst_start_addr_h13")
                src[rows] = _mem_from_tag((stag.astype(np.int64) >> 8) if stag is not None else np.zeros(len(rows), np.int64))
                dst[rows] = _mem_from_tag((dtag.astype(np.int64) >> 8) if dtag is not None else np.zeros(len(rows), np.int64))
                if "src_data_format" in fields:
                    dtype[rows] = _dtype_name(fields["src_data_format"].astype(np.int64))
                ft, fn = _names(chip, engine, ct, sp)
                ftype[rows], fname[rows] = ft, fn
                if "cmd_id_dep" in fields:
                    d = fields["cmd_id_dep"].astype(np.int64)
                    dep[rows] = np.where(d >> 20 & 1, d & 0xFFFFF, -1) if kind == "DMA" else d
                for hi, lo, name in (("src_start_addr_h13", "src_start_addr_l32", "src_start_addr"),
                                     ("dst_start_addr_h13", "dst_start_addr_l32", "dst_start_addr")):
                    if hi in fields:
                        reg[name] = (fields[hi] << np.uint64(32)) + fields[lo]
            regs.append((rows, reg))
            field_order[str(ftype[rows[0]])] = list(reg)
    is_sys_row = (ctype == SYS_TYPE[engine]) & (cols["mode"] != "RVT")
    if engine != "TIU":
        sys_rows = ctype == SYS_TYPE[engine]
        src[sys_rows] = None
        dst[sys_rows] = None
        dtype[sys_rows] = None
        has_dir = (src != None) & (dst != None)  # noqa: E711
        direction[has_dir] = src[has_dir] + "->" + dst[has_dir]
        if engine != "CDMA":
            fname = _tensor_name(fname, ctype, sub, src, dst)
        cols["bytes"] = s["bytes"]
        cols["stall_cycles"] = s["stall"]
        cols["gmem_xact"] = s["xact"]
        mhz = meta.dma_freq_mhz
        dur_ns = s["cycles"] * 1000.0 / mhz
        bw = np.round(s["bytes"] / np.maximum(dur_ns, 1e-9), 4)
        dirs = pd.Series(direction, dtype=object).fillna("").to_numpy(str)
        ddr = np.char.find(dirs, "DDR") >= 0
        l2m = (np.char.find(dirs, "L2M") >= 0) & ~ddr
        cols["ddr_bw"] = np.where(ddr, bw, np.nan)
        cols["l2m_bw"] = np.where(l2m, bw, np.nan)
        cols["sys_wait"] = sys_rows & np.isin(sub, (4, 6) if engine == "CDMA" else (4,))
        is_sys_row = sys_rows
    else:
        cols["sys_wait"] = is_sys_row & (sub == 9)
    cols.update(func_type=ftype, func_name=fname, is_sys=is_sys_row, direction=direction, dtype=dtype,
                alg_ops=alg, uarch_ops=uarch, alg_cycle=acyc,
                uarch_rate=np.where(uarch > 0, alg / np.where(uarch > 0, uarch, 1), np.nan),
                dep_cmd_id=dep)
    cols["_id"] = s["id"]
    return Binding(cols=cols, regs=regs, field_order=field_order)


def _tiu_dtype(op: str, fields) -> np.ndarray:
    names = np.array([DTYPE_NAMES[i] for i in range(8)], object)
    n = len(next(iter(fields.values())))
    if op in ("SYS", "SYS_TR_ACC"):
        return np.full(n, None, object)
    res = fields.get("opt_res0_prec")
    opd = fields.get("opt_opd0_prec")
    if res is None and op.endswith("CMP"):
        res = fields.get("opt_opd2_prec")          # CMP results take the opd2 precision
    if res is None:
        return names[opd.astype(np.int64) & 7] + " -> None" if opd is not None else np.full(n, None, object)
    r = names[res.astype(np.int64) & 7]
    o = names[opd.astype(np.int64) & 7] if opd is not None else r
    return o + " -> " + r


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
    of each sheet (global_idx) and build the register side tables per engine."""
    any_cdma = any(b.cols["engine"][0] == "CDMA" for b in bindings)
    parts: list[Binding] = []
    for b in bindings:
        is_sys = b.cols["is_sys"].astype(bool)
        drop = _edge_prune(b.cols["_id"], is_sys)
        if not any_cdma and len(b) <= 2:
            drop |= is_sys
        sheet = (f"CDMA_{int(b.cols['port'][0])}" if b.cols["engine"][0] == "CDMA"
                 else f"{b.cols['engine'][0]}_{int(b.cols['core'][0])}")
        meta.count(sheet, "dropped: system command at the stream edge", int(drop.sum()))
        if drop.any():
            b = b.take(np.flatnonzero(~drop))
        b.cols["global_idx"] = np.arange(len(b))
        meta.count(sheet, "shown", len(b))
        if len(b):
            parts.append(b)
    if not parts:
        return finalize_commands(pd.DataFrame(columns=["core", "engine"])), {}
    names = list(dict.fromkeys(k for p in parts for k in p.cols if k != "_id"))
    missing = {"bytes": -1, "stall_cycles": -1, "gmem_xact": -1, "ddr_bw": np.nan, "l2m_bw": np.nan}
    data = {k: np.concatenate([p.cols[k] if k in p.cols else np.full(len(p), missing[k])
                               for p in parts]) for k in names}
    for k in ("func_scope", "batch", "dep_cmd_id", "port", "bytes", "stall_cycles", "gmem_xact"):
        v = data[k].astype(np.int64)
        data[k] = pd.arrays.IntegerArray(np.maximum(v, 0), v < 0)
    commands = finalize_commands(pd.DataFrame(data))
    tables, orders = _register_tables(parts)
    meta.extra["register_field_order"] = orders
    return commands, tables


def _register_tables(parts: list[Binding]):
    """One table per engine: the union of its ops' register fields (nullable UInt64), indexed
    by the command's row in ``Profile.commands``. Also returns each op's field order per engine
    (kept out of DataFrame.attrs, which pandas deep-copies on every operation)."""
    offsets = np.cumsum([0] + [len(p) for p in parts[:-1]])
    by_engine: dict[str, list] = {}
    orders: dict[str, dict[str, list[str]]] = {}
    for p, off in zip(parts, offsets):
        engine = str(p.cols["engine"][0])
        orders.setdefault(engine, {}).update(p.field_order)
        for pos, fields in p.regs:
            by_engine.setdefault(engine, []).append((pos + off, fields))
    tables = {}
    for engine, chunks in by_engine.items():
        rows = np.concatenate([pos for pos, _ in chunks])
        order = np.argsort(rows, kind="stable")
        columns: list[str] = []
        for _, fields in chunks:
            columns += [k for k in fields if k not in columns]
        start = np.cumsum([0] + [len(pos) for pos, _ in chunks[:-1]])
        table = {}
        for name in columns:
            values = np.zeros(len(rows), np.uint64)
            mask = np.ones(len(rows), bool)
            for (pos, fields), a in zip(chunks, start):
                if name in fields:
                    values[a:a + len(pos)] = fields[name]
                    mask[a:a + len(pos)] = False
            values = values[order]
            # most fields are a few bits wide: store each in the smallest unsigned type
            narrow = np.min_scalar_type(int(values.max()) if len(values) else 0)
            table[name] = pd.arrays.IntegerArray(values.astype(narrow), mask[order])
        tables[engine] = pd.DataFrame(table, index=pd.Index(rows[order]))
    return tables, orders
