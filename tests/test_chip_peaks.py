"""The chip peak table against the figures the spec states (layer-info.md §7-§8)."""
import pytest

from reportgen.analysis.chip import peaks_for
from reportgen.model import Meta


def test_aks_peaks_match_the_vendor_model_peaks_at_1ghz():
    peaks = peaks_for(Meta(source="pmu", chip="AKS", tiu_freq_mhz=1000.0))
    # §7: model peaks 262.144 / 131.072 / 16.384 TOPS for int8 / f16 / f32 over 8 cores
    assert peaks.tops("int8", cores=8) == pytest.approx(262.144)
    assert peaks.tops("f16", cores=8) == pytest.approx(131.072)
    assert peaks.tops("bf16", cores=8) == pytest.approx(131.072)
    assert peaks.tops("f32", cores=8) == pytest.approx(16.384)
    # §8: int8 MAC/cycle = lanes × IC align × OHOW align = 16 384 → 32.768 TOPS per core
    assert peaks.cube_macs_per_cycle("int8") == 16384
    assert peaks.tops_per_core("w8f16") == pytest.approx(32.768)   # other types: int8 rate
    # §6: DDR BW(GB/s/Core) 68.264, ×8 = 546.112 for the chip
    assert peaks.ddr_gbps_chip == pytest.approx(546.112)


def test_peaks_follow_the_capture_clock_and_skip_framework_traces():
    assert peaks_for(Meta(source="pmu", chip="AKSV", tiu_freq_mhz=500.0)).tops_per_core() \
        == pytest.approx(16.384)
    assert peaks_for(Meta(source="chrome", chip="AKS")) is None
    assert peaks_for(Meta(source="pmu", chip="BM1684X")) is None
    assert all(source for *_, source in peaks_for(Meta(source="pmu", chip="AKS")).sources())


@pytest.mark.parametrize("chip", ["AKS", "BM1688", "CV84X6"])
@pytest.mark.parametrize("prec, dtype", [(0, "int8"), (1, "f16"), (5, "bf16")])
def test_peak_is_the_throughput_alg_cycle_assumes(chip, prec, dtype):
    """A matrix multiply's Alg Cycle (the ops model, spec op-metrics.md §2 / chips-bm1688-cv84x6.md
    §9) is its ops at the peak: Alg / Alg Cycle = 2 x the cube's MACs per cycle."""
    import numpy as np
    from reportgen.parsers.pmu.tiu_ops import tiu_ops
    from reportgen.parsers.pmu.tiu_ops_chips import tiu_ops_chip

    m, k, n = 256, 512, 1024            # multiples of every alignment: no rounding in D()
    f = {"res0_c": [m], "opd1_w": [k], "opd1_c": [n], "res0_n": [1], "res0_h": [1], "res0_w": [n],
         "tsk_eu_typ": [4], "opt_opd0_prec": [prec], "opt_res0_prec": [prec], "opt_opd1_prec": [prec]}
    f = {key: np.array(v, np.uint64) for key, v in f.items()}
    alg, _, cyc = tiu_ops("sMM2", f) if chip == "AKS" else tiu_ops_chip(chip, "sMM2", f)
    assert alg[0] == 2 * m * k * n
    peaks = peaks_for(Meta(source="pmu", chip=chip, tiu_freq_mhz=1000.0))
    assert alg[0] / cyc[0] == 2 * peaks.cube_macs_per_cycle(dtype)


def test_cv84x6_cube_width_is_the_ops_model_s():
    """CV84X6 prints Cube IC Align(8bits) 64 in its arch dict but computes Alg Cycle with an
    int8 cube width of 32 (spec chips-bm1688-cv84x6.md §9.1 vs §10): the peak uses 32, one value
    for both (chip_compute.py); the printed arch block is the vendor's."""
    from reportgen.parsers.pmu.chips import CV84X6

    peaks = peaks_for(Meta(source="pmu", chip="CV84X6", tiu_freq_mhz=1400.0))
    assert peaks.cube_macs_per_cycle("int8") == 16 * 32 * 4          # lanes x cube x OHOW
    assert peaks.tops_per_core("int8") == pytest.approx(16 * 32 * 4 * 2 * 1400e6 / 1e12)   # 5.7344
    assert peaks.cube_macs_per_cycle("f32") == 16 * 8
    assert CV84X6.arch["Cube IC Align(8bits)"] == 64
