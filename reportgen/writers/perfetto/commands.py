"""Command slices: one track per engine and core (CDMA: per port, TX and RX), "#k" lanes where
commands overlap, typed args and TIU/GDMA dependency flows (see the package docstring)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from numba import njit

from reportgen.analysis.depgraph import descriptor_dependencies
from reportgen.intervals import first_fit_lanes
from reportgen.writers.perfetto.columns import category_codes, column_reader, engine_is
from reportgen.writers.perfetto.counters import sort_order
from reportgen.writers.perfetto.device import ENGINE_RANK, Device
from reportgen.writers.perfetto.launch_flows import flow_id, launches
from reportgen.writers.perfetto.riding import Riding, ride_values
from reportgen.writers.perfetto.trace import Plan, pairs, path_uuid
from reportgen.writers.perfetto.wire import (FLOW_IDS, TERMINATING_FLOW_IDS, SLICE_BEGIN, SLICE_END, Rows,
                                             annotations, packet)


#: CDMA operations per direction (pmu-dump-format.md §8.4); anything else stays on the port track
CDMA_CHANNEL = {**dict.fromkeys(("send", "tcp_send", "tx_send", "tx_wait"), 1),
                **dict.fromkeys(("receive", "read", "tcp_receive", "rx_send", "rx_wait"), 2)}


#: string args written once on the track (its descriptor's description, "debug.Sheet = TIU_0")
#: instead of on every slice when every slice of the track has the same value
TRACK_ARGS = ("Sheet", "Mode")


def track_constant(track_code: np.ndarray, tracks: int, codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Per track: the interned string iid every one of its rows has (0: the rows differ, or one
    has none); ``table[codes]`` is a row's iid (code -1: none)."""
    codes = np.asarray(codes, np.int64)
    low, high = np.full(tracks, np.iinfo(np.int64).max), np.full(tracks, -1)
    np.minimum.at(low, track_code, codes)
    np.maximum.at(high, track_code, codes)
    same = (low == high) & (low >= 0)
    return np.where(same, table[np.where(same, low, -1)], 0)


def track_args(on_track: dict[str, np.ndarray], track: int, text: dict[int, str]) -> str:
    """The description of a track that carries args for all its slices: "debug.<arg> = <value>"
    per line (the key a trace processor gives a slice's own arg)."""
    return "\n".join(f"debug.{a} = {text[int(iid[track])]}" for a, iid in on_track.items() if iid[track])


def _flows(c: pd.DataFrame, why) -> tuple[np.ndarray, np.ndarray]:
    """(source row, dependent row) of every flow: descriptor dependencies (the analysis' one
    rule, analysis/depgraph.py) and barriers (the command that released it: the last core's last
    work, or its wait -> each other wait of the barrier without a dependency flow of its own)."""
    if why is None:
        return descriptor_dependencies(c)
    g = why.graph
    dep_dst = np.flatnonzero(g.dep_src >= 0)
    waits = np.flatnonzero(g.barrier >= 0)
    rel = g.release_cmd[g.barrier[waits]]
    keep = (rel != waits) & (g.dep_src[waits] < 0)
    return (np.concatenate([g.dep_src[dep_dst], rel[keep]]),
            np.concatenate([dep_dst, waits[keep]]))


@njit(cache=True)
def _group_clashes(group, start, end, groups):
    """One pass in row order: (whether every group's rows are in start order, per group
    whether a command starts before an earlier one of the group ended)."""
    low = np.iinfo(np.int64).min
    last, run_end = np.full(groups, low), np.full(groups, low)
    clash = np.zeros(groups, np.bool_)
    for i in range(len(group)):
        g = group[i]
        if start[i] < last[g]:
            return False, clash
        if start[i] < run_end[g]:
            clash[g] = True
        last[g] = start[i]
        run_end[g] = max(run_end[g], end[i])
    return True, clash


@njit(cache=True)
def _track_order(track, start, end, tracks):
    """The rows by (track, start, end), stable, when every track's rows are in (start, end)
    order already (a counting sort by track: no comparison sort); None otherwise."""
    low = np.iinfo(np.int64).min
    last_s, last_e = np.full(tracks, low), np.full(tracks, low)
    count = np.zeros(tracks + 1, np.int64)
    for i in range(len(track)):
        t = track[i]
        if start[i] < last_s[t] or (start[i] == last_s[t] and end[i] < last_e[t]):
            return None
        last_s[t], last_e[t] = start[i], end[i]
        count[t + 1] += 1
    at = np.cumsum(count)
    order = np.empty(len(track), np.int32)
    for i in range(len(track)):
        t = track[i]
        order[at[t]] = i
        at[t] += 1
    return order


