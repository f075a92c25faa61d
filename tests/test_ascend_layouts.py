"""Ascend / MindSpore layouts of the MindSpore guide and the TensorBoard NPU plugin, built in tmp
folders from the shared msinsight rank folder: multi-card ``profiler_data/rank_N/profiler/
rank-N_{ts}_ascend_ms``, a TensorBoard logdir (runs = separate reports, a batch), a worker's
spans (one rank, steps of one report), and broken files (warnings naming them)."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from reportgen import batch
from reportgen.parsers import ascend, detect
from reportgen.testing.profiles import derived
from shared_data import FRAMEWORK, needs

pytestmark = needs(FRAMEWORK)
RANK0 = FRAMEWORK / "ascend-msinsight/test_data/test_rank_0"
KERNELS = len(list(csv.DictReader(open(RANK0 / ascend.APO / "kernel_details.csv", encoding="utf-8-sig"))))


def _rank_folder(dest: Path, rank: int) -> Path:
    """A copy of the shared rank folder that says it is ``rank``."""
    shutil.copytree(RANK0, dest)
    info = json.loads((dest / "profiler_info_0.json").read_text())
    info["rank_id"] = rank
    (dest / "profiler_info_0.json").unlink()
    (dest / f"profiler_info_{rank}.json").write_text(json.dumps(info))
    return dest


def test_mindspore_multi_card_layout(tmp_path):
    data = tmp_path / "profiler_data"
    for r in (0, 1):
        _rank_folder(data / f"rank_{r}" / "profiler" / f"rank-{r}_2024061712345678_ascend_ms", r)
    assert detect.detect_kind(data) == "ascend"
    assert batch.find_runs(data) == []          # one report of both cards, not a batch
    prof = derived(ascend.load_ascend(data))
    assert sorted(set(prof.commands["core"])) == [0, 1]
    assert len(prof.commands) == 2 * KERNELS
    assert sorted(prof.tables["Steps"]["Rank"]) == [0, 1]
    # the per-rank step breakdown: step_trace_time.csv's µs as ms, one row per rank and step
    src = next(csv.DictReader(open(RANK0 / ascend.APO / "step_trace_time.csv", encoding="utf-8-sig")))
    b = prof.tables["Rank Step Breakdown"]
    assert sorted(b["Rank"]) == [0, 1]
    for col, name in (("Computation (ms)", "Computing"), ("Free (ms)", "Free"), ("Stage (ms)", "Stage"),
                      ("Communication Not Overlapped (ms)", "Communication(Not Overlapped)")):
        assert b[col].tolist() == [float(src[name]) / 1e3] * 2


def test_rank_from_folder_names_without_profiler_info(tmp_path):
    data = tmp_path / "profiler_data"
    for r in (2, 5):
        d = data / f"rank_{r}" / "profiler" / f"rank-{r}_2024061712345678_ascend_ms"
        shutil.copytree(RANK0, d)
        (d / "profiler_info_0.json").unlink()
    prof = ascend.load_ascend(data)
    assert sorted(set(prof.commands["core"])) == [2, 5]


def test_tensorboard_logdir_runs_are_a_batch(tmp_path):
    logdir = tmp_path / "logdir"
    for run in ("run_a", "run_b"):
        _rank_folder(logdir / run / "host_123_1700000000000_ascend_pt", 0)
    assert ascend.runs_below(logdir) == [logdir / "run_a", logdir / "run_b"]
    assert not detect.is_ascend_folder(logdir)
    assert batch.find_runs(logdir) == [logdir / "run_a", logdir / "run_b"]
    assert batch._kind(logdir / "run_a") == "trace"
    # each run on its own is one report
    assert detect.detect_kind(logdir / "run_a") == "ascend"
    assert ascend.runs_below(logdir / "run_a") == []


def test_worker_spans_are_steps_of_one_rank(tmp_path):
    run = tmp_path / "run"
    for ts in ("1700000000000", "1700000099999"):
        _rank_folder(run / f"host_123_{ts}_ascend_pt", 0)
    prof = derived(ascend.load_ascend(run))
    assert set(prof.commands["core"]) == {0}
    assert not any(w.code == "rank-ids" for w in prof.meta.warnings)
    assert len(prof.commands) == 2 * KERNELS
    assert sorted(prof.commands["span"].dropna().astype(int).value_counts().to_dict().items()) == \
        [(1, KERNELS), (2, KERNELS)]
    steps = prof.tables["Steps"]
    assert list(steps["Span"]) == [1, 2]
    assert list(steps["Computing"]) == [float(r["Computing"]) for r in
                                        csv.DictReader(open(RANK0 / ascend.APO / "step_trace_time.csv"))] * 2


def test_broken_files_are_warnings_naming_them(tmp_path):
    d = _rank_folder(tmp_path / "host_1_1700000000000_ascend_pt", 0)
    apo = d / ascend.APO
    (apo / "communication.json").write_text('{"step2": {"collective": ')          # cut short
    (apo / "operator_memory.csv").write_text("Size(KB)\n1\n")                    # no Name column
    (apo / "step_trace_time.csv").write_bytes(b"\xff\xfe\x00garbage\x00\n")      # not UTF-8
    (apo / "unknown_file.csv").write_text("a,b\n1,2\n")                          # unknown: ignored
    prof = derived(ascend.load_ascend(d))
    where = {Path(w.where).name for w in prof.meta.warnings if w.code == "unreadable-file"}
    assert where == {"communication.json", "operator_memory.csv", "step_trace_time.csv"}
    assert len(prof.commands) == KERNELS
    assert "Communication Matrix" in prof.tables and "Communication" not in prof.tables
    assert "Memory Timeline" in prof.tables


def test_broken_trace_view_keeps_kernel_details(tmp_path):
    d = _rank_folder(tmp_path / "host_1_1700000000000_ascend_pt", 0)
    (d / ascend.APO / "trace_view.json").write_text('{"traceEvents": 5}')
    prof = ascend.load_ascend(d)
    assert len(prof.commands) == KERNELS
    assert any(w.code == "unreadable-file" and w.where.endswith("trace_view.json") for w in prof.meta.warnings)


def test_logdir_runs_feed_the_cluster_report(tmp_path):
    """Each run of a logdir is its own report; the cluster report gathers their per-rank step
    breakdowns (cluster.json rank_steps, the Rank steps sheet, a table in index.html)."""
    import openpyxl

    from reportgen.analysis.cluster import cluster_analysis
    from reportgen.options import Options
    from reportgen.writers.cluster import write_cluster

    logdir, out = tmp_path / "logdir", tmp_path / "out"
    for run in ("run_a", "run_b"):
        _rank_folder(logdir / run / "host_123_1700000000000_ascend_pt", 0)
    runs = [batch.report_one(Options(input=str(r), output=str(out / r.name), workbook=False, perfetto=False,
                                     quiet=True), r.name, batch._kind(r)) for r in batch.find_runs(logdir)]
    assert [r.status for r in runs] == ["ok", "ok"]
    files = write_cluster(out, cluster_analysis(runs), runs)
    doc = json.loads((out / "cluster.json").read_text())
    src = next(csv.DictReader(open(RANK0 / ascend.APO / "step_trace_time.csv", encoding="utf-8-sig")))
    steps = doc["rank_steps"]
    assert [s["run"] for s in steps] == ["run_a", "run_b"]
    assert [s["Computation (ms)"] for s in steps] == [float(src["Computing"]) / 1e3] * 2
    sheet = openpyxl.load_workbook(out / "cluster.xlsx")["Rank steps"]
    assert [c.value for c in sheet[1]][:3] == ["run", "Source", "Step"]
    assert "Steps per rank" in files[0].read_text()
