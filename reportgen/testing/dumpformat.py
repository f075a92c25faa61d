"""Binary layouts of the TPU PMU dump, writer side (synthetic dumps).

Facts from shared/spec/pmu-dump-format.md §3-§7: block container, PMU record layouts, the
DYN_DATA node word and the DYN_EXTRA / BLOCK_DES_KV sub-record headers. Everything is little
endian. Structured dtypes let both sides read or write whole record arrays with
``np.frombuffer`` / ``ndarray.tobytes()`` instead of a Python loop per record.
"""
from __future__ import annotations

from enum import IntEnum

import numpy as np


# The record layouts, block and node enums live with the decoder (one definition, so reader
# and writer cannot drift); this module re-exports them under the writer's names and adds the
# writer-side packing helpers and chip constants.
from reportgen.parsers.pmu.records import (  # noqa: E402,F401
    BLOCK_HEADER, CDMA_RECORD, DES_KV_HEADER, DMA_RECORD, DYN_EXTRA_HEADER, TIU_RECORD,
    Block as BlockType, Node as DynType)

CDMA_ID_MASK = 0x00FFFFFF
CDMA_THREAD_SHIFT = 24

#: Which record dtype each monitor block holds.
MONITOR_RECORD = {
    BlockType.MONITOR_BD: TIU_RECORD,
    BlockType.MONITOR_GDMA: DMA_RECORD,
    BlockType.MONITOR_SDMA: DMA_RECORD,
    BlockType.MONITOR_CDMA: CDMA_RECORD,
}


class ExtraType(IntEnum):
    """DYN_EXTRA sub-record type (§7.1)."""

    STRING = 0
    BINARY = 1
    CUSTOM = 100


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
    "AKS": {"arch": 8800, "bmodel_arch": 5, "core_num": 8, "cdma_num": 11, "tiu_mhz": 1000,
            "dma_mhz": 1000},
    "AKSV": {"arch": 140814, "bmodel_arch": 6, "core_num": 4, "cdma_num": 10, "tiu_mhz": 1000,
             "dma_mhz": 1000},
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
