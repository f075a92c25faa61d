"""Binary layouts of a PMU dump: TLV block types, PMU record dtypes, dynamic-node word fields.

Facts from shared/spec/pmu-dump-format.md §4-§7. Everything is little endian. The synthetic
dump writer (reportgen.testing.synth) uses the same tables, so reader and writer cannot drift.
"""
from __future__ import annotations

from enum import IntEnum

import numpy as np


class Block(IntEnum):
    SUMMARY = 1
    COMPILER_LOG = 2
    MONITOR_BD = 3
    MONITOR_GDMA = 4
    DYN_DATA = 5
    DYN_EXTRA = 6
    FIRMWARE_LOG = 7
    COMMAND = 8
    BMLIB = 9
    BMLIB_EXTRA = 10
    MONITOR_SDMA = 11
    MONITOR_CDMA = 12
    BLOCK_DES_BDC = 13
    BLOCK_DES_GDMA = 14
    BLOCK_DES_SDMA = 15
    BLOCK_DES_CDMA = 16
    BLOCK_DES_KV = 17
    BLOCK_DYN_SUBNET_ANCHOR = 100


BLOCK_HEADER = np.dtype([("type", "<u4"), ("length", "<u4")])

TIU_RECORD = np.dtype([
    ("inst_start_time", "<u4"),
    ("inst_end_time", "<u4"),
    ("inst_id", "<u4"),
    ("thread_id_and_bank_conflict", "<u4"),   # bit 0 thread, 31..1 bank conflicts
])

DMA_RECORD = np.dtype([   # GDMA and SDMA
    ("inst_start_time", "<u4"),
    ("inst_end_time", "<u4"),
    ("inst_id", "<u4"),
    ("thread_and_latency", "<u4"),            # bit 0 thread, 19..1 ar_latency, 31..20 rip_valid
    ("gif_wr_rd_stall_cntr", "<u4"),
    ("axi_d0_w_cntr", "<u4"),
    ("axi_d0_ar_cntr", "<u4"),
    ("axi_d0_aw_cntr", "<u4"),
    ("axi_d0_wr_stall_cntr", "<u4"),
    ("axi_d0_rd_stall_cntr", "<u4"),
    ("gif_mem_w_cntr", "<u4"),
    ("gif_mem_ar_cntr", "<u4"),
    ("axi_d0_wr_vaild_cntr", "<u4"),
    ("axi_d0_rd_vaild_cntr", "<u4"),
    ("gif_wr_valid_cntr", "<u4"),
    ("gif_rd_valid_cntr", "<u4"),
])

_CDMA_TAIL = [
    "m0_data_wr_valid_cntr", "m0_data_wr_stall_cntr", "m0_data_rd_valid_cntr",
    "m0_data_rd_stall_cntr", "ati_data_valid_cntr", "ati_data_stall_cntr",
    "ari_data_valid_cntr", "ari_data_stall_cntr", "ati_txfifo_stall_cntr", "replay_number",
    "m0_data_b_st", "m0_data_b_end", "m0_data_ar_st", "m0_data_ar_end", "m0_data_aw_st",
    "m0_data_aw_end", "m0_data_rd_st", "m0_data_rd_end", "m0_data_wr_st", "m0_data_wr_end",
    "ati_data_st", "ati_data_end", "ari_data_st", "ari_data_end",
]
CDMA_RECORD = np.dtype([
    ("inst_start_time", "<u4"),
    ("inst_end_time", "<u4"),
    ("inst_id_word", "<u4"),                  # 23..0 inst_id (1-based), bit 24 thread (TX/RX)
    ("reserved0", "<u4"),
    ("m0_data_aw_cntr", "<u4"),
    ("m0_data_wr_cntr", "<u4"),
    ("m0_data_ar_cntr", "<u4"),
    ("reserved1", "<u4"),
] + [(name, "<u4") for name in _CDMA_TAIL])

assert TIU_RECORD.itemsize == 16 and DMA_RECORD.itemsize == 64 and CDMA_RECORD.itemsize == 128

