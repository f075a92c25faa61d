"""Launch links of framework traces in the HTML timeline: for each device item, the position
(in the payload's item order) of the host item that launched it, + 1 (0: none), so a click on a
device slice can show its launch.  The payload's order is :func:`payload.encode_items`'s: by
lane, then start, then end."""
from __future__ import annotations

import numpy as np

from reportgen.model import Profile
from reportgen.writers.html.payload import Items


def launch_column(profile: Profile, items: Items) -> dict[str, np.ndarray]:
    """``{"launch": ...}`` (one value per item, input order) or {} when nothing was launched.
    ``items`` are :func:`payload.collect_items`': the commands, then one item per host row."""
    c, h = profile.commands, profile.host
    if profile.meta.is_pmu or "launch_row" not in c.columns or not len(h):
        return {}
    launch_row = c["launch_row"].to_numpy(np.int64)
    has = np.flatnonzero(launch_row >= 0)
    if not len(has) or len(items.start) < len(c) + len(h):
        return {}
    order = np.lexsort((items.end, items.start, items.lane))
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))
    out = np.zeros(len(items.start), np.int64)
    out[has] = position[len(c) + launch_row[has]] + 1
    return {"launch": out}
