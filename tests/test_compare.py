"""--baseline (issue 17): pairs of synthetic runs with known differences, checked delta by delta
against the generator's truth (expected_commands.csv) and each run's own summary.json."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from reportgen import cli
from reportgen.analysis.compare import NOISE, within_noise
from reportgen.testing.synth import SynthConfig, write_dump

FAST = ("--no_perfetto", "--disable_web", "--disable_doc", "--quiet")
SYS_OPS = ("tiu_send", "tiu_wait", "dma_send", "dma_wait", "cd_tx_wait", "cd_nop")
#: the pairs: (name, what differs from the base run)
VARIANTS = {"base": {}, "slow": dict(slow_kernel="norm"), "extra": dict(extra_kernel="kv_copy"),
            "idle": dict(idle_cores=(3,))}
NORM, EXTRA = "tpu_layernorm_fwd_multi_core", "tpu_kv_cache_copy"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, pd.DataFrame, Path]]:
    """Each variant: its dump, its truth, and its own report (summary only)."""
    root = tmp_path_factory.mktemp("runs")
    out = {}
    for name, changes in VARIANTS.items():
        res = write_dump(root / name, SynthConfig(cores=4, cmds_per_core=1500, seed=7, **changes))
        report = root / f"report-{name}"
        assert cli.main([str(res.dump_dir), str(report), *FAST]) == 0
        out[name] = (res.dump_dir, res.truth, report)
    return out


def _truth_totals(truth: pd.DataFrame) -> dict[str, int]:
    """Wall time of the calls per kernel from the generator's truth (the independent source):
    a call is a run of one kernel's commands on one core, from its first start to its last end."""
    t = truth[truth["kernel"].notna()].sort_values(["core", "start_ns"], kind="stable")
    call = (t["kernel"] != t.groupby("core")["kernel"].shift()).cumsum()
    g = t.groupby(call).agg(kernel=("kernel", "first"), start=("start_ns", "min"), end=("end_ns", "max"))
    return (g["end"] - g["start"]).groupby(g["kernel"]).sum().astype(int).to_dict()


def _truth_tiu_time(truth: pd.DataFrame, kernel: str) -> int:
    work = truth[~truth["op"].isin(SYS_OPS) & (truth["kernel"] == kernel) & (truth["engine"] == "TIU")]
    return int((work["end_ns"] - work["start_ns"]).sum())


def _compare(runs, new: str, base: str, tmp_path: Path, against: str = "dump") -> dict:
    """summary.json's compare key of ``new`` against ``base`` (its dump or its report folder)."""
    out = tmp_path / f"{new}-vs-{base}-{against}"
    baseline = runs[base][0] if against == "dump" else runs[base][2]
    assert cli.main([str(runs[new][0]), str(out), "--baseline", str(baseline), *FAST]) == 0
    return json.loads((out / "summary.json").read_text())["compare"]


def _summary(runs, name: str) -> pd.DataFrame:
    doc = json.loads((runs[name][2] / "summary.json").read_text())
    return pd.DataFrame(doc["summary"]).set_index("core")


def _engine_row(doc: dict, core, engine: str) -> dict:
    return next(r for r in doc["engines"] if r["core"] == core and r["engine"] == engine)


def test_noise_rule_by_hand():
    rel, floor = NOISE["ns"]
    assert (rel, floor) == (0.02, 1000.0)
    # 2 % of 100 µs = 2 µs: 1.5 µs is noise, 3 µs is not; near zero the 1 µs floor decides
    assert within_noise([100_000, 100_000, 0, 0], [101_500, 103_000, 900, 1_100], "ns").tolist() == \
        [True, False, True, False]
    # utilisation 50 %: 2 % of it is 1 point; below 25 % the 0.5-point floor decides
    assert within_noise([0.5, 0.5, 0.1, 0.1], [0.509, 0.52, 0.104, 0.106], "ratio").tolist() == \
        [True, False, True, False]
    assert within_noise([30.0, 30.0], [30.5, 31.0], "GB/s").tolist() == [True, False]


