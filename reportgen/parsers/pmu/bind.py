"""Bind PMU records to the commands that explain them (spec §9.3, §9.4).

``bind_engine`` pairs one engine stream of one core with its commands (dynamic nodes, DES
chains or bmodel descriptor blocks); ``bind_cdma`` repairs and anchors the CDMA ports and pairs
each with the commands of the cores that submitted to it. Both hand the records, with what
binding found for each, to :func:`describe.describe_records`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reportgen.model import Meta
from reportgen.parsers.pmu import descriptors as D
from reportgen.parsers.pmu import match
from reportgen.parsers.pmu.chips import Chip
from reportgen.parsers.pmu.describe import DESC, NODE, UNBOUND, Binding, describe_records
from reportgen.parsers.pmu.labels import CODE, MODE
from reportgen.parsers.pmu.nodes import CommandList
from reportgen.parsers.pmu.streams import Stream

# -- descriptor chains -------------------------------------------------------------------------

def walk_chain(file: np.ndarray, start: int, length: int, engine: str, chip: Chip):
    """(file offsets, lengths) of the descriptors of a chain (DES chain or bmodel block).

    Descriptor lengths depend on each descriptor's op, so the walk is sequential; chains are
    walked once, lazily, when a PMU section is paired with them.
    """
    lay = D.layouts(chip.name)
    table = D._tiu_eu_table(chip.name)
    wide_sys, dma_ops = D.tiu_wide_sys_op(chip.name), D.dma_ops(chip.name)
    t_off, t_width, sp_off, sp_width = D.dma_head(chip.name)
    t_mask, sp_mask = (1 << t_width) - 1, (1 << sp_width) - 1
    # CV84X6's walker stops after the first chain-end (sDMA_sys special 0) and keeps it (§6.3)
    stop_at_chain_end = chip.name == "CV84X6"
    buf = file[start: start + length].tobytes()
    offs, lens = [], []
    off, n = 0, len(buf)
    while off < n:
        head = int.from_bytes(buf[off: off + 8].ljust(8, b"\0"), "little")
        if engine == "TIU":
            key = (head & 1, (head >> 41) & 0xF, (head >> 45) & 0x1F)
            op = table.get(key) or (wide_sys if key[1] == 12 else None)
        elif engine == "CDMA":
            op = D.CDMA_OPS.get((head >> 4) & 0xF)
        else:
            ctype, short = (head >> t_off) & t_mask, (head >> 3) & 1
            op = dma_ops.get(ctype)
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
        if stop_at_chain_end and op == "sDMA_sys" and ((head >> sp_off) & sp_mask) == 0:
            break
    return np.array(offs, np.int64), np.array(lens, np.int64)


# -- binding -----------------------------------------------------------------------------------

@dataclass
class _Sections:
    spans: np.ndarray                       # span per command section
    members: list                           # per section: np.ndarray of command indices, or None (DES)
    des: list                               # per section: (key, cmd_num) or None
    blobs: list                             # per section: list of descriptors (bmodel/DES) or None
    tags: list                              # per section: (kernel, scope, batch, mode)


def _node_sections(cl: CommandList, core, engine: str, chip: Chip) -> _Sections:
    section = cl.section
    # sections are numbered in dispatch order: sorting is only needed for an odd list
    ordered = len(section) < 2 or bool((section[1:] >= section[:-1]).all())
    order = np.arange(len(section)) if ordered else np.argsort(section, kind="stable")
    by_section = section if ordered else section[order]
    first = np.flatnonzero(np.r_[True, by_section[1:] != by_section[:-1]]) if len(section) else []
    secs = sorted(set(by_section[first].tolist()) | set(cl.des))
    bounds = np.searchsorted(by_section, secs, side="left")
    ends = np.searchsorted(by_section, secs, side="right")
    spans, members, des, blobs, tags = [], [], [], [], []
    for s, a, b in zip(secs, bounds, ends):
        if s in cl.des:
            key, num = cl.des[s]
            spans.append(num)
            members.append(None)
            des.append((key, num))
            blobs.append(None)
            k, sc, bt = cl.des_tags.get(s, (-1, -1, -1))
            tags.append((k, sc, bt, MODE["DES"]))
        else:
            idx = order[a:b]
            spans.append(int(cl.ids[idx].max() - cl.ids[idx].min() + 1) if len(idx) else 0)
            members.append(idx)
            des.append(None)
            blobs.append(None)
            f = idx[0] if len(idx) else None
            tags.append((cl.kernel[f], int(cl.scope[f]), int(cl.batch[f]), cl.mode[f]) if f is not None
                        else (-1, -1, -1, MODE["TDI"]))
    return _Sections(np.array(spans, np.int64), members, des, blobs, tags)


def _bmodel_sections(core, blocks: list[tuple[int, int]], engine: str, chip: Chip) -> _Sections:
    blobs = [walk_chain(core.file, off, n, engine, chip) for off, n in blocks]
    return _Sections(np.array([len(b[0]) for b in blobs], np.int64), [None] * len(blobs),
                     [None] * len(blobs), blobs, [(-1, -1, -1, MODE["BMODEL"])] * len(blobs))


def _edge_trim_tiu(ids: np.ndarray, cmd_ids: np.ndarray) -> np.ndarray:
    """Keep-mask: drop leading records whose id never occurs among the commands, and trailing
    records while their id occurs more often in the monitor than among the commands."""
    keep = np.ones(len(ids), bool)
    if len(ids) == 0:
        return keep
    excess = _ExcessCounts(ids, cmd_ids)
    known = excess.known(ids)
    first = int(np.argmax(known)) if known.any() else len(ids)
    keep[:first] = False
    i = len(ids) - 1
    while i >= first and excess[int(ids[i])] > 0:   # walks only the trailing markers
        excess[int(ids[i])] -= 1
        keep[i] = False
        i -= 1
    return keep


class _ExcessCounts:
    """How many more times each id occurs in ``ids`` than in ``cmd_ids``: counted over the
    ids' range with bincount (ids are counters: the range is about their number), by sorting
    when the range is much wider."""

    def __init__(self, ids: np.ndarray, cmd_ids: np.ndarray):
        lo, hi = int(ids.min()), int(ids.max())
        cmd = cmd_ids[(cmd_ids >= lo) & (cmd_ids <= hi)].astype(np.int64)
        self.lo, self.table = lo, None
        if hi - lo <= 4 * len(ids) + 1024:
            size = hi - lo + 1
            self.cmd = np.bincount(cmd - lo, minlength=size)
            self.table = np.bincount(ids.astype(np.int64) - lo, minlength=size) - self.cmd
        else:
            mon_u, mon_c = np.unique(ids, return_counts=True)
            cmd_u, cmd_c = np.unique(cmd, return_counts=True)
            self.counts = dict(zip(mon_u.tolist(), mon_c.tolist()))
            for u, c in zip(cmd_u.tolist(), cmd_c.tolist()):
                self.counts[u] = self.counts.get(u, 0) - c
            self.cmd_sorted = cmd_u

    def known(self, ids: np.ndarray) -> np.ndarray:
        """Which of ``ids`` occur among the commands."""
        if self.table is not None:
            return self.cmd[ids.astype(np.int64) - self.lo] > 0
        return np.isin(ids, self.cmd_sorted)

    def __getitem__(self, i: int) -> int:
        return int(self.table[i - self.lo]) if self.table is not None else self.counts.get(i, 0)

    def __setitem__(self, i: int, value: int) -> None:
        if self.table is not None:
            self.table[i - self.lo] = value
        else:
            self.counts[i] = value


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
    second_pass = bmodel and core.bmodel_des.get(engine) and cl is not None and (len(cl) or cl.des)
    rec = _bind(s, secs, cl, core, engine, chip, meta, warn_unpaired=not second_pass)
    if second_pass:
        _bind_still_unbound(rec, s, cl, core, engine, chip, meta)
    if secs is not None and engine == "TIU" and len(s):
        # unbound records at both ends of a TIU stream are dropped (nothing explains them)
        bound = rec["source"] != UNBOUND
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
    return describe_records(s, rec, engine, core.index, chip, meta, core.file)


def _bind_still_unbound(rec: dict, s: Stream, cl: CommandList, core, engine: str, chip: Chip,
                        meta: Meta) -> None:
    """bmodel second pairing pass (spec §10): the records the descriptor blocks left unbound
    are paired with the DYN_DATA commands. They are cut into id runs of their own, also where
    a bound record lies between two of them, so a run never spans a descriptor block's
    records; a record already bound is never rebound."""
    rest = np.flatnonzero(rec["source"] == UNBOUND)
    if not len(rest):
        return
    gaps = np.flatnonzero(np.diff(rest) > 1) + 1
    sub = _bind(s.take(rest), _node_sections(cl, core, engine, chip), cl, core, engine, chip,
                meta, cuts=gaps)
    paired = rest[sub["source"] != UNBOUND]
    hit = sub["source"] != UNBOUND
    for key, values in sub.items():
        rec[key][paired] = values[hit]


def _bind(s: Stream, secs: _Sections | None, cl, core, engine, chip, meta, *,
          warn_unpaired: bool = True, cuts: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """What explains each record of ``s``: its PMU id runs (also cut at positions ``cuts``)
    aligned with the command sections ``secs``."""
    n = len(s)
    rec = {
        "source": np.full(n, UNBOUND, np.int8),  # UNBOUND, NODE or DESC
        "cmd": np.full(n, -1, np.int64),        # index into the command list (node)
        "desc_off": np.full(n, -1, np.int64),   # descriptor: offset in the core file
        "desc_len": np.zeros(n, np.int64),
        "kernel": np.full(n, -1, CODE), "scope": np.full(n, -1, np.int64),
        "batch": np.full(n, -1, np.int64), "mode": np.full(n, MODE["PMU"], CODE),
    }
    if secs is None or n == 0:
        return rec
    m_start, m_span = match.id_runs(s["id"], cuts)
    pairs = match.align_sections(m_span, secs.spans)
    if warn_unpaired and len(pairs) < min(len(m_span), len(secs.spans)):
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
            rec["source"][pos] = NODE
            rec["kernel"][pos], rec["scope"][pos] = cl.kernel[cidx], cl.scope[cidx]
            rec["batch"][pos], rec["mode"][pos] = cl.batch[cidx], cl.mode[cidx]
            ex = cl.extra_idx[cidx]
            # CDMA DYN_EXTRA contents are never descriptors of the PMU record (spec §7.1)
            has = (ex >= 0) & (ex < len(core.extra_off)) & (not engine.startswith("CDMA"))
            if core.extra_entries and (ex >= core.extra_entries).any() and not warned:
                warned = True
                meta.warn("missing-extra", f"{engine} core {core.index}: fewer DYN_EXTRA descriptors "
                          "than commands; the rest are described from their dynamic node", str(core.path))
            rec["desc_off"][pos[has]] = core.extra_off[ex[has]]
            rec["desc_len"][pos[has]] = core.extra_len[ex[has]]
            rec["source"][pos[has]] = DESC
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
            rec["source"][pos] = DESC
    return rec


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
        hit = sub["source"] != UNBOUND
        votes += hit
        chosen[hit] = core.index
        sub["node_fields"] = _node_fields(cl, sub["cmd"])
        recs[core.index] = sub
    amb = votes > 1
    if amb.any():
        meta.warn("cdma-ambiguous", f"CDMA port {port}: {int(amb.sum())} record(s) could belong to "
                  "several submitting cores and are left unattributed")
        chosen[amb] = -1
    rec = {"source": np.full(n, UNBOUND, np.int8), "cmd": np.full(n, -1, np.int64),
           "desc_off": np.full(n, -1, np.int64), "desc_len": np.zeros(n, np.int64),
           "kernel": np.full(n, -1, CODE),
           "scope": np.full(n, -1, np.int64), "batch": np.full(n, -1, np.int64),
           "mode": np.full(n, MODE["PMU"], CODE),
           "node_fields": {k: np.zeros(n, np.int64) for k in ("tsk_typ", "eu", "extra_info")} | {
               "mode": np.full(n, MODE["PMU"], CODE)}}
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
            pool.append(D.gather(files[ci], sub["desc_off"][d], sub["desc_len"][d], width).ravel())
            rec["desc_off"][d] = pool_size + np.arange(len(d)) * width
            pool_size += len(d) * width
        for k in ("tsk_typ", "eu", "extra_info", "mode"):
            rec["node_fields"][k][sel] = sub["node_fields"][k][sel]
        core_of[sel] = ci
    pool_arr = np.concatenate(pool) if pool else np.zeros(1, np.uint8)
    b = describe_records(s, rec, "CDMA", 0, chip, meta, pool_arr, port=port)
    b.cols["core"] = core_of.astype(np.int16)
    return b


def _node_fields(cl: CommandList, cmd: np.ndarray) -> dict[str, np.ndarray]:
    ok = cmd >= 0
    c = np.where(ok, cmd, 0)
    if len(cl) == 0:
        z = np.zeros(len(cmd), np.int64)
        return {"tsk_typ": z, "eu": z, "extra_info": z, "mode": np.full(len(cmd), MODE["PMU"], CODE)}
    return {"tsk_typ": np.where(ok, cl.tsk_typ[c], 0), "eu": np.where(ok, cl.eu[c], 0),
            "extra_info": np.where(ok, cl.extra_info[c], 0),
            "mode": np.where(ok, cl.mode[c], MODE["PMU"]).astype(CODE)}


