"""Synthetic TPU PMU dumps (AKS / AKSV, capture modes 0, 1, 2) with their ground truth.

``write_dump(outdir, SynthConfig(...))`` writes a dump directory that follows the writer checklist
of shared/spec/pmu-dump-format.md §15 and, next to it, the generator truth:

    OUTDIR/cdm_profile_data_dev0-0/   global.profile, cdmlib0_<core>.profile, cdma_<port>.profile
    OUTDIR/expected_commands.csv      every command a decoder should report, in its time frame
    OUTDIR/generator_meta.json        how the dump was made

CLI: ``python -m reportgen.testing.synth --arch AKS --cores 8 --cmds-per-core 1000 --mode 2
--seed 1 OUTDIR`` (console script ``reportgen-synth``).

How a dump is made (everything is whole numpy arrays; Python loops run per kernel, never per
command):

1. A *physical* timeline in ns, shared by all cores: every core runs the same sequence of
   multi-core kernels (conv, matmul, layernorm, requant, all-reduce with CDMA traffic), each a
   double-buffered loop (GDMA loads, TIU compute, GDMA stores, SDMA copies) closed by a TIU
   send/wait barrier. Before the first kernel the profile-init preamble runs: 2 records per
   TIU/GDMA/SDMA stream, TIU record #1 ending at the same physical instant (t = 0) on all cores.
2. Each core has its own free-running u32 counter (random offset, optionally near 2^32); the
   TIU counter runs at ``tiu_freq`` MHz, DMA at 1000 MHz. CDMA ports have their own counter,
   tied to the anchor core by the tx_wait record that ends with the anchor's VSDMA send.
3. Ids: per kernel and engine, in program order (ID_RESET at every kernel); PMU ids are the low
   16 bits (the decoder unwraps 16-bit wraps), CDMA ids are 1-based per launch.
4. Descriptors (mode 2) are packed bit by bit from the register tables
   reportgen/parsers/pmu/data/<arch>.csv by one generic vectorised packer.
5. The truth is obtained by the documented decoder transform (§9, §11) of the raw records the
   writer produced: cycles -> ns per engine clock, core alignment on TIU record #1, CDMA ports
   anchored on the VSDMA sends, earliest kept record at 0 ns.

Options (SynthConfig fields / CLI flags): ``tiu_freq``; ``cdma_ports`` (default 0,1 when the
anchor core CORE_NUM-1 is in the dump; a port is driven by one core); ``idle_cores`` (init
records only); ``time_wrap`` (core 0's faster counter wraps u32 in its first kernel);
``id_wrap`` (core 0 ends with a kernel of > 65536 TIU commands: 16-bit PMU id wrap);
``ring_core`` (that core's GDMA ring is lapped: rotated records, no ``*_record`` lines, the
decoder drops the 2 oldest survivors as "init", Q12); ``rvt_ratio`` (AKSV RVT_NODE_SET kernels,
no descriptors); ``des_ratio`` (kernels dispatched as DES chains in BLOCK_DES_KV);
``batch_idx`` (BATCH_IDX nodes). Same seed and options -> byte-identical files.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.testing import dumpformat as df
from reportgen.writers.atomic import atomic_open

DATA_DIR = Path(__file__).resolve().parent.parent / "parsers" / "pmu" / "data"

TRUTH_COLUMNS = ["core", "engine", "port", "cmd_id", "start_ns", "end_ns", "register_layout",
                 "op", "tsk_or_cmd_type", "eu_or_special", "bytes", "src", "dst", "kernel",
                 "dep_cmd_id"]
ENGINE_ORDER = {"TIU": 0, "GDMA": 1, "SDMA": 2, "CDMA": 3}
U32 = 1 << 32
PMU_ID_MASK = 0xFFFF          # PMU inst_id counters are 16 bit (the decoder unwraps)
ID_WRAP_DANGER = (65001, 65535)  # a run must not end at a raw id here when a reset follows (§15.4)


# ----------------------------------------------------------------------------------------------
# Register tables and the generic bit packer
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    op: str
    nbits: int
    fields: dict[str, tuple[int, int]]   # field -> (bit offset, width)

    @property
    def nbytes(self) -> int:
        return self.nbits // 8


@lru_cache(maxsize=None)
def register_layouts(arch: str) -> dict[str, Layout]:
    """Register-table op name (full-width suffix like '（0x000）' removed) -> Layout."""
    table = pd.read_csv(DATA_DIR / f"{arch}.csv")
    out = {}
    for op, rows in table.groupby("op", sort=False):
        name = str(op).split("（")[0]
        fields = {}
        for r in rows.itertuples(index=False):
            fields.setdefault(r.field, (int(r.bit_offset), int(r.bit_width)))
        out[name] = Layout(name, int(rows["descriptor_bits"].iloc[0]), fields)
    return out


def pack_descriptors(layout: Layout, n: int, values: dict[str, object]) -> np.ndarray:
    """Pack ``n`` descriptors of one layout; ``values`` maps field -> scalar or (n,) array.

    Fields the layout does not have are ignored (so one value dict serves AKS and AKSV), missing
    fields are 0. Returns an (n, nbytes) uint8 array, little endian, bit 0 = LSB of byte 0.
    """
    nwords = (layout.nbits + 63) // 64
    words = np.zeros((n, nwords), np.uint64)
    for name, value in values.items():
        if name not in layout.fields:
            continue
        off, width = layout.fields[name]
        v = np.broadcast_to(np.asarray(value, dtype=np.int64).astype(np.uint64), (n,))
        if width < 64:
            v = v & np.uint64((1 << width) - 1)
        wi, sh = divmod(off, 64)
        words[:, wi] |= v << np.uint64(sh)
        if sh and sh + width > 64:
            words[:, wi + 1] |= v >> np.uint64(64 - sh)
    return words.astype("<u8").view(np.uint8).reshape(n, nwords * 8)[:, :layout.nbytes]


def unpack_descriptors(layout: Layout, raw: np.ndarray) -> dict[str, np.ndarray]:
    """Inverse of :func:`pack_descriptors` for an (n, nbytes) uint8 array (used by tests)."""
    n = raw.shape[0]
    nwords = (layout.nbits + 63) // 64
    buf = np.zeros((n, nwords * 8), np.uint8)
    buf[:, :raw.shape[1]] = raw
    words = buf.view("<u8")
    out = {}
    for name, (off, width) in layout.fields.items():
        wi, sh = divmod(off, 64)
        v = words[:, wi] >> np.uint64(sh)
        if sh and sh + width > 64:
            v = v | (words[:, wi + 1] << np.uint64(64 - sh))
        if width < 64:
            v = v & np.uint64((1 << width) - 1)
        out[name] = v
    return out


# ----------------------------------------------------------------------------------------------
# Operation catalogue
# ----------------------------------------------------------------------------------------------

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
_OP_ENGINE = np.array([OPS[n].engine for n in OP_NAMES])
_OP_TYP = np.array([OPS[n].typ for n in OP_NAMES], np.int64)
_OP_EU = np.array([OPS[n].eu for n in OP_NAMES], np.int64)
_OP_COST = np.array([OPS[n].cost for n in OP_NAMES])
_OP_CUBE = np.array([OPS[n].cube for n in OP_NAMES])
CUBE_OPS_PER_CYCLE = 8192.0     # conv / matmul MACs x 2 per cycle of one core (BF16)
LANE_OPS_PER_CYCLE = 256.0      # element ops per cycle on the 64 lanes
_OP_SRC = np.array([OPS[n].src for n in OP_NAMES], object)
_OP_DST = np.array([OPS[n].dst for n in OP_NAMES], object)
_OP_LAYOUT = np.array([OPS[n].layout for n in OP_NAMES], object)

MEM_TAG = {"DDR": 1, "L2M": 30, "LMEM": 31}       # address tag bits 44..40 (§8.3)
DES_KEY_BASE, DES_KEY_STEP = 4096, 256             # BLOCK_DES_KV keys (descriptor offsets)
# per-op lookup tables (indexed by op index) so no per-command Python code is needed
_OP_SRC_TAG = np.array([MEM_TAG.get(OPS[n].src, 1) for n in OP_NAMES], np.int64)
_OP_DST_TAG = np.array([MEM_TAG.get(OPS[n].dst, 1) for n in OP_NAMES], np.int64)
_OP_SRC_MEM = np.array([df.MEM_CODES.get(OPS[n].src, 0) for n in OP_NAMES], np.int64)
_OP_DST_MEM = np.array([df.MEM_CODES.get(OPS[n].dst, 0) for n in OP_NAMES], np.int64)


def _engine_order(eng: np.ndarray) -> np.ndarray:
    """ENGINE_ORDER code of an array of engine names (vectorised)."""
    return np.select([eng == "TIU", eng == "GDMA", eng == "SDMA"], [0, 1, 2], 3).astype(np.int64)
DTYPE_SIZE = {0: 1, 1: 2, 2: 4, 5: 2}              # INT8, FP16, FP32, BF16 bytes per element


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


# ----------------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------------

@dataclass
class SynthConfig:
    arch: str = "AKS"
    cores: int | None = None            # default: the chip's core count
    cmds_per_core: int = 1000
    mode: int = 2                       # 0 pmu only, 1 condensed nodes, 2 nodes + descriptors
    seed: int = 1
    tiu_freq: int = 1000                # MHz, written to global.profile
    cdma_ports: tuple[int, ...] | None = None  # default (0, 1) when the anchor core exists
    idle_cores: tuple[int, ...] = ()
    id_wrap: bool = False               # core 0 ends with a kernel of > 65536 TIU commands
    time_wrap: bool = False             # core 0's counter starts just below 2^32
    ring_core: int | None = None        # this core's GDMA ring buffer is lapped (§9.1, Q12)
    rvt_ratio: float = 0.0              # AKSV: share of kernels recorded as RVT nodes
    des_ratio: float = 0.0              # share of kernels dispatched as DES chains (BLOCK_DES_KV)
    batch_idx: bool = False             # BATCH_IDX node after every FUNC (batch = kernel % 4)
    max_record_num: int = 131072
    tail_offset_ns: int = 850000
    dump_name: str = "cdm_profile_data_dev0-0"
    write_truth: bool = True            # expected_commands.csv (half the time of a big dump)

    def resolved(self) -> "SynthConfig":
        arch = self.arch.upper()
        if arch not in df.CHIPS:
            raise ValueError(f"unknown arch {self.arch!r}; expected one of {sorted(df.CHIPS)}")
        chip = df.CHIPS[arch]
        cores = chip["core_num"] if self.cores is None else int(self.cores)
        if not 1 <= cores <= chip["core_num"]:
            raise ValueError(f"{arch} has 1..{chip['core_num']} cores, got {cores}")
        if self.mode not in (0, 1, 2):
            raise ValueError(f"mode must be 0, 1 or 2, got {self.mode}")
        anchor_present = cores == chip["core_num"]
        ports = self.cdma_ports
        if ports is None:
            ports = (0, 1) if anchor_present else ()
        ports = tuple(sorted(set(int(p) for p in ports)))
        if ports and not anchor_present:
            raise ValueError("CDMA ports need the anchor core CORE_NUM-1 in the dump "
                             f"(--cores {chip['core_num']})")
        if any(not 0 <= p < chip["cdma_num"] for p in ports):
            raise ValueError(f"{arch} CDMA ports are 0..{chip['cdma_num'] - 1}")
        idle = tuple(sorted(set(int(c) for c in self.idle_cores)))
        if any(not 0 <= c < cores for c in idle):
            raise ValueError("idle core out of range")
        if len(idle) >= cores:
            raise ValueError("at least one core must be busy")
        if self.id_wrap and 0 in idle:
            raise ValueError("--id-wrap puts its long kernel on core 0, which is idle")
        if self.ring_core is not None and not 0 <= self.ring_core < cores:
            raise ValueError(f"ring core {self.ring_core} out of range 0..{cores - 1}")
        if self.ring_core == 0 and self.time_wrap:
            raise ValueError("--time-wrap wraps core 0's counter; a lapped ring on the same "
                             "core would be ambiguous: use another ring core")
        if self.ring_core == 0 and self.id_wrap:
            raise ValueError("--id-wrap ends core 0 with its long kernel; use another ring core")
        if self.ring_core is not None and self.ring_core in idle:
            raise ValueError("the ring core must not be idle")
        if self.rvt_ratio and arch != "AKSV":
            raise ValueError("RVT nodes are an AKSV feature (--arch AKSV)")
        if self.rvt_ratio and self.mode == 0:
            raise ValueError("RVT nodes need DYN_DATA (mode 1 or 2)")
        if (self.des_ratio or self.batch_idx) and self.mode == 0:
            raise ValueError("DES dispatch and BATCH_IDX need DYN_DATA (mode 1 or 2)")
        if not (0 <= self.rvt_ratio <= 1 and 0 <= self.des_ratio <= 1):
            raise ValueError("rvt_ratio and des_ratio are shares between 0 and 1")
        if self.tiu_freq <= 0:
            raise ValueError("tiu_freq must be > 0")
        return SynthConfig(**{**asdict(self), "arch": arch, "cores": cores, "cdma_ports": ports,
                              "idle_cores": idle})

    @property
    def busy_cores(self) -> list[int]:
        return [c for c in range(self.cores or 0) if c not in self.idle_cores]


# ----------------------------------------------------------------------------------------------
# Physical schedule
# ----------------------------------------------------------------------------------------------

@dataclass
class Cmds:
    """Column arrays of commands (one row per command, any order)."""

    cols: dict[str, np.ndarray] = field(default_factory=dict)

    @staticmethod
    def concat(parts: list["Cmds"]) -> "Cmds":
        parts = [p for p in parts if p.cols and len(next(iter(p.cols.values())))]
        if not parts:
            return Cmds({})
        keys = parts[0].cols.keys()
        return Cmds({k: np.concatenate([p.cols[k] for p in parts]) for k in keys})

    def __len__(self) -> int:
        return len(next(iter(self.cols.values()))) if self.cols else 0


def _pick_slots(rng, slots, rows: int) -> np.ndarray:
    """(rows, len(slots)) op indices, -1 where the slot is skipped."""
    out = np.full((rows, len(slots)), -1, np.int64)
    for j, alts in enumerate(slots):
        names = [a[0] for a in alts]
        w = np.array([a[1] for a in alts], float)
        choice = rng.choice(len(alts), size=rows, p=w / w.sum())
        idx = np.array([OP_INDEX[n] if n else -1 for n in names])
        out[:, j] = idx[choice]
    return out


def _dma_cycles(rng, nbytes: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """DMA duration: latency + bytes / bandwidth (DDR < L2M < LMEM->LMEM), with noise."""
    bw = np.full(nbytes.shape, 36.0)                       # DDR ~36 B/cycle
    bw[(src == "L2M") | (dst == "L2M")] = 64.0
    bw[(src == "LMEM") & (dst == "LMEM")] = 96.0
    noise = rng.uniform(0.85, 1.25, nbytes.shape)
    return (180 + nbytes / bw * noise).astype(np.int64)


class KernelBuilder:
    """Builds one kernel instance on one core: command arrays with physical ns times."""

    def __init__(self, rng: np.random.Generator, kind: Kind, mode: int):
        self.rng, self.kind, self.mode = rng, kind, mode

    def shape(self):
        rng = self.rng
        c = int(rng.choice([64, 128, 256]))      # a tile: at most 256 x 28 x 28 (~400 KB BF16)
        h = int(rng.choice([7, 14, 28]))
        w = h
        return c, h, w

    def build(self, t0: int, iterations: int, ports: tuple[int, ...] = ()) -> tuple[Cmds, int]:
        """Returns the commands (without the closing send/wait) and the time the work ends."""
        rng, kind = self.rng, self.kind
        R = max(2, int(iterations))
        c, h, w = self.shape()
        dsize = DTYPE_SIZE[kind.dtype]
        tile_bytes = c * h * w * dsize
        loads = _pick_slots(rng, kind.loads, R)
        comps = _pick_slots(rng, kind.computes, R)
        stores = _pick_slots(rng, kind.stores, R)
        if self.mode == 0:   # LMEM->LMEM moves look like system records without descriptors
            stores[stores == OP_INDEX["mv"]] = -1
        # rows 0..R: loads/computes of iteration k in row k, stores of iteration k-1 in row k
        L = np.vstack([loads, np.full((1, loads.shape[1]), -1)])
        C = np.vstack([comps, np.full((1, comps.shape[1]), -1)])
        S = np.vstack([np.full((1, stores.shape[1]), -1), stores])

        def dma_dur(idx):
            valid = idx >= 0
            sys_ = idx == OP_INDEX["dma_wait"]      # waits for a peer's message: no data
            b = np.where(valid & ~sys_, tile_bytes, 0)
            bcast = idx == OP_INDEX["ld_bcast"]
            b = np.where(bcast, c * dsize * 64, b)
            d = _dma_cycles(rng, b.astype(float), _OP_SRC[np.maximum(idx, 0)],
                            _OP_DST[np.maximum(idx, 0)])
            d = np.where(sys_, rng.integers(150, 3000, idx.shape), d)
            return np.where(valid, d, 0), b

        Ld, Lb = dma_dur(L)
        Sd, Sb = dma_dur(S)
        elems = c * h * w
        ci = np.maximum(C, 0)
        # cycles = issue overhead + ops / throughput: cube ops scale with the input channels
        ops = elems * _OP_COST[ci] * np.where(_OP_CUBE[ci], c, 1)
        rate = np.where(_OP_CUBE[ci], CUBE_OPS_PER_CYCLE, LANE_OPS_PER_CYCLE)
        Cd = np.where(C >= 0, (60 + ops / rate * rng.uniform(0.9, 1.15, C.shape))
                      .astype(np.int64), 0)
        gapL = np.where(L >= 0, rng.integers(3, 40, L.shape), 0)
        gapS = np.where(S >= 0, rng.integers(3, 40, S.shape), 0)
        gapC = np.where(C >= 0, rng.integers(0, 40, C.shape), 0)
        Lsum = (Ld + gapL).sum(1)
        Ssum = (Sd + gapS).sum(1)
        Csum = (Cd + gapC).sum(1)
        Lnext = np.append(Lsum[1:], 0)
        P = np.maximum(Lsum + Ssum, Lsum + Csum - Lnext) + rng.integers(5, 60, R + 1)
        T = t0 + np.concatenate([[0], np.cumsum(P)[:-1]])
        Lstart = T[:, None] + np.cumsum(Ld + gapL, 1) - (Ld + gapL) + gapL
        Sstart = (T + Lsum)[:, None] + np.cumsum(Sd + gapS, 1) - (Sd + gapS) + gapS
        Cstart = (T + Lsum)[:, None] + np.cumsum(Cd + gapC, 1) - (Cd + gapC) + gapC
        work_end = int(T[-1] + Lsum[-1] + Ssum[-1])
        parts = []
        # GDMA in time order: per row, loads then stores
        g_idx = np.hstack([L, S]); g_st = np.hstack([Lstart, Sstart]); g_d = np.hstack([Ld, Sd])
        g_b = np.hstack([Lb, Sb])
        g_dep = np.hstack([np.zeros_like(L), np.where(np.arange(S.shape[1]) == 0, 1, 0)
                           * np.ones_like(S)])
        g_it = np.hstack([np.repeat(np.arange(R + 1)[:, None], L.shape[1], 1),
                          np.repeat(np.arange(-1, R)[:, None], S.shape[1], 1)])
        m = g_idx >= 0
        parts.append(self._cmds("GDMA", g_idx[m], g_st[m], g_st[m] + g_d[m], g_b[m],
                                g_it[m], dep_kind=np.where(g_dep[m] == 1, 2, 0), c=c, h=h, w=w))
        m = C >= 0
        first_comp = np.zeros_like(C)
        first_comp[:, 0] = 1
        it = np.repeat(np.arange(R + 1)[:, None], C.shape[1], 1)
        parts.append(self._cmds("TIU", C[m], Cstart[m], Cstart[m] + Cd[m],
                                np.zeros(m.sum(), np.int64), it[m],
                                dep_kind=np.where(first_comp[m] == 1, 1, 0), c=c, h=h, w=w))
        if kind.sdma:
            n = len(kind.sdma) + int(rng.integers(0, 3))
            idx = np.array([OP_INDEX[kind.sdma[i % len(kind.sdma)]] for i in range(n)])
            b = np.full(n, tile_bytes * int(rng.choice([1, 2, 4])), np.int64)
            d = _dma_cycles(rng, b.astype(float), _OP_SRC[idx], _OP_DST[idx])
            gap = rng.integers(10, 200, n)
            st = t0 + 100 + np.cumsum(d + gap) - d
            parts.append(self._cmds("SDMA", idx, st, st + d, b, np.zeros(n, np.int64),
                                    dep_kind=np.zeros(n, np.int64), c=c, h=h, w=w))
            work_end = max(work_end, int(st[-1] + d[-1]))
        for port in ports if kind.cdma else ():
            # one launch per port: > 10 records with ids 1.. (the decoder splits launches on
            # id drops > 10), send/receive alternating back to back on the port's queue
            n = max(12, 2 * (R // 2))
            idx = np.where(np.arange(n) % 2 == 0, OP_INDEX["cd_send"], OP_INDEX["cd_recv"])
            b = np.full(n, int(rng.choice([1, 2, 4])) * 131072 * dsize, np.int64)
            d = (500 + b / 15.0 * rng.uniform(0.85, 1.2, n)).astype(np.int64)
            st = t0 + 10 + np.concatenate([[0], np.cumsum(d)[:-1]])
            cm = self._cmds("CDMA", idx, st, st + d, b, np.zeros(n, np.int64),
                            dep_kind=np.zeros(n, np.int64), c=c, h=h, w=w)
            cm.cols["port"][:] = port
            parts.append(cm)
            work_end = max(work_end, int(st[-1] + d[-1]))
        return Cmds.concat(parts), work_end

    def _cmds(self, engine, idx, start, end, nbytes, it, dep_kind, c, h, w) -> Cmds:
        n = len(idx)
        kind = self.kind
        return Cmds({
            "engine": np.full(n, engine, object),
            "op": idx.astype(np.int64),
            "start": start.astype(np.int64), "end": end.astype(np.int64),
            "bytes": nbytes.astype(np.int64), "iter": it.astype(np.int64),
            "dep_kind": dep_kind.astype(np.int64),   # 1: wait for GDMA load, 2: wait for TIU
            "port": np.full(n, -1, np.int64),
            "c": np.full(n, c, np.int64), "h": np.full(n, h, np.int64),
            "w": np.full(n, w, np.int64),
            "dtype": np.full(n, kind.dtype, np.int64),
            "prec": np.full(n, kind.tiu_prec, np.int64),
        })


def _sys_cmds(engine: str, op: str, start, end) -> Cmds:
    start = np.atleast_1d(np.asarray(start, np.int64))
    n = len(start)
    return Cmds({
        "engine": np.full(n, engine, object), "op": np.full(n, OP_INDEX[op], np.int64),
        "start": start, "end": np.atleast_1d(np.asarray(end, np.int64)),
        "bytes": np.zeros(n, np.int64), "iter": np.zeros(n, np.int64),
        "dep_kind": np.zeros(n, np.int64), "port": np.full(n, -1, np.int64),
        "c": np.zeros(n, np.int64), "h": np.zeros(n, np.int64), "w": np.zeros(n, np.int64),
        "dtype": np.zeros(n, np.int64), "prec": np.zeros(n, np.int64),
    })


@dataclass
class KernelRun:
    kind: str
    func: str
    rvt: bool
    cmds: Cmds          # program order is computed later (sorted by start)
    ports: tuple[int, ...]
    des: bool = False   # dispatched as DES chains: no NODE_SETs, descriptors in BLOCK_DES_KV
    batch: int | None = None  # BATCH_IDX value written after the FUNC record


@dataclass
class CoreProgram:
    core: int
    init: Cmds                        # profile-init commands (+ anchor VSDMA sends)
    kernels: list[KernelRun] = field(default_factory=list)


def plan(cfg: SynthConfig, rng: np.random.Generator):
    """The physical schedule of every core: init preamble and kernel runs (ns, t=0 = sync)."""
    chip = df.CHIPS[cfg.arch]
    busy = cfg.busy_cores
    anchor = chip["core_num"] - 1
    ports = cfg.cdma_ports
    submitter = {p: busy[i % len(busy)] for i, p in enumerate(ports)}
    programs = {}
    for core in range(cfg.cores):
        j = rng.integers(-60, 60, 5)
        # enable_profile, in dispatch order: "GDMA send -> TIU wait" twice, then the SDMA pair
        init = Cmds.concat([
            _sys_cmds("GDMA", "dma_send", [-5122 + j[0]], [-5110 + j[0]]),
            _sys_cmds("TIU", "tiu_wait", [-5062 + j[2]], [-4482 + j[2]]),
            _sys_cmds("GDMA", "dma_send", [-4422 + j[1]], [-4408 + j[1]]),
            _sys_cmds("TIU", "tiu_wait", [-40], [0]),          # the sync point: t = 0
            _sys_cmds("SDMA", "dma_send", [-5022 + j[3]], [-5010 + j[3]]),
            _sys_cmds("SDMA", "dma_wait", [-4822 + j[4]], [-200]),
        ])
        if core == anchor and ports:
            # one VSDMA send per active port, then the CDMA init pair (tx_wait, nop) per port
            st = 400 + 150 * np.arange(len(ports))
            cd = _sys_cmds("CDMA", "cd_tx_wait", np.zeros(2 * len(ports)),
                           np.ones(2 * len(ports)))
            cd.cols["op"][1::2] = OP_INDEX["cd_nop"]
            cd.cols["port"][:] = np.repeat(ports, 2)
            init = Cmds.concat([init, _sys_cmds("SDMA", "dma_send", st, st + 11), cd])
        programs[core] = CoreProgram(core, init)

    kinds = [k for k in REGULAR_KINDS if k != "collective" or ports]
    n_kernels = int(np.clip(round(cfg.cmds_per_core / 1000) + 4, len(kinds), 400))
    order = list(rng.permutation(kinds))
    if order[0] == "collective":
        order.append(order.pop(0))
    seq = [order[i % len(order)] for i in range(n_kernels)]
    rvt_kernels = set()
    if cfg.rvt_ratio > 0:
        cand = [i for i, k in enumerate(seq) if k != "collective"]
        n_rvt = max(1, int(round(cfg.rvt_ratio * len(cand))))
        rvt_kernels = set(int(x) for x in rng.choice(cand, size=min(n_rvt, len(cand)),
                                                     replace=False))
    des_kernels = set()
    if cfg.des_ratio > 0:     # DES resets every id counter: never a kernel with CDMA traffic
        cand = [i for i, k in enumerate(seq) if k != "collective" and i not in rvt_kernels]
        n_des = min(max(1, int(round(cfg.des_ratio * len(cand)))), len(cand))
        des_kernels = set(int(x) for x in rng.choice(cand, size=n_des, replace=False))
    per_kernel = cfg.cmds_per_core / n_kernels
    first = 1200 + 150 * len(ports)       # after the anchor's VSDMA sends (400 + 150 i)
    t_start = {c: first + int(rng.integers(0, 400)) for c in busy}
    if cfg.ring_core is not None:   # GDMA work that the lapped ring will overwrite
        t_start[cfg.ring_core] = _solo_kernel(programs[cfg.ring_core], rng, "prefetch", cfg.mode,
                                              t_start[cfg.ring_core],
                                              # 2 GDMA per iteration: a span no kernel reaches
                                              int(per_kernel) + 40 + int(rng.integers(0, 9)))
    for ki, kname in enumerate(seq):
        kind = KINDS[kname]
        ends = {}
        runs = {}
        for core in busy:
            kb = KernelBuilder(rng, kind, cfg.mode)
            n_slots = len(kind.loads) + len(kind.computes) + len(kind.stores)
            iters = max(2, int(round(per_kernel * rng.uniform(0.75, 1.25) / (0.8 * n_slots))))
            ports_here = tuple(p for p, s in submitter.items() if s == core) \
                if kind.cdma else ()
            cmds, end = kb.build(t_start[core], iters, ports_here)
            runs[core] = (cmds, ports_here)
            ends[core] = end
        # closing barrier: TIU send, then a wait that ends when the slowest core arrived
        send_end = {c: ends[c] + 20 + 40 for c in busy}
        barrier = max(send_end.values()) + 150
        for core in busy:
            cmds, used_ports = runs[core]
            jit = int(rng.integers(0, 30))
            closing = Cmds.concat([
                _sys_cmds("TIU", "tiu_send", [ends[core] + 20], [send_end[core]]),
                _sys_cmds("TIU", "tiu_wait", [send_end[core] + 5], [barrier + jit])])
            programs[core].kernels.append(KernelRun(
                kname, kind.func, ki in rvt_kernels, Cmds.concat([cmds, closing]), used_ports,
                des=ki in des_kernels, batch=ki % 4 if cfg.batch_idx else None))
            t_start[core] = barrier + jit + int(rng.integers(300, 3000))
    if cfg.id_wrap:   # last kernel of core 0 (nothing after a wrapped run: §15.4, Q8)
        kind = KINDS["eltwise_long"]
        t_start[0] = _solo_kernel(programs[0], rng, "eltwise_long", cfg.mode, t_start[0],
                                  66000 // len(kind.computes) + 300)
    if cfg.ring_core is not None:
        # the kept GDMA ring (2 prefetch records + every later kernel) must be longer than any
        # other stream of the dump: the ring core gets GDMA-heavy tail kernels until it is
        rc = programs[cfg.ring_core]
        while True:
            count = {(c, e): sum(int((r.cmds.cols["engine"] == e).sum()) for r in p.kernels)
                     for c, p in programs.items() for e in ("TIU", "GDMA", "SDMA")}
            longest = max(v for k, v in count.items() if k != (cfg.ring_core, "GDMA")) + 2
            kept = count[(cfg.ring_core, "GDMA")] - int(
                (rc.kernels[0].cmds.cols["engine"] == "GDMA").sum()) + 2
            if kept > longest + 10:
                break
            iters = (longest - kept) // 2 + 40
            n_pre = int((rc.kernels[0].cmds.cols["engine"] == "GDMA").sum())
            if 2 * iters == n_pre:      # keep the prefetch span unique (2 GDMA per iteration)
                iters += 1
            t_start[cfg.ring_core] = _solo_kernel(rc, rng, "kv_copy", cfg.mode,
                                                  t_start[cfg.ring_core], iters)
    return programs, seq, sorted(rvt_kernels), sorted(des_kernels), submitter


def _solo_kernel(prog: "CoreProgram", rng, kind_name: str, mode: int, t0: int,
                 iterations: int) -> int:
    """Append a kernel that only this core runs (closing send/wait without a cross-core
    barrier); returns the time the next kernel may start."""
    kind = KINDS[kind_name]
    cmds, end = KernelBuilder(rng, kind, mode).build(t0, iterations)
    closing = Cmds.concat([_sys_cmds("TIU", "tiu_send", [end + 20], [end + 60]),
                           _sys_cmds("TIU", "tiu_wait", [end + 65], [end + 260])])
    prog.kernels.append(KernelRun(kind_name, kind.func, False, Cmds.concat([cmds, closing]), ()))
    return end + 260 + int(rng.integers(300, 3000))


# ----------------------------------------------------------------------------------------------
# Ids, program order, fixes for decoder constraints
# ----------------------------------------------------------------------------------------------

def _order_kernel(run: KernelRun) -> np.ndarray:
    """Program (dispatch) order of a kernel: by start time, TIU first on ties."""
    c = run.cmds.cols
    eng = _engine_order(c["engine"])
    return np.lexsort((eng, c["start"]))


def _group_rank(keys: np.ndarray) -> np.ndarray:
    """0-based rank of each element within its key group, in array order (vectorised)."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    first = np.r_[True, sk[1:] != sk[:-1]]
    grp_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - grp_start
    return rank


