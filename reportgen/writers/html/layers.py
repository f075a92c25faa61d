"""The layer view in result.html (bmodel captures with ``tensor_location.json`` + ``final.mlir``;
docs/metrics.md "Layers"): per-core layer and group lanes on every core timeline, and a Layers tab
whose layer table is linked both ways with its own timeline (``templates/report.js``, section
"layers").

Everything shown is ``Profile.layer_view``'s: the table's numbers are its ``layers`` (and the
``(unattributed)`` row), the bars its ``spans`` (one per record with commands), the command → layer
link its ``command_layer``. Decided here: the lanes (overlapping spans of a core on extra lanes, a
group bar per core from its members' first start to last end), the types that colour the bars
(the op class, spec §7) and the table's columns.
"""
from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis.layers.classes import CLASS_OF, OTHERS
from reportgen.intervals import first_fit_lanes
from reportgen.model import Profile
from reportgen.model_layers import LayerView
from reportgen.writers.html.palette import type_color
from reportgen.writers.html.payload import Items

#: lane kinds of the layer view: (lane spec ``layer`` value, lane name prefix, legend engine,
#: lanes per core at most: bars that overlap more than that share the last lane)
LAYER_LANE, GROUP_LANE = ("layers", "LAYER", "Layers", 4), ("groups", "GROUP", "Groups", 2)
LANE_COLORS = {"layers": "#00838F", "groups": "#8D6E63"}
#: ops that only move data inside a layer group get their own colour (their class is Others)
DATA_MOVES = ("load", "store")
GROUP_TYPE = "layer group"

#: the layer table: (LayerView.layers column, header, kind, decimals); kinds as the Tables tab's
#: (report.js fmtCell): int, float, frac (a 0..1 value shown as a percentage), text
TABLE_COLUMNS = [
    ("rank", "rank", "int", 0),
    ("file_line", "layer (line)", "int", 0),
    ("name", "op", "text", 0),
    ("dtype", "data type", "text", 0),
    ("group_line", "group (line)", "int", 0),
    ("subnet_id", "subnet", "int", 0),
    ("cores", "cores", "int", 0),
    ("tiu_cmds", "TIU cmds", "int", 0),
    ("gdma_cmds", "GDMA cmds", "int", 0),
    ("busy_ns", "busy (ns)", "int", 0),
    ("time_share", "share", "frac", 2),
    ("tiu_busy_ns", "TIU busy (ns)", "int", 0),
    ("gdma_busy_ns", "GDMA busy (ns)", "int", 0),
    ("tiu_cycles", "TIU cycles", "int", 0),
    ("alg_ops", "alg ops", "int", 0),
    ("uarch_ops", "uArch ops", "int", 0),
    ("uarch_rate", "uArch rate", "frac", 2),
    ("gdma_bytes", "GDMA bytes", "int", 0),
    ("gdma_gbps", "GDMA GB/s", "float", 2),
    ("in_shape", "input shape", "text", 0),
    ("out_shape", "output shape", "text", 0),
]
TABLE_NOTE = ("One row per layer (subnet, final.mlir line), its records on every core and time "
              "step merged; busy = union of the layer's TIU and GDMA work per core, summed over "
              "cores; share = busy / all layers' busy; rank 1 = the largest busy. Same numbers as "
              "summary.json \"layers\" and the \"Layer by Layer Info\" sheet (docs/metrics.md, "
              "\"Layers\"). Click a row to zoom the timeline below to the layer; click a layer bar "
              "to find its row.")


def _layer_type(name: str) -> str:
    low = name.lower()
    return "layer Load/Store" if low in DATA_MOVES else f"layer {CLASS_OF.get(low, OTHERS)}"


def _column(values: pd.Series, kind: str) -> list[Any]:
    """JSON-ready values of a column (None where missing): whole columns, no call per cell."""
    if kind == "text":
        return values.astype("object").where(values.notna(), None).tolist()
    numbers = values.to_numpy(np.float64, na_value=np.nan)
    known = np.isfinite(numbers)
    typed = pd.Series(np.where(known, numbers, 0).astype(np.int64) if kind == "int" else numbers)
    return typed.astype("object").where(known, None).tolist()


