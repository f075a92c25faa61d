"""PMU record streams as column dicts, with per-stream normalisation (spec §9.1).

A :class:`Stream` holds the records of one engine of one core (or one CDMA port) as numpy
columns: times in native cycles and ns, ids, byte counters and the flags the matcher needs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reportgen.parsers.pmu import match
from reportgen.parsers.pmu.records import CDMA_RECORD, DMA_RECORD, TIU_RECORD


@dataclass
class Stream:
    engine: str                       # TIU / GDMA / SDMA / CDMA
    cols: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.cols["raw_id"]) if self.cols else 0

    def take(self, idx) -> "Stream":
        return Stream(self.engine, {k: v[idx] for k, v in self.cols.items()})

    def __getitem__(self, key: str) -> np.ndarray:
        return self.cols[key]

    def __setitem__(self, key: str, value: np.ndarray) -> None:
        self.cols[key] = value


def cycles_to_ns(cycles: np.ndarray, mhz: float) -> np.ndarray:
    """round(cycle / MHz * 1000), half to even (as Python's round). At 1000 MHz the cycles
    themselves (no copy: stream columns are never written in place)."""
    if mhz == 1000:
        return cycles.astype(np.int64, copy=False)
    return np.round(cycles.astype(np.float64) / mhz * 1000.0).astype(np.int64)


def from_records(engine: str, payload: memoryview, warn, count=lambda key, n: None) -> Stream:
    dtype = {"TIU": TIU_RECORD, "GDMA": DMA_RECORD, "SDMA": DMA_RECORD, "CDMA": CDMA_RECORD}[engine]
    nbytes = len(payload)
    whole = nbytes // dtype.itemsize
    if whole * dtype.itemsize != nbytes:
        warn("partial-record", f"{engine} block of {nbytes} bytes is not a multiple of the "
             f"{dtype.itemsize}-byte record: the last {nbytes - whole * dtype.itemsize} bytes are ignored")
    rec = np.frombuffer(payload, dtype, whole)
    count("read", whole)
    # firmware truncates a ring at the first all-zero record: stop there too
    if whole:
        cand = np.flatnonzero((rec["inst_start_time"] == 0) & (rec["inst_end_time"] == 0))
        words = rec[cand].view(np.uint32).reshape(len(cand), dtype.itemsize // 4)
        zero = cand[~words.any(axis=1)]
        if len(zero):
            warn("zero-record", f"{engine} stream ends at an all-zero record: "
                 f"{whole - zero[0]} trailing record(s) ignored")
            rec = rec[: zero[0]]
            count("dropped: after an all-zero record", whole - zero[0])
    s = Stream(engine)
    s["start_raw"] = rec["inst_start_time"].astype(np.int64)
    s["end_raw"] = rec["inst_end_time"].astype(np.int64)
    if engine == "TIU":
        s["raw_id"] = rec["inst_id"].astype(np.int64)
        s["sys_like"] = rec["thread_id_and_bank_conflict"] == 2
    elif engine == "CDMA":
        s["raw_id"] = (rec["inst_id_word"] & 0xFFFFFF).astype(np.int64)
        s["bytes"] = rec["m0_data_aw_cntr"].astype(np.int64)
        s["xact"] = (rec["ari_data_valid_cntr"].astype(np.int64) + rec["ati_data_valid_cntr"]
                     + rec["m0_data_rd_valid_cntr"] + rec["m0_data_wr_valid_cntr"])
        s["stall"] = np.zeros(len(rec), np.int64)
        s["sys_like"] = rec["m0_data_aw_cntr"] == 0
    else:
        s["raw_id"] = rec["inst_id"].astype(np.int64)
        s["bytes"] = rec["gif_mem_w_cntr"].astype(np.int64) + rec["axi_d0_w_cntr"]
        s["xact"] = rec["axi_d0_wr_vaild_cntr"].astype(np.int64) + rec["axi_d0_rd_vaild_cntr"]
        s["stall"] = rec["gif_wr_rd_stall_cntr"].astype(np.int64)
        s["sys_like"] = s["xact"] == 0
    return s


def _wrap_explains(s: Stream) -> bool:
    """True when the stream's steps back in time are u32 counter wraps (a step back of more
    than 2^31 cycles), not a lapped ring buffer (a step back by the ring's time span)."""
    start = s["start_raw"]
    end = np.where(s["end_raw"] < start, s["end_raw"] + match.U32, s["end_raw"])
    back = end[:-1] - start[1:]
    steps = back[back > 0]
    return bool(len(steps)) and bool((steps > (1 << 31)).all())


def normalise(s: Stream, mhz: float, warn) -> Stream:
    """Rotation, id unwrap, SDMA repairs, time unwrap, cycles -> ns (spec §9.1, in order)."""
    if len(s) == 0:
        s["id"] = s["raw_id"]
        for k in ("start", "end", "cycles", "start_ns", "end_ns"):
            s[k] = np.zeros(0, np.int64)
        return s
    if s.engine != "CDMA" and not _wrap_explains(s):
        k = match.rotate_ring(s["start_raw"], s["end_raw"])
        if k:
            warn("ring-rotated", f"{s.engine} PMU ring buffer had wrapped: rotated by {k} records "
                 "(the oldest records were overwritten)")
            s = s.take(np.roll(np.arange(len(s)), -k))
    s["id"] = match.unwrap_ids16(s["raw_id"])
    if s.engine == "SDMA":
        s = s.take(match.sdma_send_retire_reorder(s["start_raw"], s["end_raw"]))
    start, end = match.unwrap_time(s["start_raw"], s["end_raw"], cdma=s.engine == "CDMA")
    if (start != s["start_raw"]).any():
        warn("time-wrap", f"{s.engine} u32 cycle counter wrapped: later records lifted by 2^32")
    s["start"], s["end"] = start, end
    if s.engine == "SDMA":
        s = s.take(match.sdma_order_fix(s["id"]))
    s["cycles"] = s["end"] - s["start"] + 1
    s["start_ns"] = cycles_to_ns(s["start"], mhz)
    s["end_ns"] = cycles_to_ns(s["end"], mhz)
    return s