# ----------------------------------------------------------------------------------------------
# Descriptor field values
# ----------------------------------------------------------------------------------------------

def _addr(tag: np.ndarray, offset: np.ndarray) -> np.ndarray:
    return (tag.astype(np.int64) << 40) | (offset.astype(np.int64) & ((1 << 40) - 1))


def descriptor_values(layout: str, c: dict[str, np.ndarray]) -> dict[str, object]:
    """Field values of one register layout for the command rows ``c`` (all same layout)."""
    n = len(c["op"])
    typ, eu = _OP_TYP[c["op"]], _OP_EU[c["op"]]
    dep = c["dep"]
    if layout == "SYS":
        msg = 0x1FF
        return {"tsk_typ": typ, "tsk_eu_typ": eu, "cmd_id_dep": dep,
                "imm": msg | (8 << 16)}
    if layout == "sDMA_sys":
        return {"cmd_short": 1, "cmd_type": typ, "cmd_special_function": eu,
                "constant_value": np.where(eu == 3, 1022, 1023), "cmd_id_dep": 0}
    if layout == "sCDMA_sys":
        return {"cmd_type": typ, "cmd_special_function": eu, "constant_value_l32": 0x10001}
    ch, hh, ww = c["c"], c["h"], c["w"]
    it = np.maximum(c["iter"], 0)
    if layout.startswith("CDMA"):
        elems = c["bytes"] // DTYPE_SIZE.get(2, 4)
        addr = _addr(np.full(n, MEM_TAG["DDR"]), (it * 0x100000 + 0x2000000))
        common = {"cmd_type": typ, "cmd_special_function": eu, "src_data_format": 2}
        if layout == "CDMA_send":
            return {**common, "src_start_addr_h13": addr >> 32, "src_start_addr_l32":
                    addr & 0xFFFFFFFF, "src_nstride": elems, "src_cstride": 1, "src_hstride": 1,
                    "src_nsize": 1, "src_csize": 1, "src_hsize": 1, "src_wsize": elems}
        return {**common, "dst_start_addr_h8": addr >> 32, "dst_start_addr_l32":
                addr & 0xFFFFFFFF, "dst_nstride": elems, "dst_cstride": 1, "dst_hstride": 1,
                "dst_nsize": 1, "dst_csize": 1, "dst_hsize": 1, "dst_wsize": elems}
    if layout.startswith("DMA"):
        src, dst = _OP_SRC_TAG[c["op"]], _OP_DST_TAG[c["op"]]
        bcast = eu == 3
        hw = hh * ww
        src_off = np.where(src == MEM_TAG["LMEM"], (it % 4) * 0x10000, it * ch * hw * 2 + 0x1000)
        dst_off = np.where(dst == MEM_TAG["LMEM"], (it % 4) * 0x10000 + 0x80000,
                           it * ch * hw * 2 + 0x4000000)
        s_addr, d_addr = _addr(src, src_off), _addr(dst, dst_off)
        return {
            "cmd_type": typ, "cmd_special_function": eu, "src_data_format": c["dtype"],
            "cmd_id_dep": np.where(dep > 0, (1 << 20) | dep, 0),
            "src_nstride": ch * hw, "src_cstride": hw, "src_hstride": ww, "src_wstride": 1,
            "dst_nstride": ch * hw, "dst_cstride": hw, "dst_hstride": ww, "dst_wstride": 1,
            "src_nsize": 1, "src_csize": np.where(bcast, 1, ch),
            "src_hsize": np.where(bcast, 1, hh), "src_wsize": np.where(bcast, 64, ww),
            "dst_nsize": 1, "dst_csize": ch, "dst_hsize": np.where(bcast, 1, hh),
            "dst_wsize": np.where(bcast, 64, ww),
            "src_start_addr_l32": s_addr & 0xFFFFFFFF, "src_start_addr_h13": s_addr >> 32,
            "dst_start_addr_l32": d_addr & 0xFFFFFFFF, "dst_start_addr_h13": d_addr >> 32,
            "localmem_mask_l32": 0xFFFFFFFF, "localmem_mask_h32": 0xFFFFFFFF,
        }
    # short TIU operations: one tile (n=1, c, h, w), LMEM operand/result addresses
    prec = c["prec"]
    base = (it % 4) * 0x8000
    vals = {
        "cmd_short": 1, "tsk_typ": typ, "tsk_eu_typ": eu, "cmd_id_dep": dep,
        "opt_res0_prec": prec, "opt_opd0_prec": prec, "opt_opd1_prec": prec,
        "opt_opd2_prec": prec, "opt_res0_sign": 1, "opt_opd0_sign": 1, "opt_opd1_sign": 1,
        "res0_n": 1, "res0_c": ch, "res0_h": hh, "res0_w": ww,
        "opd0_c": ch, "opd0_h": hh, "opd0_w": ww, "opd0_w_str": 1,
        "res0_addr": base + 0x40000, "opd0_addr": base, "opd1_addr": base + 0x20000,
        "tsk_opd_num": 2, "res_op_x_str": 1, "res_op_y_str": 1,
    }
    if layout == "sCONV":
        vals.update({"opd1_h": 3, "opd1_w": 3, "opd0_up_pad": 1, "opd0_dn_pad": 1,
                     "opd0_lf_pad": 1, "opd0_rt_pad": 1})
    elif layout == "sPorD":
        vals.update({"opd1_h": 2, "opd1_w": 2, "res0_h": np.maximum(hh // 2, 1),
                     "res0_w": np.maximum(ww // 2, 1)})
    elif layout == "sMM2":      # res0 (M x N) = opd0 (M x K) . opd1 (K x N)
        vals.update({"res0_c": ch, "res0_w": hh * ww, "opd1_c": ch, "opd1_w": hh * ww})
    elif layout == "sSFU":
        vals.update({"opd1_n": 4})
    return vals


# ----------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------

@dataclass
class SynthResult:
    dump_dir: Path
    truth: pd.DataFrame
    meta: dict
    files: dict[str, int]          # file name -> size in bytes


def _dma_records(rows: dict[str, np.ndarray], rng) -> np.ndarray:
    """MONITOR_GDMA/SDMA records with counters consistent with bytes and direction (§5.2)."""
    n = len(rows["start_raw"])
    r = np.zeros(n, df.DMA_RECORD)
    r["inst_start_time"] = rows["start_raw"] % U32
    r["inst_end_time"] = rows["end_raw"] % U32
    r["inst_id"] = rows["pmu_id"]
    b = rows["bytes"]
    src, dst = _OP_SRC[rows["op"]], _OP_DST[rows["op"]]
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


def _tiu_records(rows, rng) -> np.ndarray:
    n = len(rows["start_raw"])
    r = np.zeros(n, df.TIU_RECORD)
    r["inst_start_time"] = rows["start_raw"] % U32
    r["inst_end_time"] = rows["end_raw"] % U32
    r["inst_id"] = rows["pmu_id"]
    sys_ = _OP_TYP[rows["op"]] == 15
    bank = rng.integers(0, 40, n) * 2          # thread 0, even bank-conflict counts
    bank[bank == 2] = 4                         # the word 2 marks system records only
    r["thread_id_and_bank_conflict"] = np.where(sys_, 2, bank)
    return r


def _cdma_records(rows, rng) -> np.ndarray:
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


def _extra_block(blobs: dict[int, np.ndarray], order_pos: dict[int, np.ndarray], n: int) -> bytes:
    """DYN_EXTRA payload: entry i = header(profile_id=i, BINARY, len) + descriptor (§7.1).

    ``blobs[g]`` holds the packed descriptors (all of one length) of the entries at positions
    ``order_pos[g]`` (0..n-1, node order). Each group is scattered in one fancy-index write."""
    lens = np.zeros(n, np.int64)
    for g, pos in order_pos.items():
        lens[pos] = blobs[g].shape[1]
    sizes = 12 + lens
    offs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    buf = np.empty(int(sizes.sum()), np.uint8)
    for g, pos in order_pos.items():
        blob = blobs[g]
        hdr = np.zeros(len(pos), df.DYN_EXTRA_HEADER)
        hdr["profile_id"] = pos
        hdr["type"] = int(df.ExtraType.BINARY)
        hdr["length"] = blob.shape[1]
        rows = np.concatenate([hdr.view(np.uint8).reshape(len(pos), 12), blob], axis=1)
        buf[offs[pos][:, None] + np.arange(rows.shape[1])] = rows
    return buf.tobytes()


class DumpWriter:
    def __init__(self, cfg: SynthConfig):
        self.cfg = cfg.resolved()
        self.rng = np.random.default_rng(self.cfg.seed)
        self.chip = df.CHIPS[self.cfg.arch]
        self.codes = df.ENGINE_CODES[self.cfg.arch]
        self.layouts = register_layouts(self.cfg.arch)

    # -- per core: rows with ids and raw counters ------------------------------------------
    def core_rows(self, prog: CoreProgram, base: int) -> tuple[dict, int]:
        """All commands of a core in program order, with ids, raw counters and node info."""
        f = self.cfg.tiu_freq
        n_init = len(prog.init)
        parts = [prog.init]                     # already in dispatch order
        kernel_of = [np.full(n_init, -1)]
        for ki, run in enumerate(prog.kernels):
            o = _order_kernel(run)
            parts.append(Cmds({k: v[o] for k, v in run.cmds.cols.items()}))
            kernel_of.append(np.full(len(o), ki))
        allc = Cmds.concat(parts).cols
        allc["kernel"] = np.concatenate(kernel_of)
        eng = allc["engine"]
        port = allc["port"]
        # id counters: per (kernel, engine[, port]); SDMA init+VSDMA share the init group
        ekey = _engine_order(eng)
        key = (allc["kernel"] + 1) * 64 + ekey * 16 + np.where(eng == "CDMA", port + 1, 0)
        ids = _group_rank(key)
        allc["id"] = ids
        # dependency ids: first compute of an iteration waits for the last load of it, first
        # store for the last compute; vectorised via per-(kernel, iter) maxima
        dep = np.zeros(len(ids), np.int64)
        for dk, src_eng in ((1, "GDMA"), (2, "TIU")):
            srcm = (eng == src_eng) & (allc["kernel"] >= 0)
            if src_eng == "GDMA":   # loads only
                srcm &= np.isin(_OP_DST[allc["op"]], ["LMEM"]) & (_OP_SRC[allc["op"]] != "LMEM")
            else:
                srcm &= _OP_TYP[allc["op"]] != 15
            k2 = allc["kernel"] * 1_000_000 + allc["iter"]
            tbl = pd.Series(ids[srcm] + 1, index=k2[srcm]).groupby(level=0).max()
            want = (allc["dep_kind"] == dk)
            dep[want] = pd.Series(k2[want]).map(tbl).fillna(0).astype(np.int64).to_numpy()
        allc["dep"] = dep
        # raw counters: DMA at 1 GHz = base + ns; TIU at f MHz
        ctr_start = base + allc["start"]
        ctr_end = base + allc["end"]
        is_tiu = eng == "TIU"
        allc["start_raw"] = np.where(is_tiu, np.round(ctr_start * (f / 1000.0)).astype(np.int64),
                                     ctr_start)
        allc["end_raw"] = np.where(is_tiu, np.round(ctr_end * (f / 1000.0)).astype(np.int64),
                                   ctr_end)
        allc["pmu_id"] = ids & PMU_ID_MASK
        return allc, n_init

    def write(self, outdir: Path) -> SynthResult:
        cfg = self.cfg
        outdir = Path(outdir)
        final = outdir / cfg.dump_name
        _check_replaceable(final)
        outdir.mkdir(parents=True, exist_ok=True)
        # the dump is built in a hidden sibling folder and renamed when complete
        dump = Path(tempfile.mkdtemp(prefix=f".{cfg.dump_name}.", suffix=".part", dir=outdir))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(dump, 0o777 & ~umask)            # mkdtemp makes it private
        try:
            result = self._write(outdir, dump)
            _replace_dir(dump, final)
        except BaseException:
            shutil.rmtree(dump, ignore_errors=True)
            raise
        result.dump_dir = final
        return result

    def _write(self, outdir: Path, dump: Path) -> SynthResult:
        cfg, rng = self.cfg, self.rng
        programs, seq, rvt_kernels, des_kernels, submitter = plan(cfg, rng)
        self._check_runs(programs)
        files: dict[str, int] = {}
        counts: dict[str, int] = {}
        sync_ns = {}
        bases = {}
        core_rows = {}
        anchor = self.chip["core_num"] - 1
        span_guess = max(int(max((r.cmds.cols["end"].max() for p in programs.values()
                                  for r in p.kernels), default=0)), 0) + 20000
        # The TIU counter ticks at tiu_freq, DMA at 1 GHz, from the same reset: a core's TIU and
        # DMA times agree after ns conversion only while neither counter has wrapped more often
        # than the other, so the faster counter must stay below 2^32 (except the wrap option).
        top = int(U32 * 1000 / max(cfg.tiu_freq, 1000))
        for core in range(cfg.cores):
            if cfg.time_wrap and core == 0:
                # the faster counter wraps 3-5 us after the sync point, in the first kernel
                base = int((U32 - 3000 - int(rng.integers(0, 2000))) * 1000
                           / max(cfg.tiu_freq, 1000))
            elif core == cfg.ring_core:
                # below 2^31: a lap's step back in time then cannot pass for a u32 wrap (the
                # reference's wrap rule needs the previous end above 2^31, §9.1 step 4)
                base = int(rng.integers(100_000_000, max((1 << 31) - span_guess, 100_000_001)))
            else:
                hi = max(top - span_guess - 10_000_000, 200_000_000)
                base = int(rng.integers(100_000_000, hi))
            bases[core] = base
            rows, n_init = self.core_rows(programs[core], base)
            core_rows[core] = rows
        # ring buffer: the lapped core keeps its last `cap` GDMA records (rotated)
        ring = self._ring_plan(core_rows) if cfg.ring_core is not None else None
        max_rec = cfg.max_record_num
        if ring is not None:
            max_rec = ring["cap"]
        longest = max(int(((r["engine"] == e)).sum()) for r in core_rows.values()
                      for e in ("TIU", "GDMA", "SDMA"))
        if ring is None and longest >= max_rec:
            max_rec = 1 << int(longest).bit_length()
        for core in range(cfg.cores):
            rows = core_rows[core]
            blob, n_by_eng, tsync = self._core_file(core, rows, programs[core], ring)
            name = f"cdmlib0_{core}.profile"
            (dump / name).write_bytes(blob)
            files[name] = len(blob)
            for e in ("tiu", "gdma", "sdma"):
                counts[f"core{core}_{e}_record"] = n_by_eng[e.upper()]
            sync_ns[core] = tsync
        # CDMA ports
        port_rows = {}
        for i, p in enumerate(cfg.cdma_ports):
            blob, prow = self._port_file(p, i, programs, submitter[p])
            name = f"cdma_{p}.profile"
            (dump / name).write_bytes(blob)
            files[name] = len(blob)
            counts[f"cdma_port{p}_record"] = len(prow["start_raw"])
            port_rows[p] = prow
        lines = [f"arch={self.chip['arch']}", f"tpu_freq={cfg.tiu_freq}",
                 f"max_record_num={max_rec}", f"core_num={cfg.cores}"]
        if ring is None:
            lines += [f"{k}={v}" for k, v in counts.items()]
        lines.append(f"tail_offset_ns={cfg.tail_offset_ns}")
        gp = "\n".join(lines) + "\n"
        (dump / "global.profile").write_text(gp)
        files["global.profile"] = len(gp)
        truth = self._truth(core_rows, programs, port_rows, sync_ns, anchor, ring)
        meta = {
            "arch": cfg.arch, "cores": cfg.cores, "mode": cfg.mode, "seed": cfg.seed,
            "tiu_freq": cfg.tiu_freq, "cmds_per_core": cfg.cmds_per_core,
            "kinds": list(dict.fromkeys(seq)),
            "func_names": [] if cfg.mode == 0 else list(dict.fromkeys(
                r.func for p in programs.values() for r in p.kernels)),
            "kernel_sequence": seq,
            "kernel_sequence_funcs": {str(c): [r.func for r in programs[c].kernels]
                                      for c in range(cfg.cores)},
            "cdma_ports": list(cfg.cdma_ports),
            "cdma_submitters": {str(p): c for p, c in submitter.items()},
            "anchor": anchor if cfg.cdma_ports else None, "des_kernels": des_kernels,
            "batch_idx": cfg.batch_idx,
            "rvt_kernels": rvt_kernels, "idle_cores": list(cfg.idle_cores),
            "id_wrap": cfg.id_wrap, "time_wrap": cfg.time_wrap, "ring_core": cfg.ring_core,
            "ring_capacity": ring["cap"] if ring else None, "max_record_num": max_rec,
            "counter_base": {str(c): b for c, b in bases.items()},
            "tail_offset_ns": cfg.tail_offset_ns, "bmodel": False, "compat": "0.3.7",
            "edge_markers": False, "trace": None,
            "generator": "reportgen.testing.synth", "dump_dir": cfg.dump_name,
            "commands": int(len(truth)),
        }
        if cfg.write_truth:
            with atomic_open(outdir / "expected_commands.csv", newline="") as fh:
                truth.to_csv(fh, index=False)
        with atomic_open(outdir / "generator_meta.json") as fh:
            fh.write(json.dumps(meta, indent=1) + "\n")
        return SynthResult(dump, truth, meta, files)

    # -- decoder-constraint checks --------------------------------------------------------
    def _check_runs(self, programs):
        """§15.4: no id run may end at a raw 16-bit id in 65001..65535 when a reset follows."""
        for p in programs.values():
            for ki, run in enumerate(p.kernels[:-1]):
                for e in ("TIU", "GDMA", "SDMA"):
                    n = int((run.cmds.cols["engine"] == e).sum())
                    if n and ID_WRAP_DANGER[0] <= (n - 1) % 65536 <= ID_WRAP_DANGER[1]:
                        raise ValueError(f"core {p.core} kernel {ki}: {e} run ends in the "
                                           "16-bit id-wrap window; use another seed")

    def _ring_plan(self, core_rows):
        """Lap the ring core's GDMA ring so that it keeps 2 records of one kernel + all later
        kernels complete; the decoder drops those 2 as 'init' (Q12) and pairs the rest."""
        core = self.cfg.ring_core
        rows = core_rows[core]
        g = np.flatnonzero(rows["engine"] == "GDMA")
        g = g[np.argsort(rows["start_raw"][g], kind="stable")]
        kern = rows["kernel"][g]
        cut_k = 1                               # kernel 0 is the overwritten prefetch kernel
        spans = [int((kern == k).sum()) for k in set(kern[kern >= 0].tolist())]
        if spans.count(int((kern == 0).sum())) > 1:
            raise ValueError("ring: prefetch span not unique; use another seed")
        first_kept = int(np.flatnonzero(kern == cut_k)[0])
        if first_kept < 4:
            raise ValueError("ring: kernel boundary too early")
        keep_from = first_kept - 2              # 2 tail records of the previous kernel
        cap = len(g) - keep_from
        others = [int((r["engine"] == e).sum()) for c, r in core_rows.items()
                  for e in ("TIU", "GDMA", "SDMA") if not (c == core and e == "GDMA")]
        if max(others) >= cap:
            raise ValueError("ring: another stream is longer than the lapped GDMA ring "
                             f"({max(others)} >= {cap}); the ring core needs more GDMA work")
        return {"core": core, "cap": cap, "keep_from": keep_from, "lost_kernels_before": cut_k}

    # -- core file --------------------------------------------------------------------------
    def _core_file(self, core, rows, prog, ring):
        cfg, rng = self.cfg, self.rng
        eng = rows["engine"]
        blocks = []
        n_by = {}
        tsync = None
        for bt, e in ((df.BlockType.MONITOR_BD, "TIU"), (df.BlockType.MONITOR_GDMA, "GDMA"),
                      (df.BlockType.MONITOR_SDMA, "SDMA")):
            m = np.flatnonzero(eng == e)
            # PMU records are in completion/slot order = time order per engine
            m = m[np.argsort(rows["start_raw"][m], kind="stable")]
            sub = {k: rows[k][m] for k in ("start_raw", "end_raw", "pmu_id", "op", "bytes")}
            rec = _tiu_records(sub, rng) if e == "TIU" else _dma_records(sub, rng)
            if ring and core == ring["core"] and e == "GDMA":
                kept = rec[ring["keep_from"]:]
                lap = len(rec) % ring["cap"]          # ring slot of the next write
                rec = np.roll(kept, lap)
            if e == "TIU" and len(rec) >= 2:
                tsync = int(np.round(rows["end_raw"][m[1]] / cfg.tiu_freq * 1000))
            n_by[e] = len(rec)
            blocks.append(df.block_bytes(bt, rec.tobytes()))
        if cfg.mode >= 1:
            words, extra, kv_blocks = self._dyn(rows, prog)
            for kv in kv_blocks:       # writers emit 3, 4, 11, 17..., 6, 5 (§4)
                blocks.append(df.block_bytes(df.BlockType.BLOCK_DES_KV, kv))
            if cfg.mode == 2:
                blocks.append(df.block_bytes(df.BlockType.DYN_EXTRA, extra))
            blocks.append(df.block_bytes(df.BlockType.DYN_DATA, words.tobytes()))
        return b"".join(blocks), n_by, tsync

    def _dyn(self, rows, prog):
        """DYN_DATA words and (mode 2) the DYN_EXTRA payload, in program order (§6, §7)."""
        cfg, codes = self.cfg, self.codes
        eng = rows["engine"]
        op = rows["op"]
        n = len(op)
        anchor_vsdma = (rows["kernel"] < 0) & (eng == "SDMA") & (rows["id"] >= 2)
        ecode = np.select([eng == "TIU", eng == "GDMA", eng == "SDMA"],
                          [codes["TIU"], codes["GDMA"], codes["SDMA"]], codes["CDMA"])
        ecode[anchor_vsdma] = codes["VSDMA"]
        src, dst = _OP_SRC_MEM[op], _OP_DST_MEM[op]
        is_dma = np.isin(eng, ["GDMA", "SDMA", "CDMA"])
        is_sys = np.isin(_OP_TYP[op], [15]) & (eng == "TIU") | \
            (is_dma & np.isin(_OP_LAYOUT[op], ["sDMA_sys", "sCDMA_sys"]))
        cd_port = np.where(eng == "CDMA", rows["port"], 0)
        extra = np.where(eng == "TIU", rows["prec"],
                         df.dma_extra_info(rows["dtype"], src, dst, cd_port))
        extra = np.where(is_sys & (eng != "CDMA"), 0, extra)
        extra = np.where(is_sys & (eng == "CDMA"), cd_port << 8, extra)
        rvt_k = np.array([r.rvt for r in prog.kernels] + [False], bool)
        des_k = np.array([r.des for r in prog.kernels] + [False], bool)
        is_rvt = rvt_k[rows["kernel"]] & (rows["kernel"] >= 0) & (eng != "CDMA")
        is_des = des_k[rows["kernel"]] & (rows["kernel"] >= 0)
        ntype = np.where(is_rvt, int(df.DynType.RVT_NODE_SET), int(df.DynType.NODE_SET))
        node_words = df.pack_dyn_words(ntype, ecode, _OP_TYP[op], _OP_EU[op], extra)
        # kernel headers between node slices; DES kernels are two-word chain references
        kb = np.searchsorted(rows["kernel"], np.arange(len(prog.kernels) + 1), side="left")
        pieces = [node_words[:kb[0]]]
        chains = []                            # (key, row indices in id order)
        des_types = (("TIU", df.DynType.DES_TIU), ("GDMA", df.DynType.DES_GDMA),
                     ("SDMA", df.DynType.DES_SDMA))
        for ki, run in enumerate(prog.kernels):
            end = kb[ki + 1] if ki + 1 < len(kb) else n
            hdr = [df.func_name_words(run.func)]
            if run.batch is not None:
                hdr.append(df.pack_dyn_packed([int(df.DynType.BATCH_IDX)], [run.batch]))
            if run.des:
                for ename, dtype_ in des_types:
                    idx = kb[ki] + np.flatnonzero(eng[kb[ki]:end] == ename)
                    if len(idx):
                        key = DES_KEY_BASE + DES_KEY_STEP * len(chains)
                        chains.append((key, idx))
                        hdr += [df.pack_dyn_packed([int(dtype_)], [key]),
                                np.array([len(idx)], "<u4")]
                pieces += hdr + [df.pack_dyn_words([int(df.DynType.FUNC_END)])]
                continue
            hdr.append(df.pack_dyn_words(np.full(3, int(df.DynType.ID_RESET)),
                                         [codes["TIU"], codes["GDMA"], codes["SDMA"]]))
            for p in run.ports:
                hdr.append(df.pack_dyn_words([int(df.DynType.ID_RESET)], [codes["CDMA"]], 0, 0,
                                             [p << 8]))
            pieces += hdr + [node_words[kb[ki]:end],
                             df.pack_dyn_words([int(df.DynType.FUNC_END)])]
        words = np.concatenate([np.atleast_1d(p) for p in pieces]).astype("<u4")
        kv_blocks = []
        if chains:
            order = np.concatenate([idx for _, idx in chains])
            buf, offs, lens = self._pack_rows(rows, order)
            at = 0
            for key, idx in chains:
                k = len(idx)
                hdr = np.array([(key, k, prog.core)], df.DES_KV_HEADER).tobytes()
                lo, hi = offs[at], offs[at + k - 1] + lens[at + k - 1]
                kv_blocks.append(hdr + buf[lo:hi].tobytes())
                at += k
        if cfg.mode < 2:
            return words, b"", kv_blocks
        tdi = np.flatnonzero(~is_rvt & ~is_des)  # one DYN_EXTRA entry per TDI node, in order
        lay = _OP_LAYOUT[op[tdi]]
        blobs, pos = {}, {}
        for li, lname in enumerate(dict.fromkeys(lay.tolist())):
            sel = np.flatnonzero(lay == lname)
            blobs[li] = self._pack_layout(rows, tdi[sel], lname)
            pos[li] = sel
        return words, _extra_block(blobs, pos, len(tdi)), kv_blocks

    def _pack_layout(self, rows, idx: np.ndarray, lname: str) -> np.ndarray:
        sub = {k: rows[k][idx] for k in ("op", "dep", "c", "h", "w", "iter", "bytes", "dtype",
                                        "prec")}
        return pack_descriptors(self.layouts[lname], len(idx), descriptor_values(lname, sub))

    def _pack_rows(self, rows, idx: np.ndarray):
        """Descriptors of rows ``idx`` back to back (ragged): bytes, offsets, lengths."""
        lay = _OP_LAYOUT[rows["op"][idx]]
        lens = np.zeros(len(idx), np.int64)
        groups = {}
        for lname in dict.fromkeys(lay.tolist()):
            sel = np.flatnonzero(lay == lname)
            groups[lname] = (sel, self._pack_layout(rows, idx[sel], lname))
            lens[sel] = self.layouts[lname].nbytes
        offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
        buf = np.empty(int(lens.sum()), np.uint8)
        for sel, blob in groups.values():
            buf[offs[sel][:, None] + np.arange(blob.shape[1])] = blob
        return buf, offs, lens

    # -- CDMA port file ---------------------------------------------------------------------
    def _port_file(self, port, port_idx, programs, submitter):
        """cdma_<port>.profile: tx_wait + nop sync pair, then one launch per kernel (§9.4)."""
        rng = self.rng
        # the anchor's VSDMA send for this port ends at phys t = 400 + 150*i + 11
        vs_end = 400 + 150 * port_idx + 11
        off = int(rng.integers(50_000_000, 500_000_000))
        sync_s = np.array([vs_end - 5411 - int(rng.integers(0, 200)), vs_end + 30])
        sync_e = np.array([vs_end, vs_end + 41])
        parts_s, parts_e, parts_id, parts_op, parts_b = [sync_s], [sync_e], \
            [np.array([4000 + 16 * port, 4001 + 16 * port])], \
            [np.array([OP_INDEX["cd_tx_wait"], OP_INDEX["cd_nop"]])], [np.zeros(2, np.int64)]
        for run in programs[submitter].kernels:
            c = run.cmds.cols
            m = (c["engine"] == "CDMA") & (c["port"] == port)
            if not m.any():
                continue
            o = np.argsort(c["start"][m], kind="stable")
            parts_s.append(c["start"][m][o]); parts_e.append(c["end"][m][o])
            parts_id.append(np.arange(1, m.sum() + 1)); parts_op.append(c["op"][m][o])
            parts_b.append(c["bytes"][m][o])
        rows = {"start_raw": np.concatenate(parts_s) + off, "end_raw": np.concatenate(parts_e) + off,
                "pmu_id": np.concatenate(parts_id), "op": np.concatenate(parts_op),
                "bytes": np.concatenate(parts_b)}
        rec = _cdma_records(rows, rng)
        rows["phys_start"] = np.concatenate(parts_s)
        rows["phys_end"] = np.concatenate(parts_e)
        return df.block_bytes(df.BlockType.MONITOR_CDMA, rec.tobytes()), rows

    # -- truth ------------------------------------------------------------------------------
    def _truth(self, core_rows, programs, port_rows, sync_ns, anchor, ring):
        """Apply the decoder's documented time transform to the raw records (§9.1-§9.5)."""
        cfg, f = self.cfg, self.cfg.tiu_freq
        ref_core = min(c for c, s in sync_ns.items() if s is not None)
        ref = sync_ns[ref_core]
        parts = []
        for core, rows in core_rows.items():
            eng = rows["engine"]
            keep = (rows["kernel"] >= 0) & (eng != "CDMA")   # CDMA rows come from the ports
            if ring and core == ring["core"]:
                g = np.flatnonzero(eng == "GDMA")
                g = g[np.argsort(rows["start_raw"][g], kind="stable")]
                lost = g[: ring["keep_from"] + 2]        # overwritten + the 2 dropped as init
                keep[lost] = False
            is_tiu = eng == "TIU"
            fr = np.where(is_tiu, f, 1000).astype(float)
            s_ns = np.round(rows["start_raw"] / fr * 1000).astype(np.int64)
            e_ns = np.round(rows["end_raw"] / fr * 1000).astype(np.int64)
            delta = sync_ns[core] - ref
            idx = np.flatnonzero(keep)
            kern_names = np.array([r.func if cfg.mode else r.kind for r in programs[core].kernels]
                                  + [""], object)
            op = rows["op"][idx]
            parts.append(pd.DataFrame({
                "core": core, "engine": eng[idx], "port": pd.array([pd.NA] * len(idx), "Int64"),
                "cmd_id": rows["id"][idx] + 1,
                "start_ns": s_ns[idx] - delta, "end_ns": e_ns[idx] - delta,
                "register_layout": _OP_LAYOUT[op], "op": np.array(OP_NAMES, object)[op],
                "tsk_or_cmd_type": _OP_TYP[op], "eu_or_special": _OP_EU[op],
                "bytes": rows["bytes"][idx],
                "src": _OP_SRC[op], "dst": _OP_DST[op],
                "kernel": kern_names[rows["kernel"][idx]],
                "dep_cmd_id": rows["dep"][idx],
            }))
        if port_rows:
            a = core_rows[anchor]
            vs = np.flatnonzero((a["kernel"] < 0) & (a["engine"] == "SDMA") & (a["id"] >= 2))
            vs = vs[np.argsort(a["start_raw"][vs])]
            a_delta = sync_ns[anchor] - ref
            for i, (p, pr) in enumerate(port_rows.items()):
                offset = int(pr["end_raw"][0]) - int(a["end_raw"][vs[i]])
                n = len(pr["start_raw"]) - 2
                op = pr["op"][2:]
                sub = self._port_submitter(p, programs)
                kern = []
                for run in programs[sub].kernels:
                    c = run.cmds.cols
                    k = int(((c["engine"] == "CDMA") & (c["port"] == p)).sum())
                    kern += [run.func if cfg.mode else run.kind] * k
                parts.append(pd.DataFrame({
                    "core": sub, "engine": "CDMA", "port": pd.array([p] * n, "Int64"),
                    "cmd_id": pr["pmu_id"][2:],
                    "start_ns": pr["start_raw"][2:] - offset - a_delta,
                    "end_ns": pr["end_raw"][2:] - offset - a_delta,
                    "register_layout": _OP_LAYOUT[op], "op": np.array(OP_NAMES, object)[op],
                    "tsk_or_cmd_type": _OP_TYP[op], "eu_or_special": _OP_EU[op],
                    "bytes": pr["bytes"][2:], "src": "DDR", "dst": "DDR",
                    "kernel": np.array(kern, object), "dep_cmd_id": 0,
                }))
        t = pd.concat(parts, ignore_index=True)
        zero = t["start_ns"].min() if len(t) else 0
        t["start_ns"] -= zero
        t["end_ns"] -= zero
        t["_e"] = t["engine"].map(ENGINE_ORDER)
        t = t.sort_values(["_e", "core", "port", "start_ns", "cmd_id"], kind="stable",
                          na_position="first").drop(columns="_e").reset_index(drop=True)
        for col in ("src", "dst"):
            t[col] = t[col].replace("", np.nan)
        return t[TRUTH_COLUMNS]

    def _port_submitter(self, port, programs):
        for core, p in programs.items():
            for run in p.kernels:
                if port in run.ports:
                    return core
        return self.chip["core_num"] - 1


DUMP_FILE_PATTERNS = ("global.profile", "cdmlib*.profile", "cdma*.profile")


def _dump_files(d: Path) -> set[Path]:
    return {p for pat in DUMP_FILE_PATTERNS for p in d.glob(pat)}


def _check_replaceable(final: Path) -> None:
    """An existing target is replaced only if it holds nothing but dump files."""
    if final.exists():
        if not final.is_dir():
            raise ValueError(f"{final} exists and is not a directory")
        other = set(final.iterdir()) - _dump_files(final)
        if other:
            raise ValueError(f"{final} exists and holds other files ({sorted(other)[0].name}); "
                             "refusing to replace it")


def _replace_dir(new: Path, final: Path) -> None:
    """Move the finished dump into place; an older dump is removed only after that."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{new.name}")
        final.rename(old)
    new.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_dump(outdir, cfg: SynthConfig | None = None, **kwargs) -> SynthResult:
    """Write a synthetic dump and its truth under ``outdir`` (see module docstring)."""
    cfg = cfg or SynthConfig(**kwargs)
    return DumpWriter(cfg).write(Path(outdir))


def _parse_ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip()) if text else ()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="reportgen-synth",
        description="Write a synthetic TPU PMU dump (AKS/AKSV, modes 0/1/2) and its truth.")
    ap.add_argument("outdir", help="output folder: <outdir>/<dump-name>/ + expected_commands.csv"
                                   " + generator_meta.json")
    ap.add_argument("--arch", default="AKS", choices=sorted(df.CHIPS))
    ap.add_argument("--cores", type=int, default=None)
    ap.add_argument("--cmds-per-core", type=int, default=1000)
    ap.add_argument("--mode", type=int, default=2, choices=(0, 1, 2))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tiu-freq", type=int, default=1000)
    ap.add_argument("--ports", default=None, help="CDMA ports, e.g. 0,1 ('' for none)")
    ap.add_argument("--idle-cores", default="", help="e.g. 3,5")
    ap.add_argument("--id-wrap", action="store_true", help="core 0 ends with > 65536 TIU cmds")
    ap.add_argument("--time-wrap", action="store_true", help="core 0 counter starts near 2^32")
    ap.add_argument("--ring-core", type=int, default=None, help="lap this core's GDMA ring")
    ap.add_argument("--rvt-ratio", type=float, default=0.0, help="AKSV: share of RVT kernels")
    ap.add_argument("--des-ratio", type=float, default=0.0,
                    help="share of kernels dispatched as DES chains (BLOCK_DES_KV)")
    ap.add_argument("--batch-idx", action="store_true", help="BATCH_IDX node in every kernel")
    ap.add_argument("--dump-name", default="cdm_profile_data_dev0-0")
    ap.add_argument("--no-truth", action="store_true",
                    help="skip expected_commands.csv (faster for big benchmark dumps)")
    a = ap.parse_args(argv)
    cfg = SynthConfig(arch=a.arch, cores=a.cores, cmds_per_core=a.cmds_per_core, mode=a.mode,
                      seed=a.seed, tiu_freq=a.tiu_freq,
                      cdma_ports=None if a.ports is None else _parse_ints(a.ports),
                      idle_cores=_parse_ints(a.idle_cores), id_wrap=a.id_wrap,
                      time_wrap=a.time_wrap, ring_core=a.ring_core, rvt_ratio=a.rvt_ratio,
                      des_ratio=a.des_ratio, batch_idx=a.batch_idx,
                      dump_name=a.dump_name, write_truth=not a.no_truth)
    t0 = time.perf_counter()
    try:
        res = write_dump(a.outdir, cfg)
    except (ValueError, OSError) as exc:
        print(f"reportgen-synth: {exc}", file=sys.stderr)
        return 2
    dt = time.perf_counter() - t0
    size = sum(res.files.values())
    print(f"wrote {res.dump_dir} ({len(res.files)} files, {size / 1e6:.2f} MB, "
          f"{len(res.truth)} commands) in {dt:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
