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
CHIPS = (AKS, AKSV)


def chip_for_arch(value: str) -> Chip | None:
    """The chip an ``arch=`` value selects (numeric code or name, case-insensitive)."""
    v = value.strip().lower()
    for chip in CHIPS:
        if v in chip.arch_codes:
            return chip
    return None
