"""PerfAI_output.xlsx: read the workbook back and compare it with the Profile it came from.

Values are checked against the model (commands, registers, tables) and against
``engine_summary``; structure (headers, number formats, autofilter, frozen panes, sheet
splitting) against hand-written expectations. A LibreOffice conversion checks that a real
spreadsheet application opens the file and sees the same numbers.
"""
from __future__ import annotations

import csv
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import openpyxl
import pandas as pd
import pytest
import xlsxwriter

from reportgen.analysis.metrics import engine_summary
from reportgen.errors import OutputError
from reportgen.model import Profile, finalize_commands
from reportgen.testing.profiles import make_profile
from reportgen.writers import xlsx
from reportgen.writers.xlsx import helper as xlsx_helper
from reportgen.writers.xlsx import sheet_xml, workbook, xlsxwriter_private
from reportgen.writers.xlsx.columns import Column
from shared_data import PMU, needs

COMMON = ["Engine Id", "Core Id", "Global Idx", "Cmd Id", "Kernel", "Function Type",
          "Function Name", "Asic Cycle", "Start Time(ns)", "End Time(ns)", "Duration(ns)"]
TIU = COMMON + ["Alg Ops", "uArch Ops", "uArch Rate", "Alg Cycle", "Data Type", "Dep Cmd Id"]
DMA = COMMON + ["DMA data size(B)", "Direction", "Data Type", "Stall Cycle", "DDR Bandwidth(GB/s)",
                "L2M Bandwidth(GB/s)", "GMEM Xact", "Dep Cmd Id"]
#: header -> model column, for the value comparison
MODEL_OF = {"Core Id": "core", "Global Idx": "global_idx", "Cmd Id": "cmd_id", "Kernel": "kernel",
            "Function Type": "func_type", "Function Name": "func_name", "Asic Cycle": "cycles",
            "Start Time(ns)": "start_ns", "End Time(ns)": "end_ns", "Alg Ops": "alg_ops",
            "uArch Ops": "uarch_ops", "uArch Rate": "uarch_rate", "Alg Cycle": "alg_cycle",
            "Data Type": "dtype", "Dep Cmd Id": "dep_cmd_id", "DMA data size(B)": "bytes",
            "Direction": "direction", "Stall Cycle": "stall_cycles",
            "DDR Bandwidth(GB/s)": "ddr_bw", "L2M Bandwidth(GB/s)": "l2m_bw",
            "GMEM Xact": "gmem_xact"}
PER_ENGINE = 60
#: texts that need escaping in sheet XML, and numbers at the edges of their text forms
NASTY = pd.DataFrame({
    "text": ["a&b<c>\"'", " lead", "trail ", "_x0041_", "ctl\x01x", "é漢字\U0001F600",
             "<r>raw</r>", "line\nbreak\ttab", "", None],
    "number": [0.1 + 0.2, 1e-300, 1e20, -0.0, 2.5, np.inf, np.nan, 1 / 3, 5.0, -7.25],
    "flag": pd.array([True, False, None, True, False, True, False, True, False, True],
                     dtype="boolean"),
})



def _profile() -> Profile:
    p = make_profile(cores=2, per_engine=PER_ENGINE, seed=3, cdma_ports=(0, 2))
    c = p.commands
    c["kernel"] = c["kernel"].cat.add_categories(["<r>raw</r>"])
    c.loc[c.index[:5], "kernel"] = np.nan            # unknown kernel -> empty cell
    c.loc[c.index[5], "kernel"] = "<r>raw</r>"       # would be written unescaped by xlsxwriter
    tiu = c.index[c["engine"] == "TIU"]
    gdma = c.index[c["engine"] == "GDMA"]
    rng = np.random.default_rng(7)
    p.registers["TIU"] = pd.DataFrame({
        "des_res0_addr": rng.integers(0, 2**40, len(tiu)),
        "des_opd0_n": pd.array(np.where(np.arange(len(tiu)) % 3 == 0, None, np.arange(len(tiu))),
                               dtype="Int64"),
        "des_tsk_typ": np.array(["conv", "mm2", "ar"], object)[np.arange(len(tiu)) % 3],
        "des_obj": pd.Series([None if i % 4 == 0 else i * 10 for i in range(len(tiu))], dtype=object,
                             index=tiu),           # Python ints in an object column: numbers
    }, index=tiu)
    p.registers["GDMA"] = pd.DataFrame({
        "src_start_addr": rng.integers(0, 2**40, len(gdma)).astype(np.uint64),
        "mask_start_addr": np.full(len(gdma), 2**60 + 5, dtype=np.uint64),  # > 2**53: hex text
        "nchw_copy": np.arange(len(gdma)) % 2 == 0,
        "unused": np.full(len(gdma), np.nan),        # no value anywhere: no column
    }, index=gdma)
    p.tables["Ops: top/k"] = pd.DataFrame({"op": ["matmul", "add", None], "calls": [3, 2, 1],
                                           "self_us": [1.5, np.nan, 0.25]})
    p.tables["nasty"] = NASTY
    p.meta.accounting = {"TIU_0": {"read": 64, "shown": 60, "dropped_preamble": 4},
                         "CDMA_2": {"read": 30, "shown": 30}}
    return p




