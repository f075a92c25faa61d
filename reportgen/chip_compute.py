"""The TIU compute widths of each chip: lanes, and per precision the execution units (EU) and
cube width (CUBE) of one lane. One table for the ops model that gives uArch Ops and Alg Cycle
(``parsers/pmu/tiu_ops*.py``) and for the peaks (``analysis/chip.py``), so that a peak is the
throughput Alg Cycle assumes. A leaf module: parsers and analysis both import it.

Sources: AKS/AKSV spec op-metrics.md §1 (EU_NUM, CUBE_NUM); BM1688/CV84X6 spec
chips-bm1688-cv84x6.md §9.1, verified there against the reference's ops on random descriptors.
CV84X6's printed arch dict says ``Cube IC Align(8bits) 64``, but its ops model (and so every
Alg Cycle it reports) computes with an int8 cube width of 32: this table holds 32 and the
RegInfo arch block keeps the vendor's printed 64 (docs/formats.md, "BM1688 and CV84X6").
"""
from __future__ import annotations

from dataclasses import dataclass

#: precision codes (0 INT8, 1 FP16, 2 FP32, 3 INT16, 4 INT32, 5 BF16, 6 INT4, 7 FP8)
INT8, FP32 = 0, 2


def _by_bits(b8: int, b16: int, b32: int, b4: int) -> tuple[int, ...]:
    """A per-precision-code table from the values for 8 / 16 / 32 / 4-bit data."""
    return (b8, b16, b32, b16, b32, b16, b4, b8)


@dataclass(frozen=True)
class ComputeWidths:
    lanes: int                 # NPU_NUM: lanes per core
    eu: tuple[int, ...]        # execution units per lane, per precision code
    cube: tuple[int, ...]      # cube input-channel width per lane, per precision code

    @property
    def cube_int8(self) -> int:
        return self.cube[INT8]

    @property
    def eu_fp32(self) -> int:
        return self.eu[FP32]


_AKS = ComputeWidths(64, _by_bits(64, 32, 16, 128), _by_bits(64, 32, 1, 128))
WIDTHS = {
    "AKS": _AKS,
    "AKSV": _AKS,
    "BM1688": ComputeWidths(32, _by_bits(16, 8, 4, 32), _by_bits(32, 16, 1, 64)),
    "CV84X6": ComputeWidths(16, _by_bits(32, 16, 8, 64), _by_bits(32, 16, 1, 64)),
}
