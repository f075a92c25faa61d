"""The per-port DMA counters of BM1688 and CV84X6 that the common columns do not hold
(spec chips-bm1688-cv84x6.md §4.2, §4.4, §8.2): global- and local-memory bytes, their
bandwidths, local-memory transactions, and CV84X6's thread id and AR latency.

``record_columns`` reads them from the PMU records (called by ``streams``); ``describe`` turns
them into model columns once the command's direction and descriptor are known (called by
``describe``). Values that do not apply are -1 (integers) or NaN: never a made-up 0.
"""
from __future__ import annotations

import numpy as np

#: model columns added for these chips' DMA commands and their value when unknown
COLUMNS = {"gmem_bytes": -1, "lmem_bytes": -1, "lmem_xact": -1, "ar_latency": -1,
           "gmem_bw": np.nan, "lmem_bw": np.nan}
#: integer columns among them (nullable in the model)
INT_COLUMNS = ("gmem_bytes", "lmem_bytes", "lmem_xact", "ar_latency")


def record_columns(layout: str, rec: np.ndarray) -> dict[str, np.ndarray]:
    """Stream columns of one GDMA monitor block's records."""
    col = lambda name: rec[name].astype(np.int64)  # noqa: E731
    if layout == "CV84X6":
        word = col("thread_and_latency")            # bit 0 thread, 19..1 AR latency (AKS layout)
        return {"thread_id": word & 1, "ar_latency": (word >> 1) & 0x7FFFF,
                "lmem_bytes": col("gif_mem_w_cntr") + col("gif_mem_ar_cntr"),
                "lmem_xact": col("gif_wr_valid_cntr") + col("gif_rd_valid_cntr")}
    # BM1688: address-channel bytes of the two global-memory AXI ports and of local memory
    return {"gmem_bytes": col("axi_d0_aw_bytes") + col("axi_d1_aw_bytes") + col("axi_d0_ar_bytes")
            + col("axi_d1_ar_bytes"),
            "lmem_bytes": col("gif_fmem_aw_bytes") + col("gif_fmem_ar_bytes")}


def describe(chip: str, s, with_desc: np.ndarray, ddr: np.ndarray, known: np.ndarray,
             dur_ns: np.ndarray) -> dict[str, np.ndarray]:
    """Model columns of a GDMA stream of ``chip`` (empty for other chips).

    CV84X6 (every mode): global-memory bytes = the transfer when the direction touches DDR, else
    0 (unknown without a direction); local-memory bytes = written + read local bytes; the local
    bandwidth is the transfer's.
    BM1688 (with a descriptor, as the reference reports them): the global and local address-
    channel bytes, local transactions = local bytes // 16."""
    if chip == "CV84X6":
        gmem = np.where(known, np.where(ddr, s["bytes"], 0), -1)
        out = {"gmem_bytes": gmem, "lmem_bytes": s["lmem_bytes"], "lmem_xact": s["lmem_xact"],
               "ar_latency": s["ar_latency"], "thread_id": s["thread_id"]}
    elif chip == "BM1688":
        gmem = np.where(with_desc, s["gmem_bytes"], -1)
        lmem = np.where(with_desc, s["lmem_bytes"], -1)
        out = {"gmem_bytes": gmem, "lmem_bytes": lmem, "lmem_xact": np.where(with_desc, lmem // 16, -1)}
    else:
        return {}
    # bandwidths: BM1688 of each side's bytes; CV84X6 of global bytes, and of the transfer for
    # local memory (written + read local bytes count a local move twice)
    local = out["lmem_bytes"] if chip == "BM1688" else s["bytes"]
    for key, size in (("gmem_bw", out["gmem_bytes"]), ("lmem_bw", local)):
        out[key] = np.where(size >= 0, np.round(size / np.maximum(dur_ns, 1e-9), 4), np.nan)
    return out