@pytest.fixture(scope="module")
def written(tmp_path_factory):
    p = _profile()
    s = engine_summary(p)
    path = xlsx.write(p, s, tmp_path_factory.mktemp("out"), quiet=True)
    return p, s, path


def _rows(path, sheet):
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        return [list(r) for r in wb[sheet].iter_rows(values_only=True)]
    finally:
        wb.close()


def _frame(path, sheet) -> pd.DataFrame:
    rows = _rows(path, sheet)
    return pd.DataFrame(rows[1:], columns=rows[0], dtype=object)  # keep int vs None as read


def _same(cell, model) -> bool:
    """One cell against one model value: missing <-> empty, numbers to double precision."""
    if cell is not None and isinstance(cell, float) and math.isnan(cell):
        cell = None  # pandas turned an empty cell (None) into NaN while aligning rows
    if model is None or model is pd.NA or (isinstance(model, float) and math.isnan(model)):
        return cell is None
    if isinstance(model, (bool, np.bool_)):
        return cell is bool(model)
    if isinstance(model, (int, np.integer)):
        return type(cell) is int and cell == int(model)
    if isinstance(model, (float, np.floating)):
        return isinstance(cell, (int, float)) and math.isclose(cell, float(model), rel_tol=1e-15)
    return cell == str(model)


def test_path_and_sheet_order(written):
    p, _, path = written
    assert path == path.parent.parent / "PerfDoc" / "PerfAI_output.xlsx"
    wb = openpyxl.load_workbook(path, read_only=True)
    assert wb.sheetnames == ["Engine Summary", "TIU_0", "GDMA_0", "SDMA_0", "TIU_1", "GDMA_1",
                             "SDMA_1", "CDMA_0", "CDMA_2", "Ops_ top_k", "nasty"]
    assert wb.sheetnames[1:-2] == p.sheets()
    wb.close()
    assert not [f for f in path.parent.iterdir() if f.name != path.name]  # no temp file left


def test_headers(written):
    _, _, path = written
    assert _rows(path, "TIU_0")[0] == TIU + ["des_res0_addr", "des_opd0_n", "des_tsk_typ", "des_obj"]
    assert _rows(path, "GDMA_1")[0] == DMA + ["src_start_addr", "mask_start_addr", "nchw_copy"]
    assert _rows(path, "SDMA_0")[0] == DMA          # no registers for SDMA
    assert _rows(path, "CDMA_2")[0] == DMA
    assert _rows(path, "TIU_0")[0][2] == "Global Idx"   # column C


def test_every_command_once_with_its_values(written):
    p, _, path = written
    c = p.commands
    seen = 0
    for sheet in p.sheets():
        got = _frame(path, sheet)
        model = c[c["sheet"] == sheet].set_index("global_idx")
        assert sorted(got["Global Idx"]) == list(range(len(model)))   # each exactly once
        got = got.set_index("Global Idx").loc[model.index]
        seen += len(got)
        engine = str(model["engine"].iloc[0])
        assert (got["Engine Id"] == {"TIU": 0, "GDMA": 1, "SDMA": 3, "CDMA": 4}[engine]).all()
        assert (got["Duration(ns)"] == model["end_ns"] - model["start_ns"]).all()
        for header in got.columns:
            if header not in MODEL_OF or header == "Global Idx":
                continue
            col = MODEL_OF[header]
            want = model[col].astype(object)
            if header == "Kernel":  # the writer adds a space to defuse "<r>...</r>"
                want = want.replace("<r>raw</r>", "<r>raw</r> ")
            bad = [i for i, (a, b) in enumerate(zip(got[header].tolist(), want.tolist()))
                   if not _same(a, b)]
            assert not bad, (sheet, header, got[header].iloc[bad[0]], model[col].iloc[bad[0]])
    assert seen == len(c)


def test_missing_values_are_empty_cells(written):
    p, _, path = written
    got = _frame(path, "TIU_0")
    assert got["Kernel"].iloc[:5].isna().all()           # NaN kernel: empty, not "nan"
    assert got["Kernel"].iloc[5] == "<r>raw</r> "        # escaped path, still readable
    gdma = _frame(path, "GDMA_0")
    sys_rows = gdma["Function Type"] == "sys"
    assert sys_rows.any()
    assert gdma.loc[sys_rows, "Direction"].isna().all()
    assert gdma.loc[sys_rows, "Data Type"].isna().all()
    assert gdma.loc[sys_rows, "DDR Bandwidth(GB/s)"].isna().all()
    values = {v for r in _rows(path, "GDMA_0") for v in r}
    assert not values & {"nan", "NaN", "<NA>", "None"}


