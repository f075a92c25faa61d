"""The device side of the track tree: the chip's root track, a track per core (in core order,
described by its utilisation) and the time base every event is shifted by."""
from __future__ import annotations

import pandas as pd

from reportgen.model import Profile
from reportgen.writers.perfetto.trace import Trace

#: sibling order of a core's tracks (x 64, plus the lane number)
ENGINE_RANK = {"Kernel Function": 0, "TIU": 1, "TIU uArch Rate (%)": 2, "GDMA": 3,
               "GDMA Bandwidth (GB/s)": 4, "SDMA": 5, "SDMA Bandwidth (GB/s)": 6}


def time_base(profile: Profile) -> int:
    """ns added to every timestamp: the host alignment offset when a host trace is attached,
    raised so that nothing is negative."""
    align = profile.meta.host_alignment or {}
    base = int(align.get("offset_ns", 0)) if len(profile.host) else 0
    lows = [profile.commands["start_ns"].min() if len(profile.commands) else 0,
            profile.host["start_ns"].min() if len(profile.host) else 0]
    low = min(int(x) for x in lows)
    return max(base, -low)


def _core_description(summary: pd.DataFrame | None, core: int) -> str:
    if summary is None or summary.empty:
        return ""
    row = summary[summary["core"].astype(str) == str(core)]
    if row.empty:
        return ""
    r = row.iloc[0]
    parts = [f"{e.upper()} util {r[f'{e}_util'] * 100:.1f}%" for e in ("tiu", "gdma", "sdma")
             if f"{e}_util" in r and not pd.isna(r[f"{e}_util"])]
    if "tiu_uarch_rate" in r and not pd.isna(r["tiu_uarch_rate"]):
        parts.append(f"TIU uArch rate {r['tiu_uarch_rate'] * 100:.1f}%")
    return ", ".join(parts)


class Device:
    """The trace's device root track and its core tracks (declared on first use)."""

    def __init__(self, profile: Profile, summary: pd.DataFrame | None, trace: Trace) -> None:
        self.t, self.summary = trace, summary
        self.base = time_base(profile)
        chip = profile.meta.chip or "TPU"
        self.root = trace.track("device", f"{chip} TPU" if chip != "TPU" else "TPU", explicit=True)
        self.core_tracks: dict[int, int] = {}
        self.level_tracks: dict[tuple[int, str], int] = {}

    def core_track(self, core: int) -> int:
        if core not in self.core_tracks:
            self.core_tracks[core] = self.t.track(f"device/core/{core}", f"Core {core}", self.root,
                                                  rank=core, explicit=True,
                                                  description=_core_description(self.summary, core))
        return self.core_tracks[core]

    def level_track(self, core: int, level: str | None) -> int:
        """A framework trace's lane group under a core ("Ascend Hardware", "HCCL", "Overlap
        Analysis"); the core's track itself when the lane has no level."""
        if not level or level in ("None", "nan"):
            return self.core_track(core)
        if (core, level) not in self.level_tracks:
            self.level_tracks[(core, level)] = self.t.track(
                f"device/core/{core}/level/{level}", level, self.core_track(core),
                rank=len(self.level_tracks), explicit=True)
        return self.level_tracks[(core, level)]
