"""Commands -> the record that emitted them (spec ``layer-info.md`` §2.2, §4).

A record owns, on its core, the TIU Cmd Ids ``(tiu_before, tiu_after]`` and the GDMA Cmd Ids
``(gdma_before, gdma_after]``; SDMA, CDMA (and anything else) are never owned. One sorted
searchsorted per engine over keys ``core << 40 | cmd_id``: no loop per command or record.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.model import Meta

#: engine -> the record columns holding its counters (spec §2.2)
ENGINE_COUNTERS = {"TIU": ("tiu_before", "tiu_after"), "GDMA": ("gdma_before", "gdma_after")}
_ID_BITS = 40
_ID_MAX = (1 << _ID_BITS) - 1


def _keys(core: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return (core.astype(np.int64) << _ID_BITS) | np.clip(ids, 0, _ID_MAX).astype(np.int64)


def map_commands(commands: pd.DataFrame, records: pd.DataFrame, meta: Meta, where: str = ""
                 ) -> np.ndarray:
    """Per row of ``commands``: the position in ``records`` of the record owning it, or -1.

    Ranges of one core and engine that overlap (several subnets, or a broken file) cannot both
    own an id: the range that starts first (file order on a tie) keeps it; the others are
    dropped and counted in one warning.
    """
    owner = np.full(len(commands), -1, np.int64)
    engine = commands["engine"].astype(str).to_numpy() if len(commands) else np.array([], object)
    core_of_command = commands["core"].to_numpy(np.int64)
    cmd_id = commands["cmd_id"].to_numpy(np.int64)
    rec_core = records["core"].to_numpy(np.int64)
    dropped = 0
    for name, (before_col, after_col) in ENGINE_COUNTERS.items():
        before = records[before_col].to_numpy(np.int64)
        after = records[after_col].to_numpy(np.int64)
        has = (after > before) & (after >= 1)
        positions = np.flatnonzero(has)
        start = _keys(rec_core[has], np.maximum(before[has], -1) + 1)
        end = _keys(rec_core[has], after[has])
        order = np.argsort(start, kind="stable")
        start, end, positions = start[order], end[order], positions[order]
        reach = np.maximum.accumulate(end) if len(end) else end
        clash = np.zeros(len(start), bool)
        clash[1:] = start[1:] <= reach[:-1]
        if clash.any():
            dropped += int(clash.sum())
            keep = ~clash
            start, end, positions = start[keep], end[keep], positions[keep]
        rows = np.flatnonzero(engine == name)
        if not len(rows) or not len(start):
            continue
        key = _keys(core_of_command[rows], cmd_id[rows])
        slot = np.searchsorted(start, key, side="right") - 1
        inside = slot >= 0
        inside[inside] = key[inside] <= end[slot[inside]]
        owner[rows[inside]] = positions[slot[inside]]
    if dropped:
        meta.warn("layer-ids-overlap", f"{dropped} records claim command ids another record of the "
                  "same core already owns (several subnets or overlapping ranges): the earlier "
                  "range keeps them", where)
    return owner