def test_number_formats_and_types(written):
    _, _, path = written
    wb = openpyxl.load_workbook(path, read_only=True)
    ws = wb["TIU_0"]
    header = [c.value for c in next(ws.iter_rows(min_row=1, max_row=1))]
    row = next(ws.iter_rows(min_row=10, max_row=10))   # rows 2-6 have no kernel
    cell = dict(zip(header, row))
    assert cell["uArch Rate"].number_format == "0.0%"
    assert isinstance(cell["uArch Rate"].value, (int, float)) and 0 < cell["uArch Rate"].value <= 1
    assert cell["Start Time(ns)"].number_format == "#,##0" and type(cell["Start Time(ns)"].value) is int
    assert cell["des_res0_addr"].number_format == "0" and type(cell["des_res0_addr"].value) is int
    assert cell["Global Idx"].data_type == "n" and cell["Kernel"].data_type in ("s", "inlineStr")
    g = wb["GDMA_0"]
    gh = [c.value for c in next(g.iter_rows(min_row=1, max_row=1))]
    gcell = dict(zip(gh, next(g.iter_rows(min_row=2, max_row=2))))
    assert gcell["mask_start_addr"].value == hex(2**60 + 5)   # beyond a double: exact hex text
    assert gcell["nchw_copy"].value is True
    wb.close()


def test_register_values(written):
    p, _, path = written
    regs = p.registers["TIU"]
    c = p.commands
    for sheet in ("TIU_0", "TIU_1"):
        got = _frame(path, sheet).set_index("Global Idx")
        model = c[c["sheet"] == sheet]
        r = regs.loc[model.index].set_axis(model["global_idx"].to_numpy())
        for name in ("des_res0_addr", "des_opd0_n", "des_tsk_typ", "des_obj"):
            pairs = zip(got[name].loc[r.index].tolist(), r[name].astype(object).tolist())
            assert all(_same(a, b) for a, b in pairs), (sheet, name)
        assert got["des_opd0_n"].isna().sum() == (r["des_opd0_n"].isna()).sum() > 0
    g = p.registers["GDMA"]
    got = _frame(path, "GDMA_1").set_index("Global Idx")
    model = c[c["sheet"] == "GDMA_1"]
    assert got["src_start_addr"].loc[model["global_idx"]].tolist() == \
        [int(v) for v in g.loc[model.index, "src_start_addr"]]


def test_autofilter_frozen_panes_widths(written):
    p, s, path = written
    wb = openpyxl.load_workbook(path)       # full mode: reads sheet views and filters
    for sheet in p.sheets():
        ws = wb[sheet]
        n = int((p.commands["sheet"] == sheet).sum())
        ncol = len(next(ws.iter_rows(min_row=1, max_row=1)))
        last = openpyxl.utils.get_column_letter(ncol)
        assert ws.auto_filter.ref == f"A1:{last}{n + 1}"
        assert ws.freeze_panes == "D2"
        assert ws.column_dimensions["E"].width > len("Kernel")  # kernel names are long
        assert "global_idx" in ws["C1"].comment.text                # header notes
    ws = wb["Engine Summary"]
    header_row = next(r[0].row for r in ws.iter_rows() if r[0].value == "Core")
    ncol = sum(1 for c in ws[header_row] if c.value is not None)
    assert ws.auto_filter.ref == (f"A{header_row}:{openpyxl.utils.get_column_letter(ncol)}"
                                  f"{header_row + len(s)}")
    assert ws.freeze_panes == f"B{header_row + 1}"
    assert ws["A1"].value and wb.active.title == "Engine Summary"
    t = wb["Ops_ top_k"]
    assert t.auto_filter.ref == "A1:C4" and t.freeze_panes == "B2"
    wb.close()


def _summary_table(path):
    rows = _rows(path, "Engine Summary")
    h = next(i for i, r in enumerate(rows) if r[0] == "Core")
    header = [v for v in rows[h] if v is not None]
    body = [r[:len(header)] for r in rows[h + 1:]]
    body = body[:next(i for i, r in enumerate(body) if r[0] is None)]
    return rows, pd.DataFrame(body, columns=header)


