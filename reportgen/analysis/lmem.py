"""Local memory per core: live ranges, occupancy per bank and in total, peaks, bank-conflict
candidates (spec ``lmem-view.md`` §6; docs/metrics.md "Local memory").

The accesses come from :mod:`analysis.lmem_access`. Everything is in the one-lane view (bytes per
lane at lane-local offsets), times in ns.

* **Live pieces.** Per core, accesses in time order (reads before writes at equal starts, a
  command's reads before its writes) over an interval map of the lane (analysis/lmem_sweep.py):
  each write starts a value on its range, ending the parts of older values there; a read uses
  the values it meets, and bytes holding nothing get a value written before the capture, which
  starts at the core's first access. A value lives from its start to the last end among its
  writer and its readers so far — a read anywhere in a value extends the whole value. Adjacent
  parts of one value overwritten by one command are one piece. A value overwritten while a
  reader other than the overwriting command still runs records the overlap (a race).
* **Occupancy** at t = the bytes of the lane covered by pieces live at t (a byte counted once):
  the sweep keeps per address range the union over time of its pieces (a run), emitted as
  +bytes / -bytes events per bank when the run ends. Peak = the maximum, at the earliest time
  it is reached.
* **Bank-conflict candidates**: a TIU and a DMA command of one core running at the same time
  with accesses sharing a bank and a lane; and TIU commands with two operands in one bank and a
  common lane. Shown beside the DMA's measured Stall Cycle.

One compiled pass per core over its accesses (work linear in the address ranges each access
meets, memory bounded by the lane's 256 Ki offsets), otherwise whole-array sorts and reductions;
the only Python loops run over cores or banks.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numba import njit

from reportgen.analysis.findings import _finding, _pct, _us
from reportgen.analysis.lmem_access import ACCESS_COLUMNS, BANK_BYTES, BANKS, LANE_BYTES, VIEW_COLUMNS, accesses
from reportgen.analysis.lmem_sweep import sweep
from reportgen.analysis.rules import RULES
from reportgen.model import Profile

#: the step functions drawn per core keep at most this many points; longer ones are reduced to
#: the maximum per time bucket (a peak is never lost). The page re-buckets the points inside the
#: window shown, so zooming in shows every step up to this many per core: exact at 678k commands
#: (~38k distinct times per core), about 1 MB of page per 300k points (docs/metrics.md)
MAX_STEPS = 65_536
STATUS = ("read", "never read", "written before capture")
PIECE_COLUMNS = ("core", "lo", "hi", "first_bank", "last_bank", "writer", "start_ns", "end_ns", "readers",
                 "status", "overwritten_by", "overlap_ns")
#: above this many commands the view is not computed (a warning says so): a bound on its cost,
#: which grows with the accesses (about two per command): ~2 s CPU at 1.1M commands
#: (docs/metrics.md "Local memory: cost, third pass"), ~13 s and +0.7 GB at 3.3M two passes
#: before (benchmarks/bench_hardware.py)
MAX_COMMANDS = 1_200_000
#: bank-conflict candidates listed per core (workbook sheet "LMEM Conflicts", summary.json): those
#: with the largest DMA Stall Cycle x overlap; the per-core counts cover every candidate
LISTED_CONFLICTS = 50


@dataclass
class LocalMemory:
    """The local-memory view of a capture (``Diagnosis.lmem``, attached by analysis.diagnosis)."""

    #: every access (analysis/lmem_access.py; None unless computed with ``detail``)
    accesses: pd.DataFrame | None
    #: live pieces (None unless computed with ``detail``): core, lo, hi, first_bank, last_bank,
    #: writer (commands row, -1: before the capture), start_ns, end_ns, readers, status,
    #: overwritten_by (row or -1), overlap_ns
    pieces: pd.DataFrame
    #: one row per core: peak_bytes, peak_at_ns, accesses, undecoded, never_read_bytes,
    #: before_capture_bytes, races, conflict candidates, tiu same-bank commands
    cores: pd.DataFrame
    #: one row per core and bank: core, bank, peak_bytes, peak_at_ns
    banks: pd.DataFrame
    #: TIU/DMA pairs overlapping in time on a common bank and lane, ranked per core by DMA Stall
    #: Cycle x overlap: the first :data:`LISTED_CONFLICTS` per core (all with ``detail``); their
    #: number per core is ``cores.conflict_candidates``
    conflicts: pd.DataFrame
    #: pairs of operands of one TIU command in one bank and a common lane: row, a, b, banks
    #: (None unless computed with ``detail``; their commands per core: ``cores.tiu_same_bank``)
    same_bank: pd.DataFrame | None
    #: per core: {"t": ns, "total": bytes, "banks": 16 x len(t)} step functions (reduced)
    steps: dict = field(default_factory=dict)


SWEEP_COLUMNS = ("core", "lane_offset", "extent_bytes", "start_ns", "end_ns", "row")


def sweep_columns(acc: pd.DataFrame) -> dict[str, np.ndarray]:
    """The columns the sweep reads, as int64 arrays, and ``write`` (the access is a write): what
    :func:`core_pieces` takes for one core."""
    cols = {k: acc[k].to_numpy(np.int64) for k in SWEEP_COLUMNS}
    access = acc["access"]
    if isinstance(access.dtype, pd.CategoricalDtype):          # compare the codes, not the texts
        cats = list(access.cat.categories)
        cols["write"] = access.cat.codes.to_numpy() == (cats.index("W") if "W" in cats else -2)
    else:
        cols["write"] = access.to_numpy() == "W"
    return cols


def _time_order(acc: dict) -> np.ndarray:
    """By core and start; at equal starts reads before writes (so a command's reads come before
    its writes), then command row."""
    return np.lexsort((acc["row"], acc["write"], acc["start_ns"], acc["core"]))


def core_pieces(sub: dict) -> tuple[pd.DataFrame, tuple[np.ndarray, ...]]:
    """One core's live pieces (:data:`PIECE_COLUMNS`) and occupancy as +/- events (core, bank,
    t, delta), from :func:`sweep_columns` of its decoded accesses (analysis/lmem_sweep.py)."""
    pieces, _, events = core_sweep(sub, detail=True)
    return pieces, events


def core_sweep(sub: dict, detail: bool = False):
    """:func:`core_pieces` (pieces None unless ``detail``), with the core's piece sums: bytes
    never read, bytes written before the capture, overwrite races (pieces with an overlap)."""
    o = _time_order(sub)
    core = int(sub["core"][0]) if len(o) else 0
    lo = sub["lane_offset"][o]
    hi = np.minimum(lo + sub["extent_bytes"][o], LANE_BYTES)
    start, end, row, write = sub["start_ns"][o], sub["end_ns"][o], sub["row"][o], sub["write"][o]
    (val, plo, phi, ow, pend, readers, overlap), (qlo, qhi, t0, t1) = sweep(lo, hi, start, end, row, write)
    made = write[val]
    size = phi - plo
    # a piece = a run of adjacent parts of one value overwritten by one command (their end,
    # readers and overlap are equal: a command's writes follow each other, no read between), so
    # the byte sums are those of the parts; races count the pieces among the parts with overlap
    race = np.flatnonzero(overlap > 0)
    _, race_first, _ = _runs_of_parts(val[race], plo[race], phi[race], ow[race])
    sums = (int(size[made & (readers == 0)].sum()), int(size[~made].sum()), len(race_first))
    pieces = None
    if detail:
        order, first, last = _runs_of_parts(val, plo, phi, ow)
        v, at = val[order[first]], order[first]
        made = write[v]
        plo, phi = plo[order], phi[order]
        pieces = pd.DataFrame({
            "core": np.full(len(v), core, np.int64), "lo": plo[first], "hi": phi[last],
            "first_bank": plo[first] // BANK_BYTES, "last_bank": (phi[last] - 1) // BANK_BYTES,
            "writer": np.where(made, row[v], -1), "start_ns": np.where(made, start[v], start[0] if len(o) else 0),
            "end_ns": pend[at], "readers": readers[at],
            "status": np.array(STATUS, object)[np.where(~made, 2, np.where(readers[at] > 0, 0, 1))],
            "overwritten_by": ow[at], "overlap_ns": overlap[at]})
        pieces = pieces.iloc[np.lexsort((pieces["lo"].to_numpy(), pieces["start_ns"].to_numpy()))]
        pieces = pieces.reset_index(drop=True)
    # occupancy rectangles cut at bank boundaries: +bytes at the run's start, -bytes at its end
    b0, b1 = qlo // BANK_BYTES, (qhi - 1) // BANK_BYTES
    k = b1 - b0 + 1
    q = np.repeat(np.arange(len(qlo)), k)
    bank = np.repeat(b0, k) + np.arange(len(q)) - np.repeat(np.cumsum(k) - k, k)
    size = np.minimum(qhi[q], (bank + 1) * BANK_BYTES) - np.maximum(qlo[q], bank * BANK_BYTES)
    events = (np.full(2 * len(q), core, np.int64), np.r_[bank, bank], np.r_[t0[q], t1[q]], np.r_[size, -size])
    return pieces, sums, events


def _runs_of_parts(val, plo, phi, ow):
    """Parts in (value, offset) order, and the first and last position of each run of touching
    parts of one value overwritten by one command."""
    order = np.lexsort((plo, val))
    val, plo, phi, ow = val[order], plo[order], phi[order], ow[order]
    same = (plo[1:] == phi[:-1]) & (val[1:] == val[:-1]) & (ow[1:] == ow[:-1])
    first = np.flatnonzero(np.r_[True, ~same]) if len(val) else np.zeros(0, np.int64)
    last = np.r_[first[1:] - 1, len(val) - 1] if len(val) else first
    return order, first, last


def core_steps(t: np.ndarray, d: np.ndarray, bank: np.ndarray, nbanks: int = BANKS):
    """A core's occupancy from its +/- events: exact total and per-bank step functions on the
    distinct event times (the level after all events at a time: the highest level reached at
    that time, since a time's ends never raise it), their peaks at the earliest time reached,
    then the steps reduced to MAX_STEPS points by the maximum per time bucket (a peak is never
    lost). One sort of the core's events."""
    order = np.argsort(t, kind="stable")
    t, d, bank = t[order], d[order], bank[order]
    new = np.r_[True, t[1:] != t[:-1]] if len(t) else np.zeros(0, bool)
    times = t[new]
    pos = np.cumsum(new) - 1
    total = np.cumsum(np.add.reduceat(d, np.flatnonzero(new))) if len(t) else np.zeros(0, np.int64)
    per = np.cumsum(np.bincount(bank * len(times) + pos, weights=d, minlength=nbanks * len(times))
                    .reshape(nbanks, len(times)), axis=1).round().astype(np.int64)

    def peak(levels):
        """(peak bytes, earliest time at it) per row of ``levels``; time NaN when never occupied."""
        at = levels.argmax(axis=-1) if levels.shape[-1] else np.zeros(levels.shape[:-1], np.int64)
        top = np.take_along_axis(levels, np.asarray(at)[..., None], -1)[..., 0] if levels.shape[-1] \
            else np.zeros(levels.shape[:-1], np.int64)
        return top, np.where(top > 0, times[at] if len(times) else np.nan, np.nan)

    peaks = {"total": peak(total), "banks": peak(per)}
    if len(times) > MAX_STEPS:
        edges = np.linspace(times[0], times[-1], MAX_STEPS + 1)
        b = np.minimum(np.searchsorted(edges, times, side="right") - 1, MAX_STEPS - 1)
        first = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
        times = times[first]
        total = np.maximum.reduceat(total, first)
        per = np.maximum.reduceat(per, first, axis=1)
    return {"t": times, "total": total, "banks": per}, peaks


def command_labels(commands: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """``ENGINE/global_idx`` of the commands at ``rows`` (the golden files' and the workbook's naming)."""
    engine = commands["engine"].astype("category")
    names = np.array([str(x) for x in engine.cat.categories] + [""], object)
    rows, inverse = np.unique(np.asarray(rows, np.int64), return_inverse=True)   # text once per command
    idx = commands["global_idx"].to_numpy(np.int64)[rows]
    return (names[engine.cat.codes.to_numpy()[rows]] + "/" + idx.astype(str).astype(object))[inverse]


def conflicts(acc: pd.DataFrame, commands: pd.DataFrame,
              listed: int | None = LISTED_CONFLICTS) -> tuple[pd.DataFrame, np.ndarray]:
    """TIU/DMA command pairs of one core overlapping in time whose accesses share a bank and a
    lane (spec §6.3), with the DMA's measured Stall Cycle: the ``listed`` first per core (None:
    all) ranked by Stall Cycle x overlap (:data:`LISTED_CONFLICTS`), and the number of
    candidates per core index (all of them)."""
    cols = ["core", "dma_row", "dma", "dma_cmd_id", "tiu_row", "tiu", "tiu_cmd_id", "overlap_start_ns",
            "overlap_ns", "banks", "dma_operands", "tiu_operands", "dma_stall_cycles"]
    engine = _engine_codes(acc, commands)
    dec = acc["decoded"].to_numpy(bool)
    tiu_i, dma_i = np.flatnonzero(dec & (engine == 0)), np.flatnonzero(dec & (engine == 1))
    if len(tiu_i) == 0 or len(dma_i) == 0:
        return pd.DataFrame(columns=cols), np.zeros(0, np.int64)
    a = {k: acc[k].to_numpy(np.int64) for k in ("core", "start_ns", "end_ns", "row", "first_bank", "last_bank")}
    a["lane_mask"] = acc["lane_mask"].to_numpy().astype(np.uint64)
    a["bank"] = _bank_mask(a["first_bank"], a["last_bank"])
    a["op"], names = _operand_codes(acc)
    # TIU accesses by (core, start), ties in command order (that of ``acc``): a core's TIU
    # commands run one at a time, in order, so the stable sort of one key finds it sorted
    tkey_s = (a["core"][tiu_i] << 44) + a["start_ns"][tiu_i]
    order = np.argsort(tkey_s, kind="stable")
    tiu_i, tkey_s = tiu_i[order], tkey_s[order]
    run_e = np.maximum.accumulate((a["core"][tiu_i] << 44) + a["end_ns"][tiu_i])
    dcore = a["core"][dma_i] << 44
    lo = np.searchsorted(run_e, dcore + a["start_ns"][dma_i], side="right")
    hi = np.searchsorted(tkey_s, dcore + a["end_ns"][dma_i], side="left")
    di, ti, ostart, olen, both = _hits(dma_i, tiu_i, lo, hi, a["start_ns"], a["end_ns"], a["bank"],
                                       a["lane_mask"].view(np.int64))
    if len(di) == 0:
        return pd.DataFrame(columns=cols), np.zeros(0, np.int64)
    # one row per command pair: banks and operands OR-ed as bit masks (few distinct values,
    # each turned into text once)
    key = a["row"][di] * (int(a["row"][tiu_i].max()) + 1) + a["row"][ti]
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])

    def per_pair(values, ufunc=None):
        x = values[order]
        return ufunc.reduceat(x, first) if ufunc is not None else x[first]

    core, dma_row, tiu_row = per_pair(a["core"][di]), per_pair(a["row"][di]), per_pair(a["row"][ti])
    stall = commands["stall_cycles"].to_numpy("float64", na_value=np.nan)[dma_row]
    overlap = per_pair(olen)
    # ranked per core by stall x overlap (ties: DMA row, then TIU row); the first ``listed`` kept
    by_pair = np.lexsort((tiu_row, dma_row, core))
    sel = by_pair[np.lexsort((-(np.nan_to_num(stall[by_pair]) * overlap[by_pair]), core[by_pair]))]
    total = np.bincount(core, minlength=int(core.max()) + 1)
    if listed is not None:
        cs = core[sel]
        sel = sel[np.arange(len(sel)) - np.searchsorted(cs, cs) < listed]   # place inside its core
    out = pd.DataFrame({"core": core[sel], "dma_row": dma_row[sel], "tiu_row": tiu_row[sel],
                        "overlap_start_ns": per_pair(ostart)[sel], "overlap_ns": overlap[sel]})
    out["banks"] = _mask_texts(per_pair(both, np.bitwise_or)[sel], lambda m: [b for b in range(BANKS) if m >> b & 1])
    for side, idx in (("dma", di), ("tiu", ti)):
        out[f"{side}_operands"] = _mask_texts(per_pair(np.int64(1) << a["op"][idx], np.bitwise_or)[sel],
                                              lambda m: " ".join(n for k, n in enumerate(names) if m >> k & 1))
    out["dma_stall_cycles"] = stall[sel]
    for side in ("dma", "tiu"):
        rows = out[f"{side}_row"].to_numpy(np.int64)
        out[side] = command_labels(commands, rows)
        out[f"{side}_cmd_id"] = commands["cmd_id"].to_numpy(np.int64)[rows]
    return out[cols], total


