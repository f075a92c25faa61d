"""result.html overview (issue 15), checked in Python: thresholds, time units, the waiting
series, busy/idle bars, shortened labels, and what a framework page leaves out."""
from __future__ import annotations

import base64
import dataclasses

import numpy as np
import pandas as pd
from bs4 import BeautifulSoup

from reportgen.analysis import thresholds
from reportgen.analysis.chip import ChipPeaks, CONSTANTS
from reportgen.analysis.metrics import engine_summary
from reportgen.testing.html_page import read_page
from reportgen.testing.profiles import derived, make_profile
from reportgen.writers import html as html_writer
from reportgen.writers.html import charts, units
from reportgen.writers.html.page import meta_rows

from test_html import HANDMADE, framework_profile, hand_profile

AKS = ChipPeaks(CONSTANTS["AKS"], tiu_mhz=1000.0, dma_mhz=1000.0)


def typed(spec) -> np.ndarray:
    return np.frombuffer(base64.b64decode(spec["bdata"]), dtype="<" + spec["dtype"])


def test_time_units_by_hand():
    assert units.time_unit([999]) == ("ns", 1.0)
    assert units.time_unit([1_211_585, 5]) == ("ms", 1e6)
    assert units.time_unit([1_211_585_265]) == ("s", 1e9)
    assert units.time_unit([np.nan]) == ("ns", 1.0)
    assert units.fmt_duration(1_211_585_265) == "1.212 s"      # not "1,211,585,265 ns"
    assert units.fmt_duration(850) == "850 ns"
    assert units.column_time_unit("Host-Device (ms)") == ("Host-Device", 1e6)
    assert units.column_time_unit("busy_ns") == ("busy", 1.0)
    assert units.column_time_unit("Share %") is None


def test_threshold_ratings_against_the_aks_peaks():
    # TIU util: low under 15 %, fair under 30 %
    assert [thresholds.rate("tiu_util", v, AKS) for v in (0.10, 0.20, 0.30)] == ["low", "fair", None]
    # DDR bandwidth against 68.264 GB/s per core: 50 % = 34.132, 75 % = 51.198
    assert [thresholds.rate("gdma_ddr_bw_busy", v, AKS) for v in (34.0, 34.2, 51.3)] == ["low", "fair", None]
    # L2M against 128 GB/s
    assert thresholds.rate("sdma_l2m_bw_busy", 63.9, AKS) == "low"
    # unknown values and unknown chips are never rated; other columns have no threshold
    assert thresholds.rate("gdma_ddr_bw_busy", float("nan"), AKS) is None
    assert thresholds.rate("gdma_ddr_bw_busy", 1.0, None) is None
    assert thresholds.rate("tiu_util", 0.01, None) == "low"
    assert thresholds.rate("gdma_util", 0.01, AKS) is None


def test_summary_cells_are_rated_in_the_page(tmp_path):
    profile = make_profile(cores=2, per_engine=300, seed=4)
    summary = engine_summary(profile)
    path = html_writer.write(profile, summary, tmp_path, quiet=True)
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    table = soup.select_one("#engine-summary table.summary")
    header = [th.get_text() for th in table.select("thead tr")[1].find_all("th")]
    groups = []
    for th in table.select("thead tr")[0].find_all("th"):
        groups += [th.get_text()] * int(th.get("colspan", 1))
    util = [g == "TIU" and h == "util" for g, h in zip(groups, header)].index(True)
    for row, tr in zip(summary.to_dict("records"), table.select("tbody tr")):
        td = tr.find_all("td")[util]
        want = thresholds.rate("tiu_util", row["tiu_util"], None)
        assert (td.get("class") or [None])[0] == (f"r-{want}" if want else None)
    assert "Span" not in header                       # said once, above the table