def test_engine_summary_cells_equal_engine_summary(written):
    p, s, path = written
    rows, got = _summary_table(path)
    facts = {r[0]: r[1] for r in rows[:20] if r[0]}
    assert facts["Chip"] == "AKS" and facts["Cores"] == 2 and facts["Capture mode"] == "2"
    assert facts["TIU clock (MHz)"] == 1000 and facts["Commands"] == len(p.commands)
    assert facts["Register fields"] == "included"
    assert facts["Warnings"] == 1
    assert any("[synthetic]" in str(r[1]) for r in rows[:20])
    assert got["Core"].tolist() == [0, 1, "Overall"]
    # every engine_summary column is shown once, as a number
    assert got.shape[1] == s.shape[1]
    pairs = {"Span (ns)": "span_ns", "TIU cmds": "tiu_cmds", "TIU busy (ns)": "tiu_busy_ns",
             "TIU util": "tiu_util", "GDMA DDR bytes (B)": "gdma_ddr_bytes",
             "GDMA DDR BW (GB/s)": "gdma_ddr_bw_busy", "SDMA L2M BW wall (GB/s)": "sdma_l2m_bw_wall",
             "CDMA busy (ns)": "cdma_busy_ns", "TIU uArch rate": "tiu_uarch_rate",
             "Parallelism": "parallelism", "Compute ratio": "compute_ratio",
             "CDMA stall (cycles)": "cdma_stall_cycles"}
    for header, key in pairs.items():
        for a, b in zip(got[header].tolist(), s[key].tolist()):
            assert _same(a, b), (header, a, b)
    # hand-checkable: each core has PER_ENGINE TIU commands; CDMA ports 0 and 2 hold 15 each,
    # submitted by the last core
    assert got["TIU cmds"].tolist() == [PER_ENGINE, PER_ENGINE, 2 * PER_ENGINE]
    assert got["CDMA cmds"].tolist() == [0, 30, 30]
    wb = openpyxl.load_workbook(path, read_only=True)
    ws = wb["Engine Summary"]
    h = next(i for i, r in enumerate(rows) if r[0] == "Core") + 1
    cells = {c.value: i for i, c in enumerate(next(ws.iter_rows(min_row=h, max_row=h)))}
    first = next(ws.iter_rows(min_row=h + 1, max_row=h + 1))
    assert first[cells["TIU util"]].number_format == "0.0%"
    assert first[cells["TIU busy (ns)"]].number_format == "#,##0"
    wb.close()
    assert any(r[0] == "Definitions" for r in rows)
    acc = next(i for i, r in enumerate(rows) if r[0] == "Records per sheet")
    assert rows[acc + 1][:4] == ["Sheet", "read", "shown", "dropped_preamble"]
    assert rows[acc + 2][:4] == ["TIU_0", 64, 60, 4] and rows[acc + 3][:4] == ["CDMA_2", 30, 30, 0]  # not counted = none


def test_registers_auto_off_above_limit(tmp_path, monkeypatch):
    p = _profile()
    monkeypatch.setattr(xlsx, "REGISTER_AUTO_LIMIT", 100)
    path = xlsx.write(p, engine_summary(p), tmp_path, quiet=True)
    assert _rows(path, "TIU_0")[0] == TIU
    facts = {r[0]: r[1] for r in _rows(path, "Engine Summary")[:20] if r[0]}
    assert facts["Register fields"].startswith(f"left out: {len(p.commands):,} commands")
    path = xlsx.write(p, engine_summary(p), tmp_path, registers=True, quiet=True)
    assert "des_res0_addr" in _rows(path, "TIU_0")[0]
    path = xlsx.write(p, engine_summary(p), tmp_path, registers=False, quiet=True)
    assert _rows(path, "GDMA_0")[0] == DMA
    with pytest.raises(ValueError):
        xlsx.write(p, engine_summary(p), tmp_path, registers="yes", quiet=True)


def test_long_sheet_continues_on_numbered_sheets(tmp_path, monkeypatch):
    p = make_profile(cores=1, per_engine=PER_ENGINE, seed=5)
    monkeypatch.setattr(workbook, "SHEET_MAX_ROWS", 26)   # header + 25 data rows per sheet
    path = xlsx.write(p, engine_summary(p), tmp_path, quiet=True)
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["Engine Summary", "TIU_0", "TIU_0 (2)", "TIU_0 (3)", "GDMA_0",
                             "GDMA_0 (2)", "GDMA_0 (3)", "SDMA_0", "SDMA_0 (2)", "SDMA_0 (3)", "CDMA_0"]
    import zipfile
    with zipfile.ZipFile(path) as z:   # zip64 only when a sheet could pass 4 GB
        assert all(i.extract_version < 45 for i in z.infolist())
    idx = []
    for name, n in (("TIU_0", 25), ("TIU_0 (2)", 25), ("TIU_0 (3)", 10)):
        ws = wb[name]
        assert ws.max_row == n + 1 and ws["C1"].value == "Global Idx"
        assert ws.auto_filter.ref == f"A1:Q{n + 1}" and ws.freeze_panes == "D2"
        idx += [r[0] for r in ws.iter_rows(min_row=2, min_col=3, max_col=3, values_only=True)]
    assert idx == list(range(PER_ENGINE))   # nothing dropped, nothing repeated, in order
    notes = [r[1] for r in wb["Engine Summary"].iter_rows(values_only=True) if r[0] == "Note"]
    assert "TIU_0 continues on TIU_0 (2), TIU_0 (3) (a sheet holds at most 25 rows)." in notes
    wb.close()


