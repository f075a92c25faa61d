"""DYN_DATA node streams -> per-engine command lists (spec §6).

The firmware records one 32-bit word per dispatched command, interleaved over the engines of a
core, plus a few markers (kernel name, id resets, descriptor-chain references). This module
turns a block of such words into one :class:`CommandList` per engine (and per CDMA port): the
id each command will carry in the PMU stream, its type fields, mode, kernel tags and the index
of its DYN_EXTRA descriptor. Only marker records are visited one by one; per-command work is
vectorised.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reportgen.errors import InputError
from reportgen.parsers.pmu.chips import Chip
from reportgen.parsers.pmu.labels import CODE, LABELS, MODE
from reportgen.parsers.pmu.records import Node, node_fields, pack_node

RVT_WRAP_ID = 0x3FFFF
#: node type (bits 6..0) -> is it a type the format defines
_VALID_TYPE = np.isin(np.arange(128), [int(t) for t in Node])


@dataclass
class CommandList:
    """Commands of one engine (or CDMA port) of one core, in dispatch order."""

    engine: str
    ids: np.ndarray                 # id the PMU record will carry (0-based counter)
    tsk_typ: np.ndarray
    eu: np.ndarray
    extra_info: np.ndarray
    mode: np.ndarray                # label code (labels.MODE): TDI / RVT
    kernel: np.ndarray              # label code of the kernel name, -1 when none
    scope: np.ndarray               # func scope id, -1 when none
    batch: np.ndarray               # batch index, -1 when none
    extra_idx: np.ndarray           # DYN_EXTRA entry of the command, -1 when none
    section: np.ndarray             # section number (runs split at resets / DES refs)
    #: DES references: section number -> (key, cmd_num)
    des: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: DES section number -> (kernel, scope, batch) at the reference
    des_tags: dict[int, tuple] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, idx) -> "CommandList":
        return CommandList(self.engine, self.ids[idx], self.tsk_typ[idx], self.eu[idx],
                           self.extra_info[idx], self.mode[idx], self.kernel[idx],
                           self.scope[idx], self.batch[idx], self.extra_idx[idx],
                           self.section[idx], self.des, self.des_tags)


def _strings_and_des(words: np.ndarray, types: np.ndarray, path, base_offset: int):
    """Visit FUNC and DES records (the only multi-word ones) and mark their payload words.

    Returns (payload mask, {FUNC index: name}, {DES index: (key, cmd_num)}).
    """
    n_words = len(words)
    names: dict[int, str] = {}
    des: dict[int, tuple[int, int]] = {}
    spans: list[tuple[int, int]] = []              # payload words [a, b) of each record
    candidates = np.flatnonzero((types == Node.FUNC) | ((types >= Node.DES_TIU) & (types <= Node.DES_CDMA)))
    raw = words.tobytes()                          # words are "<u4": names are read from here
    decoded: dict[bytes, str] = {}                 # a kernel name recurs at every call
    skip_until = -1
    for i, w, t in zip(candidates.tolist(), words[candidates].tolist(), types[candidates].tolist()):
        if i < skip_until:
            continue                               # a payload word that looks like a record
        if t == Node.FUNC:
            n = w >> 7
            end = i + 1 + (n + 3) // 4
            if end > n_words:
                raise InputError(path, f"kernel name of {n} bytes runs past the end of the DYN_DATA block",
                                 offset=base_offset + 4 * i)
            name = raw[4 * (i + 1): 4 * (i + 1) + n]
            if name not in decoded:
                decoded[name] = name.decode("utf-8", errors="replace")
            names[i] = decoded[name]
        else:
            end = i + 2
            if end > n_words:
                raise InputError(path, "descriptor reference without its count word at the end of "
                                 "the DYN_DATA block", offset=base_offset + 4 * i)
            des[i] = (w >> 7, int(words[i + 1]))
        spans.append((i + 1, end))
        skip_until = end
    if not spans:
        return np.zeros(n_words, bool), names, des
    a, b = np.array(spans, np.int64).T
    # +1 where a payload starts, -1 where it ends (bincount: np.add.at is slow)
    depth = np.bincount(a, minlength=n_words + 1) - np.bincount(b, minlength=n_words + 1)
    return np.cumsum(depth[:-1]) > 0, names, des


def _last_event(positions: np.ndarray, n: int) -> np.ndarray:
    """Ordinal of the last event at or before each of ``n`` indexes; -1 before the first.

    ``positions`` must be ascending. Index a table with one extra (default) entry at its end
    with the result: -1 picks the default."""
    last = np.full(n, -1, np.int64)
    last[positions] = np.arange(len(positions))
    return np.maximum.accumulate(last) if n else last


@dataclass
class DynData:
    """What one core's DYN_DATA words describe."""

    #: "TIU", "GDMA", "SDMA", "CDMA<p>" -> the commands of that lane in dispatch order
    lists: dict[str, CommandList]
    #: engine, des_tsk_typ and des_tsk_eu_typ of the TDI NODE_SET words, in order: each owns
    #: one DYN_EXTRA entry
    tdi: dict[str, np.ndarray]
    #: FUNC nodes (kernel-function scopes) of the core; scope ids count from 0 within the core
    scopes: int = 0


