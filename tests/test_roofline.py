"""Roofline (analysis/roofline.py, docs/metrics.md "Roofline"): hand-computed scopes.

AKS at 1 GHz (chip.py): one core's FP16 cube peak is 64 lanes x 64 IC x 4 OHOW / 2 MACs x 2 ops
= 16,384 ops per ns; FP32 1/16 of int8 = 2,048 ops per ns; DDR 68.264 bytes per ns per core;
L2M 128 bytes per ns. Every expected value below is written from those constants by hand.
"""
from __future__ import annotations

import math

import pytest

from reportgen.analysis.breakdown import command_arrays
from reportgen.analysis.chip import peaks_for
from reportgen.analysis.roofline import LATENCY_UTIL, roofline
from reportgen.testing.profiles import from_rows

F16_PEAK = 16384.0          # ops per ns
F32_PEAK = 2048.0
DDR = 68.264                # bytes per ns
L2M = 128.0


def tiu(start, end, ops, kernel, dtype="FP16 -> FP32", core=0, ftype="sMM2"):
    return {"core": core, "engine": "TIU", "start_ns": start, "end_ns": end, "func_type": ftype,
            "func_name": "mm2.nn", "alg_ops": float(ops), "uarch_ops": float(ops),
            "dtype": dtype, "kernel": kernel}


def dma(start, end, nbytes, kernel, direction="DDR->LMEM", core=0, engine="GDMA"):
    return {"core": core, "engine": engine, "start_ns": start, "end_ns": end,
            "func_type": "DMA_tensor", "func_name": "tensorLd", "bytes": nbytes,
            "direction": direction, "kernel": kernel}


def table(rows, cores=1):
    p = from_rows(rows, cores=cores)
    p.meta.source = "pmu"
    peaks = peaks_for(p.meta)
    assert peaks is not None
    return roofline(p, command_arrays(p.commands), peaks)


def row(t, scope, name, core=None):
    m = t[(t["scope"] == scope) & (t["name"] == name)]
    if core is not None:
        m = m[m["core"] == core]
    assert len(m) == 1, m
    return m.iloc[0]


ROWS = [
    # compute-bound matmul: 0.8 of the FP16 peak over 1000 ns, its load half the DDR peak
    tiu(0, 1000, 0.8 * F16_PEAK * 1000, "matmul"),
    dma(0, 500, 34132, "matmul"),                       # 34132 / 68.264 = 500 ns at the peak
    # DDR-bound copy: 0.75 of the DDR peak over 1000 ns, a little compute
    dma(2000, 3000, 51198, "copy"),                     # 51198 / 68.264 = 750 ns at the peak
    tiu(2000, 2500, 0.1 * F16_PEAK * 1000, "copy"),
    # latency-bound: ten tiny TIU + DMA pairs, 50 ns gaps (union 1500 ns over a 1950 ns span)
    *[tiu(5000 + 200 * i, 5100 + 200 * i, F16_PEAK, "tiny") for i in range(10)],
    *[dma(5100 + 200 * i, 5150 + 200 * i, 682, "tiny") for i in range(10)],
]


def test_compute_bound_matmul():
    r = row(table(ROWS), "kernel", "matmul")
    ops = 0.8 * F16_PEAK * 1000
    assert r["ns"] == 1000 and r["ops"] == ops and r["ddr_bytes"] == 34132
    assert r["intensity"] == pytest.approx(ops / 34132, rel=1e-12)
    # roof = min(peak, I x DDR) = min(16384, 26214.4) ops/ns -> the compute peak
    assert r["roof_ops_per_s"] == pytest.approx(F16_PEAK * 1e9, rel=1e-12)
    assert r["ops_per_s"] == pytest.approx(0.8 * F16_PEAK * 1e9, rel=1e-12)
    assert r["bound_by"] == "compute"
    assert r["util_compute"] == pytest.approx(0.8) and r["util_ddr"] == pytest.approx(0.5)
    assert r["efficiency"] == pytest.approx(0.8, rel=1e-12)
    assert r["under_roof_ns"] == pytest.approx(200.0, rel=1e-9)
    assert r["dtype"] == "FP16" and r["core"] is None


def test_ddr_bound_copy():
    r = row(table(ROWS), "kernel", "copy")
    ops = 0.1 * F16_PEAK * 1000
    assert r["ns"] == 1000 and r["ddr_bytes"] == 51198
    assert r["intensity"] == pytest.approx(ops / 51198, rel=1e-12)
    # roof = I x DDR = 1,638,400 / 750 ops per ns, below the 16,384 compute peak
    assert r["roof_ops_per_s"] == pytest.approx(ops / 750 * 1e9, rel=1e-12)
    assert r["bound_by"] == "ddr"
    assert r["efficiency"] == pytest.approx(0.75, rel=1e-12)
    assert r["ops_per_s"] / r["roof_ops_per_s"] == pytest.approx(0.75, rel=1e-12)
    assert r["under_roof_ns"] == pytest.approx(250.0, rel=1e-9)
    assert r["ddr_gbps"] == pytest.approx(51.198)


