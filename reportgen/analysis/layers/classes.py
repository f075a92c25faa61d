"""Op classes (the vendor's "Summary") and the what-if table (docs/metrics.md "Layers: op classes",
"Layers: what if"). Peaks come from ``analysis.chip`` per core × the cores the model uses.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.chip import ChipPeaks
from reportgen.analysis.layers.table import UNATTRIBUTED

#: op class -> op names (lower case) it holds (spec §7); any other op is "Others"
OP_CLASSES = {
    "Active": ("active", "leakyrelu", "prelu"),
    "Attention": ("attention", "fattention"),
    "Cast": ("cast",),
    "Conv": ("conv", "conv2d", "conv3d", "deconv", "deconv3d"),
    "Eltwise": ("add", "sub", "mul", "div", "max", "min", "addconst", "subconst", "mulconst",
                "maxconst", "minconst", "broadcast_binary", "eltwise", "eltwise_binary",
                "binaryshift", "binaryconstshift", "clip", "compare", "compareconst"),
    "FC": ("fc",),
    "LayerNorm": ("layernorm", "layer_norm", "groupnorm", "group_norm", "instancenorm", "pixelnorm"),
    "Lut": ("lut",),
    "MatMul": ("matmul", "batch_matmul", "a16matmul"),
    "MulShift": ("mulshift",),
    "Pool": ("pool", "pool2d"),
    "Reduce": ("reduce",),
    "Softmax": ("softmax",),
}
CLASS_OF = {op: cls for cls, ops in OP_CLASSES.items() for op in ops}
OTHERS, OVERALL = "Others", "Overall"

#: op class -> (unit, ops per unit per cycle) of its peak (spec §7): "cube" = the cube's MACs
#: (chip.ChipPeaks.cube_macs_per_cycle), "vector" = lanes × IC align (f16 half, f32 lanes × 16),
#: "lanes" = one op per lane and cycle whatever the type
CLASS_PEAK = {
    **dict.fromkeys(("Conv", "MatMul", "Attention"), ("cube", 2)),
    **dict.fromkeys(("LayerNorm", "Pool", "Reduce", "FC"), ("vector", 2)),
    "Lut": ("lanes", 1),
}
DEFAULT_PEAK = ("vector", 1)

_SUMS = ("layers", "tiu_cmds", "gdma_cmds", "alg_ops", "uarch_ops", "weight_bytes", "tiu_cycles",
         "tiu_busy_ns", "gdma_busy_ns", "gdma_bytes", "busy_ns")


def compute_dtype(quant_mode: str | None) -> str:
    """The data type the TIU computes in for a ``module.mode``: weight-only modes (W8F16,
    W4BF16) compute in their activation type; INT8 and the f8 modes at the int8 rate."""
    mode = (quant_mode or "").lower()
    for suffix in ("bf16", "f16", "f32"):
        if mode.endswith(suffix):
            return suffix
    return "int8"


def class_tops_per_core(peaks: ChipPeaks, cls: str, dtype: str) -> float:
    unit, ops = CLASS_PEAK.get(cls, DEFAULT_PEAK)
    chip = peaks.chip
    if unit == "cube":
        per_cycle = peaks.cube_macs_per_cycle(dtype)
    elif unit == "lanes":
        per_cycle = chip.lanes
    elif dtype == "f32":
        per_cycle = chip.lanes * 16
    else:
        per_cycle = chip.lanes * chip.cube_ic_align_int8 // (2 if dtype in ("f16", "bf16") else 1)
    return per_cycle * ops * peaks.tiu_mhz * 1e6 / 1e12


def op_classes(layers: pd.DataFrame, tiu_mhz: float) -> pd.DataFrame:
    """One row per op class with a layer, by TIU cycles descending, ``Others`` then ``Overall``
    last; the unattributed row is not in any class (it is in Overall)."""
    named = layers[layers["opcode"] != UNATTRIBUTED]
    cls = named["name"].str.lower().map(CLASS_OF).fillna(OTHERS)
    frame = named.assign(op_class=cls.to_numpy(), layers=1)
    grouped = frame.groupby("op_class", sort=True)
    table = grouped[list(_SUMS)].sum(min_count=0)
    table["operations"] = grouped["name"].agg(lambda s: ", ".join(sorted(set(s))))
    table = table.reset_index()
    table["_others"] = table["op_class"] == OTHERS
    table = table.sort_values(["_others", "tiu_cycles", "op_class"], ascending=[True, False, True])
    overall = {k: layers[k].sum() if k != "layers" else len(named) for k in _SUMS}
    table = pd.concat([table.drop(columns="_others"),
                       pd.DataFrame([{"op_class": OVERALL, **overall, "operations": ""}])],
                      ignore_index=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["tiu_us"] = table["tiu_cycles"] / tiu_mhz
        table["uarch_rate"] = np.where(table["uarch_ops"] > 0, table["alg_ops"] / table["uarch_ops"], np.nan)
        for col, share in (("alg_ops", "alg_share"), ("uarch_ops", "uarch_share"),
                           ("tiu_cycles", "tiu_share"), ("busy_ns", "time_share")):
            whole = table[col].iloc[-1]
            table[share] = table[col] / whole if whole else np.nan
    return table


def what_if(classes: pd.DataFrame, summary: pd.DataFrame | None, peaks: ChipPeaks | None,
            flops: int | None, quant_mode: str | None, cores: int) -> pd.DataFrame:
    """The what-if rows (docs/metrics.md "Layers: what if"); empty without peaks or summary."""
    columns = ["case", "peak", "reduced_us", "total_us", "concurrency", "mac_util"]
    if peaks is None or summary is None or summary.empty or cores <= 0:
        return pd.DataFrame(columns=columns)
    dtype = compute_dtype(quant_mode)
    model_tops = peaks.tops_per_core(dtype) * cores
    model_us = flops / model_tops / 1e6 if flops else np.nan
    per_core = summary[summary["core"].astype(str) != "Overall"]
    overall = summary[summary["core"].astype(str) == "Overall"].iloc[0]
    wall_us = overall["span_ns"] / 1e3
    engines = [c for c in ("tiu_busy_ns", "gdma_busy_ns", "sdma_busy_ns") if c in per_core]
    t100 = float(per_core[engines].max(axis=1).max()) / 1e3

    def util(total):
        return model_us / total * 100 if total > 0 else np.nan

    rows = [("origin", "", 0.0, wall_us, overall["parallelism"] * 100, util(wall_us)),
            ("100% concurrency", "", wall_us - t100, t100, 100.0, util(t100))]
    body = classes[classes["op_class"] != OVERALL]
    for peak_name in ("model", "class"):
        current = t100
        for row in body.itertuples():
            tops = model_tops if peak_name == "model" else \
                class_tops_per_core(peaks, row.op_class, dtype) * cores
            class_us = row.tiu_cycles / peaks.tiu_mhz / cores
            ideal_us = row.alg_ops / tops / 1e6
            current -= class_us - ideal_us
            rows.append((f"{row.op_class} TIU time {class_us:.3f} us -> {ideal_us:.3f} us", peak_name,
                         class_us - ideal_us, current, 100.0, util(current)))
    return pd.DataFrame(rows, columns=columns)
