"""The vendor's "Overlap Analysis" lanes of an Ascend trace view (Computing, Communication,
Communication(Not Overlapped), Free; ``VendorOutputs.overlap_lanes``) on result.html's timeline:
one lane per (core, lane name) in its own lane group "Overlap Analysis", below the core's device
lanes - the HTML twin of ``writers/perfetto/overlap.py``.

The slices are appended to the page's items like the layer bars (``writers/html/layers.py``), so
they are drawn, zoomed, searched and counted by the same timeline code as every other lane.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from reportgen.model import Profile
from reportgen.writers.html.palette import type_color
from reportgen.writers.html.payload import Items

LEVEL = "Overlap Analysis"
#: the lanes in the vendor's order (others after them, by name)
LANE_ORDER = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
LANE_COLOR = "#5D4037"


@dataclass
class OverlapPart:
    """What the Overlap Analysis lanes add to the page."""

    items: Items                    # every item of the page, overlap slices appended
    lanes: list[dict[str, Any]]     # their lane specs, after the others


def overlap_frame(profile: Profile) -> pd.DataFrame | None:
    """All vendor outputs' overlap slices (core, lane, start_ns, end_ns), None when there are none."""
    parts = [v.overlap_lanes for v in profile.vendor_outputs.values()
             if v.overlap_lanes is not None and len(v.overlap_lanes)]
    return pd.concat(parts, ignore_index=True) if parts else None


def overlap_lanes(profile: Profile, items: Items, t0: int, types: list[dict[str, Any]],
                  ops: list[list[Any]], first_lane: int) -> OverlapPart | None:
    """Append the overlap slices to ``items`` (their types and ops to ``types`` and ``ops``);
    None without any. Lanes start at ``first_lane``, per core in LANE_ORDER."""
    o = overlap_frame(profile)
    if o is None:
        return None
    core = o["core"].to_numpy(np.int64)
    name = o["lane"].astype(str)
    rank = {n: k for k, n in enumerate(LANE_ORDER)}
    lanes = (pd.DataFrame({"core": core, "lane": name}).drop_duplicates()
             .assign(_r=lambda d: d["lane"].map(rank).fillna(len(rank)))
             .sort_values(["core", "_r", "lane"]).reset_index(drop=True))
    lanes["index"] = np.arange(len(lanes), dtype=np.int64) + first_lane
    lane_of = pd.DataFrame({"core": core, "lane": name}).merge(
        lanes[["core", "lane", "index"]], on=["core", "lane"], how="left")["index"].to_numpy(np.int64)
    specs = [{"name": f"{LEVEL} · {ln}", "engine": LEVEL, "color": LANE_COLOR, "host": False,
              "group": f"core{c} {LEVEL}", "cores": [int(c)], "overlap": True}
             for c, ln in zip(lanes["core"], lanes["lane"])]
    # one type (legend colour) and one op per lane name
    taken = {t["color"] for t in types}
    name_code, names = pd.factorize(name)
    first_op = len(ops)
    for n in names:
        colour = type_color(n, False, taken)
        taken.add(colour)
        types.append({"name": n, "group": "overlap", "color": colour, "sys": False})
        ops.append([len(types) - 1, n, None, ""])
    n = len(o)
    extra = Items(
        lane=lane_of, start=o["start_ns"].to_numpy(np.int64) - t0, end=o["end_ns"].to_numpy(np.int64) - t0,
        op=name_code.astype(np.int64) + first_op, kernel=np.zeros(n, np.int64),
        gidx=np.arange(n, dtype=np.int64), cmd=np.zeros(n, np.int64), nbytes=np.zeros(n, np.int64),
        bw=np.full(n, np.nan), urate=np.zeros(n, np.int64))
    merged = Items(*[np.concatenate([getattr(items, f), getattr(extra, f)]) for f in Items.__dataclass_fields__])
    return OverlapPart(items=merged, lanes=specs)
