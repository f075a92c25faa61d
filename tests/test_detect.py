"""Input detection: content sniffing, folder layouts, one-line rejections, and the sweep over
every shared framework file and folder (each is ingested or rejected with a reason)."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from reportgen.errors import InputError
from reportgen.parsers.detect import detect_kind, load_profile
from reportgen.testing.profiles import derived
from shared_data import FRAMEWORK, needs

DATA = Path(__file__).parent / "data" / "framework"
SHARED = FRAMEWORK
needs_shared = needs(FRAMEWORK)
#: files above this size are skipped with REPORTGEN_QUICK=1 (a faster local run); CI sweeps all
SWEEP_LIMIT = 400_000


def load(path):
    """An input as a report sees it: read, then (framework traces) its tables derived."""
    return derived(load_profile(path))


def test_detect_by_content_not_name(tmp_path):
    trace = json.dumps([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]).encode()
    p = tmp_path / "weird.name"
    p.write_bytes(gzip.compress(trace))
    assert detect_kind(p) == "chrome"
    assert len(load_profile(p).host) == 1
    q = tmp_path / "fake.json"
    q.write_bytes(b"\x00\x01binary")
    with pytest.raises(InputError, match=r"fake\.json: file is not JSON; expected"):
        detect_kind(q)
    e = tmp_path / "empty.json"
    e.write_bytes(b"")
    with pytest.raises(InputError, match="empty file"):
        detect_kind(e)
    db = tmp_path / "ascend_pytorch_profiler_0.db"
    db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    assert detect_kind(db) == "ascend"            # a DB export by its name and header (issue 27)
    with pytest.raises(InputError, match="SQLite"):
        load_profile(db)                          # ... that is broken: one line naming it
    other = tmp_path / "other.db"
    other.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    with pytest.raises(InputError, match="SQLite"):
        detect_kind(other)


def test_missing_and_empty_folder(tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        detect_kind(tmp_path / "nope")
    with pytest.raises(InputError, match="folder holds no recognised profile"):
        detect_kind(tmp_path)


def test_pmu_folder_goes_to_pmu_loader(tmp_path):
    (tmp_path / "global.profile").write_bytes(b"\x00" * 16)
    assert detect_kind(tmp_path) == "pmu"


def test_folder_of_rank_traces(tmp_path):
    for r in (0, 1):
        (tmp_path / f"worker.rank_{r}.json").write_text(json.dumps({
            "distributedInfo": {"rank": r},
            "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                             "ts": 0, "dur": 1 + r, "args": {"device": 0}}]}))
    (tmp_path / "notes.txt").write_text("not a trace")
    assert detect_kind(tmp_path) == "chrome-ranks"
    prof = load(tmp_path)
    assert sorted(prof.commands["core"]) == [0, 1]
    assert "Ranks" in prof.tables


def test_handmade_files():
    assert detect_kind(DATA / "handmade_kineto.json") == "chrome"
    assert detect_kind(DATA / "handmade_oddities.json") == "chrome"  # unterminated array


@needs_shared
def test_layout_kinds():
    assert detect_kind(SHARED / "ascend-msinsight/test_data/test_rank_0") == "ascend"
    assert detect_kind(SHARED / "ascend-msinsight/test_data/test_rank_0/ASCEND_PROFILER_OUTPUT") == "ascend"
    assert detect_kind(SHARED / "mindinsight/run_2/normal_run/profiler") == "ascend"
    assert detect_kind(SHARED / "mindinsight/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC") == "ascend"
    assert detect_kind(SHARED / "hta/trace_filter") == "chrome-ranks"
    assert detect_kind(SHARED / "catapult/simple_trace_gz.gz") == "chrome"
    prof = load_profile(SHARED / "hta/trace_filter")
    assert sorted(set(prof.commands["core"])) == [0, 1]   # distributedInfo ranks of the two files


def _shared_items():
    if not SHARED.is_dir():
        return []
    return sorted(str(p.relative_to(SHARED)) for p in SHARED.rglob("*") if p.name != "README.md")


def _slices_in(path: Path) -> int | None:
    """X/B events of a JSON trace by plain json (None when it is not a JSON event list)."""
    try:
        b = path.read_bytes()
        if b[:2] == b"\x1f\x8b":
            b = gzip.decompress(b)
        obj = json.loads(b)
    except (ValueError, OSError):
        return None
    ev = obj.get("traceEvents") if isinstance(obj, dict) else obj
    if not isinstance(ev, list):
        return None
    return sum(1 for e in ev if isinstance(e, dict) and e.get("ph") in ("X", "B"))


@needs_shared
@pytest.mark.parametrize("rel", _shared_items())
def test_every_shared_item_ingested_or_rejected(rel):
    path = SHARED / rel
    quick = os.environ.get("REPORTGEN_QUICK")
    if quick and path.is_file() and path.stat().st_size > SWEEP_LIMIT:
        pytest.skip("large file skipped: REPORTGEN_QUICK is set")
    if quick and path.is_dir() and sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) > SWEEP_LIMIT:
        pytest.skip("large folder skipped: REPORTGEN_QUICK is set")
    try:
        prof = load(path)
    except InputError as exc:
        msg = str(exc)
        assert msg.startswith(str(path)) or str(SHARED) in msg
        assert "expected" in msg or "not a" in msg or "without" in msg or "execution trace" in msg \
            or "does not hold" in msg
        return
    n = _slices_in(path) if path.is_file() else None
    if n:
        assert len(prof.host) + len(prof.commands) > 0 or "Step Trace" in prof.tables
        assert len(prof.host) + len(prof.commands) <= n
    else:
        assert len(prof.host) + len(prof.commands) > 0 or prof.tables or \
            any(w.code == "empty-trace" for w in prof.meta.warnings)


@needs_shared
def test_non_trace_json_reasons():
    with pytest.raises(InputError, match="memory_timeline"):
        load_profile(SHARED / "hta/memory_analysis/memory_timeline.raw.gz")
    with pytest.raises(InputError, match="execution trace"):
        load_profile(SHARED / "hta/execution_trace/benchmark_simple_add_et.json.gz")
    with pytest.raises(InputError, match="profiler_info_0.json: JSON object without 'traceEvents'"):
        load_profile(SHARED / "ascend-msinsight/test_data/test_rank_0/profiler_info_0.json")


@needs_shared
def test_single_mindspore_timeline_file_is_device_work():
    f = SHARED / "mindinsight/run_2/normal_run/profiler/ascend_timeline_display_1.json"
    assert detect_kind(f) == "ascend"
    prof = load_profile(f)
    assert len(prof.commands) == 112 and prof.host.empty