#: lane codes: the three core engines, then one lane per CDMA port (CDMA_LANE + port)
LANES = ("TIU", "GDMA", "SDMA")
CDMA_LANE = len(LANES)


def _lane_name(code: int) -> str:
    return LANES[code] if code < CDMA_LANE else f"CDMA{code - CDMA_LANE}"


def _engine_lanes(chip: Chip) -> np.ndarray:
    """Lane code per node engine field (VSDMA joins SDMA; HAU and unknown engines: -1)."""
    out = np.full(8, -1, np.int64)
    for code, name in chip.node_engines.items():
        name = "SDMA" if name == "VSDMA" else name
        out[code] = LANES.index(name) if name in LANES else CDMA_LANE if name == "CDMA" else -1
    return out


_MODES = np.array([MODE["TDI"], MODE["RVT"]], CODE)


def parse_dyn_data(words: np.ndarray, chip: Chip, path, base_offset: int = 0,
                   extra_base: int = 0) -> DynData:
    """One DYN_DATA block -> command lists per lane and the TDI nodes owning DYN_EXTRA entries."""
    f = node_fields(words)
    payload, names, des_refs = _strings_and_des(words, f["type"], path, base_offset)
    tdi_raw = ~payload & (f["type"] == Node.NODE_SET)
    tdi = {k: f[k][tdi_raw] for k in ("engine", "des_tsk_typ", "des_tsk_eu_typ")}
    if (f["type"] == Node.RVT_NODE_SET).any():
        words = _inject_rvt_wraps(words, chip, path, base_offset)
        if len(words) != len(f["type"]):
            f = node_fields(words)
            payload, names, des_refs = _strings_and_des(words, f["type"], path, base_offset)
    n = len(words)
    types = f["type"]
    bad = ~payload & ~_VALID_TYPE[types]
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(path, f"unknown dynamic node type {int(types[i])} (word 0x{int(words[i]):08x})",
                         offset=base_offset + 4 * i)
    live = ~payload
    is_set = live & ((types == Node.NODE_SET) | (types == Node.RVT_NODE_SET))
    resets = live & (types == Node.ID_RESET)
    bad_engine = (is_set | resets) & ~np.isin(np.arange(8), list(chip.node_engines))[f["engine"]]
    if bad_engine.any():
        i = int(np.flatnonzero(bad_engine)[0])
        raise InputError(path, f"dynamic node for engine code {int(f['engine'][i])}, which {chip.name} "
                         "does not have", offset=base_offset + 4 * i)

    # kernel tags: FUNC opens a scope with a name, FUNC_END closes it; BATCH_IDX is sticky
    func_pos = np.array(sorted(names), np.int64)
    end_pos = np.flatnonzero(live & (types == Node.FUNC_END))
    ev_pos = np.concatenate([func_pos, end_pos])
    order = np.argsort(ev_pos, kind="stable")
    last = _last_event(ev_pos[order], n)
    scope = np.concatenate([np.arange(len(func_pos)), np.full(len(end_pos) + 1, -1)]).astype(np.int32)[
        np.append(order, len(order))][last]
    kernel = np.concatenate([LABELS.codes(names[int(p)] for p in func_pos),
                             np.full(len(end_pos) + 1, -1, CODE)])[np.append(order, len(order))][last]
    batch_pos = np.flatnonzero(live & (types == Node.BATCH_IDX))
    batch = np.append(f["packed"][batch_pos], -1).astype(np.int32)[_last_event(batch_pos, n)]

    # DYN_EXTRA entries are consumed one per TDI NODE_SET, every engine included
    tdi_now = live & (types == Node.NODE_SET)
    extra_idx = np.where(tdi_now, extra_base + np.cumsum(tdi_now, dtype=np.int32) - 1, -1).astype(np.int32)

    # which list each command goes to: engine lane, CDMA one lane per port
    lane = _engine_lanes(chip)[f["engine"]]
    cdma = lane == CDMA_LANE
    lane[cdma] += (f["extra_info"][cdma] >> 8) & 0xF

    des_pos = np.array(sorted(des_refs), np.int64)
    des_lane = {int(Node.DES_TIU): 0, int(Node.DES_GDMA): 1, int(Node.DES_SDMA): 2}
    des_lanes = np.array([des_lane.get(int(types[p]), CDMA_LANE + (des_refs[int(p)][1] >> 28))
                          for p in des_pos], np.int64)
    # the commands grouped by lane (dispatch order within a lane), each field gathered once
    cmds = np.flatnonzero(is_set & (lane >= 0))
    cmds = cmds[np.argsort(lane[cmds].astype(np.int8), kind="stable")]    # radix sort
    cmd_lane = lane[cmds]
    fields = {"tsk_typ": f["des_tsk_typ"][cmds], "eu": f["des_tsk_eu_typ"][cmds],
              "extra_info": f["extra_info"][cmds],
              "mode": _MODES[(types[cmds] == Node.RVT_NODE_SET).astype(np.intp)],
              "kernel": kernel[cmds], "scope": scope[cmds], "batch": batch[cmds],
              "extra_idx": extra_idx[cmds]}
    reset_at = np.flatnonzero(resets)
    reset_lane = lane[reset_at]
    lanes = np.union1d(cmd_lane[np.r_[True, cmd_lane[1:] != cmd_lane[:-1]]] if len(cmd_lane) else cmd_lane,
                       des_lanes)
    starts = np.searchsorted(cmd_lane, lanes, side="left")
    ends = np.searchsorted(cmd_lane, lanes, side="right")
    out: dict[str, CommandList] = {}
    for code, a, b in zip(lanes.tolist(), starts.tolist(), ends.tolist()):
        # a lane's counter restarts at its own ID_RESET and at every DES reference
        reset_pos = np.union1d(reset_at[reset_lane == code], des_pos)
        name = _lane_name(code)
        mine = {k: v[a:b] for k, v in fields.items()}
        out[name] = _number(name, cmds[a:b], mine, reset_pos, des_pos[des_lanes == code], des_refs,
                            types, kernel, scope, batch)
    return DynData(out, tdi, len(func_pos))


