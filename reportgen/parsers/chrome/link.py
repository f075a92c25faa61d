"""Host slices into per-thread call trees, and the links between host and device: which host
call launched each device slice and which framework op each host slice or device slice
belongs to (framework-traces.md §6.2, §9.4)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.intervals import call_forest, enclosing, operator_parents
from reportgen.model import HOST_COLUMNS, Meta, operator_rows


@dataclass
class Forest:
    """The operator tree (model.OPERATOR_ROLES) in forest order, for point
    queries: ``track_codes`` maps "file, pid, tid" keys to track numbers, ``rows`` gives the
    host row of each position (``parent`` holds positions)."""

    track_codes: dict
    track: np.ndarray
    start: np.ndarray
    end: np.ndarray
    parent: np.ndarray
    rows: np.ndarray

    def enclosing_row(self, q_track: np.ndarray, q_ts: np.ndarray) -> np.ndarray:
        """Host row of the innermost operator-tree slice holding each point, -1."""
        pos = enclosing(self.track, self.start, self.end, self.parent, q_track, q_ts)
        return np.where(pos >= 0, self.rows[np.maximum(pos, 0)] if len(self.rows) else -1, -1)


def family_parents(track: np.ndarray, start: np.ndarray, end: np.ndarray, operator: np.ndarray
                   ) -> tuple[np.ndarray, int]:
    """Parents of slices in forest order under torch's rule, computed separately for the
    operator tree (torch's FunctionEvents, model.operator_rows) and for the other slices
    (python frames: they give the seed CSV its call paths but are not operators).  Returns
    host positions and the number of partial overlaps torch pops."""
    parent = np.full(len(start), -1, np.int64)
    overlaps = 0
    for family in (operator, ~operator):
        idx = np.flatnonzero(family)
        p, k = operator_parents(track[idx], start[idx], end[idx])
        parent[idx] = np.where(p >= 0, idx[np.maximum(p, 0)], -1)
        overlaps += k
    return parent, overlaps


def track_of(host_like: pd.DataFrame, codes: dict) -> np.ndarray:
    """Track number of each row (with ``_file``, ``pid``, ``tid``), -1 for a thread without slices."""
    keys = host_like["_file"].astype(str) + "\x1f" + host_like["pid"].astype(str) + "\x1f" + \
        host_like["tid"].astype(str)
    return keys.map(codes).fillna(-1).astype(np.int64).to_numpy()


def host_tree(host: pd.DataFrame, meta: Meta) -> tuple[pd.DataFrame, Forest]:
    """Host slices in forest order with ``depth`` (nesting of all slices of the thread, as drawn),
    ``parent`` (torch's operator tree, other slices in a tree of their own: see
    :func:`family_parents`), ``op_row`` (the framework op each belongs to) and the operator
    forest for point queries."""
    if host.empty:
        host = pd.DataFrame({c: pd.Series(dtype=t) for c, t in HOST_COLUMNS.items()})
        for c, t in (("role", object), ("_file", int), ("correlation", "Int64"),
                     ("external_id", "Int64"), ("rank", int), ("_track", int)):
            host[c] = pd.Series(dtype=t)
        host["op_row"] = pd.Series(dtype=np.int64)
        empty = np.zeros(0, np.int64)
        return host, Forest({}, empty, empty, empty, empty, empty)
    keys = host["_file"].astype(str) + "\x1f" + host["pid"].astype(str) + "\x1f" + host["tid"].astype(str)
    uniq = sorted(keys.unique())
    codes = {k: i for i, k in enumerate(uniq)}
    track = keys.map(codes).to_numpy(np.int64)
    start = host["ts_ns"].to_numpy(np.int64)
    end = start + host["dur_ns"].to_numpy(np.int64)
    order, depth, _, _ = call_forest(track, start, end)
    host = host.iloc[order].reset_index(drop=True)
    operator = operator_rows(host["role"].to_numpy())
    parent, overlaps = family_parents(track[order], start[order], end[order], operator)
    if overlaps:
        meta.warn("improper-nesting", f"{overlaps} host slices start inside another slice of their "
                                      "thread but end after it; as torch does, that slice is then "
                                      "no parent (call trees, Self CPU)")
    out = pd.DataFrame({
        "name": host["name"].astype(str).to_numpy(),
        "category": host["cat"].astype(str).to_numpy(),
        "pid": host["pid"].to_numpy(),
        "tid": host["tid"].to_numpy(),
        "start_ns": start[order],
        "end_ns": end[order],
        "depth": depth,
        "parent": parent,
        "args": host["args"].to_numpy(),
    })
    for c in HOST_COLUMNS:
        out[c] = out[c].astype(HOST_COLUMNS[c]) if HOST_COLUMNS[c] != "object" else out[c]
    out["role"] = host["role"].to_numpy()
    out["rank"] = host["rank"].to_numpy()
    out["correlation"] = host["correlation"].to_numpy()
    out["external_id"] = host["external_id"].to_numpy()
    if "thread_name" in host.columns:
        out["thread_name"] = host["thread_name"].to_numpy()
    out["_file"] = host["_file"].to_numpy()
    out["_track"] = track[order]
    ops = np.flatnonzero(operator)
    position = np.full(len(out), -1, np.int64)
    position[ops] = np.arange(len(ops))
    op_parent = parent[ops]
    forest = Forest(codes, track[order][ops], start[order][ops], end[order][ops],
                    np.where(op_parent >= 0, position[np.maximum(op_parent, 0)], -1), ops)
    out["op_row"] = _op_rows(out)
    return out, forest


def _op_rows(host: pd.DataFrame) -> np.ndarray:
    """For each host slice, the framework op (cpu_op / user_annotation) it belongs to:
    the op with the same External id in the same trace and process (exact, survives threads),
    else the innermost op enclosing it on its thread; the op itself for ops; -1 if none."""
    n = len(host)
    role = host["role"].to_numpy()
    is_op = np.isin(role, ["op", "annotation"])
    if not is_op.any():
        # traces without framework categories (MindSpore 2.x, tpudnn, generic): their plain
        # host slices are the operators
        is_op = role == "host"
    result = np.where(is_op, np.arange(n), -1)
    # External id first
    ext = host["external_id"]
    ops = host[is_op & ext.notna().to_numpy() & (ext.fillna(0) != 0).to_numpy()]
    # cpu_op wins over a user_annotation with the same id; the innermost (deepest) wins
    ops = ops.assign(_r=np.where(ops["role"] == "op", 0, 1), _row=ops.index)
    ops = ops.sort_values(["_r", "depth"], ascending=[True, False]).drop_duplicates(
        ["_file", "pid", "external_id"])
    need = ~is_op & ext.notna().to_numpy() & (ext.fillna(0) != 0).to_numpy()
    if need.any() and len(ops):
        q = host.loc[need, ["_file", "pid", "external_id"]].reset_index()
        mm = q.merge(ops[["_file", "pid", "external_id", "_row"]], how="left",
                     on=["_file", "pid", "external_id"])
        got = mm["_row"].notna().to_numpy()
        result[mm["index"].to_numpy()[got]] = mm["_row"].to_numpy()[got].astype(np.int64)
    # containment: climb parents to the nearest op
    parent = host["parent"].to_numpy()
    todo = np.flatnonzero(result < 0)
    cur = parent[todo]
    for _ in range(4096):
        if not len(todo):
            break
        hit = (cur >= 0) & is_op[np.maximum(cur, 0)]
        result[todo[hit]] = cur[hit]
        keep = (cur >= 0) & ~hit
        todo, cur = todo[keep], parent[cur[keep]]
    return result


def link_devices(host: pd.DataFrame, dev: pd.DataFrame, flows: pd.DataFrame, forest: Forest,
          meta: Meta) -> pd.DataFrame:
    """launch_row (host slice that issued each device slice) and op_row (its framework op).

    Priority (framework-traces.md §9.4): correlation between a runtime call and the device
    slice; else a flow whose start binds to a host slice and whose end binds to the device
    slice (Ascend async_npu, ac2g without correlation args); else External id -> op.
    """
    dev = dev.reset_index(drop=True)
    n = len(dev)
    launch = np.full(n, -1, np.int64)
    if n == 0:
        dev["launch_row"] = launch
        dev["op_row"] = launch
        return dev
    # 1. correlation
    rt = host[(host["role"] == "runtime") & host["correlation"].notna()
              & (host["correlation"].fillna(0) != 0)]
    if len(rt):
        rt = rt.assign(_row=rt.index).drop_duplicates(["_file", "correlation"])
        q = dev[["_file", "correlation"]].reset_index()
        q = q[q["correlation"].notna() & (q["correlation"].fillna(0) != 0)]
        mm = q.merge(rt[["_file", "correlation", "_row"]], on=["_file", "correlation"], how="inner")
        launch[mm["index"].to_numpy()] = mm["_row"].to_numpy(np.int64)
    # 2. flows: start bound to a host slice, end bound to this device slice
    if (launch < 0).any() and len(flows):
        starts = flows[flows["ph"] == "s"]
        ends = flows[flows["ph"] == "f"]
        if len(starts) and len(ends):
            qt = track_of(starts, forest.track_codes)
            bound = forest.enclosing_row(qt, starts["ts_ns"].to_numpy(np.int64))
            starts = starts.assign(_host=bound)
            starts = starts[starts["_host"] >= 0].drop_duplicates(["_file", "cat", "flow_id"])
            # device side: a flow end binds to the device slice starting at its ts on that lane
            dkey = dev[["_file", "pid", "tid", "ts_ns"]].reset_index()
            ek = ends[["_file", "cat", "flow_id", "pid", "tid", "ts_ns"]]
            mm = ek.merge(dkey, on=["_file", "pid", "tid", "ts_ns"], how="inner")
            mm = mm.merge(starts[["_file", "cat", "flow_id", "_host"]], on=["_file", "cat", "flow_id"])
            # several flows may end on one task (Ascend: async_npu from the framework op and
            # HostToDevice from the CANN call); prefer the one whose host side has an op
            has_op = host["op_row"].to_numpy()[mm["_host"].to_numpy(np.int64)] >= 0
            mm = mm.assign(_pref=~has_op).sort_values(["index", "_pref"], kind="stable")
            mm = mm.drop_duplicates("index")
            sel = launch[mm["index"].to_numpy()] < 0
            launch[mm["index"].to_numpy()[sel]] = mm["_host"].to_numpy(np.int64)[sel]
    dev["launch_row"] = launch
    op_row = np.full(n, -1, np.int64)
    has = launch >= 0
    if has.any():
        op_row[has] = host["op_row"].to_numpy()[launch[has]]
    # 3. External id of the device slice -> op of the same trace
    need = (op_row < 0) & dev["external_id"].notna().to_numpy() & (dev["external_id"].fillna(0) != 0).to_numpy()
    if need.any():
        ops = host[np.isin(host["role"].to_numpy(), ["op", "annotation"]) & host["external_id"].notna().to_numpy()]
        ops = ops.assign(_row=ops.index, _r=np.where(ops["role"] == "op", 0, 1))
        ops = ops.sort_values(["_r", "depth"], ascending=[True, False]).drop_duplicates(["_file", "external_id"])
        q = dev.loc[need, ["_file", "external_id"]].reset_index()
        mm = q.merge(ops[["_file", "external_id", "_row"]], on=["_file", "external_id"], how="inner")
        op_row[mm["index"].to_numpy()] = mm["_row"].to_numpy(np.int64)
    dev["op_row"] = op_row
    work = ~dev["is_sys"].to_numpy(bool)
    orphan = int(((launch < 0) & (op_row < 0) & work).sum())
    if orphan and len(host):
        meta.warn("unattributed-device", f"{orphan} of {int(work.sum())} device slices are linked to "
                                         "no host call (launched before the window or by an "
                                         "untraced thread)")
    return dev