def test_waiting_is_one_hidden_series_and_idle_bars_only_where_the_engine_ran(tmp_path):
    profile = make_profile(cores=3, per_engine=400, seed=5)          # CDMA commands on core 0 only
    path = html_writer.write(profile, engine_summary(profile), tmp_path, quiet=True)
    data, _ = read_page(path.read_text(encoding="utf-8"), items=False)
    ftype = {t["name"]: t for t in data["charts"]["functype"]["data"]}
    sys_types = profile.commands.loc[profile.commands["is_sys"], "func_type"].astype(str).unique()
    assert len(sys_types) and not set(sys_types) & set(ftype)        # no SYS / sys entries of their own
    waiting = ftype[charts.WAITING]
    assert waiting["visible"] == "legendonly"
    sys_ns = profile.commands.loc[profile.commands["is_sys"]].eval("end_ns - start_ns").sum()
    unit, scale = units.time_unit(profile.commands.eval("end_ns - start_ns").groupby(
        profile.commands["engine"].astype(str)).sum())
    assert np.isclose(typed(waiting["x"]).sum() * scale, sys_ns)
    busyidle = {t["name"]: t for t in data["charts"]["busyidle"]["data"]}
    cdma_cores = profile.commands.loc[profile.commands["engine"] == "CDMA", "core"].unique()
    idle = typed(busyidle["CDMA idle"]["y"])
    assert [k for k in range(3) if not np.isnan(idle[k])] == sorted(int(k) for k in cdma_cores)
    # busy and idle swatches differ: idle is white with a hatch in the engine's colour
    assert busyidle["CDMA idle"]["marker"]["color"] != busyidle["CDMA busy"]["marker"]["color"]
    assert busyidle["CDMA idle"]["marker"]["pattern"]["shape"] == "/"


def test_short_labels_stay_distinct():
    stem = "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, "
    names = [stem + "int)", stem + "long)", stem + "short)", "aten::addmm"]
    short = charts.short_labels(names)
    assert len(set(short)) == 4 and short[3] == "aten::addmm"
    assert all(len(s) <= charts.LABEL_CHARS + 24 for s in short)


def test_framework_capture_facts_have_no_pmu_fields(tmp_path):
    profile = framework_profile(HANDMADE)
    keys = [k for k, _ in meta_rows(profile, 161_000)]
    assert not {"TIU clock", "DMA clock", "CDMA ports", "Capture mode", "Chip"} & set(keys)
    assert ("Timeline span", "161.000 µs (commands and host events)") in meta_rows(profile, 161_000)
    pmu = [k for k, _ in meta_rows(hand_profile(), 300)]
    assert {"TIU clock", "CDMA ports", "Capture mode"} <= set(pmu)


def test_findings_lead_the_overview_in_rank_order(tmp_path):
    profile = make_profile(cores=1, per_engine=50, seed=6)
    summary = derived(profile).summary
    findings = pd.DataFrame({"rank": [2, 1] + list(range(3, 9)), "severity": ["warn", "high"] + ["info"] * 6,
                             "text": ["second <b>finding</b>", "first finding"] + [f"finding {k}" for k in range(3, 9)]})
    profile.diagnosis = dataclasses.replace(profile.diagnosis, findings=findings)
    soup = BeautifulSoup(html_writer.write(profile, summary, tmp_path / "a", quiet=True).read_text(encoding="utf-8"),
                         "html.parser")
    card = soup.select_one("#panel-overview > .card.findings")
    assert card is not None and card.find_next_sibling(id="engine-summary") is not None
    items = [li.get_text() for li in card.select("li")]
    assert items[:2] == ["first finding", "second <b>finding</b>"]        # ranked, text escaped
    assert len(card.select(":scope > ol > li")) == 5 and len(items) == 8  # the rest one click away
    profile.diagnosis = dataclasses.replace(profile.diagnosis, findings=findings.iloc[0:0])
    soup = BeautifulSoup(html_writer.write(profile, summary, tmp_path / "b", quiet=True).read_text(encoding="utf-8"),
                         "html.parser")
    assert soup.select_one(".card.findings") is None                      # nothing found: nothing shown