def test_a_kernel_made_twice_slower(runs, tmp_path):
    doc = _compare(runs, "slow", "base", tmp_path)
    base_truth, slow_truth = runs["base"][1], runs["slow"][1]
    # the generator really doubled the kernel's TIU time and left everything else alone
    assert _truth_tiu_time(slow_truth, NORM) == 2 * _truth_tiu_time(base_truth, NORM)
    expected_base, expected_new = _truth_totals(base_truth), _truth_totals(slow_truth)
    kernels = {k["name"]: k for k in doc["kernels"]}
    assert set(kernels) == set(expected_base)
    for name, k in kernels.items():
        assert (k["base_total_ns"], k["new_total_ns"]) == (expected_base[name], expected_new[name])
        assert k["delta_total_ns"] == expected_new[name] - expected_base[name]
        assert k["status"] == "both"
        assert k["within_noise"] is (name != NORM)
    assert kernels[NORM]["pct_total_ns"] == pytest.approx(
        100 * (expected_new[NORM] / expected_base[NORM] - 1))
    # engines: the DMA engines did exactly the same work (delta 0, noise); TIU as each run says
    base, new = _summary(runs, "base"), _summary(runs, "slow")
    for core in [0, 1, 2, 3, "Overall"]:
        tiu, gdma = _engine_row(doc, core, "TIU"), _engine_row(doc, core, "GDMA")
        assert tiu["base_busy_ns"] == _busy(base, core, "tiu")
        assert tiu["new_busy_ns"] == _busy(new, core, "tiu")
        assert tiu["delta_busy_ns"] == tiu["new_busy_ns"] - tiu["base_busy_ns"]
        assert (gdma["delta_busy_ns"], gdma["noise_busy_ns"]) == (0, True)
        assert gdma["base_ddr_bw"] == pytest.approx(base.loc[core, "gdma_ddr_bw_busy"])
    overall = _engine_row(doc, "Overall", "TIU")
    assert overall["delta_busy_ns"] > 0 and overall["noise_busy_ns"] is False
    # Function Types: only TIU types of the layernorm kernel changed, the DMA ones are identical
    changed = {f["name"] for f in doc["function_types"] if not f["within_noise"]}
    assert changed and "DMA_tensor" not in changed
    dma = next(f for f in doc["function_types"] if f["name"] == "DMA_tensor")
    assert dma["delta_total_ns"] == 0 and dma["base_count"] == dma["new_count"] > 0


def _busy(frame: pd.DataFrame, core, engine: str) -> int:
    return int(frame.loc[core, f"{engine}_busy_ns"])


def test_a_kernel_added_is_new_and_gone_the_other_way(runs, tmp_path):
    doc = _compare(runs, "extra", "base", tmp_path)
    expected = _truth_totals(runs["extra"][1])
    kernels = {k["name"]: k for k in doc["kernels"]}
    assert kernels[EXTRA]["status"] == "new"
    assert (kernels[EXTRA]["base_total_ns"], kernels[EXTRA]["new_total_ns"]) == (0, expected[EXTRA])
    assert kernels[EXTRA]["within_noise"] is False
    assert all(k["delta_total_ns"] == 0 and k["within_noise"] for n, k in kernels.items() if n != EXTRA)
    back = {k["name"]: k for k in _compare(runs, "base", "extra", tmp_path)["kernels"]}
    assert back[EXTRA]["status"] == "gone" and back[EXTRA]["new_total_ns"] == 0


def test_a_core_left_idle(runs, tmp_path):
    doc = _compare(runs, "idle", "base", tmp_path)
    base = _summary(runs, "base")
    for engine in ("TIU", "GDMA", "SDMA"):
        row = _engine_row(doc, 3, engine)
        assert row["new_busy_ns"] == 0
        assert row["delta_busy_ns"] == -_busy(base, 3, engine.lower())
        assert row["pct_busy_ns"] == -100.0 and row["noise_busy_ns"] is False


def test_old_report_folder_gives_the_same_deltas_as_the_dump(runs, tmp_path):
    for new in ("slow", "extra", "idle"):
        from_dump = _compare(runs, new, "base", tmp_path, "dump")
        from_report = _compare(runs, new, "base", tmp_path, "report")
        for key in ("engines", "kernels", "function_types"):
            assert from_report[key] == from_dump[key], (new, key)
        assert from_report["baseline"] == str(runs["base"][2])


def test_report_without_digest_still_compares_engines(runs, tmp_path):
    """A summary.json of a report made before the digest existed: engines compare, every
    kernel of the new run is 'new'."""
    old = tmp_path / "old"
    old.mkdir()
    doc = json.loads((runs["base"][2] / "summary.json").read_text())
    del doc["digest"]
    (old / "summary.json").write_text(json.dumps(doc))
    out = tmp_path / "out"
    assert cli.main([str(runs["slow"][0]), str(out), "--baseline", str(old), *FAST]) == 0
    cmp = json.loads((out / "summary.json").read_text())["compare"]
    assert _engine_row(cmp, "Overall", "GDMA")["delta_busy_ns"] == 0
    assert {k["status"] for k in cmp["kernels"]} == {"new"}


