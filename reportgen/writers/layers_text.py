"""The layer view in summary.txt (the slowest layers) and summary.json (key ``layers``)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reportgen.model_layers import LayerView

#: summary.json fields of a layer, in order (docs/metrics.md "Layers")
JSON_FIELDS = ("subnet_id", "file_line", "opcode", "name", "is_local", "group_line", "records", "cores",
               "dtype", "in_shape", "out_shape", "tiu_cmds", "gdma_cmds", "busy_ns", "tiu_busy_ns",
               "gdma_busy_ns", "tiu_cycles", "alg_ops", "uarch_ops", "uarch_rate", "alg_cycle",
               "gdma_bytes", "gdma_load_bytes", "gdma_store_bytes", "gdma_gbps", "weight_bytes",
               "time_share", "rank")
TOP_LAYERS = 10


def _plain(value):
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


def layer_records(table: pd.DataFrame) -> list[dict]:
    return [{k: _plain(r[k]) for k in JSON_FIELDS} for r in table.to_dict("records")]


def layers_document(view: LayerView) -> dict:
    """summary.json's ``layers`` (one object per layer, then the unattributed commands as a layer
    with opcode "(unattributed)") and ``layer_classes``."""
    return {
        "layers": layer_records(pd.concat([view.layers, view.unattributed], ignore_index=True)),
        "layer_classes": [{k: _plain(v) for k, v in r.items()} for r in view.classes.to_dict("records")],
    }


def top_layers_text(view: LayerView, count: int = TOP_LAYERS) -> str:
    """The ``count`` layers with the longest busy time, and the unattributed commands."""
    top = view.layers.sort_values("rank").head(count)
    headers = ["Rank", "Line", "Op", "Cores", "TIU cmds", "GDMA cmds", "busy(us)", "share(%)",
               "TIU cycles", "uArch rate(%)", "GDMA GB/s"]

    def fmt(v, spec):
        v = _plain(v)
        return "n/a" if v is None else format(v, spec)

    rows = [[str(r["rank"]), str(r["file_line"]), str(r["name"]), str(r["cores"]), str(r["tiu_cmds"]),
             str(r["gdma_cmds"]), fmt(r["busy_ns"] / 1e3, ".3f"), fmt(r["time_share"] * 100, ".1f"),
             str(r["tiu_cycles"]), fmt(r["uarch_rate"] * 100, ".1f"), fmt(r["gdma_gbps"], ".2f")]
            for r in top.to_dict("records")]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: " | ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    rule = "=" * len(line(headers))
    stray = view.unattributed.iloc[0]
    title = (f"Slowest layers (of {len(view.layers)}; busy = union of a layer's TIU/GDMA work, "
             f"summed over cores; line = final.mlir line)")
    out = [rule, title, rule, line(headers), "-" * len(rule)] + [line(r) for r in rows] + [rule]
    out.append(f"Unattributed commands (no layer owns them): TIU {stray['tiu_cmds']}, "
               f"GDMA {stray['gdma_cmds']}")
    return "\n".join(out)