def test_unknown_engine_sheets_are_generic(tmp_path):
    """Framework streams: no engine id, only the model columns that hold data, odd names fixed."""
    n = 4
    frame = pd.DataFrame({"core": 0, "engine": "Compute/Stream 7", "port": None,
                          "global_idx": np.arange(n), "cmd_id": np.arange(n) + 1,
                          "start_ns": np.arange(n) * 10, "end_ns": np.arange(n) * 10 + 5,
                          "cycles": 6, "func_type": "kernel", "func_name": "gemm",
                          "bytes": [None, 64, None, 128], "occupancy": [0.5, 0.25, 1.0, 0.75]})
    p = Profile(commands=finalize_commands(frame))
    path = xlsx.write(p, engine_summary(p), tmp_path, quiet=True)
    wb = openpyxl.load_workbook(path, read_only=True)
    assert wb.sheetnames == ["Engine Summary", "Compute_Stream 7_0"]
    rows = [list(r) for r in wb["Compute_Stream 7_0"].iter_rows(values_only=True)]
    assert rows[0] == COMMON + ["DMA data size(B)", "occupancy"]
    assert [r[0] for r in rows[1:]] == [None] * n          # no vendor engine id
    assert [r[11] for r in rows[1:]] == [None, 64, None, 128]
    assert [r[12] for r in rows[1:]] == [0.5, 0.25, 1.0, 0.75]
    notes = [r[1] for r in wb["Engine Summary"].iter_rows(values_only=True) if r[0] == "Note"]
    assert notes == ["Sheet 'Compute/Stream 7_0' is written as 'Compute_Stream 7_0' (Excel sheet "
                     "names have at most 31 characters and none of []:*?/\\)."]
    wb.close()


def test_warnings_grouped_by_code(tmp_path):
    p = make_profile(cores=1, per_engine=5)
    for core in range(3):
        p.meta.warn("id-wrap", f"command ids wrapped on core {core}", f"cdmlib0_{core}.profile")
    path = xlsx.write(p, engine_summary(p), tmp_path, quiet=True)
    rows = _rows(path, "Engine Summary")
    w = next(i for i, r in enumerate(rows) if r[0] == "Warnings")
    assert rows[w][1] == 4
    assert [r[1] for r in rows[w + 1:w + 3]] == [
        "[synthetic] profile generated by reportgen.testing.profiles (not a capture)",
        "[id-wrap] cdmlib0_0.profile: command ids wrapped on core 0 (and 2 more like it)"]


def test_overlong_text_is_cut_and_said(tmp_path):
    p = make_profile(cores=1, per_engine=5)
    p.tables["long"] = pd.DataFrame({"s": ["x" * 40_000, "short"]})
    path = xlsx.write(p, engine_summary(p), tmp_path, quiet=True)
    rows = _rows(path, "long")
    assert len(rows[1][0]) == 32_767 and rows[1][0].endswith("…") and rows[2][0] == "short"
    notes = [r[1] for r in _rows(path, "Engine Summary") if r[0] == "Note"]
    assert notes == ["1 text cells were longer than Excel's 32,767 characters and were cut "
                     "(ending in …)."]


@pytest.mark.parametrize("fast", [True, False])
def test_refused_row_is_an_error(tmp_path, monkeypatch, fast):
    monkeypatch.setattr(xlsxwriter_private, "USABLE", fast)
    wb = xlsxwriter.Workbook(str(tmp_path / "x.xlsx"), {"constant_memory": True})
    ws = wb.add_worksheet("T")
    ws.xls_rowmax = 3     # stand-in for Excel's limit: xlsxwriter returns -1 past it
    col = Column("n", "number", np.arange(5))
    with pytest.raises(OutputError, match="refused row [45] .*row limit"):
        xlsxwriter_private.write_rows(ws, "T", [col], 0, 5, 0, lambda fmt: None)
    wb.close()


def _cells(path):
    """Every sheet as {sheet: [(value, number_format), ...] per row}."""
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        return {ws.title: [[(c.value, c.number_format) for c in row] for row in ws.iter_rows()]
                for ws in wb.worksheets}
    finally:
        wb.close()


def test_xlsxwriter_version_check():
    assert xlsxwriter_private.USABLE == xlsxwriter_private.verified(xlsxwriter.__version__)
    assert [xlsxwriter_private.verified(v) for v in ("3.0.9", "3.1.0", "3.3.1", "3.10.2", "4.0.0",
                                                     "", "unknown")] == \
        [False, True, True, True, False, False, False]