def command_lanes(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``first_fit_lanes``, computed only for the groups (engine lanes of a core) where commands
    overlap: a group whose commands, in start order, each start no earlier than every earlier
    one ended is all lane 0 (what first fit gives it), and that is every group of a PMU
    capture.  Equal starts may be flagged as overlapping; those groups get first fit."""
    group = np.asarray(group, np.int64)
    groups = int(group.max()) + 1 if len(group) else 0
    in_order, clashes = _group_clashes(group, start, end, groups)
    lane = np.zeros(len(group), np.int32)
    if in_order:             # each group's rows in start order already (a PMU capture): no sort
        if clashes.any():
            redo = clashes[group]
            lane[redo] = first_fit_lanes(group[redo], start[redo], end[redo])
        return lane
    o = sort_order(start, group)
    g, s, e = group[o], start[o], end[o]
    # latest end so far within the group: a running maximum, each group's ends lifted above
    # the previous group's
    low = int(e.min()) if len(e) else 0
    lift = (g - int(g.min() if len(g) else 0)) * (int(e.max() if len(e) else 0) - low + 1)
    run_end = np.maximum.accumulate(e - low + lift) - lift + low
    clash = np.zeros(len(o), bool)
    clash[1:] = (g[1:] == g[:-1]) & (s[1:] < run_end[:-1])
    if clash.any():
        redo = np.isin(group, np.unique(g[clash]))
        lane[redo] = first_fit_lanes(group[redo], start[redo], end[redo])
    return lane


#: flow ids taken in turn by the flows that go forward in time (one-byte varints)
FLOW_ID_CYCLE = 127


def reused_flow_ids(src_ts: np.ndarray, dst_ts: np.ndarray) -> np.ndarray:
    """A flow id per flow (source begin at ``src_ts``, dependent begin at ``dst_ts``), small so
    that its varint is one byte: ids are reused.

    A trace processor reads the events in time order, opens a flow at its source and closes it
    at its dependent; an id closed is free again.  The flows that go forward in time, in source
    order, take the ids 1..127 in turn; the next flow with the same id, 127 sources later, must
    begin after this one's dependent (strictly: nothing depends on the order of events at one
    time).  A flow that would still be open then, or whose dependent begins no later than its
    source (a barrier wait that began before the command releasing it, which a trace processor
    never closes), keeps an id of its own, above those."""
    src_ts, dst_ts = np.asarray(src_ts, np.int64), np.asarray(dst_ts, np.int64)
    o = np.argsort(src_ts, kind="stable")
    src, dst = src_ts[o], dst_ts[o]
    rank = np.arange(len(o))
    free_from = np.searchsorted(src, dst, "right")        # first source after the dependent
    cyclic = (dst > src) & (free_from - rank <= FLOW_ID_CYCLE)
    turn = np.cumsum(cyclic) - 1                          # rank among the cyclic flows
    ids = np.empty(len(o), np.int64)
    ids[o] = np.where(cyclic, turn % FLOW_ID_CYCLE + 1, FLOW_ID_CYCLE + 1 + np.cumsum(~cyclic) - 1)
    return ids


def position_of(order: np.ndarray) -> np.ndarray:
    """Each row's output position given the output ``order`` of rows."""
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))
    return position