def _number(name, idx, fields, reset_pos, mine_des, des_refs, types, kernel, scope,
            batch) -> CommandList:
    # counter value = commands of this lane since the last reset before them
    seg = np.searchsorted(reset_pos, idx, side="right")        # segment number per command
    first_in_seg = np.r_[True, seg[1:] != seg[:-1]] if len(idx) else np.zeros(0, bool)
    run_start = np.maximum.accumulate(np.where(first_in_seg, np.arange(len(idx)), 0)) if len(idx) else idx
    ids = np.arange(len(idx)) - run_start
    cl = CommandList(engine=name, ids=ids.astype(np.int32), section=seg.astype(np.int32) * 2, **fields)
    # DES references of this lane become their own (empty-bodied) sections, placed in order:
    # section number of a DES ref is 2*segment(before it)+1, which keeps order with the TDI runs
    seg_of = np.searchsorted(reset_pos, mine_des, side="left") * 2 + 1
    for p, s in zip(mine_des.tolist(), seg_of.tolist()):
        key, cmd_num = des_refs[p]
        if types[p] == Node.DES_CDMA:
            cmd_num &= 0x0FFFFFFF
        cl.des[s] = (key, cmd_num)
        cl.des_tags[s] = (kernel[p], int(scope[p]), int(batch[p]))
    return cl


def _inject_rvt_wraps(words: np.ndarray, chip: Chip, path, base_offset: int) -> np.ndarray:
    """AKSV RVT id wrap (spec §6.6): after an RVT TIU or GDMA node that brings the TIU counter
    to 0x3FFFF, the firmware runs a TIU ``swr`` (15, 3) with id 0x3FFFF and a GDMA (6, 3) with
    the current GDMA id, then both counters restart. Those two commands are not in the node
    stream, so they are inserted (as RVT nodes, which own no DYN_EXTRA entry) followed by the
    two id resets. Wraps happen once per 262,143 TIU commands: one vectorised pass per wrap.
    Byte offsets in later error messages are then 16 bytes per wrap late.
    """
    if "TIU" not in chip.node_engines.values():
        return words
    tiu_code, gdma_code = chip.engine_code("TIU"), chip.engine_code("GDMA")
    done = 0                                   # words before this index are already handled
    while True:
        f = node_fields(words)
        types = f["type"]
        payload, _, des_refs = _strings_and_des(words, types, path, base_offset)
        live = ~payload
        sets = live & ((types == Node.NODE_SET) | (types == Node.RVT_NODE_SET))
        is_tiu = sets & (f["engine"] == tiu_code)
        reset = live & ((types == Node.ID_RESET) & (f["engine"] == tiu_code))
        reset[list(des_refs)] = True
        count = np.cumsum(is_tiu)
        base = np.maximum.accumulate(np.where(reset, count, 0))
        tiu_counter = count - base                 # TIU ids handed out after each word
        trigger = (live & (types == Node.RVT_NODE_SET) &
                   np.isin(f["engine"], (tiu_code, gdma_code)) & (tiu_counter == RVT_WRAP_ID))
        hits = np.flatnonzero(trigger[done:])
        if not len(hits):
            return words
        p = done + int(hits[0]) + 1
        extra = np.array([pack_node(Node.RVT_NODE_SET, tiu_code, 15, 3),
                          pack_node(Node.RVT_NODE_SET, gdma_code, 6, 3),
                          pack_node(Node.ID_RESET, tiu_code), pack_node(Node.ID_RESET, gdma_code)],
                         np.uint32)
        words = np.concatenate([words[:p], extra, words[p:]])
        done = p + len(extra)
