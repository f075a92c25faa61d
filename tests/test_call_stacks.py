"""Operators by Stack rows open their call tree (issue 23): the Call Stacks table, the
workbook's links from a row's Stack Id to its frames, and the HTML row that expands in real
Chromium.  Expected values are worked out by hand from tests/data/framework/handmade_stacks.json:

    thread 1 (µs)   train.py(5): main          [0, 1000)
                      model.py(20): forward    [10, 410)
                        aten::linear           [20, 120)  > cudaLaunchKernel [30, 40) -> gemm
                        aten::linear           [200, 300)
                      model.py(20): forward    [500, 800)
                        aten::linear           [510, 560)
                        layers.py(7): act      [600, 700) > aten::relu [610, 650)
                      aten::add                [900, 920)  Call stack arg "a.py(1): f;b.py(2): g"

aten::linear: 3 calls under main (1 slice, 1000 µs) > forward (2 distinct slices, 400 + 300 µs);
aten::relu: main 1000 > forward 300 > act 100; aten::add: frames b.py, a.py with no times (the
arg names frames only); cudaLaunchKernel: main 1000 > forward 400.
"""
from __future__ import annotations

from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from reportgen import pipeline
from reportgen.options import Options
from reportgen.testing.html_page import read_tables
from reportgen.writers import html as html_writer
from reportgen.writers import xlsx

TRACE = Path(__file__).parent / "data" / "framework" / "handmade_stacks.json"
MAIN, FWD, ACT = "train.py(5): main", "model.py(20): forward", "layers.py(7): act"

#: (operator, Source Location, calls) -> frames outermost first: (frame, calls, CPU total µs)
EXPECTED = {
    ("aten::linear", f"{FWD} | {MAIN}", 3): [(MAIN, 1, 1000.0), (FWD, 2, 700.0)],
    ("aten::relu", f"{ACT} | {FWD} | {MAIN}", 1): [(MAIN, 1, 1000.0), (FWD, 1, 300.0), (ACT, 1, 100.0)],
    ("aten::add", "a.py(1): f | b.py(2): g", 1): [("b.py(2): g", None, None), ("a.py(1): f", None, None)],
    ("cudaLaunchKernel", f"{FWD} | {MAIN}", 1): [(MAIN, 1, 1000.0), (FWD, 1, 400.0)],
}


def _load(**kw):
    opts = Options(input=str(TRACE), **kw)
    profile = pipeline.load(opts)
    return profile, pipeline.analyse(profile, opts)


def _trees(ops: pd.DataFrame, frames: pd.DataFrame) -> dict:
    out = {}
    for r in ops.dropna(subset=["Stack Id"]).itertuples(index=False):
        f = frames[frames["Stack Id"] == r[2]].sort_values("Level")
        assert f["Level"].tolist() == list(range(1, len(f) + 1))
        out[(r.Name, r[1], int(r[-1]))] = [
            (fr, None if pd.isna(c) else int(c), None if pd.isna(t) else float(t))
            for fr, c, t in zip(f["Frame"], f["Frame Calls"], f["Frame CPU total (us)"])]
    return out


def test_call_stacks_table_by_hand():
    profile, _ = _load()
    ops, frames = profile.tables["Operators by Stack"], profile.tables["Call Stacks"]
    cols = list(ops.columns)
    assert cols[1:3] == ["Source Location", "Stack Id"] and cols[-1] == "# of Calls"
    assert _trees(ops, frames) == EXPECTED
    # ids are 1.. in the table's order, rows without stack (python frames, kernels) have none
    assert ops["Stack Id"].dropna().tolist() == [1, 2, 3, 4]
    assert ops.loc[ops["Stack Id"].isna(), "Name"].tolist() == [MAIN, FWD, "gemm", ACT]
    assert frames["Stack Id"].is_monotonic_increasing
    assert list(profile.tables).index("Call Stacks") == list(profile.tables).index("Operators by Stack") + 1