def _data_rows_xml(path, sheet_part: str) -> str:
    import zipfile
    with zipfile.ZipFile(path) as z:
        xml = z.read(f"xl/worksheets/{sheet_part}").decode()
    return xml[xml.index('<row r="2"'):xml.index("</sheetData>")]


def test_fast_path_reads_back_as_xlsxwriter_public_api(tmp_path, monkeypatch):
    """The fast path (sheet XML built column-wise, a helper process, xlsxwriter internals) and
    the fallback an unverified xlsxwriter version gets (its public API only, no helper) give
    the same cells with the same number formats."""
    import os

    p = _profile()
    s = engine_summary(p)
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    monkeypatch.setattr(xlsx_helper, "HELPER_MIN_ROWS", 1)
    monkeypatch.setattr(xlsxwriter_private, "USABLE", False)
    slow_path = xlsx.write(p, s, tmp_path / "cells", quiet=True)
    assert forks == []                                   # no helper without the internals
    assert '<c r="A2"' in _data_rows_xml(slow_path, "sheet2.xml")   # xlsxwriter's own cells
    slow = _cells(slow_path)
    monkeypatch.setattr(xlsxwriter_private, "USABLE", True)
    monkeypatch.setattr(sheet_xml, "CHUNK_CELLS", 150)   # chunks of a few rows: boundaries everywhere
    fast_path = xlsx.write(p, s, tmp_path / "xml", quiet=True)
    assert forks == [1]
    assert '<c r="' not in _data_rows_xml(fast_path, "sheet2.xml")  # built by sheet_xml
    fast = _cells(fast_path)
    assert list(fast) == list(slow)
    for sheet in fast:
        assert len(fast[sheet]) == len(slow[sheet]), sheet
        for r, (a, b) in enumerate(zip(fast[sheet], slow[sheet])):
            a = [x for x in a if x[0] is not None]   # read-only rows can end at the last value
            b = [x for x in b if x[0] is not None]
            assert len(a) == len(b), (sheet, r)
            for (va, fa), (vb, fb) in zip(a, b):
                assert fa == fb, (sheet, r, va, vb)
                if isinstance(va, (int, float)) and not isinstance(va, bool):
                    # xlsxwriter prints 16 significant digits, the fast path the shortest exact
                    # repr: the same number to within one part in 1e15
                    assert isinstance(vb, (int, float)) and math.isclose(va, vb, rel_tol=1e-15), \
                        (sheet, r, va, vb)
                else:
                    assert va == vb, (sheet, r)
    assert [r[0][0] for r in fast["nasty"][1:]] == ["a&b<c>\"'", " lead", "trail ",
                                                    "_x005F_x0041_",   # Excel shows _x0041_
                                                    "ctl_x0001_x",     # Excel shows ctl\x01x
                                                    "é漢字\U0001F600", "<r>raw</r> ",
                                                    "line\nbreak\ttab", None, None]
    assert [r[1][0] for r in fast["nasty"][1:]] == [0.1 + 0.2, 1e-300, 1e20, 0, 2.5, None, None,
                                                    1 / 3, 5, -7.25]


def test_cells_without_references_keep_their_columns(written):
    """Data rows carry no r= cell references: a missing value is an empty <c/> in its place."""
    import zipfile
    _, _, path = written
    with zipfile.ZipFile(path) as z:
        wb_xml = z.read("xl/workbook.xml").decode()
        names = [n for n in z.namelist() if n.startswith("xl/worksheets/sheet")]
        # TIU_0 is the second sheet; its rows 2-6 have no kernel (column E)
        xml = z.read("xl/worksheets/sheet2.xml").decode()
    assert 'name="TIU_0" sheetId="2"' in wb_xml and "xl/worksheets/sheet2.xml" in names
    data = xml[xml.index('<row r="2"'):]
    assert '<c r="' not in data.split("</sheetData>")[0]
    assert data.startswith('<row r="2">') and data.count("<c/>") >= 5
    got = _frame(path, "TIU_0")
    assert got["Kernel"].iloc[:5].isna().all() and got["Function Type"].notna().all()


def test_zip_level_applies_to_close_only(tmp_path, monkeypatch):
    import zipfile
    p = make_profile(cores=1, per_engine=200)
    sizes = {}
    for level in (1, 9):
        monkeypatch.setattr(xlsx, "ZIP_LEVEL", level)
        path = xlsx.write(p, engine_summary(p), tmp_path / str(level), quiet=True)
        assert xlsxwriter.workbook.ZipFile is zipfile.ZipFile     # restored after the close
        with zipfile.ZipFile(path) as z:
            assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
            sizes[level] = sum(i.compress_size for i in z.infolist())
        assert _rows(path, "TIU_0")[1][:3] == [0, 0, 0]
    assert sizes[9] < sizes[1]


