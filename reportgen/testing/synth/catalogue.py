"""What the generator can emit: the operations (with their engine, register layout and cost) and
the multi-core kernels built from them, plus per-op lookup arrays so that no code runs per
command."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reportgen.testing import dumpformat as df

ENGINE_ORDER = {"TIU": 0, "GDMA": 1, "SDMA": 2, "CDMA": 3}


@dataclass(frozen=True)
class Op:
    name: str          # the generator's short name (truth column "op")
    engine: str        # TIU / DMA (GDMA or SDMA, chosen by the kernel slot) / CDMA
    layout: str        # register-table op
    typ: int           # TIU tsk_typ / DMA cmd_type / CDMA cmd_type
    eu: int            # TIU tsk_eu_typ / DMA special function
    src: str = ""      # DMA memories
    dst: str = ""
    cost: float = 1.0  # TIU: ops per result element (x channels for cube ops); DMA: unused
    cube: bool = False  # conv / matmul run on the cube (CUBE_OPS_PER_CYCLE), others on lanes


OPS = {o.name: o for o in [
    Op("conv", "TIU", "sCONV", 0, 0, cost=18.0, cube=True),
    Op("mm2_nn", "TIU", "sMM2", 2, 4, cost=2.0, cube=True),
    Op("mm2_nt", "TIU", "sMM2", 2, 5, cost=2.2, cube=True),
    Op("ar_mul", "TIU", "sAR", 3, 0, cost=1.0),
    Op("ar_add", "TIU", "sAR", 3, 2, cost=1.0),
    Op("ar_sub", "TIU", "sAR", 3, 3, cost=1.0),
    Op("ar_max", "TIU", "sAR", 3, 4, cost=1.0),
    Op("ar_cast", "TIU", "sAR", 3, 14, cost=1.2),
    Op("ar_copy", "TIU", "sAR", 3, 19, cost=0.8),
    Op("pool_avg", "TIU", "sPorD", 1, 1, cost=4.0),
    Op("pool_max", "TIU", "sPorD", 1, 4, cost=4.0),
    Op("rq0", "TIU", "sRQ&sDQ", 4, 0, cost=2.0),
    Op("dq0", "TIU", "sRQ&sDQ", 4, 3, cost=2.0),
    Op("lane_bc", "TIU", "sCW&sBC", 5, 3, cost=1.0),
    Op("cw_trans", "TIU", "sCW&sBC", 5, 0, cost=1.5),
    Op("sfu_rsqrt", "TIU", "sSFU", 9, 17, cost=8.0),
    Op("sfu_taylor", "TIU", "sSFU", 9, 13, cost=10.0),
    Op("lin_mac", "TIU", "sLIN", 10, 1, cost=2.0),
    Op("tiu_send", "TIU", "SYS", 15, 8),
    Op("tiu_wait", "TIU", "SYS", 15, 9),
    Op("ld", "DMA", "DMA_tensor", 0, 0, "DDR", "LMEM"),
    Op("ld_bcast", "DMA", "DMA_tensor", 0, 3, "DDR", "LMEM"),
    Op("ld_l2", "DMA", "DMA_tensor", 0, 0, "L2M", "LMEM"),
    Op("st", "DMA", "DMA_tensor", 0, 0, "LMEM", "DDR"),
    Op("mv", "DMA", "DMA_tensor", 0, 0, "LMEM", "LMEM"),
    Op("sd_cp", "DMA", "DMA_tensor", 0, 0, "DDR", "DDR"),
    Op("sd_l2", "DMA", "DMA_tensor", 0, 0, "DDR", "L2M"),
    Op("dma_send", "DMA", "sDMA_sys", 6, 3),
    Op("dma_wait", "DMA", "sDMA_sys", 6, 4),
    Op("cd_send", "CDMA", "CDMA_send", 0, 0, "DDR", "DDR"),
    Op("cd_recv", "CDMA", "CDMA_receive", 4, 0, "DDR", "DDR"),
    Op("cd_tx_wait", "CDMA", "sCDMA_sys", 7, 4),
    Op("cd_nop", "CDMA", "sCDMA_sys", 7, 1),
]}
OP_NAMES = list(OPS)
OP_INDEX = {n: i for i, n in enumerate(OP_NAMES)}
CUBE_OPS_PER_CYCLE = 8192.0     # conv / matmul MACs x 2 per cycle of one core (BF16)
LANE_OPS_PER_CYCLE = 256.0      # element ops per cycle on the 64 lanes
MEM_TAG = {"DDR": 1, "L2M": 30, "LMEM": 31}       # address tag bits 44..40 (§8.3)
DTYPE_SIZE = {0: 1, 1: 2, 2: 4, 5: 2}              # INT8, FP16, FP32, BF16 bytes per element

# per-op lookup tables (indexed by op index) so no per-command Python code is needed
OP_TYP = np.array([OPS[n].typ for n in OP_NAMES], np.int64)
OP_EU = np.array([OPS[n].eu for n in OP_NAMES], np.int64)
OP_COST = np.array([OPS[n].cost for n in OP_NAMES])
OP_CUBE = np.array([OPS[n].cube for n in OP_NAMES])
OP_SRC = np.array([OPS[n].src for n in OP_NAMES], object)
OP_DST = np.array([OPS[n].dst for n in OP_NAMES], object)
OP_LAYOUT = np.array([OPS[n].layout for n in OP_NAMES], object)
OP_SRC_TAG = np.array([MEM_TAG.get(OPS[n].src, 1) for n in OP_NAMES], np.int64)
OP_DST_TAG = np.array([MEM_TAG.get(OPS[n].dst, 1) for n in OP_NAMES], np.int64)
OP_SRC_MEM = np.array([df.MEM_CODES.get(OPS[n].src, 0) for n in OP_NAMES], np.int64)
OP_DST_MEM = np.array([df.MEM_CODES.get(OPS[n].dst, 0) for n in OP_NAMES], np.int64)


def engine_order(eng: np.ndarray) -> np.ndarray:
    """ENGINE_ORDER code of an array of engine names (vectorised)."""
    return np.select([eng == "TIU", eng == "GDMA", eng == "SDMA"], [0, 1, 2], 3).astype(np.int64)


@dataclass(frozen=True)
class Kind:
    """A multi-core kernel: one double-buffered loop iteration and optional SDMA / CDMA work.

    Each slot is a tuple of (op name | None, weight) alternatives drawn per iteration; None skips
    the slot in that iteration.
    """

    name: str
    func: str
    loads: tuple
    computes: tuple
    stores: tuple
    sdma: tuple = ()         # SDMA ops issued at kernel start
    cdma: bool = False       # CDMA send/recv traffic on the core's port
    dtype: int = 5           # DMA data type code (BF16)
    tiu_prec: int = 2        # TIU result precision (FP32)


KINDS = {k.name: k for k in [
    Kind("conv", "tpu_conv2d_fwd_multi_core",
         loads=((("ld", 1),), (("ld_l2", 1), (None, 3))),
         computes=((("conv", 1),), (("ar_max", 1),), (("ar_cast", 2), ("pool_max", 1))),
         stores=((("st", 1),),)),
    Kind("matmul", "tpu_matmul_bf16_multi_core",
         loads=((("ld", 1),), (("ld_l2", 1),)),
         computes=((("mm2_nn", 3), ("mm2_nt", 1)), (("mm2_nn", 1), (None, 1)),
                   (("ar_add", 1),), (("ar_cast", 1),)),
         stores=((("st", 1),),), sdma=("sd_l2", "sd_l2", "sd_l2")),
    Kind("norm", "tpu_layernorm_fwd_multi_core",
         loads=((("ld", 1),), (("ld_bcast", 1), (None, 6))),
         computes=((("pool_avg", 1),), (("lane_bc", 1),), (("ar_sub", 1),), (("ar_mul", 1),),
                   (("sfu_rsqrt", 1), (None, 1)), (("ar_mul", 1),), (("cw_trans", 1), (None, 4))),
         stores=((("st", 1),),)),
    Kind("quant", "tpu_requant_int8_multi_core",
         loads=((("ld", 1),),),
         computes=((("dq0", 1),), (("ar_add", 1), ("ar_mul", 1)), (("lin_mac", 1), (None, 3)),
                   (("rq0", 1),), (("sfu_taylor", 1), (None, 5))),
         stores=((("st", 1),), (("mv", 1), (None, 6))), sdma=("sd_cp", "sd_cp", "sd_cp"),
         dtype=0, tiu_prec=0),
    Kind("collective", "tpu_c2c_all_reduce",    # GDMA waits for the peer's chunk, then loads
         loads=((("dma_wait", 1), (None, 2)), (("ld", 1),)),
         computes=((("ar_add", 1),), (("ar_add", 1), ("ar_copy", 1))),
         stores=((("st", 1),),), cdma=True, dtype=2),
    Kind("eltwise_long", "tpu_eltwise_add_long",      # used for the 16-bit id-wrap option
         loads=((("ld", 1),),),
         computes=tuple(((("ar_add", 1),),) * 8),
         stores=((("st", 1),),)),
    Kind("prefetch", "tpu_weight_prefetch",             # ring option: overwritten GDMA work
         loads=((("ld_l2", 1),), (("ld", 1),)),
         computes=((("ar_copy", 1), (None, 3)),), stores=()),
    Kind("kv_copy", "tpu_kv_cache_copy",                # ring option: GDMA-heavy tail kernel
         loads=((("ld", 1),),),
         computes=((("ar_copy", 1), (None, 7)),), stores=((("st", 1),),)),
]}
REGULAR_KINDS = ("conv", "matmul", "norm", "quant", "collective")