def test_stack_frames_option_keeps_the_innermost():
    profile, _ = _load(stack_frames=2)
    got = _trees(profile.tables["Operators by Stack"], profile.tables["Call Stacks"])
    # top 2 frames (innermost) of relu: forward is now the outermost shown
    assert got[("aten::relu", f"{ACT} | {FWD}", 1)] == [(FWD, 1, 300.0), (ACT, 1, 100.0)]
    assert got[("aten::linear", f"{FWD} | {MAIN}", 3)] == EXPECTED[("aten::linear", f"{FWD} | {MAIN}", 3)]


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "public-api"])
def test_workbook_links_each_stack_row_to_its_frames(tmp_path, monkeypatch, fast):
    from reportgen.writers.xlsx import xlsxwriter_private

    if fast and not xlsxwriter_private.USABLE:
        pytest.skip("this xlsxwriter is not one the fast path was checked against")
    monkeypatch.setattr(xlsxwriter_private, "USABLE", fast)
    profile, summary = _load()
    path = xlsx.write(profile, summary, tmp_path, quiet=True)
    wb = openpyxl.load_workbook(path)
    names = wb.sheetnames
    assert names.index("Call Stacks") == names.index("Operators by Stack") + 1
    ops, frames = wb["Operators by Stack"], wb["Call Stacks"]
    head = [c.value for c in ops[1]]
    fhead = [c.value for c in frames[1]]
    assert fhead == ["Stack Id", "Name", "Level", "Frame", "Frame Calls", "Frame CPU total (us)"]
    sid = head.index("Stack Id")
    linked = 0
    for row in ops.iter_rows(min_row=2):
        cell = row[sid]
        if cell.value is None:
            assert cell.hyperlink is None
            continue
        assert isinstance(cell.value, int)           # still a number: sorts and filters
        loc = cell.hyperlink.location
        sheet, ref = loc.rsplit("!", 1)
        assert sheet.strip("'") == "Call Stacks" and cell.hyperlink.target is None
        target = frames[ref]
        r = target.row
        # the link lands on the first frame (Level 1) of this row's stack, of this operator
        assert frames.cell(r, 1).value == cell.value and frames.cell(r, 3).value == 1
        assert frames.cell(r, 2).value == row[head.index("Name")].value
        linked += 1
    assert linked == 4
    # no live formulas anywhere
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            assert not any(isinstance(c.value, str) and c.value.startswith("=") for c in row)


def _soffice():
    import shutil

    return shutil.which("libreoffice") or shutil.which("soffice")


@pytest.mark.skipif(_soffice() is None, reason="LibreOffice (libreoffice/soffice) is not on PATH; "
                    "install Debian package libreoffice-calc to run this test")
def test_libreoffice_keeps_the_links_and_numbers(tmp_path):
    """LibreOffice opens the workbook and saves it again: each Stack Id is still a number whose
    link points at its first frame on Call Stacks."""
    import subprocess

    profile, summary = _load()
    path = xlsx.write(profile, summary, tmp_path / "out", quiet=True)
    res = subprocess.run([_soffice(), f"-env:UserInstallation=file://{tmp_path}/lo-profile", "--headless",
                          "--convert-to", "xlsx", "--outdir", str(tmp_path / "lo"), str(path)],
                         capture_output=True, text=True, timeout=300)
    resaved = tmp_path / "lo" / path.name
    assert resaved.exists(), res.stdout + res.stderr
    ws = openpyxl.load_workbook(resaved)["Operators by Stack"]
    head = [c.value for c in ws[1]]
    got = [(r[0].value, r[head.index("Stack Id")].value, r[head.index("Stack Id")].hyperlink.location)
           for r in ws.iter_rows(min_row=2) if r[head.index("Stack Id")].value is not None]
    # Call Stacks rows (header = 1): linear 2-3, relu 4-6, add 7-8, cudaLaunchKernel 9-10
    assert got == [("aten::linear", 1, "'Call Stacks'!A2"), ("aten::relu", 2, "'Call Stacks'!A4"),
                   ("aten::add", 3, "'Call Stacks'!A7"), ("cudaLaunchKernel", 4, "'Call Stacks'!A9")]


