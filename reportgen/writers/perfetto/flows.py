"""Launch flows of framework traces: an arrow from each framework operator (``profile.host``
row ``op_row``) to the device tasks it launched (torch_npu's ``async_npu`` links, Kineto's
correlations), as Perfetto v2 flows: the operator's slice carries ``flow_ids``, the task's
``terminating_flow_ids``. An operator draws at most :data:`MAX_FLOWS_PER_OP` arrows (its first
tasks in time; graph launches can own thousands)."""
from __future__ import annotations

import numpy as np
import pandas as pd

#: arrows drawn from one operator at most
MAX_FLOWS_PER_OP = 16
#: flow ids of launch flows start here (dependency flows use command row + 1)
FLOW_BASE = 1 << 40


def launch_flows(c: pd.DataFrame, n_host: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(command rows, host rows, flow ids) of the launch flows drawn, sorted by host row."""
    if "op_row" not in c.columns or not n_host:
        z = np.zeros(0, np.int64)
        return z, z, z
    op = c["op_row"].to_numpy(np.int64)
    rows = np.flatnonzero((op >= 0) & (op < n_host))
    start = c["start_ns"].to_numpy(np.int64)[rows]
    o = np.lexsort((start, op[rows]))
    rows = rows[o]
    host = op[rows]
    within = np.arange(len(rows)) - np.searchsorted(host, host, "left")
    keep = within < MAX_FLOWS_PER_OP
    rows, host = rows[keep], host[keep]
    return rows, host, FLOW_BASE + rows.astype(np.int64)