def test_a_bad_baseline_is_one_line(runs, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "summary.json").write_text("{not json")
    assert cli.main([str(runs["slow"][0]), str(tmp_path / "o"), "--baseline", str(bad), *FAST]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "summary.json: not a readable summary.json" in err[0]


def test_compare_sheet_and_tab(runs, tmp_path):
    """The workbook's Compare sheet and result.html's Compare tab show the same deltas."""
    import openpyxl
    from bs4 import BeautifulSoup

    out = tmp_path / "full"
    assert cli.main([str(runs["slow"][0]), str(out), "--baseline", str(runs["base"][0]),
                     "--no_perfetto", "--quiet"]) == 0
    doc = json.loads((out / "summary.json").read_text())["compare"]
    norm = next(k for k in doc["kernels"] if k["name"] == NORM)
    wb = openpyxl.load_workbook(out / "PerfDoc" / "PerfAI_output.xlsx", read_only=True)
    assert wb.sheetnames[1] == "Compare"
    rows = [r for r in wb["Compare"].iter_rows(values_only=True)]
    sheet_norm = next(r for r in rows if r[0] == NORM)
    assert sheet_norm[2:4] == (norm["base_total_ns"], norm["new_total_ns"])
    soup = BeautifulSoup((out / "PerfWeb" / "result.html").read_text(), "html.parser")
    panel = soup.find(id="panel-baseline")
    row = next(tr for tr in panel.find_all("tr") if tr.th and tr.th.get_text() == NORM)
    cells = [td.get_text() for td in row.find_all("td")]
    assert cells[:2] == [f"{norm['base_total_ns'] / 1000:,.1f}", f"{norm['new_total_ns'] / 1000:,.1f}"]
    assert "(noise)" not in cells[2] and "(noise)" in panel.get_text()
    data = json.loads(soup.find(id="rg-data").string)
    titles = [t["title"] for t in data["tabs"]]
    assert titles[0] == "Overview" and titles.index("Compare") in (1, 2)
    # one bar pair per engine row, kernel and Function Type, plus one SVG for both timelines
    assert len(panel.find_all("svg")) == \
        len(doc["engines"]) + len(doc["kernels"]) + len(doc["function_types"]) + 1


def test_compare_tab_shows_hostile_names_as_text():
    """Kernel names and paths come from the input: the Compare tab escapes them."""
    from bs4 import BeautifulSoup

    from reportgen.analysis.compare import compare
    from reportgen.analysis.digest import OPERATOR_COLUMNS, Digest, lanes_from_summary
    from reportgen.writers.html.compare import compare_panel

    evil = '<img src=x onerror=alert(1)>'

    def digest(source, total):
        engines = pd.DataFrame([{"core": 0, "span_ns": 10_000, "tiu_busy_ns": total, "tiu_util": total / 10_000},
                                {"core": "Overall", "span_ns": 10_000, "tiu_busy_ns": total,
                                 "tiu_util": total / 10_000}])
        kernels = pd.DataFrame([{"kernel": evil, "core": 0, "count": 1, "total_ns": total}])
        types = pd.DataFrame([{"func_type": evil, "core": 0, "engine": "TIU", "count": 2, "total_ns": total}])
        timeline = {"span_ns": 10_000, "buckets": 2, "lanes": [[0, "TIU"]], "busy": [[0.5, 0.25]]}
        return Digest(source, engines, lanes_from_summary(engines), kernels, types,
                      pd.DataFrame(columns=list(OPERATOR_COLUMNS)), timeline)

    c = compare(digest(evil + "/base", 4_000), digest("new", 8_000))
    assert c.kernels[["base_total_ns", "new_total_ns", "delta_total_ns"]].values.tolist() == [[4000, 8000, 4000]]
    assert c.kernels["pct_total_ns"].tolist() == [100.0]
    soup = BeautifulSoup(f"<div>{compare_panel(c)}</div>", "html.parser")
    assert soup.find("img") is None
    assert evil in soup.get_text() and evil + "/base" in soup.get_text()


def test_framework_trace_compares_its_lanes_kernels_and_operators(tmp_path):
    """A framework trace against itself, as a trace and as its report folder: every lane,
    kernel and operator is there on both sides with a zero delta (noise)."""
    trace = Path(__file__).resolve().parent / "data" / "framework" / "handmade_kineto.json"
    report = tmp_path / "base"          # with the workbook: its tables/*.csv are the independent side
    assert cli.main([str(trace), str(report), "--no_perfetto", "--disable_web", "--quiet"]) == 0
    docs = []
    for baseline in (trace, report):
        out = tmp_path / f"vs-{baseline.name}"
        assert cli.main([str(trace), str(out), "--baseline", str(baseline), *FAST]) == 0
        docs.append(json.loads((out / "summary.json").read_text())["compare"])
    lanes = pd.read_csv(report / "tables" / "Device_lanes.csv")
    kernels = pd.read_csv(report / "tables" / "Kernels.csv")
    for doc in docs:
        busy = {(str(r["core"]), r["engine"]): r["new_busy_ns"] for r in doc["engines"]}
        stream = (lanes["core"].astype(str) == "0") & (lanes["engine"] == "stream 7")
        assert busy[("0", "stream 7")] == lanes.loc[stream, "busy_ns"].item()
        assert all(r["delta_busy_ns"] == 0 and r["noise_busy_ns"] for r in doc["engines"])
        got = {k["name"]: (k["status"], k["new_total_ns"], k["new_count"]) for k in doc["kernels"]}
        assert got == {n: ("both", round(t * 1000), c) for n, t, c in
                       zip(kernels["Name"], kernels["Total (us)"], kernels["Calls"])}
        assert doc["operators"] and all(o["delta_total_ns"] == 0 for o in doc["operators"])
    assert docs[0]["engines"] == docs[1]["engines"] and docs[0]["kernels"] == docs[1]["kernels"]