def table_rows(view: LayerView) -> pd.DataFrame:
    """The rows of the layer table: every layer, then the unattributed commands (no line)."""
    rows = pd.concat([view.layers, view.unattributed], ignore_index=True)
    rows["file_line"] = rows["file_line"].astype("Int64").where(rows["file_line"] >= 0)
    rows["subnet_id"] = rows["subnet_id"].astype("Int64").where(rows["subnet_id"] >= 0)
    return rows


def table_payload(view: LayerView) -> tuple[dict[str, Any], bytes]:
    """The table's header (columns and their formats) and its values column by column, gzip'd
    JSON (the page's ``DataTable`` draws and sorts it)."""
    rows = table_rows(view)
    head = {"name": "Layers", "rows": int(len(rows)), "embedded": int(len(rows)),
            "columns": [{"name": label, "kind": kind, "decimals": d, "stored_name": col}
                        for col, label, kind, d in TABLE_COLUMNS]}
    values = [_column(rows[col], kind) for col, _, kind, _ in TABLE_COLUMNS]
    raw = json.dumps({"columns": values}, separators=(",", ":"), ensure_ascii=False,
                     allow_nan=False).encode("utf-8")
    return head, gzip.compress(raw, compresslevel=6, mtime=0)


@dataclass
class LayerPart:
    """What the layer view adds to the page."""

    items: Items                   # every item of the page, layer and group bars appended
    columns: dict[str, np.ndarray]  # extra payload columns per item ("layer": layer + 1, 0 none)
    lanes: list[dict[str, Any]]    # lane specs of the layer and group lanes, after the others
    first_lane: int                # index of the first of them
    data: dict[str, Any]           # DATA.layers: the table's header and the Layers view
    block_b64: str                 # the table's values (rg-layers)
    note: str = TABLE_NOTE

    def add_views(self, views: list[dict[str, Any]], tabs: list[dict[str, Any]],
                  lane_specs: list[dict[str, Any]]) -> None:
        """Layer lanes above their core's lanes in every view; a Layers tab (table + timeline:
        each core's group and layer lanes over its TIU and GDMA lanes) after Overview/Tables."""
        mine = set(range(self.first_lane, self.first_lane + len(self.lanes)))
        by_group: dict[str, list[int]] = {}
        for i in sorted(mine, key=lambda i: (lane_specs[i]["cores"][0], i)):
            by_group.setdefault(lane_specs[i]["group"], []).append(i)
        for view in views:
            rest = [i for i in view["lanes"] if i not in mine]
            placed, out = set(), []
            for i in rest:
                g = lane_specs[i]["group"]
                if not lane_specs[i]["host"] and g in by_group and g not in placed:
                    placed.add(g)
                    out += by_group[g]
                out.append(i)
            view["lanes"] = out
        lanes = []
        for group, own in by_group.items():
            lanes += own + [i for i, s in enumerate(lane_specs) if s["group"] == group and not s["host"]
                            and s["engine"] in ("TIU", "GDMA")]
        views.append({"id": "layers", "lanes": lanes})
        at = next((k + 1 for k, t in enumerate(tabs) if t["id"] == "tables"), 1)
        tabs.insert(at, {"id": "layers", "title": "Layers", "charts": [], "views": ["layers"],
                         "layer_table": True,
                         "heading": "Layers on the time axis: per core, the layer groups, the layers "
                                    "(one bar per record: a global op, or a group member's time "
                                    "step; overlapping ones on up to 3 extra lanes, the last one "
                                    "overlaid), then TIU and GDMA"})