#: BM1688 PMU records (spec chips-bm1688-cv84x6.md §4.1, §4.2)
BM1688_TIU_RECORD = np.dtype([
    ("inst_start_time", "<u4"),
    ("inst_end_time", "<u4"),
    ("inst_id_and_load", "<u8"),              # 15..0 inst_id, 63..16 computation_load
    ("num_read", "<u4"), ("num_read_stall", "<u4"), ("num_write", "<u4"), ("reserved", "<u4"),
])
BM1688_PORTS = ("axi_d0", "axi_d1", "gif_fmem", "gif_l2sram")
BM1688_GDMA_RECORD = np.dtype(
    [("inst_start_time", "<u4"), ("inst_end_time", "<u4"), ("inst_id_word", "<u4")]   # 19..0 id
    + [(f"{p}_{c}_bytes", "<u4") for p in BM1688_PORTS for c in ("aw", "wr", "ar")]
    + [("reserved0", "<u4")]
    + [(f"{p}_{d}_valid_bytes", "<u4") for p in BM1688_PORTS for d in ("wr", "rd")]
    + [(f"{p}_{d}_stall_bytes", "<u4") for p in BM1688_PORTS for d in ("wr", "rd")]
    + [("channel_times", "<u4", (32,))])      # per-channel end/start pairs, not reported
assert BM1688_TIU_RECORD.itemsize == 32 and BM1688_GDMA_RECORD.itemsize == 256
#: record layout family (Chip.records) -> engine -> dtype; CV84X6 uses the AKS sizes
RECORD_LAYOUTS = {
    "AKS": {"TIU": TIU_RECORD, "GDMA": DMA_RECORD, "SDMA": DMA_RECORD, "CDMA": CDMA_RECORD},
    "BM1688": {"TIU": BM1688_TIU_RECORD, "GDMA": BM1688_GDMA_RECORD, "SDMA": BM1688_GDMA_RECORD,
               "CDMA": CDMA_RECORD},
    "CV84X6": {"TIU": TIU_RECORD, "GDMA": DMA_RECORD, "SDMA": DMA_RECORD, "CDMA": CDMA_RECORD},
}

#: monitor block type -> (engine name, record dtype)
MONITOR_BLOCKS = {
    Block.MONITOR_BD: ("TIU", TIU_RECORD),
    Block.MONITOR_GDMA: ("GDMA", DMA_RECORD),
    Block.MONITOR_SDMA: ("SDMA", DMA_RECORD),
    Block.MONITOR_CDMA: ("CDMA", CDMA_RECORD),
}


class Node(IntEnum):
    """DYN_DATA record types (bits 6..0 of a word)."""

    FUNC = 0
    NODE_SET = 1
    NODE_WAIT = 2
    CDMA = 3
    GDE = 4
    SORT = 5
    NMS = 6
    VSDMA = 7
    DES_TIU = 8
    DES_GDMA = 9
    DES_SDMA = 10
    DES_CDMA = 11
    ID_RESET = 12
    RVT_NODE_SET = 13
    BATCH_IDX = 14
    FUNC_END = 15
    CUSTOM = 100
    UNKNOWN = 127


IGNORED_NODES = {Node.NODE_WAIT, Node.CDMA, Node.GDE, Node.SORT, Node.NMS, Node.VSDMA,
                 Node.CUSTOM, Node.UNKNOWN}


def node_fields(words: np.ndarray) -> dict[str, np.ndarray]:
    """Split DYN_DATA words into their bit fields (spec §6.1), each in the smallest unsigned
    type that holds it (a million words: 10 MB instead of 28; cast before arithmetic)."""
    w = words.astype(np.uint32, copy=False)
    return {
        "type": (w & 0x7F).astype(np.uint8),
        "engine": ((w >> 7) & 0x7).astype(np.uint8),
        "des_tsk_typ": ((w >> 10) & 0x1F).astype(np.uint8),
        "des_tsk_eu_typ": ((w >> 15) & 0x1F).astype(np.uint8),
        "extra_info": ((w >> 20) & 0xFFF).astype(np.uint16),
        "packed": w >> 7,
    }


def pack_node(type_: int, engine: int = 0, tsk_typ: int = 0, eu: int = 0, extra: int = 0) -> int:
    return (type_ & 0x7F) | (engine & 7) << 7 | (tsk_typ & 0x1F) << 10 | (eu & 0x1F) << 15 | (extra & 0xFFF) << 20


DYN_EXTRA_HEADER = np.dtype([("profile_id", "<u4"), ("type", "<u4"), ("length", "<u4")])
DES_KV_HEADER = np.dtype([("key", "<u4"), ("cmd_num", "<u4"), ("id", "<u4")])

#: memory codes of the dynamic node extra_info and names of the address tags
MEM_NAMES = {0: "DDR", 1: "L2M", 2: "LMEM"}
#: data type codes (DATATYPE) shared by TIU precisions and DMA src_data_format
DTYPE_NAMES = {0: "INT8", 1: "FP16", 2: "FP32", 3: "INT16", 4: "INT32", 5: "BFP16", 6: "INT4",
               7: "FP8", 8: "FP20", 9: "TF32"}
