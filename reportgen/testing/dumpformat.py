"""Binary layouts of the TPU PMU dump (shared by the synthetic writer and the decoder).

Facts from shared/spec/pmu-dump-format.md §3-§7: block container, PMU record layouts, the
DYN_DATA node word and the DYN_EXTRA / BLOCK_DES_KV sub-record headers. Everything is little
endian. Structured dtypes let both sides read or write whole record arrays with
``np.frombuffer`` / ``ndarray.tobytes()`` instead of a Python loop per record.
"""
from __future__ import annotations

from enum import IntEnum

import numpy as np


class BlockType(IntEnum):
    """TLV block types of ``cdmlib*.profile`` / ``cdma*.profile`` (§4)."""

    SUMMARY = 1
    COMPILER_LOG = 2
    MONITOR_BD = 3          # TIU PMU records (TIU_RECORD)
    MONITOR_GDMA = 4        # GDMA PMU records (DMA_RECORD)
    DYN_DATA = 5            # u32 node words (§6)
    DYN_EXTRA = 6           # DYN_EXTRA_HEADER + descriptor, repeated (§7.1)
    FIRMWARE_LOG = 7
    COMMAND = 8
    BMLIB = 9
    BMLIB_EXTRA = 10
    MONITOR_SDMA = 11       # SDMA PMU records (DMA_RECORD)
    MONITOR_CDMA = 12       # CDMA PMU records (CDMA_RECORD), cdma*.profile only
    BLOCK_DES_BDC = 13
    BLOCK_DES_GDMA = 14
    BLOCK_DES_SDMA = 15
    BLOCK_DES_CDMA = 16
    BLOCK_DES_KV = 17       # DES_KV_HEADER + cmd_num descriptors (§7.2)
    BLOCK_DYN_SUBNET_ANCHOR = 100


#: 8-byte block header: type, payload length in bytes.
BLOCK_HEADER = np.dtype([("type", "<u4"), ("length", "<u4")])

#: TIU PMU record, 16 B (§5.1). ``thread_id_and_bank_conflict``: bit 0 thread id,
#: bits 31..1 bank-conflict count; the whole word == 2 marks a system (send/wait) record.
TIU_RECORD = np.dtype([
    ("inst_start_time", "<u4"),
    ("inst_end_time", "<u4"),
    ("inst_id", "<u4"),
    ("thread_id_and_bank_conflict", "<u4"),
])

#: GDMA / SDMA PMU record, 64 B (§5.2). ``thread_id_and_latency``: bit 0 thread id,
#: bits 19..1 ar_latency_cnt, bits 31..20 rip_valid_latency.
#: Data size (B) = gif_mem_w_cntr + axi_d0_w_cntr; a record whose
#: axi_d0_wr_vaild_cntr + axi_d0_rd_vaild_cntr == 0 looks like a system record.
DMA_RECORD = np.dtype([
    ("inst_start_time", "<u4"),
    ("inst_end_time", "<u4"),
    ("inst_id", "<u4"),
    ("thread_id_and_latency", "<u4"),
    ("gif_wr_rd_stall_cntr", "<u4"),
    ("axi_d0_w_cntr", "<u4"),
    ("axi_d0_ar_cntr", "<u4"),
    ("axi_d0_aw_cntr", "<u4"),
    ("axi_d0_wr_stall_cntr", "<u4"),
    ("axi_d0_rd_stall_cntr", "<u4"),
    ("gif_mem_w_cntr", "<u4"),
    ("gif_mem_ar_cntr", "<u4"),
    ("axi_d0_wr_vaild_cntr", "<u4"),   # (sic) vendor spelling
    ("axi_d0_rd_vaild_cntr", "<u4"),
    ("gif_wr_valid_cntr", "<u4"),
    ("gif_rd_valid_cntr", "<u4"),
])

