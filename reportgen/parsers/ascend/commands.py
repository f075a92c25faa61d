"""The commands table of an Ascend rank: sorted, numbered per sheet, linked to the host rows
that launched them (the trace's async_npu links). Shared by the CSV, legacy and SQLite readers."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.model import empty_commands, finalize_commands


def finish_commands(rows: pd.DataFrame, links: pd.DataFrame | None) -> pd.DataFrame:
    """Sort, number per sheet, finalize; attach host links and Ascend columns."""
    if rows.empty:
        return empty_commands()
    rows = rows.sort_values(["core", "engine", "start_ns"], kind="stable").reset_index(drop=True)
    sheet = rows["engine"].astype(str) + "_" + rows["core"].astype(str)
    rows["sheet"] = sheet
    rows["global_idx"] = rows.groupby("sheet").cumcount()
    rows["cmd_id"] = rows["global_idx"] + 1
    rows["cycles"] = rows["end_ns"] - rows["start_ns"]  # trace clock: 1 ns
    rows["launch_row"] = -1
    rows["op_row"] = -1
    if links is not None and len(links):
        # the trace's hardware tasks carry the async_npu links; kernel_details rows are the
        # same tasks, matched by core, lane and start (the flow id is the start in ns)
        l = links.sort_values("start_ns")
        r = rows.reset_index().sort_values("start_ns")
        m = pd.merge_asof(r, l[["start_ns", "core", "engine", "launch_row", "op_row", "kernel"]],
                          on="start_ns", by=["core", "engine"], tolerance=500, direction="nearest",
                          suffixes=("_x", ""))
        m = m.set_index("index").sort_index()
        rows["launch_row"] = m["launch_row"].fillna(-1).astype(np.int64).to_numpy()
        rows["op_row"] = m["op_row"].fillna(-1).astype(np.int64).to_numpy()
        rows["kernel"] = m["kernel"].to_numpy()
    out = finalize_commands(rows)
    return out
