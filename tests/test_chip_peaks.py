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
