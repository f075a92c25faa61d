"""PMU record streams as column dicts, with per-stream normalisation (spec §9.1).

A :class:`Stream` holds the records of one engine of one core (or one CDMA port) as numpy
columns: times in native cycles and ns, ids, byte counters and the flags the matcher needs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reportgen.parsers.pmu import chip_dma, match
from reportgen.parsers.pmu.records import BM1688_PORTS, RECORD_LAYOUTS


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


def from_records(engine: str, payload: memoryview, warn, count=lambda key, n: None,
                 layout: str = "AKS") -> Stream:
    """The records of one monitor block as a stream; ``layout`` is the chip's record family
    (Chip.records)."""
    dtype = RECORD_LAYOUTS[layout][engine]
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
    if layout != "AKS" and engine != "CDMA":
        _chip_columns(s, rec, engine, layout)
    elif engine == "TIU":
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


def _chip_columns(s: Stream, rec: np.ndarray, engine: str, layout: str) -> None:
    """Ids, bytes, stall, transactions and the system look of BM1688 / CV84X6 records
    (spec chips-bm1688-cv84x6.md §4, §7.5, §8.2)."""
    n = len(rec)
    if engine == "TIU":
        if layout == "BM1688":
            s["raw_id"] = (rec["inst_id_and_load"] & 0xFFFF).astype(np.int64)
        else:
            s["raw_id"] = rec["inst_id"].astype(np.int64)
            s["bank_conflict"] = (rec["thread_id_and_bank_conflict"] >> 1).astype(np.int64)
            s["thread_id"] = (rec["thread_id_and_bank_conflict"] & 1).astype(np.int64)
        s["sys_like"] = np.zeros(n, bool)          # neither chip's TIU record marks system commands
        return
    s.cols.update(chip_dma.record_columns(layout, rec))
    if layout == "CV84X6":
        # byte-identical to AKS; the three byte counters each see the whole transfer (§8.2)
        s["raw_id"] = rec["inst_id"].astype(np.int64)
        s["bytes"] = np.maximum.reduce([rec["axi_d0_w_cntr"], rec["gif_mem_w_cntr"],
                                        rec["gif_mem_ar_cntr"]]).astype(np.int64)
        s["xact"] = rec["axi_d0_ar_cntr"].astype(np.int64) + rec["axi_d0_aw_cntr"]
        s["stall"] = (rec["axi_d0_wr_stall_cntr"].astype(np.int64) + rec["axi_d0_rd_stall_cntr"]
                      + rec["gif_wr_rd_stall_cntr"])
        s["sys_like"] = (rec["axi_d0_wr_vaild_cntr"].astype(np.int64) + rec["axi_d0_rd_vaild_cntr"]) == 0
        return
    # BM1688: a transfer's bytes are read from its source port (ar) and written to its
    # destination port (aw). The reference adds all twelve counters (modes 0/1, B4) or
    # global + local address bytes (descriptors, B5); the transfer is either side, once.
    col = lambda name: rec[name].astype(np.int64)  # noqa: E731
    s["raw_id"] = (rec["inst_id_word"] & 0xFFFFF).astype(np.int64)
    ar = sum(col(f"{p}_ar_bytes") for p in BM1688_PORTS)
    aw = sum(col(f"{p}_aw_bytes") for p in BM1688_PORTS)
    s["bytes"] = np.maximum(ar, aw)
    s["xact"] = sum(col(f"{p}_{d}_valid_bytes") for p in BM1688_PORTS for d in ("wr", "rd"))
    s["stall"] = sum(col(f"{p}_{d}_stall_bytes") for p in BM1688_PORTS for d in ("wr", "rd"))
    # with a descriptor the reference counts global-memory transactions and local-memory stalls
    s["xact_desc"] = (col("axi_d0_aw_bytes") + col("axi_d1_aw_bytes") + col("axi_d0_ar_bytes")
                      + col("axi_d1_ar_bytes")) // 16
    s["stall_desc"] = col("gif_fmem_wr_stall_bytes") + col("gif_fmem_rd_stall_bytes")
    s["sys_like"] = np.zeros(n, bool)              # no beat counters (§7.5)


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


def trim_edge_strays(tiu: Stream, gdma: Stream, meta, core: int, warn) -> Stream:
    """Drop CV84X6's stray TIU record at each stream end (spec chips-bm1688-cv84x6.md §7.3).

    Head: a stray precedes the first record of the first kernel, which has id 0 (kernels start
    after an id reset); tail: the stray re-uses the last id. Only a record that looks like a stray
    is dropped (the reference's bmodel path drops one at each end whether or not, B2). A stream
    with no id 0 and an idle GDMA is an idle core holding only its head stray."""
    n = len(tiu)
    if n == 0:
        return tiu
    ids = tiu["id"]
    zero = np.flatnonzero(ids == 0)
    if not len(zero) and len(gdma) == 0:
        keep = np.zeros(n, bool)
    else:
        keep = np.ones(n, bool)
        if len(zero) and zero[0] == 1:
            keep[0] = False
        if n - 1 > int(np.argmax(keep)) and ids[-1] <= ids[-2]:
            keep[-1] = False
    dropped = int((~keep).sum())
    if dropped:
        meta.count(f"TIU_{core}", "dropped: TIU edge stray", dropped)
        warn("edge-stray", f"TIU core {core}: {dropped} stray record(s) at the stream edges dropped "
             "(CV84X6 writes one at each end)")
        return tiu.take(keep)
    return tiu
