"""TIU clock overrides that keep the timeline whole (issue 25; spec pmu-dump-format.md §14 Q22).

PMU timestamps are free-running counters started long before the capture (50 ms to seconds).
The vendor converts the TIU counter's *absolute* value at an overridden clock, so every TIU time
moves against the DMA engines by (counter × the clock difference): `--tiu_freq 800` on a 1000 MHz
capture moves the TIU by hundreds of milliseconds. Here the counters are converted at the clock
the capture declares (`tpu_freq`, else the chip's default: what the counters really ran at), and
an override only rescales TIU times *relative to the core's sync instant* (the TIU record the
cores are aligned on), so durations and distances from that instant scale by
declared / override while the sync instant, and with it the alignment against the DMA engines
and the other cores, stays where it is.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reportgen.parsers.pmu.streams import Stream


@dataclass(frozen=True)
class TiuClock:
    counter_mhz: float     # the clock the TIU counters ran at (tpu_freq or the chip default)
    tiu_mhz: float         # the clock the user asks times to be reported at (--tiu_freq)

    def rescale(self, s: Stream, at: int | None) -> None:
        """Re-time a normalised TIU stream at ``tiu_mhz`` around the end of record ``at`` (the
        sync record; None: the first record's start). A no-op without an override."""
        if self.tiu_mhz == self.counter_mhz or len(s) == 0:
            return
        anchor = int(s["end"][at]) if at is not None else int(s["start"][0])
        anchor_ns = int(s["end_ns"][at]) if at is not None else int(s["start_ns"][0])
        scale = 1000.0 / self.tiu_mhz
        s["start_ns"] = anchor_ns + np.round((s["start"] - anchor) * scale).astype(np.int64)
        s["end_ns"] = anchor_ns + np.round((s["end"] - anchor) * scale).astype(np.int64)
