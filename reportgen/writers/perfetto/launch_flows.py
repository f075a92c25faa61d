"""Launch -> device work flows of framework traces: the host slice that launched a device slice
(``commands.launch_row``, the runtime call found by correlation / flow events) starts a flow
that the device slice terminates, so Perfetto draws an arrow between them."""
from __future__ import annotations

import numpy as np
import pandas as pd

#: flow ids of launches: above the PMU dependency flows (small reused ids, commands.reused_flow_ids)
LAUNCH_FLOW_BASE = 1 << 40
#: arrows drawn from one launch at most
MAX_FLOWS_PER_LAUNCH = 16


def launches(commands: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray]:
    """(command rows, launching host rows) of the launched device slices drawn: a launch draws
    at most :data:`MAX_FLOWS_PER_LAUNCH` arrows, to its first slices in time (a graph launch or
    an Ascend framework op can own thousands)."""
    if commands is None or "launch_row" not in commands.columns or not len(commands):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    launch = commands["launch_row"].to_numpy(np.int64)
    rows = np.flatnonzero(launch >= 0)
    rows = rows[np.lexsort((commands["start_ns"].to_numpy(np.int64)[rows], launch[rows]))]
    host = launch[rows]
    keep = np.arange(len(rows)) - np.searchsorted(host, host, "left") < MAX_FLOWS_PER_LAUNCH
    return rows[keep], host[keep]


def flow_id(command_rows: np.ndarray) -> np.ndarray:
    """The flow id of each launched command row."""
    return (LAUNCH_FLOW_BASE + np.asarray(command_rows, np.int64)).astype(np.uint64)
