"""Colours of the page: fixed engine colours and a stable colour per Function Type."""
from __future__ import annotations

import zlib
from typing import Any

#: Engine colours, fixed (lane labels, utilisation charts).
ENGINE_COLORS = {"TIU": "#2E7D32", "GDMA": "#EF6C00", "SDMA": "#5C6BC0", "CDMA": "#C62828",
                 "host": "#546E7A"}
OTHER_ENGINE_COLOR = "#6D4C41"

#: Function Type palette: the known types get fixed, distinct colours so the same type has the
#: same colour in every report; other names are hashed onto the same palette (stable, may share).
PALETTE = ["#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F", "#EDC948", "#B07AA1",
           "#FF9DA7", "#9C755F", "#A0CBE8", "#FFBE7D", "#8CD17D", "#B6992D", "#499894",
           "#86BCB6", "#D37295", "#F1CE63", "#D4A6C8", "#1F77B4", "#2CA02C", "#9467BD",
           "#8C564B", "#17BECF", "#BCBD22", "#E377C2", "#AEC7E8", "#FF7F0E", "#98DF8A"]
KNOWN_TYPES = ["sMM2", "DMA_tensor", "sCONV", "DMA_matrix", "sAR", "DMA_general", "sSFU",
               "sPorD", "sLIN", "DMA_cw_transpose", "sCMP", "DMA_gather", "sVC", "DMA_scatter",
               "sCW", "sBC", "sSGL", "sSG", "sRQ", "sDQ", "sMM", "sCONV_BW", "DMA_compress",
               "DMA_lossy_compress", "DMA_nonzero", "DMA_masked_select", "DMA_reverse",
               "DMA_randmask"]
SYSTEM_COLOR = "#A8A8A8"
UNKNOWN_COLOR = "#7F7F7F"


def type_color(name: str | None, is_sys: bool = False, taken: set[str] | None = None) -> str:
    """Colour of a Function Type (or host category).

    Known types have fixed colours; system types are grey; any other name starts at the palette
    slot given by a hash of the name and moves on past colours already ``taken`` in this report,
    so the same set of names always gets the same colours and distinct names stay distinct
    while the palette lasts.
    """
    if name is None:
        return UNKNOWN_COLOR
    if is_sys or name.lower() in ("sys", "sdma_sys", "scdma_sys", "dma_sys") or name.upper() == "SYS":
        return SYSTEM_COLOR
    if name in KNOWN_TYPES:
        return PALETTE[KNOWN_TYPES.index(name) % len(PALETTE)]
    first = zlib.crc32(name.encode("utf-8")) % len(PALETTE)
    for step in range(len(PALETTE)):
        colour = PALETTE[(first + step) % len(PALETTE)]
        if not taken or colour not in taken:
            return colour
    return PALETTE[first]


def engine_color(engine: str) -> str:
    return ENGINE_COLORS.get(engine, OTHER_ENGINE_COLOR)


def assign_colors(types: list[dict[str, Any]]) -> None:
    """Set ``color`` of each type entry (and drop its ``_raw`` name): known types first (fixed
    colours), then the other names in name order, each avoiding the colours already taken."""
    taken: set[str] = set()
    order = sorted(types, key=lambda t: (t["_raw"] not in KNOWN_TYPES, t["group"], t["name"]))
    for t in order:
        t["color"] = type_color(t.pop("_raw"), t["sys"], taken)
        taken.add(t["color"])
