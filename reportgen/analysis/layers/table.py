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
    width = int(core.max(initial=0)) + 1
    on_core = core >= 0              # records of a core with no file (-1) own nothing
    layer_cores = np.unique(codes[on_core] * width + core[on_core]) // width   # (layer, core) pairs
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
    low, span = int(start.min()), int(start.max()) - int(start.min()) + 1
    if n * span < 1 << 62:     # one key: a stable sort runs through the already ordered stretches
        order = np.argsort(bucket * span + (start - low), kind="stable")
    else:
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
    layer_or_stray = np.where(command_layer >= 0, command_layer, n - 1)

    def engine_columns(engine, *extra):
        """The columns of one engine's commands (file order: every sum adds in the same order);
        ``extra`` as floats, NA and NaN as 0."""
        at = rows[engine]

        def take(name):
            column = commands[name]
            if isinstance(column.dtype, np.dtype):      # a NumPy column: no conversion of all rows
                return column.to_numpy()[at]
            return column.array[at].to_numpy(np.float64, na_value=0.0)

        cols = {"bucket": layer_or_stray[at], "core": take("core").astype(np.int64),
                "start": take("start_ns").astype(np.int64, copy=False),
                "end": take("end_ns").astype(np.int64, copy=False), "work": ~take("is_sys").astype(bool)}
        cols |= {name: np.nan_to_num(take(name).astype(np.float64, copy=False), copy=False)
                 for name in extra}
        cols["dur"] = (cols["end"] - cols["start"]).astype(np.float64)
        return cols

    tiu = engine_columns("TIU", "cycles", "alg_cycle", "alg_ops", "uarch_ops")
    gdma = engine_columns("GDMA", "bytes")

    def total(cols, mask=None, values=None):
        if mask is None:
            return np.bincount(cols["bucket"], weights=None if values is None else cols[values], minlength=n)
        return np.bincount(cols["bucket"][mask], weights=None if values is None else cols[values][mask],
                           minlength=n)

    direction = pd.Categorical(commands["direction"])          # a test per category, not per row
    cats = direction.categories.astype(str)
    codes = direction.codes[rows["GDMA"]]
    into_lmem = gdma["work"] & np.isin(codes, np.flatnonzero(cats.str.endswith("LMEM")))
    from_lmem = gdma["work"] & np.isin(codes, np.flatnonzero(cats.str.startswith("LMEM")))
    working = {k: np.concatenate([tiu[k][tiu["work"]], gdma[k][gdma["work"]]])
               for k in ("bucket", "core", "start", "end")}
    out = pd.DataFrame({
        "tiu_cmds": total(tiu).astype(np.int64),
        "gdma_cmds": total(gdma).astype(np.int64),
        "tiu_busy_ns": total(tiu, tiu["work"], "dur").astype(np.int64),
        "gdma_busy_ns": total(gdma, gdma["work"], "dur").astype(np.int64),
        "busy_ns": _union_ns(working["bucket"] * num_cores + working["core"], working["start"],
                             working["end"], n * num_cores).reshape(n, num_cores).sum(axis=1),
        "tiu_cycles": total(tiu, values="cycles").astype(np.int64),
        "alg_cycle": total(tiu, values="alg_cycle"),
        "alg_ops": total(tiu, values="alg_ops"),
        "uarch_ops": total(tiu, values="uarch_ops"),
        "gdma_bytes": total(gdma, gdma["work"], "bytes").astype(np.int64),
        "gdma_load_bytes": total(gdma, into_lmem, "bytes").astype(np.int64),
        "gdma_store_bytes": total(gdma, from_lmem, "bytes").astype(np.int64),
    })
    stray_cores = np.concatenate([tiu["core"][tiu["bucket"] == n - 1], gdma["core"][gdma["bucket"] == n - 1]])
    with np.errstate(divide="ignore", invalid="ignore"):
        out["uarch_rate"] = np.where(out["uarch_ops"] > 0, out["alg_ops"] / out["uarch_ops"], np.nan)
        out["gdma_gbps"] = np.where(out["gdma_busy_ns"] > 0, out["gdma_bytes"] / out["gdma_busy_ns"], np.nan)
        out["time_share"] = out["busy_ns"] / out["busy_ns"].sum() if out["busy_ns"].sum() else np.nan
    ops = files.ops.drop(columns="opcode")
    head = layers.merge(ops, on=["subnet_id", "file_line"], how="left")
    head["name"] = head["opcode"].str.rpartition(".")[2]
    head["group_line"] = _group_of(head["file_line"].to_numpy(), files.groups)
    head.loc[len(head)] = {"subnet_id": -1, "file_line": -1, "opcode": UNATTRIBUTED, "name": UNATTRIBUTED,
                           "records": 0, "cores": int(len(np.unique(stray_cores)))}
    table = pd.concat([head.reset_index(drop=True), out], axis=1)
    rank = table["busy_ns"].iloc[:-1].rank(method="first", ascending=False)
    table["rank"] = pd.array(np.r_[rank.to_numpy(), np.nan], dtype="Int64")
    return table
