"""The generator's options (:class:`SynthConfig`) and their validation against the chip."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from reportgen.testing import dumpformat as df
from reportgen.testing.synth.catalogue import KINDS


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
    slow_kernel: str | None = None      # this kernel kind's TIU commands take slow_factor x longer
    slow_factor: int = 2
    extra_kernel: str | None = None     # one more kernel of this kind at the end of every busy core
    bmodel: bool = False                # bmodel capture: kernels as BLOCK_DES_BDC/GDMA/SDMA (§10)
    dyn_ratio: float = 0.0              # bmodel: share of kernels recorded in DYN_DATA instead
    layers: int = 0                     # > 0: a compiled model of that many ops, with
    #                                     tensor_location.json + final.mlir (layer-info.md)
    layer_format: str = "new"           # "old": bdc_gdma_id keys, no core_id / is_local (§2)
    layer_tail: int = 3                 # TIU and GDMA commands per core after the last op
    max_record_num: int = 131072
    tail_offset_ns: int = 850000
    dump_name: str = "cdm_profile_data_dev0-0"
    write_truth: bool = True            # expected_commands.csv (half the time of a big dump)
    dataflow: bool = False              # every start from its predecessors (synth/dataflow.py)
    speedup_engine: str | None = None   # dataflow: this engine's work durations divided by
    speedup: float = 1.0                #   speedup, every random draw kept

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
            ports = (0, 1) if anchor_present and not (self.bmodel or self.layers) else ()
        if self.bmodel and (ports or self.mode != 1 or self.rvt_ratio or self.des_ratio
                            or self.batch_idx or self.ring_core is not None or self.id_wrap):
            raise ValueError("a bmodel capture has no CDMA ports, RVT/DES kernels, BATCH_IDX, "
                             "lapped ring or id wrap, and its DYN_DATA is condensed (mode 1)")
        if self.layers and (self.cdma_ports or self.rvt_ratio or self.des_ratio or self.id_wrap
                            or self.ring_core is not None):
            raise ValueError("a layer capture is one compiled subnet per core: no CDMA ports, "
                             "RVT/DES kernels, id wrap or lapped ring")
        if self.layers < 0 or self.layer_tail < 0 or self.layer_format not in ("new", "old"):
            raise ValueError("layers and layer_tail are counts >= 0; layer_format is new or old")
        if self.dyn_ratio and not self.bmodel:
            raise ValueError("dyn_ratio applies to bmodel captures (--bmodel)")
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
        if not all(0 <= x <= 1 for x in (self.rvt_ratio, self.des_ratio, self.dyn_ratio)):
            raise ValueError("rvt_ratio, des_ratio and dyn_ratio are shares between 0 and 1")
        for kind in (self.slow_kernel, self.extra_kernel):
            if kind is not None and kind not in KINDS:
                raise ValueError(f"unknown kernel kind {kind!r}; expected one of {sorted(KINDS)}")
        if self.slow_factor < 1:
            raise ValueError("slow_factor must be 1 or more")
        if self.dataflow and (self.ring_core is not None or self.id_wrap or self.extra_kernel
                              or self.bmodel or self.layers):
            raise ValueError("dataflow timing covers the multi-core kernels only: no lapped ring, "
                             "id wrap, extra kernel, bmodel or layers")
        if self.speedup_engine is not None and (not self.dataflow or self.speedup <= 0
                                                or self.speedup_engine not in ("TIU", "GDMA", "SDMA", "CDMA")):
            raise ValueError("speedup_engine (TIU, GDMA, SDMA, CDMA) needs dataflow and speedup > 0")
        if self.tiu_freq <= 0:
            raise ValueError("tiu_freq must be > 0")
        return SynthConfig(**{**asdict(self), "arch": arch, "cores": cores, "cdma_ports": ports,
                              "idle_cores": idle})

    @property
    def busy_cores(self) -> list[int]:
        return [c for c in range(self.cores or 0) if c not in self.idle_cores]
