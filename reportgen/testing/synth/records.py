"""PMU monitor records (TIU, GDMA/SDMA, CDMA) with counters consistent with each command's
bytes and direction (§5)."""
from __future__ import annotations

import numpy as np

from reportgen.testing import dumpformat as df
from reportgen.testing.synth.catalogue import OP_DST, OP_INDEX, OP_SRC, OP_TYP

U32 = 1 << 32


def dma_records(rows: dict[str, np.ndarray], rng) -> np.ndarray:
    """MONITOR_GDMA/SDMA records with counters consistent with bytes and direction (§5.2)."""
    n = len(rows["start_raw"])
    r = np.zeros(n, df.DMA_RECORD)
    r["inst_start_time"] = rows["start_raw"] % U32
    r["inst_end_time"] = rows["end_raw"] % U32
    r["inst_id"] = rows["pmu_id"]
    b = rows["bytes"]
    src, dst = OP_SRC[rows["op"]], OP_DST[rows["op"]]
    work = b > 0
    beats = -(-b // 128)
    bursts = -(-b // 2048)
    s_axi = work & (src != "LMEM")
    d_axi = work & (dst != "LMEM")
    lat = rng.integers(8, 400, n) << 1 | rng.integers(20, 200, n) << 20
    r["thread_and_latency"] = np.where(work, lat, 0)       # thread 0, latencies in 19..1/31..20
    r["gif_wr_rd_stall_cntr"] = np.where(work, rng.integers(0, 200, n), 0)
    r["axi_d0_w_cntr"] = np.where(d_axi, b, 0)
    r["axi_d0_ar_cntr"] = np.where(s_axi, bursts, 0)
    r["axi_d0_aw_cntr"] = np.where(d_axi, bursts, 0)
    r["axi_d0_wr_stall_cntr"] = np.where(d_axi, rng.integers(0, 100, n), 0)
    r["axi_d0_rd_stall_cntr"] = np.where(s_axi, rng.integers(0, 70, n), 0)
    r["gif_mem_w_cntr"] = np.where(work & ~d_axi, b, 0)
    r["gif_mem_ar_cntr"] = np.where(work & ~s_axi, b, 0)
    r["axi_d0_wr_vaild_cntr"] = np.where(d_axi, beats, 0)
    r["axi_d0_rd_vaild_cntr"] = np.where(s_axi, beats, 0)
    r["gif_wr_valid_cntr"] = np.where(work & ~d_axi, beats, 0)
    r["gif_rd_valid_cntr"] = np.where(work & ~s_axi, beats, 0)
    return r


def tiu_records(rows, rng) -> np.ndarray:
    n = len(rows["start_raw"])
    r = np.zeros(n, df.TIU_RECORD)
    r["inst_start_time"] = rows["start_raw"] % U32
    r["inst_end_time"] = rows["end_raw"] % U32
    r["inst_id"] = rows["pmu_id"]
    sys_ = OP_TYP[rows["op"]] == 15
    bank = rng.integers(0, 40, n) * 2          # thread 0, even bank-conflict counts
    bank[bank == 2] = 4                         # the word 2 marks system records only
    r["thread_id_and_bank_conflict"] = np.where(sys_, 2, bank)
    return r


def cdma_records(rows, rng) -> np.ndarray:
    n = len(rows["start_raw"])
    r = np.zeros(n, df.CDMA_RECORD)
    s, e = rows["start_raw"] % U32, rows["end_raw"] % U32
    r["inst_start_time"], r["inst_end_time"] = s, e
    # thread bit: RX channel for receives and for the tx_wait/nop sync pair (as captured)
    rx = np.isin(rows["op"], [OP_INDEX["cd_recv"], OP_INDEX["cd_tx_wait"], OP_INDEX["cd_nop"]])
    r["inst_id_word"] = (rows["pmu_id"] & df.CDMA_ID_MASK) | (rx.astype(np.int64)
                                                              << df.CDMA_THREAD_SHIFT)
    b = rows["bytes"]
    work = b > 0
    beats = -(-b // 128)
    send = rows["op"] == OP_INDEX["cd_send"]
    r["m0_data_aw_cntr"] = b
    r["m0_data_wr_cntr"] = beats
    r["m0_data_ar_cntr"] = b
    r["m0_data_wr_valid_cntr"] = beats
    r["m0_data_wr_stall_cntr"] = np.where(work, rng.integers(0, 500, n), 0)
    r["m0_data_rd_valid_cntr"] = beats
    r["m0_data_rd_stall_cntr"] = np.where(work, rng.integers(0, 500, n), 0)
    r["ati_data_valid_cntr"] = np.where(send, beats, 0)
    r["ari_data_valid_cntr"] = np.where(work & ~send, beats, 0)
    for a in ("m0_data_b", "m0_data_ar", "m0_data_aw", "m0_data_rd", "m0_data_wr", "ati_data",
              "ari_data"):
        r[a + "_st"] = np.where(work, (s + 40) % U32, 0)
        r[a + "_end"] = np.where(work, (e - 20) % U32, 0)
    return r