def test_extra_tables_written_generically(written):
    p, _, path = written
    rows = _rows(path, "Ops_ top_k")
    assert rows == [["op", "calls", "self_us"], ["matmul", 3, 1.5], ["add", 2, None], [None, 1, 0.25]]


def test_output_errors_and_empty_profile(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    p = make_profile(cores=1, per_engine=5)
    with pytest.raises(OutputError):
        xlsx.write(p, engine_summary(p), blocker, quiet=True)   # PerfDoc under a file
    empty = Profile()
    path = xlsx.write(empty, engine_summary(empty), tmp_path / "e", quiet=True)
    wb = openpyxl.load_workbook(path, read_only=True)
    assert wb.sheetnames == ["Engine Summary"]
    wb.close()


def test_progress_on_stderr_unless_quiet(tmp_path, capfd, monkeypatch):
    """Bars only on a terminal (stderr is a pipe here, then made to look like a terminal)."""
    from reportgen import progress

    p = make_profile(cores=1, per_engine=50)
    xlsx.write(p, engine_summary(p), tmp_path / "piped", quiet=False)
    assert capfd.readouterr().err == ""
    monkeypatch.setattr(progress, "interactive", lambda: True)
    xlsx.write(p, engine_summary(p), tmp_path / "a", quiet=True)
    assert capfd.readouterr().err == ""
    xlsx.write(p, engine_summary(p), tmp_path / "b", quiet=False)
    out = capfd.readouterr()
    assert "xlsx TIU_0" in out.err and out.out == ""


GOLDEN = PMU / "aks-m2-c8"


@needs(GOLDEN / "input")
def test_golden_dump_matches_the_reference_workbook(tmp_path):
    """A real dump through the decoder and this writer, against the vendor tool's workbook.

    Known, documented differences (docs/metrics.md): system commands have no data type here
    (the vendor writes "None -> None"); CDMA data type, direction and register layout are the
    decoder's own choices, so only their common columns are compared.
    """
    from reportgen.parsers.pmu import load_dump

    p = load_dump(GOLDEN / "input")
    path = xlsx.write(p, engine_summary(p), tmp_path, quiet=True)
    ref = openpyxl.load_workbook(next((GOLDEN / "reference-0.3.7" / "PerfDoc").glob("*.xlsx")),
                                 read_only=True)
    ours = openpyxl.load_workbook(path, read_only=True)
    assert ours.sheetnames == ref.sheetnames

    def table(ws):
        rows = list(ws.iter_rows(values_only=True))
        h = next(i for i, r in enumerate(rows) if r and r[0] == "Engine Id")
        return pd.DataFrame([r[:len(rows[h])] for r in rows[h + 1:]], columns=rows[h], dtype=object)

    same = {"Engine Id": "Engine Id", "Core Id": "Core Id", "Global Idx": "Global Idx",
            "Cmd Id": "Cmd Id", "Function Type": "Function Type", "Function Name": "Function Name",
            "Start Time(ns)": "Start Time(ns)", "End Time(ns)": "End Time(ns)",
            "Asic Cycle": "Asic Cycle", "DMA data size(B)": "DMA data size(B)",
            "Stall Cycle": "Stall Cycle", "Alg Ops": "Alg Ops", "uArch Ops": "uArch Ops",
            "des_cmd_id_dep": "Dep Cmd Id", "des_res0_n": "des_res0_n", "des_opd0_addr": "des_opd0_addr",
            "dst_start_addr": "dst_start_addr", "src_nsize": "src_nsize"}
    checked = 0
    for name in ref.sheetnames[1:]:
        r, o = table(ref[name]), table(ours[name])
        assert len(r) == len(o), name
        sys_rows = (o["Function Type"].isin(["SYS", "sys"]) | r["Function Type"].isin(["sys"])).to_numpy()
        for rc, oc in same.items():
            if rc not in r.columns or (name.startswith("CDMA") and rc.islower()):
                continue  # the CDMA register layout differs (decoder's business, not the writer's)
            want = [int(v, 16) if isinstance(v, str) and v.startswith("0x") else v for v in r[rc]]
            assert o[oc].tolist() == want, (name, rc)
            checked += len(r)
        if name.startswith("CDMA"):
            continue  # CDMA data type/direction: the decoder's documented choices (docs/metrics.md)
        assert o.loc[~sys_rows, "Data Type"].tolist() == r.loc[~sys_rows, "Data Type"].tolist(), name
        if "Direction" in o:
            assert o.loc[~sys_rows, "Direction"].tolist() == r.loc[~sys_rows, "Direction"].tolist()
    assert checked > 30_000
    wb_types = {type(v) for v in table(ours["GDMA_0"])["dst_start_addr"]}
    assert wb_types == {int}   # addresses are numbers, not "0x..." text
    ref.close()
    ours.close()


def _soffice():
    return shutil.which("libreoffice") or shutil.which("soffice")


@pytest.mark.skipif(_soffice() is None, reason="LibreOffice (libreoffice/soffice) is not on PATH; "
                    "install Debian package libreoffice-calc to run this test")
def test_libreoffice_reads_the_workbook(written, tmp_path):
    p, s, path = written
    # 12th token -1: every sheet to <name>-<sheet>.csv; 9th false: raw values, not as shown
    flt = "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1"
    res = subprocess.run([_soffice(), f"-env:UserInstallation=file://{tmp_path}/profile",
                          "--headless", "--convert-to", flt, "--outdir", str(tmp_path), str(path)],
                         capture_output=True, text=True, timeout=180)
    stem = path.stem
    out = tmp_path / f"{stem}-GDMA_1.csv"
    assert out.exists(), res.stdout + res.stderr
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    c = p.commands
    model = c[c["sheet"] == "GDMA_1"].sort_values("global_idx")
    assert rows[0][:len(DMA)] == DMA and len(rows) == len(model) + 1
    got = pd.DataFrame(rows[1:], columns=rows[0])
    assert got["Global Idx"].astype(int).tolist() == model["global_idx"].tolist()
    assert got["Start Time(ns)"].astype(int).tolist() == model["start_ns"].tolist()
    assert got["Function Name"].tolist() == model["func_name"].astype(str).tolist()
    assert got["Direction"].tolist() == model["direction"].astype(object).fillna("").tolist()
    bw = pd.to_numeric(got["DDR Bandwidth(GB/s)"].replace("", np.nan))
    assert np.allclose(bw, model["ddr_bw"], rtol=1e-12, equal_nan=True)
    with open(tmp_path / f"{stem}-Engine Summary.csv", newline="", encoding="utf-8") as fh:
        summary_rows = list(csv.reader(fh))
    h = next(i for i, r in enumerate(summary_rows) if r and r[0] == "Core")
    col = summary_rows[h].index("TIU busy (ns)")
    assert [int(r[col]) for r in summary_rows[h + 1:h + 4]] == s["tiu_busy_ns"].astype(int).tolist()
    # texts that needed XML escaping come back as typed (LibreOffice decodes _xHHHH_)
    with open(tmp_path / f"{stem}-nasty.csv", newline="", encoding="utf-8") as fh:
        nasty = list(csv.reader(fh))
    want = NASTY["text"].fillna("").replace("<r>raw</r>", "<r>raw</r> ").tolist()
    assert [r[0] for r in nasty[1:]] == want


def _sheet_parts(path) -> dict[str, bytes]:
    """Every part of the workbook except the creation time."""
    import zipfile
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist() if n != "docProps/core.xml"}