#: CDMA PMU record, 128 B (§5.3). ``inst_id_and_thread``: bits 23..0 inst_id (1-based,
#: restarts at 1 per launch), bit 24 thread id (TX/RX). m0_data_aw_cntr is the data size;
#: 0 marks a system record.
CDMA_RECORD = np.dtype([
    ("inst_start_time", "<u4"),
    ("inst_end_time", "<u4"),
    ("inst_id_and_thread", "<u4"),
    ("reserved0", "<u4"),
    ("m0_data_aw_cntr", "<u4"),
    ("m0_data_wr_cntr", "<u4"),
    ("m0_data_ar_cntr", "<u4"),
    ("reserved1", "<u4"),
    ("m0_data_wr_valid_cntr", "<u4"),
    ("m0_data_wr_stall_cntr", "<u4"),
    ("m0_data_rd_valid_cntr", "<u4"),
    ("m0_data_rd_stall_cntr", "<u4"),
    ("ati_data_valid_cntr", "<u4"),
    ("ati_data_stall_cntr", "<u4"),
    ("ari_data_valid_cntr", "<u4"),
    ("ari_data_stall_cntr", "<u4"),
    ("ati_txfifo_stall_cntr", "<u4"),
    ("replay_number", "<u4"),
    ("m0_data_b_st", "<u4"),
    ("m0_data_b_end", "<u4"),
    ("m0_data_ar_st", "<u4"),
    ("m0_data_ar_end", "<u4"),
    ("m0_data_aw_st", "<u4"),
    ("m0_data_aw_end", "<u4"),
    ("m0_data_rd_st", "<u4"),
    ("m0_data_rd_end", "<u4"),
    ("m0_data_wr_st", "<u4"),
    ("m0_data_wr_end", "<u4"),
    ("ati_data_st", "<u4"),
    ("ati_data_end", "<u4"),
    ("ari_data_st", "<u4"),
    ("ari_data_end", "<u4"),
])

CDMA_ID_MASK = 0x00FFFFFF
CDMA_THREAD_SHIFT = 24

assert TIU_RECORD.itemsize == 16 and DMA_RECORD.itemsize == 64 and CDMA_RECORD.itemsize == 128

#: Which record dtype each monitor block holds.
MONITOR_RECORD = {
    BlockType.MONITOR_BD: TIU_RECORD,
    BlockType.MONITOR_GDMA: DMA_RECORD,
    BlockType.MONITOR_SDMA: DMA_RECORD,
    BlockType.MONITOR_CDMA: CDMA_RECORD,
}

#: DYN_EXTRA sub-record header, 12 B, followed by ``length`` bytes of descriptor (§7.1).
DYN_EXTRA_HEADER = np.dtype([("profile_id", "<u4"), ("type", "<u4"), ("length", "<u4")])


class ExtraType(IntEnum):
    STRING = 0
    BINARY = 1
    CUSTOM = 100


#: BLOCK_DES_KV payload header, 12 B, followed by cmd_num descriptors (§7.2).
DES_KV_HEADER = np.dtype([("key", "<u4"), ("cmd_num", "<u4"), ("id", "<u4")])


class DynType(IntEnum):
    """DYN_DATA node ``type`` (bits 6..0 of the word, §6.2)."""

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


#: DYN_DATA word fields: name -> (bit offset, width) (§6.1). ``packed`` = word >> 7 overlaps
#: engine..extra_info and carries FUNC byte lengths, BATCH_IDX values and DES offsets.
DYN_FIELDS = {
    "type": (0, 7),
    "engine": (7, 3),
    "des_tsk_typ": (10, 5),
    "des_tsk_eu_typ": (15, 5),
    "extra_info": (20, 12),
}
DYN_PACKED_SHIFT = 7

#: Engine field codes per chip (§1). AKSV has no HAU.
ENGINE_CODES = {
    "AKS": {"TIU": 0, "GDMA": 1, "HAU": 2, "SDMA": 3, "CDMA": 4, "VSDMA": 5},
    "AKSV": {"TIU": 0, "GDMA": 1, "SDMA": 2, "CDMA": 3, "VSDMA": 4},
}