def test_html_embeds_the_call_stacks(tmp_path):
    profile, summary = _load()
    path = html_writer.write(profile, summary, tmp_path, quiet=True)
    t = read_tables(path.read_text())
    assert _trees(t["Operators by Stack"], t["Call Stacks"]) == EXPECTED


def test_html_holds_the_frames_of_the_stack_rows_it_holds(tmp_path, monkeypatch):
    """With 3 rows per table embedded, Operators by Stack holds Stack Id 1 (its third row:
    aten::linear) so Call Stacks holds that stack's 2 frames, not 3 rows."""
    from reportgen.writers.html import tables as table_writer

    monkeypatch.setattr(table_writer, "TABLE_ROWS_EMBEDDED", 3)
    profile, summary = _load()
    path = html_writer.write(profile, summary, tmp_path, quiet=True)
    t = read_tables(path.read_text())
    assert t["Operators by Stack"]["Stack Id"].dropna().tolist() == [1]
    assert t["Call Stacks"]["Stack Id"].tolist() == [1, 1]
    assert t["Call Stacks"]["Frame"].tolist() == [MAIN, FWD]


# --------------------------------------------------------------------------- real Chromium
from test_html_browser import CHROMIUM, PageWatch, browser, playwright, sync_playwright  # noqa: E402,F401


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)")
@pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)")
def test_clicking_a_stack_row_opens_its_call_tree(browser, tmp_path):
    profile, summary = _load()
    path = html_writer.write(profile, summary, tmp_path, quiet=True)
    watch = PageWatch.ready(browser, path.as_uri())
    p = watch.page
    p.evaluate("__report.show('tables')")
    card = p.locator(".data-table", has=p.locator("h2", has_text="Operators by Stack")).first
    card.wait_for()
    row = card.locator("tbody tr[data-stack]", has_text="aten::relu")
    assert row.get_attribute("aria-expanded") == "false"
    assert card.locator("tr.stack-frames").count() == 0
    row.click()
    tree = card.locator("tr.stack-frames table.call-tree tbody tr")
    tree.first.wait_for()
    cells = [[c.strip() for c in tr.locator("td").all_text_contents()] for tr in tree.all()]
    frames = [(c[1], c[2]) for c in cells]
    assert [int(c[0]) for c in cells] == [1, 2, 3]
    assert frames == [(MAIN, "1"), (FWD, "1"), (ACT, "1")]
    # times as the column shows them (one unit per column, named in the header)
    header = card.locator("tr.stack-frames table.call-tree thead th").all_text_contents()
    assert header[:3] == ["Level", "Frame", "Frame Calls"] and header[3].startswith("Frame CPU total (")
    unit = header[3].split("(")[1].rstrip(")")
    scale = {"ns": 1e3, "us": 1.0, "µs": 1.0, "ms": 1e-3, "s": 1e-6}[unit]
    assert [float(c[3].replace(",", "")) for c in cells] == pytest.approx([1000 * scale, 300 * scale, 100 * scale])
    assert row.get_attribute("aria-expanded") == "true"
    # a frame named only by the Call stack arg shows n/a for its numbers
    card.locator("tbody tr[data-stack]", has_text="aten::add").click()
    add = card.locator("tr.stack-frames", has_text="b.py(2): g")
    add.wait_for()
    assert add.locator("tbody tr").first.locator("td").all_text_contents()[2:] == ["n/a", "n/a"]
    # sorting keeps open rows open; a second click closes
    card.locator("th", has_text="Name").first.click()
    assert card.locator("tr.stack-frames").count() == 2
    card.locator("tbody tr[data-stack]", has_text="aten::relu").click()
    assert card.locator("tr.stack-frames").count() == 1
    watch.check()
