"""Input text that could be turned against the report's user (issue 18).

* item 2: links built from input names (reportgen.textsafe.relative_href);
* item 6: CSV cells a spreadsheet would evaluate (writers.csv_tables.inert_frame), hand-written
  cases (LibreOffice opening real CSVs: tests/test_ops.py);
* item 8: text no output encoding can hold (a lone surrogate in a JSON trace, a folder name that is
  not UTF-8) is replaced and counted once after parsing (reportgen.textsafe.clean_profile), and
  every output is written (exit 0).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reportgen import cli, textsafe
from reportgen.model import Meta, Profile, Warning_
from reportgen.testing.profiles import make_profile
from reportgen.writers.csv_tables import inert_cells, inert_frame

ROOT = Path(__file__).resolve().parents[1]
HANDMADE = ROOT / "tests" / "data" / "framework" / "handmade_kineto.json"
SAMPLE_DUMP = ROOT / "sample_data" / "cdm_profile_data_dev0-0"
BAD = "\ud800"                      # a lone surrogate, as json.loads gives it for "\ud800"


# ---------------------------------------------------------------------------- item 2: links
@pytest.mark.parametrize("segments, href", [
    (("cdm_profile_data_dev0-0", "PerfWeb", "result.html"), "cdm_profile_data_dev0-0/PerfWeb/result.html"),
    (("javascript:alert(document.domain)", "PerfWeb", "result.html"),
     "javascript%3Aalert%28document.domain%29/PerfWeb/result.html"),
    (("https://evil.example", "x"), "https%3A%2F%2Fevil.example/x"),
    (("a?b#c%d e", "f"), "a%3Fb%23c%25d%20e/f"),
    (("//host",), "%2F%2Fhost"),
    (("dump" + os.fsdecode(b"\xff"),), "dump%FF"),   # a folder name that is not UTF-8: its own byte
])
def test_relative_href_never_has_a_scheme(segments, href):
    got = textsafe.relative_href(*segments)
    assert got == href
    assert ":" not in got and not got.startswith("/")


@pytest.mark.parametrize("segments", [(), ("",), ("..", "x"), ("a", "."), ("a", "..")])
def test_relative_href_refuses_to_leave_the_folder(segments):
    with pytest.raises(ValueError):
        textsafe.relative_href(*segments)


# ---------------------------------------------------------------------------- item 6: CSV cells
def test_csv_cells_a_spreadsheet_would_evaluate_get_a_quote():
    names = ['=HYPERLINK("http://evil.example","click")', "=cmd|' /C calc'!A0", "+SUM(1)", "-2+3",
             "@SUM(A1)", "\t=1", "\r=1", "ok\r=1", "a\r\nb", "-12.5", "+3", "1e5", "-", "", "plain",
             None, np.nan, -4.0, '[["=x", 1]]']
    frame = pd.DataFrame({
        "name": pd.Series(names, dtype=object),
        "value": np.linspace(-9, 9, len(names)),            # negative numbers: untouched
        "count": np.arange(-5, len(names) - 5),
        "kind": pd.Categorical(["=k", "ok"] * (len(names) // 2) + ["=k"]),
        "=header": ["x"] * len(names),
    })
    out = inert_frame(frame)
    assert out["name"].tolist()[:15] == [
        '\'=HYPERLINK("http://evil.example","click")', "'=cmd|' /C calc'!A0", "'+SUM(1)", "'-2+3",
        "'@SUM(A1)", "'\t=1", "'\r\n=1", "ok\r\n=1", "a\r\nb", "-12.5", "+3", "1e5", "'-", "", "plain"]
    assert out["name"].iloc[15] is None and np.isnan(out["name"].iloc[16])
    assert out["name"].iloc[17] == -4.0                     # a number in a text column stays a number
    assert out["name"].iloc[18] == '[["=x", 1]]'            # JSON lists start with '[': left as they are
    assert out["value"].equals(frame["value"]) and out["count"].equals(frame["count"])
    assert set(out["kind"]) == {"'=k", "ok"}
    assert list(out.columns) == ["name", "value", "count", "kind", "'=header"]
    assert frame["name"].iloc[0].startswith("=")            # the caller's frame is not changed


def test_csv_frame_without_formula_cells_is_not_copied():
    frame = pd.DataFrame({"name": ["a", "b", None], "v": [-1.0, 2.0, 3.0]})
    assert inert_frame(frame) is frame
    assert inert_cells(np.array([[1, 2], {"a": "=x"}, "=y"], dtype=object))[2] == "'=y"


# ---------------------------------------------------------------------------- item 8: bad text
def test_clean_profile_replaces_and_counts_once():
    p = make_profile(cores=1, per_engine=20, seed=3)
    c = p.commands
    kernels = c["kernel"].cat.categories.tolist()
    c["kernel"] = c["kernel"].cat.rename_categories({kernels[0]: "k" + BAD, kernels[1]: "k\udcff"})
    p.host = pd.DataFrame({"name": ["n" + BAD, "ok", "n" + BAD, None],
                           "args": [{"a" + BAD: ["x" + BAD, 1]}, None, {"b": 2}, {}]})
    p.tables["T"] = pd.DataFrame({"Name" + BAD: ["t" + BAD, "u"], "v": [1, 2]})
    p.meta = Meta(input_path="dump\udcff", warnings=[Warning_("w", "odd " + BAD, "file\udcff")])
    n = textsafe.clean_profile(p)
    assert n == 10          # 2 kernels, 1 distinct host name, 2 in args, 2 in the table, 3 in meta
    # the two kernels now read the same: one category, both commands' rows kept
    assert (c["kernel"].astype(str) == "k\ufffd").sum() == sum(
        (make_profile(cores=1, per_engine=20, seed=3).commands["kernel"] == k).sum() for k in kernels[:2])
    assert p.host["name"].tolist()[:3] == ["n\ufffd", "ok", "n\ufffd"] and pd.isna(p.host["name"].iloc[3])
    assert p.host["args"].tolist() == [{"a\ufffd": ["x\ufffd", 1]}, None, {"b": 2}, {}]
    assert p.tables["T"].columns.tolist() == ["Name\ufffd", "v"] and p.tables["T"]["Name\ufffd"].tolist() == ["t\ufffd", "u"]
    assert p.meta.input_path == "dump\ufffd"
    assert str(p.meta.warnings[0]) == "file\ufffd: odd \ufffd"
    warning = p.meta.warnings[-1]
    assert warning.code == "text-replaced" and warning.message.startswith("10 text value(s)")
    assert "commands.kernel" in warning.where and "meta.input_path" in warning.where
    assert warning.where.endswith("and 2 more")                    # the tables' two places
    warning.where.encode("utf-8")                                   # a place named by bad text is clean too
    assert textsafe.clean_profile(p) == 0                   # nothing left to replace


def test_clean_profile_leaves_good_text_alone():
    p = make_profile(cores=1, per_engine=20, seed=3)
    before = p.commands.copy()
    assert textsafe.clean_profile(p) == 0 and p.meta.warnings == make_profile(cores=1, per_engine=20, seed=3).meta.warnings
    pd.testing.assert_frame_equal(p.commands, before)


def _run(tmp_path: Path, source: Path) -> tuple[Path, dict]:
    out = tmp_path / "out"
    assert cli.main([os.fspath(source), str(out), "--quiet"]) == 0
    return out, json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _replaced(summary: dict) -> list[dict]:
    return [w for w in summary["warnings"] if w["code"] == "text-replaced"]


def test_trace_with_a_lone_surrogate_gives_a_complete_report(tmp_path):
    """Issue 18 item 8: '"name": "\\ud800x"' in a trace failed the workbook (UnicodeEncodeError,
    exit 3, nothing written)."""
    trace = json.loads(HANDMADE.read_text())
    for e in trace["traceEvents"]:
        if e.get("name") in ("aten::relu", "gemm"):
            e["name"] += "\ud800x"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(trace))                      # ensure_ascii: the file says \ud800
    out, summary = _run(tmp_path, path)
    for f in ("PerfDoc/PerfAI_output.xlsx", "PerfWeb/result.html", "perfetto.pftrace", "summary.txt",
              "host_device.csv", "tables/Operators.csv"):
        assert (out / f).stat().st_size > 0, f
    [warning] = _replaced(summary)
    assert "host.name" in warning["where"]
    assert "aten::relu\ufffdx" in (out / "tables" / "Operators.csv").read_text(encoding="utf-8")


def test_dump_folder_that_is_not_utf8_gives_a_complete_report(tmp_path):
    """Issue 18 item 8: `bigTpuProfile $'dump\\xff'` failed the workbook (the path is a
    surrogate-escaped str)."""
    dump = Path(os.fsdecode(os.fsencode(tmp_path) + b"/dump\xff"))
    shutil.copytree(SAMPLE_DUMP, dump)
    out, summary = _run(tmp_path, dump)
    for f in ("PerfDoc/PerfAI_output.xlsx", "PerfWeb/result.html", "perfetto.pftrace", "summary.txt"):
        assert (out / f).stat().st_size > 0, f
    [warning] = _replaced(summary)
    assert warning["where"] == "meta.input_path"
    assert summary["input"].endswith("dump\ufffd")


def test_long_columns_are_checked_in_chunks(monkeypatch):
    """A bad value past the first chunk is found (long columns are encoded a chunk at a time)."""
    monkeypatch.setattr(textsafe, "CHUNK", 4)
    p = Profile()
    names = [f"n{i}" for i in range(10)]
    names[9] += BAD
    p.tables["T"] = pd.DataFrame({"Name": names})
    assert textsafe.clean_profile(p) == 1 and p.tables["T"]["Name"].iloc[9] == "n9\ufffd"
    cells = np.array([f"c{i}" for i in range(200_000)] + ["x\r=1"], dtype=object)
    assert inert_cells(cells)[-1] == "x\r\n=1"
