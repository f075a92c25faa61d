"""Engine summary and lane summary on a hand-made profile whose every number is worked out here."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis.metrics import engine_summary, lane_summary, union_length
from reportgen.model import Meta, Profile, finalize_commands


def cmd(core, engine, start, end, **kw):
    row = dict(core=core, engine=engine, port=kw.pop("port", None), global_idx=0, cmd_id=1,
               start_ns=start, end_ns=end, cycles=end - start + 1, func_type="x", func_name="x",
               is_sys=kw.pop("is_sys", False), sys_wait=False, mode="TDI")
    row.update(kw)
    return row


@pytest.fixture(scope="module")
def profile():
    rows = [
        # core 0 TIU: [0,100) and [50,150) overlap -> union 150; a system command is not work
        cmd(0, "TIU", 0, 100, alg_ops=600.0, uarch_ops=1000.0),
        cmd(0, "TIU", 50, 150, alg_ops=400.0, uarch_ops=1000.0),
        cmd(0, "TIU", 900, 1000, is_sys=True, alg_ops=1.0, uarch_ops=1.0),
        # core 0 GDMA: DDR load 1000 B in 100 ns, L2M move 500 B in 50 ns, LMEM copy (neither)
        cmd(0, "GDMA", 0, 100, bytes=1000, direction="DDR->LMEM", stall_cycles=3),
        cmd(0, "GDMA", 200, 250, bytes=500, direction="L2M->LMEM", stall_cycles=2),
        cmd(0, "GDMA", 300, 310, bytes=64, direction="LMEM->LMEM"),
        # core 0 SDMA: store to DDR 2000 B in 200 ns
        cmd(0, "SDMA", 400, 600, bytes=2000, direction="LMEM->DDR"),
        # core 1 TIU: not modelled (mode 1): no uArch rate
        cmd(1, "TIU", 0, 400),
        # CDMA port 0 submitted by core 1: 4000 B in 400 ns
        cmd(1, "CDMA", 100, 500, port=0, bytes=4000, direction="DDR->DDR"),
    ]
    df = pd.DataFrame(rows)
    meta = Meta(source="pmu", num_cores=2, chip="AKS")
    return Profile(commands=finalize_commands(df), meta=meta)


def test_union_length():
    assert union_length(np.array([0, 50, 200]), np.array([100, 150, 210])) == 160
    assert union_length(np.array([5, 0]), np.array([10, 20])) == 20
    assert union_length(np.array([], np.int64), np.array([], np.int64)) == 0


def test_per_core_values(profile):
    s = engine_summary(profile).set_index("core")
    span = 1000                                   # first start 0, last end 1000
    c0, c1 = s.loc[0], s.loc[1]
    assert c0["span_ns"] == span
    assert (c0["tiu_cmds"], c0["tiu_busy_ns"], c0["tiu_idle_ns"]) == (3, 150, 850)
    assert c0["tiu_util"] == pytest.approx(0.15)
    assert c0["tiu_uarch_rate"] == pytest.approx(1000 / 2000)      # sys command excluded
    assert c0["gdma_busy_ns"] == 100 + 50 + 10
    assert (c0["gdma_ddr_bytes"], c0["gdma_l2m_bytes"]) == (1000, 500)
    assert c0["gdma_ddr_bw_busy"] == pytest.approx(1000 / 100)
    assert c0["gdma_l2m_bw_busy"] == pytest.approx(500 / 50)
    assert c0["gdma_ddr_bw_wall"] == pytest.approx(1000 / span)
    assert (c0["gdma_ddr_read_bytes"], c0["gdma_ddr_write_bytes"]) == (1000, 0)
    assert c0["gdma_stall_cycles"] == 5
    assert (c0["sdma_ddr_write_bytes"], c0["sdma_ddr_bw_busy"]) == (2000, pytest.approx(10.0))
    assert c0["parallelism"] == pytest.approx((150 + 160 + 200) / span)
    assert c0["compute_ratio"] == pytest.approx(150 / (160 + 200))
    assert math.isnan(c1["tiu_uarch_rate"])                         # n/a, never 100 %
    assert c1["tiu_busy_ns"] == 400 and c1["cdma_ddr_bytes"] == 4000
    assert math.isnan(c1["compute_ratio"])                          # no data movement


def test_overall_row(profile):
    s = engine_summary(profile).set_index("core")
    o = s.loc["Overall"]
    span, cores = 1000, 2
    assert o["tiu_busy_ns"] == 150 + 400
    assert o["tiu_util"] == pytest.approx(550 / (span * cores))
    assert o["tiu_idle_ns"] == span * cores - 550
    assert o["parallelism"] == pytest.approx((550 + 160 + 200) / (span * cores))
    assert o["tiu_uarch_rate"] == pytest.approx(0.5)                # only core 0 is modelled
    assert o["cdma_ddr_bw_busy"] == pytest.approx(4000 / 400)
    assert o["gdma_ddr_bytes"] == 1000 and o["sdma_ddr_bytes"] == 2000


def test_overall_cdma_busy_is_the_sum_of_the_rows():
    """Issue 15 item 8: two ports busy at the same time are 2 x 300 ns of CDMA work, not the
    300 ns of one union across ports (the page says Overall is busy summed over cores)."""
    rows = [cmd(0, "TIU", 0, 1000),
            cmd(0, "CDMA", 100, 400, port=0, bytes=64, direction="DDR->DDR"),
            cmd(1, "CDMA", 100, 400, port=1, bytes=64, direction="DDR->DDR")]
    p = Profile(commands=finalize_commands(pd.DataFrame(rows)), meta=Meta(source="pmu", num_cores=2, chip="AKS"))
    s = engine_summary(p).set_index("core")
    assert (s.loc[0, "cdma_busy_ns"], s.loc[1, "cdma_busy_ns"]) == (300, 300)
    o = s.loc["Overall"]
    assert (o["cdma_busy_ns"], o["cdma_idle_ns"]) == (600, 2 * 1000 - 600)
    assert o["cdma_util"] == pytest.approx(600 / 2000)


def test_lane_summary(profile):
    t = lane_summary(profile)
    row = t[(t["core"] == 0) & (t["engine"] == "GDMA")].iloc[0]
    assert (row["commands"], row["busy_ns"], row["util"]) == (3, 160, pytest.approx(0.16))
    overall = t.iloc[-1]
    assert overall["core"] == "Overall" and overall["commands"] == 9
    # issue 16: a device is busy while any of its lanes is: the union, never the sum
    # core 0: [0,150] [200,250] [300,310] [400,600] (the sys command at 900 is no work)
    # core 1: TIU [0,400] and CDMA [100,500] -> [0,500]
    dev = t[t["engine"].astype(str).str.startswith("device:")].set_index("core")
    assert dev.loc[0, "busy_ns"] == 150 + 50 + 10 + 200 and dev.loc[1, "busy_ns"] == 500
    assert dev.loc[0, "idle_ns"] == 1000 - 410 and dev.loc[1, "util"] == pytest.approx(0.5)
    assert overall["busy_ns"] == 410 + 500
    assert overall["util"] == pytest.approx(910 / (1000 * 2))


def test_pmu_kind_is_one_rule_everywhere():
    """A synthetic PMU-like profile is a PMU profile for every output (the summary text used to
    test ``source == "pmu"`` and show it as framework lanes while the page showed engines)."""
    from reportgen.analysis.metrics import engine_summary
    from reportgen.model import Meta
    from reportgen.testing.profiles import make_profile
    from reportgen.writers.text import summary_text

    profile = make_profile(cores=2, per_engine=50)
    assert profile.meta.is_pmu and not Meta(source="chrome").is_pmu
    text = summary_text(profile, engine_summary(profile))
    assert "Summary" in text and "Busy = union of non-system command intervals" in text


def test_catalogue_covers_the_summary_and_the_docs():
    """Every engine-summary column has one catalogue entry, and docs/metrics.md (written by hand,
    the long form) defines every catalogue column."""
    import re
    from pathlib import Path

    from reportgen.analysis import catalogue
    from reportgen.analysis.metrics import engine_summary
    from reportgen.testing.profiles import make_profile

    columns = list(engine_summary(make_profile(cores=2, per_engine=50)).columns)
    assert sorted(columns) == sorted(m.column for m in catalogue.summary_metrics())
    docs = (Path(__file__).parents[1] / "docs" / "metrics.md").read_text()
    documented = set(re.findall(r"`([a-z0-9_<>]+)`", docs))
    for entry in catalogue.summary_metrics():
        generic = re.sub(r"^(tiu|gdma|sdma|cdma)_", "<e>_", entry.column)
        dma = re.sub(r"^(gdma|sdma|cdma)_", "<dma>_", entry.column)
        assert {entry.column, generic, dma} & documented, entry.column


def test_summary_json_carries_the_catalogue(tmp_path):
    import json

    from reportgen.analysis.metrics import engine_summary
    from reportgen.testing.profiles import make_profile
    from reportgen.writers.text import write_summary

    profile = make_profile(cores=2, per_engine=50)
    _, js = write_summary(profile, engine_summary(profile), tmp_path)
    doc = json.loads(js.read_text())
    assert doc["metrics"]["gdma_ddr_bw_busy"] == {
        "label": "GDMA DDR BW", "unit": "GB/s",
        "definition": "DDR bytes / DDR time: bandwidth while transferring."}
    assert set(doc["metrics"]) == set(doc["summary"][0])


def test_all_direction_and_read_write_bandwidth(profile):
    """<dma>_bytes / _bw_busy count every direction; DDR read / write BW split the DDR time."""
    s = engine_summary(profile).set_index("core")
    c0, c1 = s.loc[0], s.loc[1]
    # GDMA core 0: 1000 + 500 + 64 B over 100 + 50 + 10 ns of transfers
    assert (c0["gdma_bytes"], c0["gdma_xfer_ns"]) == (1564, 160)
    assert c0["gdma_bw_busy"] == pytest.approx(1564 / 160)
    assert c0["gdma_ddr_read_bw_busy"] == pytest.approx(1000 / 100)
    assert c0["gdma_ddr_write_bw_busy"] == 0
    assert c0["sdma_ddr_write_bw_busy"] == pytest.approx(2000 / 200) and c0["sdma_ddr_read_bw_busy"] == 0
    # DDR->DDR counts as read and as write
    assert c1["cdma_ddr_read_bw_busy"] == c1["cdma_ddr_write_bw_busy"] == pytest.approx(4000 / 400)
    o = s.loc["Overall"]
    assert o["gdma_bytes"] == 1564 and o["cdma_bw_busy"] == pytest.approx(10.0)


def test_mode0_bandwidth_without_direction():
    """Mode 0: no direction, so DDR BW is n/a, but <dma>_bw_busy is the vendor's figure: GDMA
    core 0 of aks-m0-c8 is 30.05 GB/s in the reference's summary.txt."""
    from shared_data import PMU
    from reportgen.parsers.pmu import load_dump
    case = PMU / "aks-m0-c8"
    if not case.is_dir():
        pytest.skip(f"shared golden data not found at {case}")
    s = engine_summary(load_dump(case / "input")).set_index("core")
    assert math.isnan(s.loc[0, "gdma_ddr_bw_busy"])
    ref = (case / "reference-0.3.7" / "summary.txt").read_text().splitlines()
    row0 = next(r for r in ref if r.strip().startswith("0 |")).split("|")
    assert float(row0[7]) == 30.05
    assert s.loc[0, "gdma_bw_busy"] == pytest.approx(30.05, abs=0.006)
