"""The layer view of a bmodel capture: commands mapped onto the compiler's layers
(spec ``layer-info.md``; docs/metrics.md "Layers"). :func:`build_layer_view` is called once by
``analysis.derive`` when the capture carries its layer files.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.chip import peaks_for
from reportgen.analysis.layers.classes import compute_dtype, op_classes, what_if
from reportgen.analysis.layers.mapping import map_commands
from reportgen.analysis.layers.table import UNATTRIBUTED, layer_index, layer_metrics
from reportgen.model import Profile
from reportgen.model_layers import LayerView


def _spans(commands: pd.DataFrame, command_record: np.ndarray, record_layer: np.ndarray,
           records: pd.DataFrame, layers: pd.DataFrame) -> pd.DataFrame:
    """One row per record with commands: its core, layer, group and time span (the lanes)."""
    owned = np.flatnonzero(command_record >= 0)
    pos = command_record[owned]
    frame = pd.DataFrame({"pos": pos, "start_ns": commands["start_ns"].to_numpy()[owned],
                          "end_ns": commands["end_ns"].to_numpy()[owned]})
    spans = frame.groupby("pos").agg(start_ns=("start_ns", "min"), end_ns=("end_ns", "max"),
                                     cmds=("start_ns", "size")).reset_index()
    p = spans["pos"].to_numpy()
    layer = record_layer[p]
    return pd.DataFrame({
        "record": records["record"].to_numpy()[p], "core": records["core"].to_numpy()[p],
        "layer": layer, "file_line": layers["file_line"].to_numpy()[layer],
        "name": layers["name"].to_numpy()[layer], "group_line": layers["group_line"].array[layer],
        "start_ns": spans["start_ns"], "end_ns": spans["end_ns"], "cmds": spans["cmds"],
    }).sort_values(["core", "start_ns"], kind="stable").reset_index(drop=True)


def build_layer_view(profile: Profile) -> LayerView | None:
    """Map ``profile.commands`` onto ``profile.layers`` (None without layer files)."""
    files = profile.layers
    if files is None:
        return None
    commands, meta = profile.commands, profile.meta
    command_pos = map_commands(commands, files.records, meta, files.json_path)
    record_layer, layers = layer_index(files)
    command_layer = np.where(command_pos >= 0, record_layer[np.maximum(command_pos, 0)], -1)
    active = int(commands["core"].nunique()) if len(commands) else 0
    cores = files.cores or active
    num_cores = int(commands["core"].max()) + 1 if len(commands) else 1
    table = layer_metrics(commands, command_layer, layers, files, num_cores)
    peaks = peaks_for(meta)
    classes = op_classes(table, meta.tiu_freq_mhz)
    engine = commands["engine"].astype(str)
    stray = table.iloc[[-1]]
    unowned = commands[(command_pos < 0) & engine.isin(["TIU", "GDMA"]).to_numpy()]
    unattributed = unowned.groupby(["core", unowned["engine"].astype(str)]).size().rename("cmds").reset_index()
    if int(stray["tiu_cmds"].iloc[0] + stray["gdma_cmds"].iloc[0]):
        meta.warn("layer-unattributed", f"{len(unowned)} TIU/GDMA commands belong to no layer "
                  f"(shown as {UNATTRIBUTED})", files.json_path)
    dtype = compute_dtype(files.quant_mode)
    facts = [("Network", files.network, ""), ("Model GFLOPs", None if files.flops is None else files.flops / 1e9, "GFLOP"),
             ("Quant mode", files.quant_mode, ""), ("Compute type", dtype, ""),
             ("Cores used", cores, "")]
    if peaks is not None:
        facts += [(f"Model peak {t}", peaks.tops(t, cores), "TOPS") for t in ("int8", "f16", "f32")]
        facts += [("DDR peak", peaks.ddr_gbps_per_core * cores, "GB/s"),
                  ("TIU clock", peaks.tiu_mhz, "MHz"), ("DMA clock", peaks.dma_mhz, "MHz")]
    return LayerView(
        command_layer=command_layer,
        command_record=np.where(command_pos >= 0, files.records["record"].to_numpy()[np.maximum(command_pos, 0)], -1),
        layers=table.iloc[:-1].reset_index(drop=True),
        classes=classes,
        what_if=what_if(classes, profile.summary, peaks, files.flops, files.quant_mode, cores),
        unattributed=pd.concat([stray.reset_index(drop=True)], ignore_index=True),
        facts=facts,
        spans=_spans(commands, command_pos, record_layer, files.records, table),
        unattributed_cmds=unattributed,
    )