def _lanes_of(kind: tuple[str, str, str, int], core: np.ndarray, start: np.ndarray, end: np.ndarray,
              first: int) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Lane index per bar (a core's overlapping bars on extra lanes, up to the kind's limit) and
    the lane specs."""
    value, prefix, engine, most = kind
    sub = first_fit_lanes(core, start, end, most).astype(np.int64) if len(core) else np.zeros(0, np.int64)
    keys, code = np.unique(core * (1 << 20) + sub, return_inverse=True)   # (core, sub) in order
    specs = [{"name": f"{prefix}_{c}" + (f" #{s + 1}" if s else ""), "engine": engine,
              "color": LANE_COLORS[value], "host": False, "group": f"core{c}", "cores": [c],
              "layer": value} for c, s in ((int(k) >> 20, int(k) & ((1 << 20) - 1)) for k in keys)]
    return first + code.astype(np.int64).reshape(-1), specs


def layer_lanes(profile: Profile, items: Items, t0: int, types: list[dict[str, Any]],
                ops: list[list[Any]], first_lane: int) -> LayerPart | None:
    """Append the layer and group bars to ``items`` (and their types and ops to ``types`` and
    ``ops``); None without a layer view. Lanes start at ``first_lane`` (after the others)."""
    view = profile.layer_view
    if view is None:
        return None
    spans = view.spans
    n_dev = len(profile.commands)
    # groups: per core, from the first start to the last end of the group's records there
    member = spans[spans["group_line"].notna()]
    groups = (member.groupby(["core", member["group_line"].astype("int64")])
              .agg(start_ns=("start_ns", "min"), end_ns=("end_ns", "max"), records=("record", "size"))
              .reset_index().sort_values(["core", "start_ns"], kind="stable"))
    core_of = lambda df: df["core"].to_numpy(np.int64)  # noqa: E731
    g_lane, g_specs = _lanes_of(GROUP_LANE, core_of(groups), groups["start_ns"].to_numpy(np.int64),
                                groups["end_ns"].to_numpy(np.int64), first_lane)
    l_lane, l_specs = _lanes_of(LAYER_LANE, core_of(spans), spans["start_ns"].to_numpy(np.int64),
                                spans["end_ns"].to_numpy(np.int64), first_lane + len(g_specs))
    # the bars' types: one per op class (legend, colours), then the layer groups
    taken = {t["color"] for t in types}
    name_code, op_names = pd.factorize(spans["name"].astype(str))
    type_names = sorted({_layer_type(n) for n in op_names}) + ([GROUP_TYPE] if len(groups) else [])
    type_index = {}
    for name in type_names:
        colour = type_color(name, False, taken)
        taken.add(colour)
        type_index[name] = len(types)
        types.append({"name": name, "group": "layer", "color": colour, "sys": False})
    # ops: one per op name (a Find by name matches them), one per group line
    layer_op = name_code.astype(np.int64) + len(ops)
    ops.extend([type_index[_layer_type(n)], n, None, ""] for n in op_names)
    group_lines = groups["group_line"].to_numpy(np.int64)
    g_key = pd.factorize(pd.Series(group_lines))
    group_op = g_key[0].astype(np.int64) + len(ops)
    ops.extend([type_index[GROUP_TYPE], f"Group L{int(g)}", None, ""] for g in g_key[1])

    n_l, n_g = len(spans), len(groups)
    extra = Items(
        lane=np.concatenate([l_lane, g_lane]),
        start=np.concatenate([spans["start_ns"].to_numpy(np.int64), groups["start_ns"].to_numpy(np.int64)]) - t0,
        end=np.concatenate([spans["end_ns"].to_numpy(np.int64), groups["end_ns"].to_numpy(np.int64)]) - t0,
        op=np.concatenate([layer_op, group_op]),
        kernel=np.zeros(n_l + n_g, np.int64),
        gidx=np.concatenate([spans["record"].to_numpy(np.int64), group_lines]),   # record / group line
        cmd=np.concatenate([spans["cmds"].to_numpy(np.int64), groups["records"].to_numpy(np.int64)]),
        nbytes=np.zeros(n_l + n_g, np.int64), bw=np.full(n_l + n_g, np.nan),
        urate=np.zeros(n_l + n_g, np.int64))
    merged = Items(*[np.concatenate([getattr(items, f), getattr(extra, f)]) for f in Items.__dataclass_fields__])
    # per item: its layer + 1 (0: none): commands, host events (none), layer bars, group bars
    layer = np.concatenate([view.command_layer[:n_dev] + 1, np.zeros(len(items.lane) - n_dev, np.int64),
                            spans["layer"].to_numpy(np.int64) + 1, np.zeros(n_g, np.int64)])
    head, blob = table_payload(view)
    return LayerPart(
        items=merged, columns={"layer": layer}, lanes=g_specs + l_specs, first_lane=first_lane,
        data={"table": head, "view": "layers", "tab": "layers"},
        block_b64=base64.b64encode(blob).decode("ascii"))