@njit(cache=True)
def _hits(dma_i, tiu_i, lo, hi, start, end, bank, lanes):
    """Of the (DMA access, TIU access) pairs ``dma_i[k]`` x ``tiu_i[lo[k]:hi[k]]``, those
    overlapping in time (> 0 ns) with a common bank and lane: both indices, overlap start and
    length, common banks (one pass, no array per candidate pair)."""
    m = 0
    for k in range(len(dma_i)):
        m += max(hi[k] - lo[k], 0)
    di, ti = np.empty(m, np.int64), np.empty(m, np.int64)
    ostart, olen, both = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64)
    n = 0
    for k in range(len(dma_i)):
        d = dma_i[k]
        for x in range(lo[k], hi[k]):
            t = tiu_i[x]
            s = max(start[d], start[t])
            length = min(end[d], end[t]) - s
            b = bank[d] & bank[t]
            if length > 0 and b != 0 and (lanes[d] & lanes[t]) != 0:
                di[n], ti[n], ostart[n], olen[n], both[n] = d, t, s, length, b
                n += 1
    return di[:n], ti[:n], ostart[:n], olen[:n], both[:n]


def _engine_codes(acc: pd.DataFrame, commands: pd.DataFrame) -> np.ndarray:
    """Per access: 0 TIU, 1 GDMA or SDMA, 2 other (from the commands' engine categories)."""
    engine = commands["engine"].astype("category")
    per_cat = np.array([0 if x == "TIU" else 1 if x in ("GDMA", "SDMA") else 2
                        for x in engine.cat.categories] + [2], np.int8)
    return per_cat[engine.cat.codes.to_numpy()][acc["row"].to_numpy(np.int64)]


