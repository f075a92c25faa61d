"""The `bigTpuProfile` command end to end: outputs, options, parallel writers, several dumps."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from reportgen.errors import OutputError
from reportgen.parallel import run_jobs

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "cdm_profile_data_dev0-0"


def cli(*args, env_extra=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "reportgen", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "out"
    res = cli(SAMPLE, out)
    assert res.returncode == 0, res.stderr
    return res, out


def test_sample_report_has_every_output(sample_report):
    res, out = sample_report
    for rel in ("summary.txt", "summary.json", "PerfDoc/PerfAI_output.xlsx", "PerfWeb/result.html",
                "perfetto.pftrace", "tiuRegInfo_0.txt", "tdmaRegInfo_7.txt", "cdmaRegInfo_1.txt"):
        assert (out / rel).is_file() and (out / rel).stat().st_size > 0, rel
    assert not list(out.rglob("*.part")), "temporary files left behind"
    assert "Summary" in res.stdout and "Overall" in res.stdout
    assert str(out.resolve()) in res.stdout


def test_summary_txt_and_json_agree_and_match_the_truth(sample_report):
    _, out = sample_report
    doc = json.loads((out / "summary.json").read_text())
    truth = pd.read_csv(SAMPLE.parent / "expected_commands.csv")
    assert doc["commands"] == len(truth)
    overall = doc["summary"][-1]
    assert overall["core"] == "Overall"
    assert overall["span_ns"] == truth["end_ns"].max() - truth["start_ns"].min()
    line = next(l for l in (out / "summary.txt").read_text().splitlines() if l.startswith("Overall"))
    cells = [c.strip() for c in line.split("|")]
    assert cells[2] == f"{overall['span_ns'] / 1000:.3f}"
    assert cells[1] == f"{100 * overall['parallelism']:.2f}%"


def test_outputs_can_be_switched_off(tmp_path):
    out = tmp_path / "out"
    res = cli(SAMPLE, out, "--disable_web", "--disable_doc", "--no_perfetto", "--quiet")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == [".reportgen-manifest.json", "summary.json",
                                                     "summary.txt"]
    # --quiet silences progress only: the summary and the files written are still printed
    assert res.stderr == ""
    assert res.stdout.startswith((out / "summary.txt").read_text()) and "Wrote 2 file(s)" in res.stdout


def test_vendor_options_are_accepted(tmp_path):
    res = cli(SAMPLE, tmp_path / "o", "--enable_doc", "--perfetto", "--num_core", "8",
              "--tiu_freq", "500", "--disable_web", "--quiet")
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert doc["tiu_freq_mhz"] == 500


def test_failing_writer_fails_the_run():
    def broken():
        raise ValueError("boom")

    with pytest.raises(OutputError) as err:
        run_jobs([("fine", lambda: []), ("web report", broken)])
    assert err.value.exit_code == 3 and "web report failed: ValueError: boom" in str(err.value)


def test_parallel_writers_return_their_files(tmp_path):
    def make(name):
        def job():
            p = tmp_path / name
            p.write_text(name)
            return p
        return job

    got = run_jobs([(n, make(n)) for n in ("a", "b", "c")])
    assert sorted(p.name for p in got) == ["a", "b", "c"]


def test_several_dumps_get_one_report_each_and_an_index(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for i in (0, 1):
        shutil.copytree(SAMPLE, run / f"cdm_profile_data_dev{i}-0")
    out = tmp_path / "out"
    res = cli(run, out, "--disable_doc", "--no_perfetto")
    assert res.returncode == 0, res.stderr
    page = (out / "index.html").read_text()
    for i in (0, 1):
        assert (out / f"cdm_profile_data_dev{i}-0" / "PerfWeb" / "result.html").is_file()
        assert f'href="cdm_profile_data_dev{i}-0/PerfWeb/result.html"' in page
    devices = json.loads((out / "cluster.json").read_text())["devices"]
    assert [d["status"] for d in devices] == ["ok", "ok"]
    assert "2 dumps on a local Dask cluster" in res.stderr           # batch mode is announced


def test_framework_trace_report(tmp_path):
    """A chrome trace gets the device-lanes summary, the analysis tables as CSV and every report."""
    trace = ROOT / "tests" / "data" / "framework"
    files = sorted(p for p in trace.glob("*.json*"))
    assert files, "hand-made traces missing"
    out = tmp_path / "out"
    res = cli(files[0], out)
    assert res.returncode == 0, res.stderr
    assert "Device lanes" in (out / "summary.txt").read_text()
    for rel in ("PerfDoc/PerfAI_output.xlsx", "PerfWeb/result.html", "perfetto.pftrace",
                "tables/Device_lanes.csv", "tables/Operators.csv"):
        assert (out / rel).is_file(), rel
    assert not list(out.glob("*RegInfo_*.txt"))
    lanes = pd.read_csv(out / "tables" / "Device_lanes.csv")
    # per device: its lanes, then the device row (union); Overall counts every command once
    device_rows = lanes["engine"].astype(str).str.startswith("device:")
    assert lanes["commands"].iloc[-1] == lanes["commands"][device_rows].sum()
    assert lanes["commands"].iloc[-1] == lanes["commands"][:-1][~device_rows[:-1]].sum()


def test_failed_run_leaves_the_previous_report_intact(tmp_path, monkeypatch, capsys):
    """A writer failing mid-run: exit 3, one line, and OUT exactly as the previous run left it."""
    from reportgen import cli
    from reportgen.writers import html

    out = tmp_path / "out"
    assert cli.main([str(SAMPLE), str(out), "--quiet", "--disable_doc", "--no_perfetto"]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (out / "summary.txt").write_text("old report")          # mark the old report
    before[out / "summary.txt"] = b"old report"

    def broken(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(html, "write", broken)
    assert cli.main([str(SAMPLE), str(out), "--quiet", "--no_perfetto"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "web report failed: RuntimeError: disk on fire" in err[0]
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before                                  # nothing new, nothing half-written
    assert not [p for p in out.iterdir() if p.name.startswith(".reportgen-") and p.is_dir()]


def test_notebook_api():
    import reportgen

    p = reportgen.load(SAMPLE)
    truth = pd.read_csv(SAMPLE.parent / "expected_commands.csv")
    assert len(p.commands) == len(truth)
    m = p.summary
    assert list(m["core"])[-1] == "Overall" and len(m) == p.meta.num_cores + 1
    tiu0 = p.sheet("TIU_0")
    assert (tiu0["global_idx"].to_numpy() == range(len(tiu0))).all()
    assert "des_res0_c" in p.registers["TIU"].columns


def test_reginfo_auto_limit(tmp_path, monkeypatch):
    from reportgen import cli, pipeline

    monkeypatch.setattr(pipeline, "REGINFO_AUTO_LIMIT", 100)  # the sample has 1802 commands
    out = tmp_path / "out"
    assert cli.main([str(SAMPLE), str(out), "--quiet", "--disable_web", "--no_perfetto"]) == 0
    assert not list(out.glob("*RegInfo_*.txt"))
    doc = json.loads((out / "summary.json").read_text())
    assert any(w["code"] == "reginfo-skipped" for w in doc["warnings"])
    assert cli.main([str(SAMPLE), str(out), "--quiet", "--disable_web", "--no_perfetto",
                     "--reginfo", "on"]) == 0
    assert len(list(out.glob("*RegInfo_*.txt"))) == 18       # 8 tiu + 8 tdma + 2 cdma


def test_bad_clock_is_a_usage_error(tmp_path):
    res = cli(SAMPLE, tmp_path / "o", "--tiu_freq", "-5")
    assert res.returncode == 2 and "--tiu_freq must be a clock in MHz above 0" in res.stderr
    assert not (tmp_path / "o").exists()


def _report_bytes(out: Path) -> dict[str, bytes]:
    """Every output file's bytes; the workbook by zip part, without its creation time."""
    import zipfile

    files = {}
    for f in sorted(p for p in out.rglob("*") if p.is_file()):
        if f.suffix == ".xlsx":
            with zipfile.ZipFile(f) as z:
                files |= {f"{f.name}:{n}": z.read(n) for n in z.namelist() if n != "docProps/core.xml"}
        elif f.name != "summary.json":                    # it records how long the run took
            files[str(f.relative_to(out))] = f.read_bytes()
    return files


def test_same_input_gives_the_same_bytes(tmp_path):
    """Decoding runs in threads and string hashing differs per process: two runs must still
    write identical reports (a label's code depends on which thread met it first; the model's
    categories, and every output built from them, must not)."""
    runs = []
    for seed in ("1", "2"):
        out = tmp_path / f"run{seed}"
        res = cli(str(SAMPLE), str(out), "--quiet", "--reginfo", "on",
                  env_extra={"PYTHONHASHSEED": seed})
        assert res.returncode == 0, res.stderr
        runs.append(_report_bytes(out))
    assert list(runs[0]) == list(runs[1]) and len(runs[0]) > 10
    assert [k for k in runs[0] if runs[0][k] != runs[1][k]] == []