#: Chip constants used by writer and reader (§1).
CHIPS = {
    "AKS": {"arch": 8800, "core_num": 8, "cdma_num": 11, "tiu_mhz": 1000, "dma_mhz": 1000},
    "AKSV": {"arch": 140814, "core_num": 4, "cdma_num": 10, "tiu_mhz": 1000, "dma_mhz": 1000},
}

#: Memory codes in DMA extra_info (bits 5..4 src, 7..6 dst); 3 is invalid.
MEM_CODES = {"DDR": 0, "L2M": 1, "LMEM": 2}
#: DMA DATATYPE codes (extra_info bits 3..0 and src_data_format).
DMA_DTYPES = {"INT8": 0, "FP16": 1, "FP32": 2, "INT16": 3, "INT32": 4, "BFP16": 5,
              "INT4": 6, "FP8": 7, "FP20": 8, "TF32": 9}
#: Address tag (bits 44..40 of a 45-bit address) -> memory (§8.3); other tags are DDR.
ADDR_TAG_MEM = {31: "LMEM", 30: "L2M"}

#: Number of profile-init commands per TIU/GDMA/SDMA stream and per engine in DYN_DATA (§9.2).
PROFILE_INIT_CMD_NUM = 2


def pack_dyn_words(type_, engine=0, tsk_typ=0, eu_typ=0, extra_info=0) -> np.ndarray:
    """Vectorised DYN_DATA word packing (§6.1); arguments are scalars or equal-length arrays."""
    t = np.asarray(type_, np.uint32)
    w = (t & 0x7F) | ((np.asarray(engine, np.uint32) & 0x7) << 7)
    w |= (np.asarray(tsk_typ, np.uint32) & 0x1F) << 10
    w |= (np.asarray(eu_typ, np.uint32) & 0x1F) << 15
    w |= (np.asarray(extra_info, np.uint32) & 0xFFF) << 20
    return w.astype("<u4")


def pack_dyn_packed(type_, packed) -> np.ndarray:
    """Words carrying a 25-bit number above the type (FUNC length, BATCH_IDX, DES offset)."""
    return ((np.asarray(type_, np.uint32) & 0x7F)
            | ((np.asarray(packed, np.uint32) & 0x1FFFFFF) << 7)).astype("<u4")


def unpack_dyn_words(words: np.ndarray) -> dict[str, np.ndarray]:
    """Split DYN_DATA words into their fields (all arrays of the input's length)."""
    w = np.asarray(words, np.uint32)
    out = {name: (w >> off) & ((1 << width) - 1) for name, (off, width) in DYN_FIELDS.items()}
    out["packed"] = w >> DYN_PACKED_SHIFT
    return out


def dma_extra_info(dtype_code, src_mem, dst_mem, port=0):
    """extra_info of a DMA / CDMA node: dtype 3..0, src 5..4, dst 7..6, CDMA port 11..8."""
    return ((np.asarray(dtype_code) & 0xF) | ((np.asarray(src_mem) & 3) << 4)
            | ((np.asarray(dst_mem) & 3) << 6) | ((np.asarray(port) & 0xF) << 8))


def func_name_words(name: str) -> np.ndarray:
    """FUNC record: header word (byte length) + the UTF-8 bytes packed LE in zero-padded words."""
    raw = name.encode("utf-8")
    pad = raw + b"\0" * (-len(raw) % 4)
    return np.concatenate([pack_dyn_packed([DynType.FUNC], [len(raw)]),
                           np.frombuffer(pad, "<u4")]).astype("<u4")


def block_bytes(block_type: int, payload: bytes) -> bytes:
    """One TLV block: u32 type, u32 length, payload."""
    return np.array([(int(block_type), len(payload))], BLOCK_HEADER).tobytes() + payload
