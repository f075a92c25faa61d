"""Per-chip constants: cores, CDMA ports, clocks, engine codes, arch dict (spec §1)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Chip:
    name: str                  # AKS / AKSV
    alias: str                 # marketing family
    arch_codes: tuple[str, ...]  # accepted `arch=` values (lower-case)
    cores: int
    cdma_ports: int
    tiu_mhz: float
    dma_mhz: float
    #: dynamic-node engine field -> engine name (HAU nodes are dropped; VSDMA joins SDMA)
    node_engines: dict[int, str] = field(default_factory=dict)
    #: the arch dict the vendor prints in RegInfo files (`__CHIP_ARCH_ARGS__`)
    arch: dict[str, object] = field(default_factory=dict)
    #: PMU record layout family: "AKS" (16-byte TIU, 64-byte GDMA) or the chip's own (spec
    #: chips-bm1688-cv84x6.md §4); see streams.from_records
    records: str = "AKS"
    #: profile-init commands per engine sliced off before matching (AKS/AKSV 2, others 0)
    init_records: int = 2
    #: position of the TIU record whose end is the core's sync instant, in the stream before the
    #: preamble is cut and after edge strays are removed (AKS: the preamble's record #1; -1: last)
    sync_record: int = 1
    #: one stray TIU record at each end of every TIU stream (CV84X6, spec §7.3)
    tiu_edge_strays: bool = False
    #: DMA Function Type per cmd_type where the chip's mode-1 table is wrong: BM1688's names
    #: every cmd_type 6 command (send, wait, nop, ...) after its entry (6, 0) "chain end"; they
    #: are system commands, "sys" as on CV84X6 (reference bug B6, spec chips-bm1688-cv84x6.md §11)
    dma_type_fixes: tuple[tuple[int, str], ...] = ()

    @property
    def anchor_core(self) -> int:
        """The core whose SDMA stream anchors the CDMA ports (CORE_NUM - 1)."""
        return self.cores - 1

    def engine_code(self, engine: str) -> int:
        return next(k for k, v in self.node_engines.items() if v == engine)


def _arch_dict(chip: str, cores: int) -> dict[str, object]:
    return {
        "Chip Arch": chip, "Platform": "ASIC", "Core Num": cores, "NPU Num": 64,
        "TPU Lmem Size(MiB)": 16, "Tpu Lmem Addr Width(bits)": 18, "Tpu Bank Addr Width(bits)": 14,
        "Execution Unit Number(int8)": 64, "Bus Max Burst": 2, "L2 Max Burst": 1,
        "Bus Bandwidth": 128, "DDR Frequency(MHz)": 8533, "DDR Max BW(GB/s/Core)": 68.264,
        "L2 Max BW(GB/s)": 128, "Cube IC Align(8bits)": 64, "Cube OHOW Align(8bits)": 4,
        "Cube OHOW Align(16bits)": 4, "Vector OHOW Align(8bits)": 64,
        "TIU Frequency(MHz)": 1000, "DMA Frequency(MHz)": 1000,
    }


AKS = Chip(
    name="AKS", alias="SG2260/BM1690", arch_codes=("5", "8800", "aks", "sg2260", "bm1690"),
    cores=8, cdma_ports=11, tiu_mhz=1000.0, dma_mhz=1000.0,
    node_engines={0: "TIU", 1: "GDMA", 2: "HAU", 3: "SDMA", 4: "CDMA", 5: "VSDMA"},
    arch=_arch_dict("AKS", 8),
)
AKSV = Chip(
    name="AKSV", alias="SG2260E", arch_codes=("6", "140814", "aksv", "sg2260e"),
    cores=4, cdma_ports=10, tiu_mhz=1000.0, dma_mhz=1000.0,
    node_engines={0: "TIU", 1: "GDMA", 2: "SDMA", 3: "CDMA", 4: "VSDMA"},
    arch=_arch_dict("AKSV", 4),
)

def _arch_dict_v2(chip: str, cores: int, npu: int, lmem_mib: float, lmem_bits: int, bank_bits: int,
                  eu8: int, ddr_bw: float, cube_ic: int, tiu: int, dma: int) -> dict[str, object]:
    """The arch dict of BM1688 / CV84X6 (spec chips-bm1688-cv84x6.md §10)."""
    return {
        "Chip Arch": chip, "Platform": "ASIC", "Core Num": cores, "NPU Num": npu,
        "TPU Lmem Size(MiB)": lmem_mib, "Tpu Lmem Addr Width(bits)": lmem_bits,
        "Tpu Bank Addr Width(bits)": bank_bits, "Execution Unit Number(int8)": eu8,
        "Bus Max Burst": 16, "L2 Max Burst": 0, "Bus Bandwidth": 64, "DDR Frequency(MHz)": 4266,
        "DDR Max BW(GB/s/Core)": ddr_bw, "L2 Max BW(GB/s)": 0, "Cube IC Align(8bits)": cube_ic,
        "Cube OHOW Align(8bits)": 4, "Cube OHOW Align(16bits)": 4, "Vector OHOW Align(8bits)": 16,
        "TIU Frequency(MHz)": tiu, "DMA Frequency(MHz)": dma,
    }


_V2_ENGINES = {0: "TIU", 1: "GDMA", 2: "SDMA", 3: "CDMA", 4: "VSDMA"}   # AKSV node encoding
BM1688 = Chip(
    name="BM1688", alias="BM1688/CV186X", arch_codes=("4", "bm1688", "cv186x"),
    cores=2, cdma_ports=0, tiu_mhz=900.0, dma_mhz=750.0, node_engines=_V2_ENGINES,
    arch=_arch_dict_v2("A2", 2, 32, 4, 17, 13, 16, 32, 32, 900, 750),
    records="BM1688", init_records=0, sync_record=-1,   # the closing barrier's wait_msg (§7.2)
    dma_type_fixes=((6, "sys"),),
)
CV84X6 = Chip(
    name="CV84X6", alias="CV84X6/BM1684X2", arch_codes=("7", "cv84x6", "bm1684x2"),
    cores=4, cdma_ports=0, tiu_mhz=1400.0, dma_mhz=1200.0, node_engines=_V2_ENGINES,
    arch=_arch_dict_v2("CV84X6", 4, 16, 0.25, 18, 14, 32, 64, 64, 1400, 1200),
    records="CV84X6", init_records=0, sync_record=1,    # the opening barrier's wait_msg (§7.2)
    tiu_edge_strays=True,
)
CHIPS = (AKS, AKSV, BM1688, CV84X6)


def chip_for_arch(value: str) -> Chip | None:
    """The chip an ``arch=`` value selects (numeric code or name, case-insensitive)."""
    v = value.strip().lower()
    for chip in CHIPS:
        if v in chip.arch_codes:
            return chip
    return None
