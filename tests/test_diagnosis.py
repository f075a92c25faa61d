"""The diagnosis (analysis/diagnosis.py) on a hand-made 3-core profile whose every figure is
worked out by hand below: a system-command-heavy core (0), a core with a DMA-bound stretch (1)
and a core whose TIU is nearly idle while its SDMA streams DDR near the chip's peak (2).

Times in ns on a 1 GHz clock (Asic Cycle = end - start + 1); the span is [0, 1000).

core 0  TIU  sMM2  [0,100)    alg 800  uarch 1000  alg_cycle 50   kernel k_small, scope 0
        TIU  SYS   [100,700)  system wait, ops 1/1                 k_small
        TIU  sAR   [700,800)  alg 100  uarch 400   alg_cycle 20    k_small
        GDMA tensorLd [0,50)  3200 B DDR->LMEM                     k_small
        GDMA sys wait [50,600)                                     k_small
core 1  TIU  sMM2  [600,900)  alg 2400 uarch 3000  alg_cycle 150   k_big, scope 1
        GDMA tensorLd [0,400)  12800 B DDR->LMEM                   k_big
        GDMA tensorSt [400,600) 6400 B LMEM->DDR                   k_big
        GDMA tensor   [850,930) 1000 B L2M->LMEM (DMA_matrix)      k_big
core 2  TIU  sAR   [0,10)     alg 10   uarch 40    alg_cycle 2
        SDMA DMA_general [0,1000) 68000 B DDR->L2M
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis.rules import RULES
from reportgen.model import HOST_COLUMNS
from reportgen.testing.profiles import derived, from_rows

DOCS = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"


def tiu(core, s, e, ft, fn, alg, uarch, alg_cycle, kernel=None, scope=None, sys=False):
    return dict(core=core, engine="TIU", start_ns=s, end_ns=e, func_type=ft, func_name=fn,
                alg_ops=alg, uarch_ops=uarch, alg_cycle=alg_cycle, uarch_rate=alg / uarch,
                is_sys=sys, kernel=kernel, func_scope=scope)


def dma(core, engine, s, e, ft, fn, nbytes, direction, kernel=None, scope=None, sys=False):
    return dict(core=core, engine=engine, start_ns=s, end_ns=e, func_type=ft, func_name=fn,
                bytes=nbytes, direction=direction, is_sys=sys, kernel=kernel, func_scope=scope)


ROWS = [
    tiu(0, 0, 100, "sMM2", "mm2.nn", 800, 1000, 50, "k_small", 0),
    tiu(0, 100, 700, "SYS", "system.wait_msg", 1, 1, 0, "k_small", 0, sys=True),
    tiu(0, 700, 800, "sAR", "arith.add", 100, 400, 20, "k_small", 0),
    dma(0, "GDMA", 0, 50, "DMA_tensor", "tensorLd", 3200, "DDR->LMEM", "k_small", 0),
    dma(0, "GDMA", 50, 600, "sys", "wait", 0, None, "k_small", 0, sys=True),
    tiu(1, 600, 900, "sMM2", "mm2.nn", 2400, 3000, 150, "k_big", 1),
    dma(1, "GDMA", 0, 400, "DMA_tensor", "tensorLd", 12800, "DDR->LMEM", "k_big", 1),
    dma(1, "GDMA", 400, 600, "DMA_tensor", "tensorSt", 6400, "LMEM->DDR", "k_big", 1),
    dma(1, "GDMA", 850, 930, "DMA_matrix", "tensor", 1000, "L2M->LMEM", "k_big", 1),
    tiu(2, 0, 10, "sAR", "arith.add", 10, 40, 2),
    dma(2, "SDMA", 0, 1000, "DMA_general", "DMA_general", 68000, "DDR->L2M"),
]


@pytest.fixture(scope="module")
def profile():
    return derived(from_rows(ROWS, cores=3))


def row(frame, **key):
    sel = np.ones(len(frame), bool)
    for k, v in key.items():
        sel &= (frame[k] == v).to_numpy()
    assert sel.sum() == 1, key
    return frame[sel].iloc[0]


def test_breakdown_per_core(profile):
    b = profile.diagnosis.breakdown
    mm = row(b, core=0, engine="TIU", func_type="sMM2")
    assert (mm["category"], mm["count"], mm["busy_ns"], mm["sum_ns"], mm["cycles"]) == ("work", 1, 100, 100, 101)
    assert mm["share_busy"] == pytest.approx(100 / 200)        # core 0 TIU work busy: 100 + 100
    assert mm["share_span"] == pytest.approx(0.1)
    assert [mm[k] for k in ("min_ns", "mean_ns", "p50_ns", "p95_ns", "max_ns")] == [100] * 5
    assert (mm["alg_ops"], mm["uarch_ops"], mm["alg_cycles"]) == (800, 1000, 50)
    assert mm["uarch_rate"] == pytest.approx(0.8)
    assert mm["alg_ops_per_cycle"] == pytest.approx(800 / 101)
    assert math.isnan(mm["bytes"]) and math.isnan(mm["ddr_bw"])
    # the system command is waiting, not work: its own row, no share of the engine's busy time
    sys_row = row(b, core=0, engine="TIU", func_type="SYS")
    assert (sys_row["category"], sys_row["busy_ns"], sys_row["cycles"]) == ("waiting", 600, 601)
    assert math.isnan(sys_row["share_busy"]) and sys_row["share_span"] == pytest.approx(0.6)
    assert profile.summary.loc[0, "tiu_busy_ns"] == 200
    t = row(b, core=1, engine="GDMA", func_type="DMA_tensor")
    assert (t["count"], t["busy_ns"], t["bytes"], t["ddr_bytes"], t["l2m_bytes"]) == (2, 600, 19200, 19200, 0)
    assert t["share_busy"] == pytest.approx(600 / 680)
    assert t["ddr_bw"] == pytest.approx(19200 / 600) and math.isnan(t["l2m_bw"])
    m = row(b, core=1, engine="GDMA", func_type="DMA_matrix")
    assert (m["l2m_bytes"], m["l2m_bw"]) == (1000, pytest.approx(1000 / 80))


def test_breakdown_overall_and_by_name(profile):
    b = profile.diagnosis.breakdown
    mm = row(b, core="Overall", engine="TIU", func_type="sMM2")
    assert (mm["count"], mm["busy_ns"], mm["sum_ns"], mm["cycles"]) == (2, 400, 400, 402)
    assert mm["share_busy"] == pytest.approx(400 / 510)        # TIU busy 200 + 300 + 10
    assert mm["share_span"] == pytest.approx(400 / 3000)
    assert (mm["min_ns"], mm["mean_ns"], mm["p50_ns"], mm["max_ns"]) == (100, 200, 200, 300)
    assert mm["p95_ns"] == pytest.approx(100 + 0.95 * 200)
    assert mm["uarch_rate"] == pytest.approx(3200 / 4000) and mm["alg_cycles"] == 200
    f = profile.diagnosis.functions
    ld = row(f, core=1, engine="GDMA", func_name="tensorLd")
    assert (ld["func_type"], ld["count"], ld["busy_ns"], ld["ddr_bw"]) == ("DMA_tensor", 1, 400, 32.0)
    assert row(f, core="Overall", engine="GDMA", func_name="tensorLd")["count"] == 2


def test_overlap_and_idle_attribution(profile):
    o = profile.diagnosis.overlap.set_index("core")
    expect = {  # both, tiu_only, dma_only, idle, waiting, bound
        0: (50, 150, 0, 800, 600, "waiting"),
        1: (50, 250, 630, 70, 0, "data-bound"),
        2: (10, 0, 990, 0, 0, "data-bound"),
    }
    for core, (both, t_only, d_only, idle, wait, bound) in expect.items():
        r = o.loc[core]
        assert (r["both_ns"], r["tiu_only_ns"], r["dma_only_ns"], r["idle_ns"], r["waiting_ns"],
                r["bound"]) == (both, t_only, d_only, idle, wait, bound)
        assert both + t_only + d_only + idle == r["span_ns"] == 1000
    # Concurrency: overlap / the less busy side. The vendor's (tiu + gdma - T) / min would be
    # (200 + 50 - 1000) / 50 = -15 on core 0
    assert o.loc[0, "concurrency"] == 1.0
    assert o.loc[1, "concurrency"] == pytest.approx(50 / 300)
    assert (o["concurrency"] >= 0).all()
    assert (o.loc[0, "tiu_alg_cycles"], o.loc[0, "tiu_asic_cycles"]) == (70, 202)
    assert o.loc[0, "alg_cycle_ratio"] == pytest.approx(70 / 202)
    total = o.loc["Overall"]
    assert (total["span_ns"], total["both_ns"], total["dma_only_ns"], total["idle_ns"]) == (3000, 110, 1620, 870)
    s = profile.diagnosis.stretches
    assert s[["core", "start_ns", "end_ns", "length_ns"]].values.tolist() == [[1, 0, 600, 600], [2, 10, 1000, 990]]


def test_kernel_calls_and_kernels(profile):
    calls = profile.diagnosis.kernel_calls.set_index("name")
    big = calls.loc["k_big"]
    assert (big["source"], big["core"], big["scope"], big["start_ns"], big["end_ns"], big["wall_ns"],
            big["commands"]) == ("device", 1, 1, 0, 930, 930, 4)
    assert (big["tiu_busy_ns"], big["gdma_busy_ns"], big["sdma_busy_ns"]) == (300, 680, 0)
    assert big["tiu_util"] == pytest.approx(300 / 930) and big["uarch_rate"] == pytest.approx(0.8)
    assert (big["bytes"], big["ddr_bytes"], big["l2m_bytes"]) == (20200, 19200, 1000)
    assert big["ddr_bw"] == pytest.approx(19200 / 930) and big["l2m_bw"] == pytest.approx(1000 / 930)
    small = calls.loc["k_small"]
    assert (small["wall_ns"], small["commands"], small["tiu_busy_ns"], small["gdma_busy_ns"]) == (800, 5, 200, 50)
    assert small["uarch_rate"] == pytest.approx(900 / 1400) and small["ddr_bw"] == pytest.approx(4.0)
    k = profile.diagnosis.kernels
    assert k["name"].tolist() == ["k_big", "k_small"] and k["total_ns"].tolist() == [930, 800]
    assert k["share_wall"].tolist() == pytest.approx([930 / 3000, 800 / 3000])
    assert k["share_kernels"].tolist() == pytest.approx([930 / 1730, 800 / 1730])


def test_host_kernel_measured_over_every_core():
    p = from_rows(ROWS, cores=3)
    p.host = pd.DataFrame({
        "name": ["launchKernel:k", "aten::mm"], "category": pd.Categorical(["tpudnn", "cpu_op"]),
        "pid": [1, 1], "tid": [1, 2], "start_ns": [500, 0], "end_ns": [700, 1000], "depth": [0, 0],
        "parent": [-1, -1], "args": [None, None]}).astype({k: v for k, v in HOST_COLUMNS.items()
                                                          if v != "category"})
    calls = derived(p).diagnosis.kernel_calls
    host = row(calls, source="host")
    # inside [500, 700): TIU core 1 [600, 700); GDMA core 1 [500, 600); SDMA core 2 [500, 700)
    assert (host["name"], host["wall_ns"], host["tiu_busy_ns"], host["gdma_busy_ns"],
            host["sdma_busy_ns"], host["commands"]) == ("launchKernel:k", 200, 100, 100, 200, 1)
    assert host["tiu_util"] == pytest.approx(100 / (200 * 3))
    assert host["uarch_rate"] == pytest.approx(0.8)          # the sMM2 starting at 600


FINDINGS_FIRED = [
    ("core_imbalance", 2, "GDMA", None, "high"),          # 0 % vs median 5 %
    ("dma_bound_stretch", 2, "TIU", "10-1000", "high"),   # 99 % of the span
    ("dma_bound_stretch", 1, "TIU", "0-600", "high"),     # 60 %
    ("core_imbalance", 2, "TIU", None, "high"),           # 1 % vs median 20 %: 0.05x
    ("core_imbalance", 1, "GDMA", None, "high"),          # 68 % vs 5 %: 13.6x
    ("far_under_roof", None, "TIU+DMA", "k_small", "high"),  # latency: 3200 B / 68.264 / 800 ns
    ("far_under_roof", None, "TIU+DMA", "k_big", "medium"),  # DDR: 19200 B / 68.264 / 930 ns
    ("waiting_share", 0, "TIU", None, "high"),            # 60 %
    ("waiting_share", 0, "GDMA", None, "high"),           # 55 %
    ("low_uarch_rate", "Overall", "TIU", "sAR", "high"),  # 110 / 440 = 25 %
    ("ddr_bandwidth_peak", 2, "GDMA+SDMA", None, "high"),  # 68 / 68.264 GB/s
    ("ddr_bandwidth_peak", 0, "GDMA+SDMA", None, "medium"),  # 64 / 68.264 GB/s
    ("kernel_dominates", None, None, "k_big", "medium"),  # 930 / 1730
]


def test_findings_fire_and_rank(profile):
    f = profile.diagnosis.findings
    # ranked by estimated gain (issue 22: the what-if scenario removing each finding's cause)
    gains = f["gain_ns"].fillna(-1).to_numpy()
    assert (gains[:-1] >= gains[1:]).all()
    got = [(r.rule, r.core, r.engine, r.subject, r.severity) for r in f.itertuples()]
    assert sorted(got, key=str) == sorted(FINDINGS_FIRED, key=str)
    assert f["rank"].tolist() == list(range(1, 14))
    values = dict(zip(zip(f["rule"], f["core"], f["engine"]), f["value"]))
    assert values[("core_imbalance", 2, "TIU")] == pytest.approx(0.01 / 0.2)
    assert values[("core_imbalance", 1, "GDMA")] == pytest.approx(0.68 / 0.05)
    assert values[("ddr_bandwidth_peak", 2, "GDMA+SDMA")] == pytest.approx(68 / 68.264)
    assert (f["text"] == "core 2 TIU busy 1.0 % of the span vs median 20.0 % over 3 cores (0.05x)").sum() == 1
    assert (f["text"] == ("core 2: DMA busy while TIU idle for 0.990 us (99.0 % of the span), "
                          "from 0.010 us to 1.000 us")).sum() == 1


def test_no_finding_on_a_balanced_quiet_profile():
    rows = [tiu(c, 0, 500, "sMM2", "mm2.nn", 900, 1000, 10) for c in range(2)]
    rows += [dma(c, "GDMA", 0, 400, "DMA_tensor", "tensorLd", 4000, "DDR->LMEM") for c in range(2)]
    assert derived(from_rows(rows, cores=2)).diagnosis.findings.empty


def test_docs_list_every_rule_with_its_thresholds():
    full = DOCS.read_text(encoding="utf-8")
    text = full[full.index("### Findings"):]
    text = text[:text.index("\n## ")]          # the Findings section only
    framework = full[full.index("### Findings of framework traces"):]      # issue 24's rules
    text += framework[:framework.index("\n### ")]
    documented = {}
    for m in re.finditer(r"^\| `(\w+)` \| [^|]+ \| ([\d.]+) ?(%?) \| ([\d.]+) ?(%?) \|", text, re.M):
        scale = lambda v, pct: float(v) / 100 if pct else float(v)  # noqa: E731
        documented[m.group(1)] = (scale(m.group(2), m.group(3)), scale(m.group(4), m.group(5)))
    assert documented == {r.name: (r.threshold, r.severe) for r in RULES.values()}


def test_a_rule_firing_on_many_cores_of_an_engine_is_one_finding():
    """Four cores whose TIU waits 60/70/80/90 % of a 1000 ns span (and works 10 %), a fifth that
    waits 10 %: waiting_share fires on four cores of TIU, folded into one finding naming them,
    most extreme first; its value and severity are the worst member's."""
    rows = []
    for core, wait in enumerate((600, 700, 800, 900, 100)):
        rows += [tiu(core, 0, 100, "sMM2", "mm2.nn", 900, 1000, 90),
                 tiu(core, 100, 100 + wait, "SYS", "system.wait_msg", 1, 1, 0, sys=True),
                 tiu(core, 999, 1000, "sAR", "arith.add", 1, 1, 1)]
    f = derived(from_rows(rows, cores=5)).diagnosis.findings
    waiting = f[f["rule"] == "waiting_share"]
    assert len(waiting) == 1
    w = waiting.iloc[0]
    assert w["core"] is None and w["engine"] == "TIU" and w["severity"] == "high"
    assert w["value"] == pytest.approx(0.9) and w["subject"] == "cores 0, 1, 2, 3"
    assert w["text"] == ("TIU spends at least 20 % of the span in system commands (send/wait/sync) "
                         "on 4 of 5 cores: core 3 90.0 %, core 2 80.0 %, core 1 70.0 %, core 0 60.0 %")