def test_latency_bound_tiny_commands():
    r = row(table(ROWS), "kernel", "tiny")
    ops, nbytes, ns = 10 * F16_PEAK, 6820, 1500
    assert r["ns"] == ns and r["ops"] == ops and r["ddr_bytes"] == nbytes and r["commands"] == 20
    assert r["start_ns"] == 5000 and r["end_ns"] == 6950
    assert r["intensity"] == pytest.approx(ops / nbytes, rel=1e-12)
    assert r["roof_ops_per_s"] == pytest.approx(min(F16_PEAK, ops / nbytes * DDR) * 1e9, rel=1e-12)
    util_ddr = nbytes / DDR / ns                       # 0.0666: the highest, under the threshold
    assert r["util_compute"] == pytest.approx(10 / ns, rel=1e-12)
    assert util_ddr < LATENCY_UTIL and r["bound_by"] == "latency"
    assert r["efficiency"] == pytest.approx(util_ddr, rel=1e-12)
    assert r["under_roof_ns"] == pytest.approx(ns - nbytes / DDR, rel=1e-12)


def test_ranked_by_time_under_roof_and_scopes():
    t = table(ROWS)
    assert list(t["under_roof_ns"]) == sorted(t["under_roof_ns"], reverse=True)
    assert set(t["scope"]) == {"kernel", "call", "function_type", "core"}
    core = row(t, "core", "core 0")
    assert core["ns"] == 1000 + 1000 + 1500 and core["core"] == 0
    assert core["ops"] == pytest.approx(0.9 * F16_PEAK * 1000 + 10 * F16_PEAK)
    # one call per kernel name here (one run each on core 0): the call rows equal the kernel rows
    assert row(t, "call", "copy", core=0)["under_roof_ns"] == pytest.approx(250.0)


def test_mixed_data_types_add_their_times_at_peak():
    # 500 ns of FP32 work at its peak + 250 ns of FP16 work at its peak, in 1000 ns
    rows = [tiu(0, 600, 500 * F32_PEAK, "mix", dtype="FP32 -> FP32"),
            tiu(600, 1000, 250 * F16_PEAK, "mix")]
    r = row(table(rows), "kernel", "mix")
    assert r["dtype"] == "mixed" and r["bound_by"] == "compute"
    assert r["util_compute"] == pytest.approx(0.75, rel=1e-12)
    assert r["peak_ops_per_s"] == pytest.approx((500 * F32_PEAK + 250 * F16_PEAK) / 750 * 1e9)
    assert math.isnan(r["intensity"])                  # no DDR bytes: no intensity
    assert r["under_roof_ns"] == pytest.approx(250.0)


def test_l2m_bound_and_multi_core_kernel():
    # one kernel on two cores: core-time 2 x 1000 ns, L2M 0.9 of 128 bytes/ns on both
    rows = [dma(0, 1000, 115200, "gather", direction="L2M->LMEM", core=c) for c in (0, 1)]
    t = table(rows, cores=2)
    r = row(t, "kernel", "gather")
    assert r["ns"] == 2000 and r["l2m_bytes"] == 230400 and r["ddr_bytes"] == 0
    assert r["bound_by"] == "l2m" and r["efficiency"] == pytest.approx(0.9)
    assert r["under_roof_ns"] == pytest.approx(200.0)
    assert math.isnan(r["roof_ops_per_s"])             # no ops: no roof in ops
    assert len(t[t["scope"] == "call"]) == 2


def test_cdma_and_system_commands_do_not_count():
    rows = [dma(0, 1000, 68264, "k", engine="CDMA", direction="DDR->DDR"),
            {**tiu(0, 1000, 0, "k"), "func_type": "SYS", "is_sys": True}]
    t = table(rows)
    r = row(t, "kernel", "k")
    assert r["ddr_bytes"] == 0 and r["ops"] == 0 and r["bound_by"] == "latency"
    assert "SYS" not in set(t[t["scope"] == "function_type"]["name"])


def test_layer_scopes_on_the_layer_golden():
    """Each layer of a bmodel capture is a scope: its ops and DDR bytes are those of the commands
    the layer view maps to it (independently summed here from the commands)."""
    import numpy as np

    from shared_data import LAYERS
    from reportgen.parsers.detect import load_profile
    from reportgen.testing.profiles import derived

    path = LAYERS / "aks-layers-c2" / "input"
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    p = derived(load_profile(path))
    t = p.diagnosis.roofline
    layers = t[t["scope"] == "layer"]
    view = p.layer_view
    assert len(layers) == (np.bincount(view.command_layer[view.command_layer >= 0]) > 0).sum()
    c = p.commands
    for k in range(len(view.layers)):
        mine = c[view.command_layer == k]
        if mine.empty:
            continue
        name = f"{view.layers['name'].iloc[k]} (line {view.layers['file_line'].iloc[k]})"
        r = layers[layers["name"] == name].iloc[0]
        tiu = mine[(mine["engine"] == "TIU") & ~mine["is_sys"]]
        dma = mine[mine["engine"].isin(["GDMA", "SDMA"]) & ~mine["is_sys"]]
        ddr = dma[dma["direction"].astype(str).str.contains("DDR")]
        assert r["ops"] == pytest.approx(np.nansum(tiu["alg_ops"].to_numpy(float)))
        assert r["ddr_bytes"] == pytest.approx(ddr["bytes"].fillna(0).sum())
        assert r["commands"] == len(mine)