def test_helper_process_gives_the_same_workbook(tmp_path, monkeypatch):
    """With a helper process building the last sheets' XML, the workbook is byte for byte the
    one this process writes alone; the helper really ran (it forked) and left no files."""
    import os
    import tempfile

    p = _profile()
    s = engine_summary(p)
    alone = _sheet_parts(xlsx.write(p, s, tmp_path / "alone", quiet=True))
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    monkeypatch.setattr(xlsx_helper, "HELPER_MIN_ROWS", 1)
    monkeypatch.setattr(sheet_xml, "CHUNK_CELLS", 150)
    moved = []                                           # sheets that came from the helper
    real_write = xlsx_helper.SheetHelper.write

    def write(self, i, *args):
        done = real_write(self, i, *args)
        if done is not None:
            moved.append(i)
        return done

    monkeypatch.setattr(xlsx_helper.SheetHelper, "write", write)
    before = set(Path(tempfile.gettempdir()).glob("reportgen-xlsx-*"))
    helped = _sheet_parts(xlsx.write(p, s, tmp_path / "helped", quiet=True))
    assert forks == [1] and moved                        # it forked and its sheets were used
    assert helped == alone
    assert set(Path(tempfile.gettempdir()).glob("reportgen-xlsx-*")) == before


def test_failed_helper_means_the_sheets_are_written_here(tmp_path, monkeypatch):
    import os

    p = _profile()
    s = engine_summary(p)
    alone = _sheet_parts(xlsx.write(p, s, tmp_path / "alone", quiet=True))

    def broken(*args):
        raise RuntimeError("helper failure")

    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    monkeypatch.setattr(xlsx_helper, "HELPER_MIN_ROWS", 1)
    monkeypatch.setattr(xlsx_helper, "build_rows_file", broken)   # inherited by the forked helper
    assert _sheet_parts(xlsx.write(p, s, tmp_path / "fallback", quiet=True)) == alone
    assert forks == [1]
