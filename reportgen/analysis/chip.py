"""Chip peak figures: the one table every "against the peak" number is computed from.

Each constant names where it comes from. The vendor writes the arch constants into every RegInfo
header (spec `layer-info.md` §8); the peaks are derived from them with the rule of §7/§8, per core,
so a model's peak is the per-core peak times the cores it actually uses (the vendor hard-codes ×8,
spec §10 item 13). Clocks come from the profile (a dump's `tpu_freq` or `--tiu_freq` override), not
from this table, because they are what the capture ran at.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model import Meta

ARCH_SOURCE = "RegInfo arch dict of the vendor tool (spec layer-info.md §8)"
DERIVED_SOURCE = "derived from the arch constants (spec layer-info.md §7-§8)"


@dataclass(frozen=True)
class ChipConstants:
    """The arch constants of one chip, as the vendor states them (all from `ARCH_SOURCE`)."""
    name: str
    cores: int                  # Core Num
    lanes: int                  # NPU Num
    cube_ic_align_int8: int     # Cube IC Align(8bits)
    cube_ohow_align: int        # Cube OHOW Align(8bits) = Cube OHOW Align(16bits)
    vector_ohow_align_int8: int  # Vector OHOW Align(8bits)
    ddr_gbps_per_core: float    # DDR Max BW(GB/s/Core)
    l2_gbps: float              # L2 Max BW(GB/s)


CONSTANTS = {c.name: c for c in (
    ChipConstants("AKS", cores=8, lanes=64, cube_ic_align_int8=64, cube_ohow_align=4,
                  vector_ohow_align_int8=64, ddr_gbps_per_core=68.264, l2_gbps=128.0),
    ChipConstants("AKSV", cores=4, lanes=64, cube_ic_align_int8=64, cube_ohow_align=4,
                  vector_ohow_align_int8=64, ddr_gbps_per_core=68.264, l2_gbps=128.0),
)}

#: data type -> divisor of the int8 cube rate. f16/bf16 run at half the int8 rate; f32 does
#: lanes × 16 MACs per cycle, 1/16 of int8 (spec §8); other types run at the int8 rate (§7).
_CUBE_DIVISOR = {"int8": 1, "f16": 2, "bf16": 2, "f32": 16}


@dataclass(frozen=True)
class ChipPeaks:
    """Peak figures of one capture: the chip's constants at the clocks the capture ran at."""
    chip: ChipConstants
    tiu_mhz: float
    dma_mhz: float

    def cube_macs_per_cycle(self, dtype: str = "int8") -> int:
        """Multiply-accumulates per TIU cycle of one core's cube (conv/matmul) for ``dtype``."""
        c = self.chip
        return c.lanes * c.cube_ic_align_int8 * c.cube_ohow_align // _CUBE_DIVISOR.get(dtype.lower(), 1)

    def tops_per_core(self, dtype: str = "int8") -> float:
        """Peak TOPS of one core: 2 ops per MAC × MACs per cycle × TIU clock."""
        return 2 * self.cube_macs_per_cycle(dtype) * self.tiu_mhz * 1e6 / 1e12

    def tops(self, dtype: str = "int8", cores: int = 1) -> float:
        return self.tops_per_core(dtype) * cores

    @property
    def ddr_gbps_per_core(self) -> float:
        return self.chip.ddr_gbps_per_core

    @property
    def ddr_gbps_chip(self) -> float:
        return self.chip.ddr_gbps_per_core * self.chip.cores

    @property
    def l2_gbps(self) -> float:
        return self.chip.l2_gbps

    def sources(self) -> list[tuple[str, float, str, str]]:
        """(figure, value, unit, source) rows, for documentation and the report's caption."""
        c = self.chip
        return [
            ("cores", c.cores, "", ARCH_SOURCE),
            ("lanes (NPU Num)", c.lanes, "", ARCH_SOURCE),
            ("TIU clock", self.tiu_mhz, "MHz", "the capture (tpu_freq / --tiu_freq)"),
            ("DMA clock", self.dma_mhz, "MHz", "the capture"),
            ("DDR peak per core", c.ddr_gbps_per_core, "GB/s", ARCH_SOURCE),
            ("DDR peak per chip", self.ddr_gbps_chip, "GB/s", DERIVED_SOURCE),
            ("L2M peak", c.l2_gbps, "GB/s", ARCH_SOURCE),
            *((f"{t} peak per core", self.tops_per_core(t), "TOPS", DERIVED_SOURCE)
              for t in ("int8", "f16", "f32")),
        ]


def peaks_for(meta: Meta) -> ChipPeaks | None:
    """The peaks of a PMU capture's chip, or None (framework traces, unknown chips)."""
    chip = CONSTANTS.get((meta.chip or "").upper())
    if chip is None or not meta.is_pmu:
        return None
    return ChipPeaks(chip, tiu_mhz=float(meta.tiu_freq_mhz), dma_mhz=float(meta.dma_freq_mhz))
