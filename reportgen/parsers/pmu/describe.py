"""Bind PMU records to commands and describe each record as a row of the command model.

``bind_engine`` pairs one engine stream of one core with its commands (dynamic nodes, DES
chains or bmodel descriptor blocks); ``bind_cdma`` anchors and pairs the CDMA ports; both return
a :class:`Binding` whose ``cols`` are the model's columns. ``assemble`` prunes system commands
at stream edges, numbers the rows per sheet and builds the register side tables.
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
from reportgen.parsers.pmu.nodes import CommandList
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


# -- descriptor chains -------------------------------------------------------------------------

def walk_chain(file: np.ndarray, start: int, length: int, engine: str, chip: Chip):
    """(file offsets, lengths) of the descriptors of a chain (DES chain or bmodel block).

    Descriptor lengths depend on each descriptor's op, so the walk is sequential; chains are
    walked once, lazily, when a PMU section is paired with them.
    """
    lay = D.layouts(chip.name)
    table = D._tiu_eu_table(chip.name)
    buf = file[start: start + length].tobytes()
    offs, lens = [], []
    off, n = 0, len(buf)
    while off < n:
        head = int.from_bytes(buf[off: off + 8].ljust(8, b"\0"), "little")
        if engine == "TIU":
            key = (head & 1, (head >> 41) & 0xF, (head >> 45) & 0x1F)
            op = table.get(key) or ("SYS_TR_ACC" if key[1] == 12 else None)
        elif engine == "CDMA":
            op = D.CDMA_OPS.get((head >> 4) & 0xF)
        else:
            ctype, short = (head >> 32) & 0x1F, (head >> 3) & 1
            op = D.DMA_OPS.get(ctype)
            if op is not None and (op == "sDMA_sys") != bool(short):
                op = None
        if op is None or op not in lay:
            break
        size = lay[op].nbytes
        offs.append(start + off)
        lens.append(min(size, n - off))
        off += size
        is_sys = op in ("SYS", "sDMA_sys", "sCDMA_sys")
        if is_sys and n - off <= 128 and not any(buf[off:]):
            break
        if op == "sCDMA_sys" and ((head >> 8) & 7) == 0:
            break
    return np.array(offs, np.int64), np.array(lens, np.int64)


def gather(file: np.ndarray, offs: np.ndarray, lens: np.ndarray, width: int) -> np.ndarray:
    """n x width matrix of descriptor bytes (zero past each descriptor's own length).

    ``file`` is padded with zeros at its end (see dump._read_core), so a row copy of a sliding
    window view never runs past it.
    """
    pad = max(0, int(offs.max()) + width - len(file)) if len(offs) else 0
    if pad:
        file = np.concatenate([file, np.zeros(pad, np.uint8)])
    out = np.lib.stride_tricks.sliding_window_view(file, width)[offs]
    short = lens < width
    if short.any():
        out[short] = np.where(np.arange(width) < lens[short, None], out[short], 0)
    return out


# -- binding -----------------------------------------------------------------------------------

@dataclass
class _Sections:
    spans: np.ndarray                       # span per command section
    members: list                           # per section: np.ndarray of command indices, or None (DES)
    des: list                               # per section: (key, cmd_num) or None
    blobs: list                             # per section: list of descriptors (bmodel/DES) or None
    tags: list                              # per section: (kernel, scope, batch, mode)


def _node_sections(cl: CommandList, core, engine: str, chip: Chip) -> _Sections:
    secs = sorted(set(cl.section.tolist()) | set(cl.des))
    order = np.argsort(cl.section, kind="stable")
    bounds = np.searchsorted(cl.section[order], secs, side="left")
    ends = np.searchsorted(cl.section[order], secs, side="right")
    spans, members, des, blobs, tags = [], [], [], [], []
    for s, a, b in zip(secs, bounds, ends):
        if s in cl.des:
            key, num = cl.des[s]
            spans.append(num)
            members.append(None)
            des.append((key, num))
            blobs.append(None)
            k, sc, bt = cl.des_tags.get(s, (None, -1, -1))
            tags.append((k, sc, bt, "DES"))
        else:
            idx = order[a:b]
            spans.append(int(cl.ids[idx].max() - cl.ids[idx].min() + 1) if len(idx) else 0)
            members.append(idx)
            des.append(None)
            blobs.append(None)
            f = idx[0] if len(idx) else None
            tags.append((cl.kernel[f], int(cl.scope[f]), int(cl.batch[f]), cl.mode[f]) if f is not None
                        else (None, -1, -1, "TDI"))
    return _Sections(np.array(spans, np.int64), members, des, blobs, tags)


def _bmodel_sections(core, blocks: list[tuple[int, int]], engine: str, chip: Chip) -> _Sections:
    blobs = [walk_chain(core.file, off, n, engine, chip) for off, n in blocks]
    return _Sections(np.array([len(b[0]) for b in blobs], np.int64), [None] * len(blobs),
                     [None] * len(blobs), blobs, [(None, -1, -1, "BMODEL")] * len(blobs))


def _edge_trim_tiu(ids: np.ndarray, cmd_ids: np.ndarray) -> np.ndarray:
    """Keep-mask: drop leading records whose id never occurs among the commands, and trailing
    records while their id occurs more often in the monitor than among the commands."""
    keep = np.ones(len(ids), bool)
    if len(ids) == 0:
        return keep
    known = np.isin(ids, cmd_ids)
    first = int(np.argmax(known)) if known.any() else len(ids)
    keep[:first] = False
    mon_u, mon_c = np.unique(ids, return_counts=True)
    cmd_u, cmd_c = np.unique(cmd_ids, return_counts=True)
    excess = dict(zip(mon_u.tolist(), mon_c.tolist()))
    for u, c in zip(cmd_u.tolist(), cmd_c.tolist()):
        excess[u] = excess.get(u, 0) - c
    i = len(ids) - 1
    while i >= first and excess.get(int(ids[i]), 0) > 0:   # walks only the trailing markers
        excess[int(ids[i])] -= 1
        keep[i] = False
        i -= 1
    return keep


def bind_engine(core, engine: str, chip: Chip, meta: Meta, bmodel: bool) -> Binding:
    s: Stream = core.streams[engine]
    cl: CommandList | None = core.commands.get(engine)
    secs = None
    if bmodel and core.bmodel_des.get(engine):
        secs = _bmodel_sections(core, core.bmodel_des[engine], engine, chip)
    elif cl is not None and (len(cl) or cl.des):
        if engine == "TIU":
            cmd_ids = np.concatenate([cl.ids] + [np.arange(n) for _, n in cl.des.values()])
            keep = _edge_trim_tiu(s["id"], cmd_ids)
            if not keep.all():
                meta.count(f"TIU_{core.index}", "dropped: pause marker at the stream edge", int((~keep).sum()))
                meta.warn("edge-trim", f"TIU core {core.index}: {int((~keep).sum())} record(s) at the "
                          "stream edges match no command (pause markers) and were dropped", str(core.path))
                s = s.take(keep)
        secs = _node_sections(cl, core, engine, chip)
    rec = _bind(s, secs, cl, core, engine, chip, meta)
    if secs is not None and engine == "TIU" and len(s):
        # unbound records at both ends of a TIU stream are dropped (nothing explains them)
        bound = rec["source"] != ""
        if bound.any():
            lo, hi = int(np.argmax(bound)), len(bound) - int(np.argmax(bound[::-1]))
            if lo or hi < len(bound):
                meta.count(f"TIU_{core.index}", "dropped: unbound at the stream edge", lo + len(bound) - hi)
                meta.warn("edge-unbound", f"TIU core {core.index}: {lo + len(bound) - hi} unbound "
                          "record(s) at the stream edges dropped", str(core.path))
            sel = np.arange(lo, hi)
            s = s.take(sel)
            rec = {k: v[sel] for k, v in rec.items()}
    if cl is not None:
        rec["node_fields"] = _node_fields(cl, rec["cmd"])
    return _describe(s, rec, engine, core.index, chip, meta, core.file)


def _bind(s: Stream, secs: _Sections | None, cl, core, engine, chip, meta) -> dict[str, np.ndarray]:
    n = len(s)
    rec = {
        "source": np.full(n, "", object),       # "" unbound, "node", "desc"
        "cmd": np.full(n, -1, np.int64),        # index into the command list (node)
        "desc_off": np.full(n, -1, np.int64),   # descriptor: offset in the core file
        "desc_len": np.zeros(n, np.int64),
        "kernel": np.full(n, None, object), "scope": np.full(n, -1, np.int64),
        "batch": np.full(n, -1, np.int64), "mode": np.full(n, "PMU", object),
    }
    if secs is None or n == 0:
        return rec
    m_start, m_span = match.id_runs(s["id"])
    pairs = match.align_sections(m_span, secs.spans)
    if len(pairs) < min(len(m_span), len(secs.spans)):
        meta.warn("unpaired-sections", f"{engine} core {core.index}: {len(m_span) - len(pairs)} of "
                  f"{len(m_span)} PMU id runs found no command section of the same length",
                  str(core.path))
    m_end = np.append(m_start[1:], n)
    ids = s["id"]
    warned = False
    for mi, ci in pairs:
        a, b = int(m_start[mi]), int(m_end[mi])
        rel = ids[a:b] - ids[a]
        kern, scope, batch, mode = secs.tags[ci]
        rec["kernel"][a:b], rec["scope"][a:b], rec["batch"][a:b] = kern, scope, batch
        rec["mode"][a:b] = mode
        if secs.members[ci] is not None:                      # TDI / RVT node section
            members = secs.members[ci]
            ok = rel < len(members)
            pos = np.arange(a, b)[ok]
            cidx = members[rel[ok]]
            rec["cmd"][pos] = cidx
            rec["source"][pos] = "node"
            rec["kernel"][pos], rec["scope"][pos] = cl.kernel[cidx], cl.scope[cidx]
            rec["batch"][pos], rec["mode"][pos] = cl.batch[cidx], cl.mode[cidx]
            ex = cl.extra_idx[cidx]
            # CDMA DYN_EXTRA contents are never descriptors of the PMU record (spec §7.1)
            has = (ex >= 0) & (ex < len(core.extra_off)) & (not engine.startswith("CDMA"))
            if len(core.extra_off) and (ex >= len(core.extra_off)).any() and not warned:
                warned = True
                meta.warn("missing-extra", f"{engine} core {core.index}: fewer DYN_EXTRA descriptors "
                          "than commands; the rest are described from their dynamic node", str(core.path))
            rec["desc_off"][pos[has]] = core.extra_off[ex[has]]
            rec["desc_len"][pos[has]] = core.extra_len[ex[has]]
            rec["source"][pos[has]] = "desc"
        else:                                                  # DES chain or bmodel block
            blobs = secs.blobs[ci]
            if blobs is None:
                key, num = secs.des[ci]
                chain = core.kv.get((key, num))
                if chain is None:
                    meta.warn("missing-des", f"{engine} core {core.index}: no BLOCK_DES_KV for "
                              f"key {key} / {num} commands", str(core.path))
                    continue
                blobs = secs.blobs[ci] = walk_chain(
                    core.file, *chain, "CDMA" if engine.startswith("CDMA") else engine, chip)
            offs, lens = blobs
            ok = rel < len(offs)
            pos = np.arange(a, b)[ok]
            rec["desc_off"][pos], rec["desc_len"][pos] = offs[rel[ok]], lens[rel[ok]]
            rec["source"][pos] = "desc"
    return rec


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


def _describe(s: Stream, rec, engine: str, core_index: int, chip: Chip, meta: Meta,
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
            gather(file, d_off, d_len, 8), chip.name)
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
            fields = D.decode_fields(gather(file, d_off[sel], d_len[sel], lay[op].nbytes), lay[op])
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


# -- CDMA --------------------------------------------------------------------------------------

def _repair_port(s: Stream, meta: Meta, port: int) -> tuple[Stream | None, Stream]:
    """Split a port stream into its sync pair and the launches (spec §9.4 step 1)."""
    ids = s["id"]
    first = np.flatnonzero(ids == 1)
    if len(first) == 0:
        return None, s
    f = int(first[0])
    sync = s.take(slice(max(f - 2, 0), f)) if f >= 2 else None
    meta.count(f"CDMA_{port}", "dropped: port sync pair", min(f, 2))
    meta.count(f"CDMA_{port}", "dropped: before the port sync pair", max(f - 2, 0))
    rest = s.take(slice(f, None))
    rid = rest["id"]
    brk = np.flatnonzero(rid[1:] < rid[:-1] - 10) + 1
    launch = np.zeros(len(rest), np.int64)
    launch[brk] = 1
    launch = np.cumsum(launch)
    dur = rest["end"] - rest["start"]
    order = np.lexsort((-dur, rid, launch))
    r = rest.take(order)
    key = r["id"] + (launch[order] << 32)
    uniq = np.r_[True, key[1:] != key[:-1]]
    meta.count(f"CDMA_{port}", "dropped: duplicate id in a launch", int((~uniq).sum()))
    if not uniq.all():
        meta.warn("cdma-duplicates", f"CDMA port {port}: {int((~uniq).sum())} duplicate record id(s) "
                  "in a launch dropped (the longest is kept)")
    return sync, r.take(uniq)


def bind_cdma(ports: dict[int, Stream], cores, anchor, chip: Chip, meta: Meta, bound) -> dict:
    out: dict[int, Binding] = {}
    if not ports:
        return out
    anchor_sdma = bound[(anchor.index, "SDMA")] if anchor is not None else None
    consumed = 0
    for port, s in ports.items():
        anchored = False
        if anchor is not None and len(s):
            sync, s = _repair_port(s, meta, port)
            sd = anchor_sdma.cols if anchor_sdma is not None else None
            if sync is not None and len(sync) and sd and consumed < len(anchor_sdma):
                offset = int(sync["end_ns"][0]) - int(sd["end_ns"][consumed])
                s["start_ns"] = s["start_ns"] - offset
                s["end_ns"] = s["end_ns"] - offset
                consumed += 1
                anchored = True
            else:
                meta.warn("cdma-unanchored", f"CDMA port {port} could not be anchored to core "
                          f"{anchor.index}'s SDMA stream: its times stay in the port's own clock domain")
        elif len(s):
            meta.warn("cdma-unanchored", f"CDMA port {port}: the anchor core {chip.anchor_core} is "
                      "missing, so the port's times cannot be aligned with the cores")
        out[port] = _bind_port(s, port, cores, anchor, chip, meta)
        out[port].anchored = anchored
    if consumed and anchor_sdma is not None:
        # the VSDMA sends that started the ports are part of the profiling set-up, not work
        bound[(anchor.index, "SDMA")] = anchor_sdma.take(np.arange(consumed, len(anchor_sdma)))
        meta.count(f"SDMA_{anchor.index}", "dropped: VSDMA send that starts a CDMA port", consumed)
    return out


def _bind_port(s: Stream, port: int, cores, anchor, chip: Chip, meta: Meta) -> Binding:
    lane = f"CDMA{port}"
    n = len(s)
    votes = np.zeros(n, np.int64)
    chosen = np.full(n, -1, np.int64)
    recs = {}
    for core in cores:
        cl = core.commands.get(lane)
        if cl is None:
            continue
        if anchor is not None and core.index == anchor.index:
            cl = cl.take(slice(2, None))          # the port's tx_wait + nop init commands
        secs = _node_sections(cl, core, lane, chip)
        sub = _bind(s, secs, cl, core, lane, chip, meta)
        hit = sub["source"] != ""
        votes += hit
        chosen[hit] = core.index
        sub["node_fields"] = _node_fields(cl, sub["cmd"])
        recs[core.index] = sub
    amb = votes > 1
    if amb.any():
        meta.warn("cdma-ambiguous", f"CDMA port {port}: {int(amb.sum())} record(s) could belong to "
                  "several submitting cores and are left unattributed")
        chosen[amb] = -1
    rec = {"source": np.full(n, "", object), "cmd": np.full(n, -1, np.int64),
           "desc_off": np.full(n, -1, np.int64), "desc_len": np.zeros(n, np.int64),
           "kernel": np.full(n, None, object),
           "scope": np.full(n, -1, np.int64), "batch": np.full(n, -1, np.int64),
           "mode": np.full(n, "PMU", object),
           "node_fields": {k: np.zeros(n, np.int64) for k in ("tsk_typ", "eu", "extra_info")} | {
               "mode": np.full(n, "PMU", object)}}
    core_of = np.full(n, anchor.index if anchor is not None else chip.anchor_core, np.int64)
    # descriptors of different submitting cores live in different files: copy the few that
    # CDMA records bind to into one small pool
    pool, pool_size = [], 0
    files = {c.index: c.file for c in cores}
    for ci, sub in recs.items():
        sel = chosen == ci
        for k in ("source", "cmd", "kernel", "scope", "batch", "mode", "desc_len"):
            rec[k][sel] = sub[k][sel]
        d = np.flatnonzero(sel & (sub["desc_off"] >= 0))
        if len(d):
            width = int(sub["desc_len"][d].max())
            pool.append(gather(files[ci], sub["desc_off"][d], sub["desc_len"][d], width).ravel())
            rec["desc_off"][d] = pool_size + np.arange(len(d)) * width
            pool_size += len(d) * width
        for k in ("tsk_typ", "eu", "extra_info", "mode"):
            rec["node_fields"][k][sel] = sub["node_fields"][k][sel]
        core_of[sel] = ci
    pool_arr = np.concatenate(pool) if pool else np.zeros(1, np.uint8)
    b = _describe(s, rec, "CDMA", 0, chip, meta, pool_arr, port=port)
    b.cols["core"] = core_of
    return b


def _node_fields(cl: CommandList, cmd: np.ndarray) -> dict[str, np.ndarray]:
    ok = cmd >= 0
    c = np.where(ok, cmd, 0)
    if len(cl) == 0:
        z = np.zeros(len(cmd), np.int64)
        return {"tsk_typ": z, "eu": z, "extra_info": z, "mode": np.full(len(cmd), "PMU", object)}
    return {"tsk_typ": np.where(ok, cl.tsk_typ[c], 0), "eu": np.where(ok, cl.eu[c], 0),
            "extra_info": np.where(ok, cl.extra_info[c], 0),
            "mode": np.where(ok, cl.mode[c], "PMU").astype(object)}


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