def _command_tracks(c: pd.DataFrame, is_cdma: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Each command's track: (track code per row, track keys = lane group code * 1024 + lane,
    lane group keys = (engine code * 4 + CDMA channel) << 32 | core or port + 1, engine names)."""
    eng_code, eng_names = category_codes(c["engine"])
    cdma = np.flatnonzero(is_cdma)
    owner = c["core"].to_numpy(np.int64) + 1                 # >= 0
    owner[cdma] = c["port"].iloc[cdma].astype("Float64").fillna(-1).astype("int64").to_numpy() + 1
    # CDMA: a TX and an RX lane group under each port, like the reference (other ops on the
    # port track itself); a transfer's two sides overlap, so they never share a track
    names, name_table = category_codes(c["func_name"])
    channel_of = np.array([CDMA_CHANNEL.get(str(x), 0) for x in name_table] + [0], np.int64)
    group = eng_code.astype(np.int64) * 4
    group[cdma] += channel_of[names[cdma]]
    group *= 1 << 32
    group += owner
    del owner
    base_code, base_keys = pd.factorize(group)
    del group
    lane = command_lanes(base_code, start, end)
    base_code *= 1024
    base_code += lane
    del lane
    track_code, track_keys = pd.factorize(pd.Series(base_code))
    return track_code, track_keys, base_keys, eng_names


#: the int and double args of a command slice: arg name -> command column
INT_ARGS = {"Global Idx": "global_idx", "Cmd Id": "cmd_id", "Cycles": "cycles", "DMA data size(B)": "bytes",
            "Stall Cycles": "stall_cycles", "Dep Cmd Id": "dep_cmd_id", "Batch": "batch", "Port": "port"}
DOUBLE_ARGS = {"DDR Bandwidth(GB/s)": "ddr_bw", "L2M Bandwidth(GB/s)": "l2m_bw", "uArch Rate": "uarch_rate"}


def _flow_lists(c: pd.DataFrame, why, order: np.ndarray, start: np.ndarray):
    """The flows by output position (``order``): (source positions, sorted, and their flow ids;
    dependent positions, sorted, and their flow ids), narrow integers."""
    src, dst = _flows(c, why)
    fid = reused_flow_ids(start[src], start[dst])
    fid = fid.astype(np.int32) if not len(fid) or fid.max() < 1 << 31 else fid
    position = position_of(order)
    lists = []
    for rows in (src, dst):
        pos = position[rows]
        o = np.argsort(pos, kind="stable")
        lists += [pos[o].astype(order.dtype), fid[o]]
    return lists


def commands_plan(device: Device, c: pd.DataFrame, why=None, ride: Riding | None = None) -> Plan:
    """Every command as a slice on its engine lane, with args, dependency and barrier flows (and
    the flows from the host rows that launched them: :mod:`.launch_flows`); ``why``
    (analysis/why.py): the critical path's commands carry ``critical = true``; lanes of a
    framework trace with a ``level`` column are grouped under their level's track; ``ride``: the
    counter points the slices' begin / end events carry (:mod:`.riding`)."""
    t = device.t
    is_cdma = engine_is(c, "CDMA")
    start = c["start_ns"].to_numpy(np.int64)
    end = c["end_ns"].to_numpy(np.int64)
    track_code, track_keys, base_keys, eng_names = _command_tracks(c, is_cdma, start, end)
    str_cols = {"Sheet": "sheet", "Direction": "direction", "Data Type": "dtype",
                "Kernel Function": "kernel", "Mode": "mode"}
    strings = {a: t.strings.lookup(c[col]) for a, col in str_cols.items()}
    on_track = {a: track_constant(track_code, len(track_keys), *strings[a]) for a in TRACK_ARGS}
    text = t.strings.names()
    # declare the tracks
    level_of = dict(zip(c["engine"].astype(str), c["level"].astype(str))) if "level" in c.columns else {}
    cdma_root, port_tracks = None, {}
    uuid_of = np.zeros(len(track_keys), np.int64)
    counter_of = np.zeros(len(track_keys), np.int64)          # the lane's engine's counter on its core
    for k, key in enumerate(track_keys.to_numpy()):
        b, ln = divmod(int(key), 1024)
        e4, own = divmod(int(base_keys[b]), 1 << 32)
        (e, ch), own = divmod(e4, 4), own - 1
        eng = str(eng_names[e])
        label = eng if ln == 0 else f"{eng} #{ln + 1}"
        if eng == "CDMA":
            if cdma_root is None:
                cdma_root = t.track("device/cdma", "CDMA", device.root, rank=1 << 20, explicit=True)
            if own not in port_tracks:
                port_tracks[own] = t.track(f"device/cdma/{own}", f"CDMA port{own}", cdma_root,
                                           rank=own, explicit=True)
            if ch == 0 and ln == 0:
                uuid_of[k] = port_tracks[own]
                for iid in on_track.values():        # the port's own track: args stay on the slices
                    iid[k] = 0
                continue
            label = f"CDMA port{own}" + ("", " TX", " RX")[ch] + ("" if ln == 0 else f" #{ln + 1}")
            uuid_of[k] = t.track(f"device/cdma/{own}/{ch}/{ln}", label, port_tracks[own],
                                 rank=ch * 64 + ln, description=track_args(on_track, k, text))
        else:
            rank = ENGINE_RANK.get(eng, 7) * 64 + ln
            if ride is not None and (int(own), eng) in ride.tracks:
                counter_of[k] = path_uuid(ride.tracks[(int(own), eng)])
            parent = device.level_track(int(own), level_of.get(eng)) if level_of else device.core_track(int(own))
            uuid_of[k] = t.track(f"device/core/{own}/engine/{eng}/{ln}", label, parent, rank=rank,
                                 description=track_args(on_track, k, text))
    seq_ids = t.sequences(len(track_keys))
    order = _track_order(track_code, start, end, len(track_keys)) if len(c) < 1 << 31 else None
    if order is None:
        order = sort_order(end - start, start, track_code)   # = lexsort((end, start, track_code))
        order = order.astype(np.int32) if len(order) < 1 << 31 else order
    track_code = track_code.astype(np.int32)
    seq = seq_ids[track_code]                                # transient: for the iids used
    # strings: small per-column iid tables; args: read per chunk from the frame, so what
    # stays allocated for the whole write is order, track_code and the flow lists
    names, cats = t.names.lookup(c["func_name"]), t.cats.lookup(c["func_type"])
    # a value written once on its track is left off the track's slices
    on_slices = {a: np.where(on_track[a] > 0, 0, 1) if a in on_track else np.ones(len(track_keys), np.int64)
                 for a in strings}

    def string_iids(a: str, rows) -> np.ndarray:
        """The interned value of string arg ``a`` on each of ``rows`` (0: none)."""
        codes, tab = strings[a]
        return tab[codes[rows]] * on_slices[a][track_code[rows]]

    every = slice(None)
    used = {"names": pairs(seq, names[1][names[0]]), "cats": pairs(seq, cats[1][cats[0]]),
            "strings": tuple(np.concatenate(x) for x in zip(*[pairs(seq, string_iids(a, every))
                                                              for a in strings]))}
    del seq
    critical = np.zeros(len(c), bool)
    if why is not None:
        critical[why.path.rows] = True
    # typed columns read per chunk (no copy of the whole column)
    int_args = {a: column_reader(c, col, "int") for a, col in INT_ARGS.items()}
    dbl_args = {a: column_reader(c, col, "double") for a, col in DOUBLE_ARGS.items()}
    core = column_reader(c, "core", "int")
    # an arg name is interned by the sequences (tracks) that have it on some slice
    present = {**{a: (lambda col=col: c[col].notna().to_numpy(bool)) for a, col in {**INT_ARGS, **DOUBLE_ARGS}.items()},
               **{a: (lambda a=a: string_iids(a, every) > 0) for a in strings}, "Core": lambda: is_cdma,
               "critical": lambda: critical}
    has_arg = [np.flatnonzero(np.bincount(track_code[ok()], minlength=len(track_keys))) for ok in present.values()]
    used["args"] = (np.concatenate([seq_ids[x] for x in has_arg]),
                    np.concatenate([np.full(len(x), t.arg_iid[a]) for a, x in zip(present, has_arg)]))
    first_ts = np.full(len(track_keys), np.iinfo(np.int64).max)
    np.minimum.at(first_ts, track_code, start + device.base)
    src_pos, src_flow, dst_pos, dst_flow = _flow_lists(c, why, order, start)
    launched, _ = launches(c)                                # framework: host launch -> slice
    launch_pos = position_of(order)[launched] if len(launched) else launched
    launch_flow = flow_id(launched)
    base = device.base

    def encode(lo: int, hi: int) -> bytes:
        rows = order[lo:hi]
        n = len(rows)
        seq_rows = seq_ids[track_code[rows]]
        te = Rows(n).const(9, SLICE_BEGIN)
        iid = names[1][names[0][rows]]
        te.varint(10, iid, iid > 0)
        iid = cats[1][cats[0][rows]]
        te.varint(3, iid, iid > 0)
        args = [(a, "int", *read(rows)) for a, read in int_args.items()]
        args.append(("Core", "int", core(rows)[0], is_cdma[rows]))
        args.append(("critical", "bool", np.ones(n, np.int64), critical[rows]))
        for a, read in dbl_args.items():
            v, ok = read(rows)
            args.append((a, "double", np.round(v * 100.0, 6) if a == "uArch Rate" else v, ok))
        for a in strings:
            iid = string_iids(a, rows)
            args.append((a, "string", iid, iid > 0))
        annotations(te, t.arg_iid, args)
        i, j = np.searchsorted(src_pos, [lo, hi])
        te.repeated(FLOW_IDS, src_pos[i:j] - lo, src_flow[i:j])
        i, j = np.searchsorted(dst_pos, [lo, hi])
        terminating = np.zeros(n, np.uint64)
        terminating[dst_pos[i:j] - lo] = dst_flow[i:j]
        k = (launch_pos >= lo) & (launch_pos < hi)
        terminating[launch_pos[k] - lo] = launch_flow[k]
        te.varint(TERMINATING_FLOW_IDS, terminating, terminating > 0)
        end_ev = Rows(n).const(9, SLICE_END)
        if ride is not None:                                 # counter points riding on the events
            for ev, values in ((te, ride.begin[rows]), (end_ev, ride.end[rows])):
                ride_values(ev, values)
        # packets B0 E0 B1 E1 ...: each one's time as the delta from the previous one
        delta = t.deltas(np.repeat(seq_rows, 2), np.column_stack([start[rows], end[rows]]).ravel() + base)
        rec = Rows(n).message(1, packet(n, delta[0::2], seq_rows, te))
        rec.message(1, packet(n, delta[1::2], seq_rows, end_ev))
        return rec.tobytes()

    return Plan(len(c), seq_ids, uuid_of, first_ts, encode, used, counter_of)
