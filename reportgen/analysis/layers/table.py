"""Per-layer figures (docs/metrics.md "Layers"): one row per layer ``(subnet_id, file_line)``, its
records (cores, time steps) merged, plus one ``(unattributed)`` row for TIU/GDMA commands no
record owns. Every sum is a ``np.bincount`` over the owned commands.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.layers.mapping import engine_rows
from reportgen.model_layers import LayerFiles

UNATTRIBUTED = "(unattributed)"


def layer_index(files: LayerFiles) -> tuple[np.ndarray, pd.DataFrame]:
    """Per record: its layer's position; and the layers (subnet_id, file_line, opcode, is_local,
    cores, records) in first-record order."""
    rec = files.records
    subnet, line = rec["subnet_id"].to_numpy(np.int64), rec["file_line"].to_numpy(np.int64)
    order = np.lexsort((line, subnet))            # stable: file order within a layer
    s, f = subnet[order], line[order]
    starts = np.r_[True, (s[1:] != s[:-1]) | (f[1:] != f[:-1])] if len(order) else np.zeros(0, bool)
    first_sorted = order[starts]                  # each layer's first record, layers by key
    by_first = np.argsort(first_sorted, kind="stable")
    renumber = np.empty(len(by_first), np.int64)
    renumber[by_first] = np.arange(len(by_first))
    codes = np.empty(len(rec), np.int64)
    codes[order] = renumber[np.cumsum(starts) - 1]
    first = first_sorted[by_first]
    core = rec["core"].to_numpy(np.int64)
    layer_cores = np.unique(codes * (int(core.max(initial=0)) + 1) + core) // (int(core.max(initial=0)) + 1)
    layers = pd.DataFrame({
        "subnet_id": subnet[first],
        "file_line": line[first],
        "opcode": rec["opcode"].to_numpy()[first],
        "is_local": rec["is_local"].array[first],
        "records": np.bincount(codes, minlength=len(first)),
        "cores": np.bincount(layer_cores, minlength=len(first)),
    })
    return codes, layers


def _group_of(lines: np.ndarray, groups: pd.DataFrame) -> pd.array:
    """The tpu.Group line whose body holds each line, <NA> outside groups."""
    g = groups.sort_values("first_line")
    slot = np.searchsorted(g["first_line"].to_numpy(), lines, side="right") - 1
    inside = (slot >= 0) & (lines <= g["last_line"].to_numpy()[np.maximum(slot, 0)]) if len(g) else \
        np.zeros(len(lines), bool)
    out = pd.array(np.where(inside, g["group_line"].to_numpy()[np.maximum(slot, 0)] if len(g) else 0, 0),
                   dtype="Int64")
    out[~inside] = pd.NA
    return out


def _union_ns(bucket: np.ndarray, start: np.ndarray, end: np.ndarray, n: int) -> np.ndarray:
    """Per bucket: length of the union of its [start, end) intervals."""
    if not len(bucket):
        return np.zeros(n, np.int64)
    order = np.lexsort((start, bucket))
    b, s, e = bucket[order], start[order], end[order]
    # running max of the ends within each bucket: offset each bucket above the previous ones
    first = np.r_[True, b[1:] != b[:-1]]
    lift = np.cumsum(first) * (int(e.max()) - int(s.min()) + 1) - int(s.min())
    reach = np.maximum.accumulate(e + lift) - lift
    prev = np.empty_like(reach)
    prev[0], prev[1:] = np.iinfo(np.int64).min, reach[:-1]
    prev[first] = np.iinfo(np.int64).min
    part = np.clip(e - np.maximum(s, prev), 0, None)
    return np.bincount(b, weights=part, minlength=n).astype(np.int64)


def layer_metrics(commands: pd.DataFrame, command_layer: np.ndarray, layers: pd.DataFrame,
                  files: LayerFiles, num_cores: int) -> pd.DataFrame:
    """``layers`` + the figures of docs/metrics.md; the last row is ``(unattributed)``."""
    n = len(layers) + 1                          # the last bucket: unattributed TIU/GDMA commands
    rows = engine_rows(commands, ("TIU", "GDMA"))
    mine = np.sort(np.concatenate([rows["TIU"], rows["GDMA"]]))
    bucket = np.where(command_layer >= 0, command_layer, n - 1)[mine]

    def column(name, dtype, **kw):
        return commands[name].to_numpy(dtype, **kw)[mine]

    start, end = column("start_ns", np.int64), column("end_ns", np.int64)
    core = column("core", np.int64)
    work = ~column("is_sys", bool)
    dur = (end - start).astype(np.float64)

    def total(mask, values=None):
        return np.bincount(bucket[mask], weights=None if values is None else values[mask], minlength=n)

    tiu = np.zeros(len(commands), bool)
    tiu[rows["TIU"]] = True
    tiu = tiu[mine]
    gdma = ~tiu
    nbytes = column("bytes", np.float64, na_value=0.0)
    direction = pd.Categorical(commands["direction"])          # a test per category, not per row
    cats = direction.categories.astype(str)
    codes = direction.codes[mine]
    into_lmem = np.isin(codes, np.flatnonzero(cats.str.endswith("LMEM")))
    from_lmem = np.isin(codes, np.flatnonzero(cats.str.startswith("LMEM")))
    out = pd.DataFrame({
        "tiu_cmds": total(tiu).astype(np.int64),
        "gdma_cmds": total(gdma).astype(np.int64),
        "tiu_busy_ns": total(tiu & work, dur).astype(np.int64),
        "gdma_busy_ns": total(gdma & work, dur).astype(np.int64),
        "busy_ns": _union_ns(bucket[work] * num_cores + core[work],
                             start[work], end[work], n * num_cores).reshape(n, num_cores).sum(axis=1),
        "tiu_cycles": total(tiu, column("cycles", np.float64)).astype(np.int64),
        "alg_cycle": total(tiu, np.nan_to_num(column("alg_cycle", np.float64))),
        "alg_ops": total(tiu, np.nan_to_num(column("alg_ops", np.float64))),
        "uarch_ops": total(tiu, np.nan_to_num(column("uarch_ops", np.float64))),
        "gdma_bytes": total(gdma & work, nbytes).astype(np.int64),
        "gdma_load_bytes": total(gdma & work & into_lmem, nbytes).astype(np.int64),
        "gdma_store_bytes": total(gdma & work & from_lmem, nbytes).astype(np.int64),
    })
    with np.errstate(divide="ignore", invalid="ignore"):
        out["uarch_rate"] = np.where(out["uarch_ops"] > 0, out["alg_ops"] / out["uarch_ops"], np.nan)
        out["gdma_gbps"] = np.where(out["gdma_busy_ns"] > 0, out["gdma_bytes"] / out["gdma_busy_ns"], np.nan)
        out["time_share"] = out["busy_ns"] / out["busy_ns"].sum() if out["busy_ns"].sum() else np.nan
    ops = files.ops.drop(columns="opcode")
    head = layers.merge(ops, on=["subnet_id", "file_line"], how="left")
    head["name"] = head["opcode"].str.rpartition(".")[2]
    head["group_line"] = _group_of(head["file_line"].to_numpy(), files.groups)
    head.loc[len(head)] = {"subnet_id": -1, "file_line": -1, "opcode": UNATTRIBUTED, "name": UNATTRIBUTED,
                           "records": 0, "cores": int(len(np.unique(core[bucket == n - 1])))}
    table = pd.concat([head.reset_index(drop=True), out], axis=1)
    rank = table["busy_ns"].iloc[:-1].rank(method="first", ascending=False)
    table["rank"] = pd.array(np.r_[rank.to_numpy(), np.nan], dtype="Int64")
    return table
