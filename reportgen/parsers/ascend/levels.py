"""The trace view's levels (the NPU plugin's and MindStudio Insight's lane groups): framework
operators ("PTA", process ``Python``; MindSpore ``MindSpore``), the CANN runtime ("CANN"),
device tasks ("Ascend Hardware"), communication ("HCCL") and the vendor's precomputed
"Overlap Analysis" intervals (Computing, Communication, Communication(Not Overlapped), Free),
which the trace reader keeps out of the device work and which are kept here as their own lanes
(``Profile.overlap_lanes``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

#: process name (lower case) -> level
PROCESS_LEVELS = {"python": "PTA", "pytorch": "PTA", "mindspore": "MindSpore", "cann": "CANN",
                  "ascend hardware": "Ascend Hardware", "hccl": "HCCL",
                  "overlap analysis": "Overlap Analysis"}
#: a device lane's level by its name
HCCL_LANE = r"^HCCL "


def host_levels(host: pd.DataFrame, process_names: dict[str, str]) -> pd.Series:
    """Each host slice's level, from its process's name (unknown processes by their name)."""
    names = host["pid"].astype(str).map(process_names).fillna("")
    return names.map(lambda n: PROCESS_LEVELS.get(n.lower(), n or "Host")).astype(object)


def command_levels(commands: pd.DataFrame) -> np.ndarray:
    """Each device task's level: HCCL lanes "HCCL", the rest "Ascend Hardware"."""
    hccl = commands["engine"].astype(str).str.contains(HCCL_LANE).to_numpy()
    return np.where(hccl, "HCCL", "Ascend Hardware").astype(object)


def overlap_lanes(events: pd.DataFrame, process_names: dict[str, str],
                  thread_names: dict[tuple[str, str], str], core: int) -> pd.DataFrame:
    """The Overlap Analysis process's complete slices: core, lane (its thread name), start_ns,
    end_ns."""
    pids = {p for p, n in process_names.items() if n.lower() == "overlap analysis"}
    if not pids or events.empty:
        return pd.DataFrame(columns=["core", "lane", "start_ns", "end_ns"])
    ev = events[(events["ph"] == "X") & events["pid"].astype(str).isin(pids)]
    lane = [thread_names.get((str(p), str(t)), f"tid {t}") for p, t in zip(ev["pid"], ev["tid"])]
    start = ev["ts_ns"].to_numpy(np.int64)
    return pd.DataFrame({"core": core, "lane": lane, "start_ns": start,
                         "end_ns": start + ev["dur_ns"].fillna(0).to_numpy(np.int64)})
