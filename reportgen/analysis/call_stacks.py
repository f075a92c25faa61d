"""The call tree behind each row of "Operators by Stack" (docs/metrics.md "Call stacks"):
the table gets a ``Stack Id`` and the "Call Stacks" table has one row per frame of each stack,
outermost first, with the calls and CPU time of that frame where the trace has it (python
frames recorded as ``python_function`` slices; a ``Call stack`` arg names frames only).

Works on :func:`reportgen.analysis.torch_tables.function_events` (its ``frame<k>`` /
``frame<k>_ns`` columns: the python frame slice of level k, innermost first, and its duration)
and on that module's ``key_averages(events, "stack")`` table.  Table-sized work: no step per
slice.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

#: columns of the Call Stacks table
COLUMNS = ["Stack Id", "Name", "Level", "Frame", "Frame Calls", "Frame CPU total (us)"]
_KEYS = ["name", "kind", "annotation", "stack"]


def call_stack_tables(events: pd.DataFrame, by_stack: pd.DataFrame, sep: str = " | "
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``by_stack`` with a ``Stack Id`` column after Source Location (1, 2, ... in its row
    order; empty for a row without stack) and the Call Stacks table (:data:`COLUMNS`)."""
    has = (by_stack["Source Location"].astype(str) != "").to_numpy(bool)
    ids = np.cumsum(has)
    table = by_stack.copy()
    table.insert(table.columns.get_loc("Source Location") + 1, "Stack Id",
                 pd.Series(ids, dtype="Int64").where(has).array)
    rows = table.loc[has]
    frames = rows["Source Location"].astype(str).str.split(sep, regex=False)
    depth = frames.str.len().to_numpy(np.int64)
    long = pd.DataFrame({"Stack Id": np.repeat(ids[has], depth),
                         "Name": np.repeat(rows["Name"].to_numpy(object), depth),
                         "Frame": np.concatenate(frames.to_list()) if len(frames) else []})
    # inner = 0 for the innermost frame (the order of the Source Location)
    starts = np.repeat(np.cumsum(depth) - depth, depth)
    inner = np.arange(len(long)) - starts
    long["Level"] = np.repeat(depth, depth) - inner
    calls, ns = _frame_numbers(events, rows, ids[has])
    key = pd.MultiIndex.from_arrays([long["Stack Id"].to_numpy(np.int64), inner])
    long["Frame Calls"] = pd.array(calls.reindex(key).to_numpy(), dtype="Int64")
    long["Frame CPU total (us)"] = ns.reindex(key).to_numpy(np.float64) / 1e3
    long = long.sort_values(["Stack Id", "Level"], kind="stable")
    return table, long[COLUMNS].reset_index(drop=True)


def _frame_numbers(events: pd.DataFrame, rows: pd.DataFrame, ids: np.ndarray
                   ) -> tuple[pd.Series, pd.Series]:
    """Per (Stack Id, level from the innermost): the distinct python frame slices at that
    level over the row's events (calls) and their summed duration (ns)."""
    levels = sorted(int(c[5:]) for c in events.columns if c.startswith("frame") and c[5:].isdigit())
    empty = pd.Series(dtype=np.float64)
    if not levels:
        return empty, empty
    kind = np.where(rows["Device Type"].to_numpy(object) == "CPU", "cpu", "device")
    lookup = pd.Series(ids, index=pd.MultiIndex.from_arrays(
        [rows["Name"].to_numpy(object), kind, rows["Annotation"].to_numpy(bool),
         rows["Source Location"].astype(str).to_numpy(object)]))
    ev = events[events["stack"] != ""]
    stack_id = lookup.reindex(pd.MultiIndex.from_frame(ev[_KEYS])).to_numpy()
    parts = []
    for k in levels:
        f = ev[f"frame{k}"].fillna(-1).to_numpy(np.int64)
        ok = f >= 0
        parts.append(pd.DataFrame({"id": stack_id[ok], "inner": k, "slice": f[ok],
                                   "ns": ev[f"frame{k}_ns"].to_numpy()[ok]}))
    per = pd.concat(parts).drop_duplicates(["id", "inner", "slice"])
    g = per.groupby(["id", "inner"])
    calls = g.size()
    ns = g["ns"].sum()
    calls.index = ns.index = pd.MultiIndex.from_arrays(
        [calls.index.get_level_values(0).astype(np.int64), calls.index.get_level_values(1)])
    return calls, ns
