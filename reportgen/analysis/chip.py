"""Chip peak figures: the one table every "against the peak" number is computed from.

Each constant names where it comes from. The vendor writes the arch constants into every RegInfo
header (spec `layer-info.md` §8); the peaks are derived from them with the rule of §7/§8, per core,
so a model's peak is the per-core peak times the cores it actually uses (the vendor hard-codes ×8,
spec §10 item 13). Clocks come from the profile (a dump's `tpu_freq` or `--tiu_freq` override), not
from this table, because they are what the capture ran at.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..chip_compute import WIDTHS
from ..model import Meta

ARCH_SOURCE = "RegInfo arch dict of the vendor tool (spec layer-info.md §8)"
DERIVED_SOURCE = "derived from the arch constants (spec layer-info.md §7-§8)"


@dataclass(frozen=True)
class ChipConstants:
    """The arch constants of one chip, as the vendor states them (`ARCH_SOURCE`); the compute
    widths (lanes, int8 cube width, f32 EUs) are the ops model's (`chip_compute.WIDTHS`)."""
    name: str
    cores: int                  # Core Num
    lanes: int                  # NPU Num (= the ops model's lanes)
    cube_ic_align_int8: int     # int8 cube width of the ops model (= Cube IC Align(8bits); CV84X6: 32, not 64)
    cube_ohow_align: int        # Cube OHOW Align(8bits) = Cube OHOW Align(16bits)
    vector_ohow_align_int8: int  # Vector OHOW Align(8bits)
    ddr_gbps_per_core: float    # DDR Max BW(GB/s/Core)
    l2_gbps: float              # L2 Max BW(GB/s)
    #: f32 multiply-accumulates per lane and TIU cycle: the f32 EU count of the chip's ops model
    #: (the f32 conv Alg Cycle divisor is lanes x this x 2; spec op-metrics.md §2,
    #: chips-bm1688-cv84x6.md §9.1)
    f32_macs_per_lane: int = 16
    source: str = ARCH_SOURCE


V2_SOURCE = ("arch dict of bigTpuProfile 0.3.7 in the RegInfo header "
             "(spec chips-bm1688-cv84x6.md §10); lanes, cube width and f32 EU count from its ops "
             "model (§9.1, reportgen/chip_compute.py)")


def _constants(name: str, **arch) -> ChipConstants:
    """A chip's constants: lanes, the int8 cube width and the f32 EUs from the compute-width
    table the ops model uses (``chip_compute.WIDTHS``: one source, so that the peaks are the
    throughput Alg Cycle assumes), the rest from the vendor's arch dict."""
    w = WIDTHS[name]
    return ChipConstants(name, lanes=w.lanes, cube_ic_align_int8=w.cube_int8,
                         f32_macs_per_lane=w.eu_fp32, **arch)


CONSTANTS = {c.name: c for c in (
    _constants("AKS", cores=8, cube_ohow_align=4, vector_ohow_align_int8=64, ddr_gbps_per_core=68.264,
               l2_gbps=128.0),
    _constants("AKSV", cores=4, cube_ohow_align=4, vector_ohow_align_int8=64, ddr_gbps_per_core=68.264,
               l2_gbps=128.0),
    # no L2 SRAM bandwidth in the vendor's dicts (L2 Max BW 0): the L2M peak is unknown
    _constants("BM1688", cores=2, cube_ohow_align=4, vector_ohow_align_int8=16, ddr_gbps_per_core=32.0,
               l2_gbps=0.0, source=V2_SOURCE),
    # CV84X6: the arch dict prints Cube IC Align 64, its ops model computes with 32 (§9.1): the
    # peak follows the ops model (chip_compute.py), the printed arch block stays the vendor's
    _constants("CV84X6", cores=4, cube_ohow_align=4, vector_ohow_align_int8=16, ddr_gbps_per_core=64.0,
               l2_gbps=0.0, source=V2_SOURCE),
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
        if dtype.lower() == "f32":
            return c.lanes * c.f32_macs_per_lane
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
            ("cores", c.cores, "", c.source),
            ("lanes (NPU Num)", c.lanes, "", c.source),
            ("TIU clock", self.tiu_mhz, "MHz", "the capture (tpu_freq / --tiu_freq)"),
            ("DMA clock", self.dma_mhz, "MHz", "the capture"),
            ("DDR peak per core", c.ddr_gbps_per_core, "GB/s", c.source),
            ("DDR peak per chip", self.ddr_gbps_chip, "GB/s", DERIVED_SOURCE),
            ("L2M peak", c.l2_gbps, "GB/s", c.source),
            *((f"{t} peak per core", self.tops_per_core(t), "TOPS", DERIVED_SOURCE)
              for t in ("int8", "f16", "f32")),
        ]


def peaks_for(meta: Meta) -> ChipPeaks | None:
    """The peaks of a PMU capture's chip, or None (framework traces, unknown chips)."""
    chip = CONSTANTS.get((meta.chip or "").upper())
    if chip is None or not meta.is_pmu:
        return None
    return ChipPeaks(chip, tiu_mhz=float(meta.tiu_freq_mhz), dma_mhz=float(meta.dma_freq_mhz))


#: the vendor's Detail Spec items (reference-tool.md §5: its workbook's arch block), in its
#: order: (arch dict key, label, unit)
DETAIL_SPEC = (
    ("Platform", "Platform", ""), ("Chip Arch", "Chip arch", ""), ("Core Num", "Cores", ""),
    ("NPU Num", "NPU lanes per core", ""), ("Cube IC Align(8bits)", "Cube IC align (int8)", ""),
    ("Cube OHOW Align(8bits)", "Cube OHOW align (int8)", ""),
    ("Cube OHOW Align(16bits)", "Cube OHOW align (16-bit)", ""),
    ("Vector OHOW Align(8bits)", "Vector OHOW align (int8)", ""),
    ("Execution Unit Number(int8)", "Execution units (int8)", ""),
    ("TIU Frequency(MHz)", "TIU frequency", "MHz"), ("DMA Frequency(MHz)", "DMA frequency", "MHz"),
    ("DDR Frequency(MHz)", "DDR frequency", "MHz"), ("TPU Lmem Size(MiB)", "Local memory per core", "MiB"),
    ("Tpu Lmem Addr Width(bits)", "Local memory address width", "bits"),
    ("Tpu Bank Addr Width(bits)", "Local memory bank address width", "bits"),
    ("Bus Bandwidth", "Bus width", "bits"),
    ("DDR Max BW(GB/s/Core)", "DDR peak per core", "GB/s"), ("L2 Max BW(GB/s)", "L2M peak", "GB/s"),
)


def chip_facts(meta: Meta) -> list[tuple[str, object, str, str]]:
    """(label, value, unit, source) of the capture's chip: the vendor's Detail Spec items as the
    capture states them (its arch dict, with the clocks it ran at), then the derived peaks. Empty
    for framework traces."""
    if not meta.is_pmu or not meta.arch:
        return []
    arch = dict(meta.arch, **{"TIU Frequency(MHz)": meta.tiu_freq_mhz,
                              "DMA Frequency(MHz)": meta.dma_freq_mhz})
    peaks = peaks_for(meta)
    src = peaks.chip.source if peaks else ARCH_SOURCE
    out = [(label, arch[key], unit, "the capture" if "Frequency" in key and "DDR" not in key else src)
           for key, label, unit in DETAIL_SPEC if key in arch]
    if peaks is not None:
        out += [(f"{figure} (derived)", value, unit, source) for figure, value, unit, source
                in peaks.sources() if source == DERIVED_SOURCE]
    return out