def _operand_codes(frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Per access the code of its "R:opd0" label, labels sorted (a handful: codes fit a mask)."""
    access, operand = (pd.Categorical(frame[k]) for k in ("access", "operand"))   # codes, not texts
    an, on = list(access.categories), list(operand.categories)
    pair = access.codes.astype(np.int64) * max(len(on), 1) + operand.codes
    pn = np.flatnonzero(np.bincount(pair, minlength=len(an) * len(on)))          # the pairs present
    labels = np.array([f"{an[p // max(len(on), 1)]}:{on[p % max(len(on), 1)]}" for p in pn], object)
    rank = np.full(max(len(an) * len(on), 1), -1, np.int64)
    rank[pn] = np.argsort(np.argsort(labels, kind="stable"), kind="stable")
    return rank[pair], [str(x) for x in np.sort(labels)]


def _mask_texts(masks: np.ndarray, render) -> np.ndarray:
    """``render(mask)`` for each mask, computed once per distinct mask."""
    distinct, inverse = np.unique(masks, return_inverse=True)
    return np.array([render(int(m)) for m in distinct] + [None], object)[:-1][inverse]


def _bank_mask(first, last):
    first, last = np.asarray(first, np.int64), np.asarray(last, np.int64)
    return ((np.int64(1) << (last + 1)) - (np.int64(1) << first)).astype(np.int64)


def same_bank_operands(acc: pd.DataFrame, commands: pd.DataFrame) -> pd.DataFrame:
    """Pairs of accesses of one TIU command (result included) in one bank and a common lane:
    row, the two operands, their common banks ("0,1")."""
    row, op, names, i, j, both = _same_bank_pairs(acc, commands)
    if len(i) == 0:
        return pd.DataFrame(columns=["row", "a", "b", "banks"])
    # texts as categories: a million-command capture has millions of pairs of a few texts
    distinct, inverse = np.unique(both, return_inverse=True)
    # masks differing only above bank 15 read the same: one category per text
    text, names_b = pd.factorize(np.array([",".join(str(b) for b in range(BANKS) if int(m) >> b & 1)
                                           for m in distinct] + [""], object)[:-1])
    banks = pd.Categorical.from_codes(text[inverse], categories=names_b)
    return pd.DataFrame({"row": row[i], "a": pd.Categorical.from_codes(op[i], categories=names),
                         "b": pd.Categorical.from_codes(op[j], categories=names), "banks": banks})


def _same_bank_pairs(acc: pd.DataFrame, commands: pd.DataFrame):
    """The TIU accesses' rows and operand codes (and operand names), and the pairs (i, j) among
    them in one bank and a common lane with their common bank mask."""
    keep = np.flatnonzero((_engine_codes(acc, commands) == 0) & acc["decoded"].to_numpy(bool))
    row = acc["row"].to_numpy(np.int64)[keep]
    operand = pd.Categorical(acc["operand"])
    op, names = operand.codes[keep], [str(x) for x in operand.categories]
    none = np.zeros(0, np.int64)
    if len(row) == 0:
        return row, op, names, none, none, none
    first = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
    size = np.diff(np.r_[first, len(row)])
    # all pairs i < j inside one command (a command has at most a handful of accesses)
    i_all, j_all = [none], [none]
    for k in range(2, int(size.max()) + 1):                  # by command size, not by command
        cmds = first[size == k]
        ii, jj = np.triu_indices(k, 1)
        i_all.append((cmds[:, None] + ii).ravel())
        j_all.append((cmds[:, None] + jj).ravel())
    i, j = np.concatenate(i_all), np.concatenate(j_all)
    bm = _bank_mask(acc["first_bank"].to_numpy(np.int64)[keep], acc["last_bank"].to_numpy(np.int64)[keep])
    lm = acc["lane_mask"].to_numpy()[keep].astype(np.uint64)
    both = bm[i] & bm[j]
    hit = (both != 0) & ((lm[i] & lm[j]) != 0)
    return row, op, names, i[hit], j[hit], both[hit]


def _same_bank_rows(acc: pd.DataFrame, commands: pd.DataFrame) -> np.ndarray:
    """The rows of the TIU commands with two accesses in one bank and a common lane (those of
    :func:`_same_bank_pairs`, without listing the pairs: one compiled pass)."""
    keep = np.flatnonzero((_engine_codes(acc, commands) == 0) & acc["decoded"].to_numpy(bool))
    row = acc["row"].to_numpy(np.int64)[keep]
    bank = _bank_mask(acc["first_bank"].to_numpy(np.int64)[keep], acc["last_bank"].to_numpy(np.int64)[keep])
    lanes = acc["lane_mask"].to_numpy()[keep].astype(np.uint64, copy=False).view(np.int64)
    return row[_pair_in_command(row, bank, lanes)]


@njit(cache=True)
def _pair_in_command(row, bank, lanes):
    """Positions of the first access of each command (run of equal ``row``) having two
    accesses with a common bank and lane."""
    out = np.empty(len(row), np.int64)
    m, a = 0, 0
    while a < len(row):
        b = a + 1
        while b < len(row) and row[b] == row[a]:
            b += 1
        hit = False
        for x in range(a, b):
            for y in range(x + 1, b):
                if bank[x] & bank[y] != 0 and lanes[x] & lanes[y] != 0:
                    hit = True
        if hit:
            out[m] = a
            m += 1
        a = b
    return out[:m]


def local_memory(profile: Profile, detail: bool = False) -> LocalMemory | None:
    """The local-memory view, or None when no command has a decodable local access. ``detail``:
    also keep the accesses and the live pieces (tests and tools; the report uses neither, and
    they are the bulk of the memory: about 280 bytes per command)."""
    n = len(profile.commands)
    if n > MAX_COMMANDS:
        if list(profile.registers):                   # descriptors exist (names only: not assembled)
            profile.meta.warn("lmem", f"local-memory view not computed: {n:,} commands, above its "
                              f"{MAX_COMMANDS:,}-command limit (analysis/lmem.py MAX_COMMANDS; a bound "
                              "on its cost, docs/metrics.md \"Local memory: the interval sweep\")")
        return None
    acc = accesses(profile, ACCESS_COLUMNS if detail else VIEW_COLUMNS)
    if acc.empty or not acc["decoded"].any():
        return None
    conf, conf_count = conflicts(acc, profile.commands, None if detail else LISTED_CONFLICTS)
    if detail:
        same = same_bank_operands(acc, profile.commands)
        same_rows = same["row"].to_numpy(np.int64)
    else:
        same, same_rows = None, _same_bank_rows(acc, profile.commands)
    cols = sweep_columns(acc)
    decoded = acc["decoded"].to_numpy(bool)
    if not detail:
        acc = None                                         # the columns above are all that is read
    cores = np.flatnonzero(np.bincount(cols["core"]))          # core indices: small, >= 0

    def per_core(values_, of) -> np.ndarray:
        """Sum of ``values_`` per core ``of`` each row."""
        v = np.asarray(values_, np.int64)
        return np.bincount(np.searchsorted(cores, of), weights=v, minlength=len(cores)).astype(np.int64)

    dec = np.flatnonzero(decoded)
    by_core = dec[np.argsort(cols["core"][dec], kind="stable")]
    bounds = np.searchsorted(cols["core"][by_core], np.r_[cores, cores[-1] + 1])
    # one core at a time; of its pieces only the per-core sums are kept (unless ``detail``)
    piece_parts, analysed = [], []
    steps, total_peak, bank_peak = {}, [], []
    piece_sums = np.zeros((3, len(cores)), np.int64)     # never read bytes, before capture bytes, races
    for k, (c, b0, b1) in enumerate(zip(cores, bounds[:-1], bounds[1:])):
        if b0 == b1:                                       # no decoded access on this core
            continue
        pieces_c, piece_sums[:, k], (_, bank_, t_, d_) = core_sweep(
            {key: v[by_core[b0:b1]] for key, v in cols.items()}, detail)
        if detail:
            piece_parts.append(pieces_c)
        steps[int(c)], pk = core_steps(t_, d_, bank_)
        total_peak.append(pk["total"])
        bank_peak.append(pk["banks"])
        analysed.append(int(c))
    done = np.isin(cores, analysed)
    peak_bytes, peak_at = np.zeros(len(cores), np.int64), np.full(len(cores), np.nan)
    bank_bytes, bank_at = np.zeros((len(cores), BANKS), np.int64), np.full((len(cores), BANKS), np.nan)
    if analysed:
        peak_bytes[done], peak_at[done] = (np.array([p[k] for p in total_peak]) for k in (0, 1))
        bank_bytes[done], bank_at[done] = (np.array([p[k] for p in bank_peak]) for k in (0, 1))
    banks = pd.DataFrame({"core": np.repeat(cores, BANKS), "bank": np.tile(np.arange(BANKS), len(cores)),
                          "peak_bytes": bank_bytes.ravel(), "peak_at_ns": bank_at.ravel()})
    banks["peak_share"] = banks["peak_bytes"] / BANK_BYTES
    pieces = None
    if detail:
        pieces = pd.concat(piece_parts, ignore_index=True) if piece_parts else \
            pd.DataFrame({k: pd.Series(dtype=object if k == "status" else "int64") for k in PIECE_COLUMNS})
    # TIU commands with a same-bank pair, per core
    ccore = profile.commands["core"].to_numpy(np.int64)
    has_pair = np.zeros(n, bool)
    has_pair[same_rows] = True
    table = pd.DataFrame({
        "core": cores, "peak_bytes": peak_bytes, "peak_at_ns": peak_at, "peak_share": peak_bytes / LANE_BYTES,
        "accesses": per_core(np.ones(len(decoded), np.int64), cols["core"]),
        "undecoded": per_core(~decoded, cols["core"]),
        "never_read_bytes": piece_sums[0], "before_capture_bytes": piece_sums[1], "races": piece_sums[2],
        "conflict_candidates": np.append(conf_count, np.zeros(int(cores[-1]) + 1, np.int64))[cores],
        "tiu_same_bank": per_core(np.ones(int(has_pair.sum()), np.int64), ccore[has_pair])})
    return LocalMemory(accesses=acc, pieces=pieces, cores=table, banks=banks, conflicts=conf,
                       same_bank=same, steps=steps)


def lmem_findings(lm: LocalMemory | None) -> list[dict]:
    """Rule ``lmem_pressure``: a core whose peak live bytes per lane reach the threshold share
    of the 256 KiB lane."""
    if lm is None:
        return []
    rule, out = RULES["lmem_pressure"], []
    for r in lm.cores.itertuples(index=False):
        share = r.peak_bytes / LANE_BYTES
        if rule.fires(share):
            full = lm.banks[(lm.banks["core"] == r.core) & (lm.banks["peak_bytes"] >= BANK_BYTES)]
            out.append(_finding(
                "lmem_pressure", share,
                f"core {r.core} local memory peaks at {r.peak_bytes:,} of {LANE_BYTES:,} bytes per lane "
                f"({_pct(share)}) at {_us(r.peak_at_ns)}; {len(full)} of {BANKS} banks full at some "
                f"point, {r.conflict_candidates} TIU/DMA bank-conflict candidates",
                core=int(r.core), engine="LMEM", detail=f"core {r.core} {_pct(share)}"))
    return out
