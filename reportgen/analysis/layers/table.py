"""Per-layer figures (docs/metrics.md "Layers"): one row per layer ``(subnet_id, file_line)``, its
records (cores, time steps) merged, plus one ``(unattributed)`` row for TIU/GDMA commands no
record owns. Every sum is a ``np.bincount`` over the owned commands.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.model_layers import LayerFiles

UNATTRIBUTED = "(unattributed)"


def layer_index(files: LayerFiles) -> tuple[np.ndarray, pd.DataFrame]:
    """Per record: its layer's position; and the layers (subnet_id, file_line, opcode, is_local,
    cores, records) in first-record order."""
    rec = files.records
    codes, keys = pd.MultiIndex.from_frame(rec[["subnet_id", "file_line"]]).factorize()
    first = pd.Series(np.arange(len(rec))).groupby(codes).first().to_numpy()
    layers = pd.DataFrame({
        "subnet_id": keys.get_level_values(0).astype("int64"),
        "file_line": keys.get_level_values(1).astype("int64"),
        "opcode": rec["opcode"].to_numpy()[first],
        "is_local": rec["is_local"].array[first],
        "records": np.bincount(codes, minlength=len(keys)),
        "cores": rec.groupby(codes)["core"].nunique().to_numpy(),
    })
    return codes.astype(np.int64), layers


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
    engine = np.asarray(commands["engine"].astype(object))
    mine = np.isin(engine, ("TIU", "GDMA"))
    bucket = np.where(command_layer >= 0, command_layer, n - 1)[mine]
    c = commands[mine]
    eng = engine[mine]
    start, end = c["start_ns"].to_numpy(np.int64), c["end_ns"].to_numpy(np.int64)
    work = ~c["is_sys"].to_numpy(bool)
    dur = (end - start).astype(np.float64)

    def total(mask, values=None):
        return np.bincount(bucket[mask], weights=None if values is None else values[mask], minlength=n)

    tiu, gdma = eng == "TIU", eng == "GDMA"
    nbytes = c["bytes"].to_numpy(np.float64, na_value=0.0)
    direction = c["direction"].astype("category").array       # a test per category, not per row
    cats = direction.categories.astype(str)
    into_lmem = np.isin(direction.codes, np.flatnonzero(cats.str.endswith("LMEM")))
    from_lmem = np.isin(direction.codes, np.flatnonzero(cats.str.startswith("LMEM")))
    out = pd.DataFrame({
        "tiu_cmds": total(tiu).astype(np.int64),
        "gdma_cmds": total(gdma).astype(np.int64),
        "tiu_busy_ns": total(tiu & work, dur).astype(np.int64),
        "gdma_busy_ns": total(gdma & work, dur).astype(np.int64),
        "busy_ns": _union_ns(bucket[work] * num_cores + c["core"].to_numpy(np.int64)[work],
                             start[work], end[work], n * num_cores).reshape(n, num_cores).sum(axis=1),
        "tiu_cycles": total(tiu, c["cycles"].to_numpy(np.float64)).astype(np.int64),
        "alg_cycle": total(tiu, np.nan_to_num(c["alg_cycle"].to_numpy(np.float64))),
        "alg_ops": total(tiu, np.nan_to_num(c["alg_ops"].to_numpy(np.float64))),
        "uarch_ops": total(tiu, np.nan_to_num(c["uarch_ops"].to_numpy(np.float64))),
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
                           "records": 0, "cores": int(len(np.unique(c["core"][bucket == n - 1])))}
    table = pd.concat([head.reset_index(drop=True), out], axis=1)
    rank = table["busy_ns"].iloc[:-1].rank(method="first", ascending=False)
    table["rank"] = pd.array(np.r_[rank.to_numpy(), np.nan], dtype="Int64")
    return table
