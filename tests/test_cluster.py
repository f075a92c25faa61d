"""Batch (cluster) mode, issue 17: dump discovery, the cluster analysis by hand, and a real
two-worker Dask LocalCluster over several dumps, one of them corrupt."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from reportgen import batch, cli
from reportgen.analysis.cluster import DeviceRun, cluster_analysis, device_and_call
from reportgen.options import Options
from reportgen.testing.synth import SynthConfig, write_dump
from shared_data import FRAMEWORK, needs

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "cdm_profile_data_dev0-0"
FAST = dict(workbook=False, perfetto=False, quiet=False)


def _dump(folder: Path, name: str, seed: int, **changes) -> Path:
    return write_dump(folder, SynthConfig(cores=2, cmds_per_core=400, seed=seed, dump_name=name,
                                          write_truth=False, **changes)).dump_dir


def test_dumps_are_found_at_any_depth_in_natural_order(tmp_path):
    for rel in ("node1/cdm_profile_data_dev10-0", "node1/cdm_profile_data_dev2-0",
                "node0/call/cdm_profile_data_dev0-1", ".hidden/cdm_profile_data_dev9-0"):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "global.profile").write_text("")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "linked").symlink_to(tmp_path / "node1" / "cdm_profile_data_dev2-0")   # a dump: taken
    (tmp_path / "loop").symlink_to(tmp_path)                                           # not descended
    found = [p.relative_to(tmp_path).as_posix() for p in batch.find_dumps(tmp_path)]
    assert found == ["linked", "node0/call/cdm_profile_data_dev0-1", "node1/cdm_profile_data_dev2-0",
                     "node1/cdm_profile_data_dev10-0"]
    assert batch.find_dumps(tmp_path / "node1" / "cdm_profile_data_dev2-0") == []   # a dump itself
    assert device_and_call("node1/cdm_profile_data_dev10-3") == ("node1/10", 3)
    assert device_and_call("somewhere") == ("somewhere", None)


def test_one_dump_and_other_files_is_a_single_report(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run / "cdm_profile_data_dev0-0")
    (run / "readme.txt").write_text("captured on monday")
    out = tmp_path / "out"
    assert cli.main([str(run), str(out), "--disable_doc", "--no_perfetto", "--disable_web"]) == 0
    assert (out / "summary.json").is_file() and not (out / "index.html").exists()
    assert "holds one dump (cdm_profile_data_dev0-0): a single report" in capsys.readouterr().err


def _run(name, span, busy, kernels=(), cores=1, status="ok"):
    """A DeviceRun as a worker sends it: per-core rows (util = busy / span) plus Overall."""
    rows = [{"core": c, "span_ns": span, "tiu_cmds": 1, "tiu_busy_ns": busy, "tiu_util": busy / span}
            for c in range(cores)]
    rows.append({"core": "Overall", "span_ns": span, "tiu_busy_ns": busy * cores,
                 "tiu_util": busy / span})
    return DeviceRun(name, f"in/{name}", f"out/{name}", status, 1.0, 3, {"cores": cores},
                     rows if status == "ok" else [],
                     [{"kernel": k, "core": 0, "count": 1, "total_ns": t} for k, t in kernels])


def test_cluster_analysis_by_hand(tmp_path):
    runs = [_run("cdm_profile_data_dev0-0", 1000, 400, [("mm", 300), ("ln", 50)]),
            _run("cdm_profile_data_dev1-0", 1050, 450, [("mm", 310)]),
            _run("cdm_profile_data_dev2-0", 1300, 900, [("mm", 700), ("ln", 60)]),   # +30 %
            _run("cdm_profile_data_dev0-1", 1100, 420, [("mm", 320)]),
            _run("cdm_profile_data_dev3-0", 1, 0, status="x.profile at byte offset 8: truncated")]
    c = cluster_analysis(runs)
    assert c.failed == 1
    # median of 1000, 1050, 1300, 1100 = 1075; the rule is > 10 % above: 1182.5
    assert c.median_span_ns == 1075
    assert c.stragglers["name"].tolist() == ["cdm_profile_data_dev2-0"]
    s = c.stragglers.iloc[0]
    assert s["excess_pct"] == pytest.approx(100 * (1300 / 1075 - 1))
    # TIU busy median of 400, 450, 900, 420 = 435
    assert (s["engine"], s["engine_excess_pct"]) == ("TIU", pytest.approx(100 * (900 / 435 - 1)))
    mm = c.kernels.set_index("kernel").loc["mm"]
    assert (mm["devices"], mm["min_ns"], mm["median_ns"], mm["max_ns"]) == (4, 300, 315, 700)
    assert (mm["min_device"], mm["max_device"]) == ("cdm_profile_data_dev0-0", "cdm_profile_data_dev2-0")
    assert mm["spread_pct"] == pytest.approx(100 * 400 / 315)
    # device 0 was captured twice: call 1 against call 0
    assert c.calls[["device", "call", "span_ns"]].values.tolist() == [["0", 0, 1000], ["0", 1, 1100]]
    assert c.calls["span_vs_first_pct"].tolist() == pytest.approx([0, 10])
    bad = c.devices.set_index("name").loc["cdm_profile_data_dev3-0"]
    assert bad["status"].endswith("truncated") and pd.isna(bad["span_ns"])
    # the heat map: one cell per device, core and engine with commands, shaded by tenths
    assert c.heat.set_index("name").loc["cdm_profile_data_dev2-0", "util"] == pytest.approx(900 / 1300)
    from bs4 import BeautifulSoup

    from reportgen.writers.cluster import write_index
    page = BeautifulSoup(write_index(tmp_path, c, runs).read_text(), "html.parser")
    cells = page.find("table", class_="heat").find_all("td", title=True)
    assert [(td["class"], td["title"]) for td in cells] == [
        (["h4"], "core 0 TIU: 40.0%"), (["h4"], "core 0 TIU: 42.9%"), (["h6"], "core 0 TIU: 69.2%"),
        (["h3"], "core 0 TIU: 38.2%")]


def test_index_links_are_relative_and_names_are_text(tmp_path):
    """Issue 18 item 2, kept for the cluster page: links only to relative, percent-encoded
    paths, hostile dump names shown as text."""
    import os

    from bs4 import BeautifulSoup

    from reportgen.writers.cluster import write_index

    out = tmp_path / "out"
    names = ["javascript:alert(document.domain)", '"><img src=x onerror=alert(1)>', "ok" + os.fsdecode(b"\xff")]
    runs = []
    for i, name in enumerate(names):
        (out / name / "PerfWeb").mkdir(parents=True)
        (out / name / "PerfWeb" / "result.html").write_text("report")
        runs.append(_run(name, 1000 + i, 500, [(name, 10)]))
        runs[-1].output = str(out / name)
    runs.append(_run("elsewhere", 1000, 500))
    runs[-1].output = str(tmp_path / "elsewhere")
    soup = BeautifulSoup(write_index(out, cluster_analysis(runs), runs).read_text(encoding="utf-8"),
                         "html.parser")
    hrefs = [a["href"] for a in soup.find_all("a")]
    assert hrefs == ["javascript%3Aalert%28document.domain%29/PerfWeb/result.html",
                     "%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E/PerfWeb/result.html",
                     "ok%FF/PerfWeb/result.html"]          # none for a report outside OUT
    assert soup.find("img") is None and soup.find("script") is None
    first = soup.find("table").tbody
    assert [tr.td.get_text() for tr in first.find_all("tr")] == names[:2] + ["ok\ufffd", "elsewhere"]


def test_two_worker_local_cluster_with_a_corrupt_dump(tmp_path, capsys):
    """A real LocalCluster of two worker processes: every good dump reports, the corrupt one is
    listed with its one-line error, the exit code says some failed."""
    run = tmp_path / "run"
    good = [_dump(run / "node0", "cdm_profile_data_dev0-0", 1),
            _dump(run / "node0", "cdm_profile_data_dev0-1", 2),
            _dump(run / "node1", "cdm_profile_data_dev1-0", 3)]
    bad = _dump(run / "node1", "cdm_profile_data_dev2-0", 4)
    core = bad / "cdmlib0_0.profile"
    core.write_bytes(core.read_bytes()[:4000])
    out = tmp_path / "out"
    options = Options(input=str(run), output=str(out), jobs=2, web=True, **FAST)
    assert batch.run_many(run, batch.find_dumps(run), options) == 1
    captured = capsys.readouterr()
    assert "batch mode, 4 dumps on a local Dask cluster of 2 worker processes" in captured.err
    assert captured.err.count("\r") == 0 and len([l for l in captured.err.splitlines() if l.startswith("[")]) == 4
    for d in good:
        rel = d.relative_to(run)
        assert (out / rel / "PerfWeb" / "result.html").is_file()
        assert (out / rel / "summary.json").is_file()
    assert not (out / bad.relative_to(run)).exists()
    doc = json.loads((out / "cluster.json").read_text())
    status = {d["name"]: d["status"] for d in doc["devices"]}
    assert [status[d.relative_to(run).as_posix()] for d in good] == ["ok"] * 3
    error = status["node1/cdm_profile_data_dev2-0"]
    assert str(core) in error and "\n" not in error
    ok = [d for d in doc["devices"] if d["status"] == "ok"]
    for d in ok:    # span and busy per engine are each device's own summary.json Overall row
        overall = json.loads((out / d["name"] / "summary.json").read_text())["summary"][-1]
        assert d["span_ns"] == overall["span_ns"]
        assert d["busy_ns"] == {e: overall[f"{e.lower()}_busy_ns"] for e in ("TIU", "GDMA", "SDMA", "CDMA")}
    assert [c["call"] for c in doc["calls"]] == [0, 1]
    page = (out / "index.html").read_text()
    assert error.split(": ")[-1] in page and "cluster.xlsx" in page
    import openpyxl
    wb = openpyxl.load_workbook(out / "cluster.xlsx", read_only=True)
    assert wb.sheetnames[:4] == ["Devices", "Stragglers", "Kernel spread", "Calls"]
    assert sum(1 for _ in wb["Devices"].iter_rows()) == 5


def test_a_link_inside_out_stops_the_batch_before_anything_runs(tmp_path, capsys):
    run = tmp_path / "run"
    for i in (0, 1):
        shutil.copytree(SAMPLE, run / "node0" / f"cdm_profile_data_dev{i}-0")
    out = tmp_path / "out"
    (out / "node0").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "node0" / "cdm_profile_data_dev1-0").symlink_to(elsewhere)
    assert cli.main([str(run), str(out)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bigTpuProfile: error: {out / 'node0' / 'cdm_profile_data_dev1-0'} is a symbolic "
                   "link: not writing through it (remove or rename it)"]
    assert list(elsewhere.iterdir()) == []


RANK_TRACES = ("hta/trace_filter/sampled_rank-0.json.gz", "hta/trace_filter/sampled_rank-1.json.gz",
               "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz")


@needs(FRAMEWORK / "hta" / "trace_filter")
def test_rank_traces_and_a_corrupt_one_on_a_two_worker_local_cluster(tmp_path, capsys):
    """Framework ranks (real Kineto traces, one per rank_N folder and one directly inside) and a
    truncated trace: each good trace gets its full report, cluster.json lists every trace with
    the span and device busy of its own summary.json, the bad one its error line; exit code 1."""
    run = tmp_path / "run"
    good = []
    for r, rel in enumerate(RANK_TRACES[:2]):
        (run / f"rank_{r}").mkdir(parents=True)
        good.append(run / f"rank_{r}" / Path(rel).name)
        shutil.copy(FRAMEWORK / rel, good[-1])
    good.append(run / "alexnet.pt.trace.json.gz")
    shutil.copy(FRAMEWORK / RANK_TRACES[2], good[-1])
    (run / "rank_9").mkdir()
    bad = run / "rank_9" / "worker9.pt.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1')
    (run / "rank_9" / "notes.txt").write_text("not a trace")
    assert batch.find_runs(run) == [good[2], good[0], good[1], bad]
    out = tmp_path / "out"
    options = Options(input=str(run), output=str(out), jobs=2, web=True, **FAST)
    assert batch.run_many(run, batch.find_runs(run), options) == 1
    captured = capsys.readouterr()
    assert "batch mode, 4 traces on a local Dask cluster of 2 worker processes" in captured.err
    assert "Cluster report of 4 traces (1 failed)" in captured.out
    for t in good:
        assert (out / t.relative_to(run) / "PerfWeb" / "result.html").is_file()
    doc = json.loads((out / "cluster.json").read_text())
    by_name = {d["name"]: d for d in doc["devices"]}
    assert list(by_name) == [p.relative_to(run).as_posix() for p in (good[2], good[0], good[1], bad)]
    for t in good:
        d = by_name[t.relative_to(run).as_posix()]
        own = json.loads((out / d["name"] / "summary.json").read_text())
        overall = next(r for r in own["digest"]["lanes"] if r["core"] == "Overall")
        assert (d["kind"], d["status"], d["span_ns"]) == ("trace", "ok", own["summary"][-1]["span_ns"])
        assert d["busy_ns"] == {"device": overall["busy_ns"]} and d["util"]["device"] == pytest.approx(overall["util"])
        assert overall["busy_ns"] > 0
    error = by_name["rank_9/worker9.pt.trace.json"]["status"]
    assert error.startswith(str(bad)) and "\n" not in error and by_name["rank_9/worker9.pt.trace.json"]["span_ns"] is None
    assert not (out / "rank_9").exists()
    # the two sampled ranks share their kernels: their spread names both
    spread = {k["kernel"]: k for k in doc["kernels"]}
    assert any(k["devices"] == 2 and {k["min_device"], k["max_device"]} == {by_name[n]["name"] for n in
               ("rank_0/sampled_rank-0.json.gz", "rank_1/sampled_rank-1.json.gz")} for k in spread.values())
    # the heat map: one cell per device of each good trace, its Device lanes union row
    heat = {(h["name"], h["core"]): h["util"] for h in doc["heat"]}
    unions = {(n, r["core"]): r["util"] for n in by_name if by_name[n]["status"] == "ok"
              for r in json.loads((out / n / "summary.json").read_text())["digest"]["lanes"]
              if r["engine"].endswith("(union)")}
    assert heat == pytest.approx(unions) and ("rank_1/sampled_rank-1.json.gz", 1) in heat   # its GPU 1
    page = (out / "index.html").read_text()
    assert error.split(": ")[-1] in page and "device busy (µs)" in page and "TIU busy" not in page


def test_which_files_of_a_folder_are_rank_traces(tmp_path):
    """Trace files are found by name and by holding trace events; metadata and execution traces
    beside them are not ranks; dumps win over a trace beside them (their host trace); an Ascend
    profiler folder is one multi-rank report, never a batch."""
    event = {"ph": "X", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": 0}
    (tmp_path / "rank_0").mkdir()
    (tmp_path / "rank_0" / "w.pt.trace.json").write_text(json.dumps({"schemaVersion": 1, "traceEvents": [event]}))
    (tmp_path / "rank_1").mkdir()
    (tmp_path / "rank_1" / "w.json").write_text(json.dumps([event]))
    (tmp_path / "rank_1" / "profiler_info.json").write_text(json.dumps({"config": {}}))
    (tmp_path / "rank_1" / "w_et.json").write_text(json.dumps({"schema": "1.0.1", "nodes": []}))
    (tmp_path / "rank_1" / "w.txt").write_text(json.dumps([event]))
    assert [p.relative_to(tmp_path).as_posix() for p in batch.find_runs(tmp_path)] == \
        ["rank_0/w.pt.trace.json", "rank_1/w.json"]
    shutil.copytree(SAMPLE, tmp_path / "cdm_profile_data_dev0-0")
    assert batch.find_runs(tmp_path) == [tmp_path / "cdm_profile_data_dev0-0"]
    # the sample folder: its dump, and a generator's JSON that is no trace
    assert batch.find_runs(SAMPLE.parent) == [SAMPLE]


@needs(FRAMEWORK / "ascend-msinsight" / "test_data" / "test_rank_0")
def test_an_ascend_profiler_folder_is_not_a_batch(tmp_path):
    for r in (0, 1):
        shutil.copytree(FRAMEWORK / "ascend-msinsight" / "test_data" / "test_rank_0", tmp_path / f"rank_{r}")
    assert batch.find_runs(tmp_path) == [] and batch.find_runs(tmp_path / "rank_0") == []


def _trace(name, span, busy, device=0):
    """A trace's DeviceRun as a worker sends it: its span, and its Device lanes rows."""
    lanes = [{"core": device, "engine": "stream 7", "busy_ns": busy, "util": busy / span},
             {"core": device, "engine": "device: 1 lanes (union)", "busy_ns": busy, "util": busy / span},
             {"core": "Overall", "engine": "all lanes", "busy_ns": busy, "util": busy / span}]
    return DeviceRun(name, f"in/{name}", f"out/{name}", "ok", 1.0, 3, {"cores": 1},
                     [{"core": "Overall", "span_ns": span}], [], lanes, "trace")


def test_trace_stragglers_by_hand_and_kinds_judged_apart():
    traces = [_trace("rank_0/t.json", 1000, 500), _trace("rank_1/t.json", 1000, 600, device=1),
              _trace("rank_2/t.json", 1200, 900, device=2)]
    c = cluster_analysis(traces)
    assert c.lanes == ("device",) and "tiu_busy_ns" not in c.devices
    assert c.median_span_ns == 1000
    s = c.stragglers.iloc[0]        # 1200 > 1100; device busy 900 against the median 600
    assert (s["name"], s["engine"]) == ("rank_2/t.json", "device")
    assert (s["excess_pct"], s["engine_excess_pct"]) == (pytest.approx(20), pytest.approx(50))
    assert c.heat.values.tolist() == [["rank_0/t.json", 0, "device", 0.5], ["rank_1/t.json", 1, "device", 0.6],
                                      ["rank_2/t.json", 2, "device", 0.75]]
    # with two dumps whose spans are 10x the traces': each kind against its own median
    mixed = cluster_analysis(traces + [_run("cdm_profile_data_dev0-0", 10000, 400),
                                       _run("cdm_profile_data_dev1-0", 10500, 400)])
    assert mixed.median_span_ns is None and mixed.lanes == ("TIU", "GDMA", "SDMA", "CDMA", "device")
    assert mixed.stragglers["name"].tolist() == ["rank_2/t.json"]
    from reportgen.writers.cluster import cluster_document
    doc = {d["name"]: d for d in cluster_document(mixed)["devices"]}
    assert doc["rank_0/t.json"]["busy_ns"] == {"device": 500}
    assert doc["cdm_profile_data_dev0-0"]["busy_ns"] == {"TIU": 400, "GDMA": None, "SDMA": None, "CDMA": None}
