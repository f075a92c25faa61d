"""The workbook printed and read by people used to the vendor's: print setup, record counts
written as numbers (0 included), the vendor's "Asic Cycle" and full DMA addresses."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import openpyxl
import pandas as pd
import pytest

from reportgen.analysis.metrics import engine_summary
from reportgen.testing.profiles import make_profile
from reportgen.writers import xlsx
from reportgen.writers.xlsx.sheet_columns import register_order
from reportgen.writers.xlsx.workbook import PRINT_FOOTER
from shared_data import PMU, needs

GOLDEN = PMU / "aks-m2-c8"


def _profile():
    """Two cores; GDMA carries split source addresses, the full one the decoder composes, and
    another register; TIU_0 dropped records, CDMA_2 none (no "dropped" key)."""
    p = make_profile(cores=2, per_engine=40, seed=11, cdma_ports=(0, 2))
    gdma = p.commands.index[p.commands["engine"] == "GDMA"]
    rng = np.random.default_rng(5)
    addr = rng.integers(0, 2**45, len(gdma)).astype(np.uint64)
    p.registers["GDMA"] = pd.DataFrame({
        "cmd_type": np.zeros(len(gdma), np.int64),
        "src_start_addr_l32": addr & np.uint64(0xFFFFFFFF),
        "src_start_addr_h13": addr >> np.uint64(32),
        "src_nsize": np.ones(len(gdma), np.int64),
        "src_start_addr": addr,
    }, index=gdma)
    p.meta.accounting = {"TIU_0": {"read": 44, "shown": 40, "dropped: preamble": 4},
                         "CDMA_2": {"read": 40, "shown": 40}}
    return p


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    p = _profile()
    return p, xlsx.write(p, engine_summary(p), tmp_path_factory.mktemp("out"), quiet=True)


def _header_row(ws, first: str) -> int:
    """1-based row whose column A holds ``first``."""
    return next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == first)


def _check_print_setup(path) -> None:
    wb = openpyxl.load_workbook(path)
    try:
        ws = wb["Engine Summary"]
        h = _header_row(ws, "Core")
        assert ws.page_setup.orientation == "landscape"
        assert ws.sheet_properties.pageSetUpPr.fitToPage
        assert ws.page_setup.fitToWidth in (None, 1) and ws.page_setup.fitToHeight == 0
        assert ws.print_title_rows == f"${h - 1}:${h}"             # engine band and header
        assert ws.cell(h - 1, 2).value is not None or ws.cell(h - 1, 3).value is not None

        gdma = wb["GDMA_0"]
        heads = [c.value for c in gdma[1]]
        first_register = heads.index("cmd_type")
        last_printed = openpyxl.utils.get_column_letter(first_register)
        assert gdma.page_setup.orientation == "landscape"
        assert gdma.sheet_properties.pageSetUpPr.fitToPage and gdma.page_setup.fitToHeight == 0
        assert gdma.print_title_rows == "$1:$1"
        assert gdma.print_area.replace("'", "") == f"GDMA_0!$A$1:${last_printed}${gdma.max_row}"
        assert gdma.print_options.gridLines
        assert (gdma.oddFooter.left.text, gdma.oddFooter.right.text) == ("&A", "Page &P of &N")

        tiu = wb["TIU_0"]                  # no register fields: every column printed
        assert not tiu.print_area and tiu.print_title_rows == "$1:$1"
    finally:
        wb.close()


def _check_record_counts(path) -> None:
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        rows = [list(r) for r in wb["Engine Summary"].iter_rows(values_only=True)]
    finally:
        wb.close()
    at = next(i for i, r in enumerate(rows) if r[0] == "Records per sheet")
    assert rows[at + 1][:4] == ["Sheet", "read", "shown", "dropped: preamble"]
    assert rows[at + 2][:4] == ["TIU_0", 44, 40, 4]
    assert rows[at + 3][:4] == ["CDMA_2", 40, 40, 0]          # not counted = none, not unknown


def test_print_setup(written):
    _check_print_setup(written[1])
    assert PRINT_FOOTER == "&L&A&RPage &P of &N"


def test_zero_record_counts_are_zero(written):
    _check_record_counts(written[1])


def test_full_address_before_its_halves(written):
    p, path = written
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        rows = list(wb["GDMA_1"].iter_rows(values_only=True))
    finally:
        wb.close()
    heads = list(rows[0])
    at = heads.index("src_start_addr")
    assert heads[at:at + 3] == ["src_start_addr", "src_start_addr_l32", "src_start_addr_h13"]
    assert heads[2] == "Global Idx" and "Asic Cycle" in heads and "Cycles" not in heads
    frame = pd.DataFrame(rows[1:], columns=heads)
    composed = [(int(h) << 32) + int(l) for h, l in zip(frame["src_start_addr_h13"], frame["src_start_addr_l32"])]
    assert frame["src_start_addr"].tolist() == composed
    regs = p.registers["GDMA"]
    model = p.commands.loc[regs.index]
    want = regs.loc[model.index[model["sheet"] == "GDMA_1"], "src_start_addr"].astype(int).tolist()
    assert sorted(frame["src_start_addr"].tolist()) == sorted(want)


def test_register_order_moves_only_composed_addresses():
    names = ["a", "x_l32", "x_h13", "mask_l32", "mask_h8", "y_l32", "y_h13", "x", "y", "z"]
    assert register_order(names) == ["a", "x", "x_l32", "x_h13", "mask_l32", "mask_h8",
                                     "y", "y_l32", "y_h13", "z"]


def _soffice():
    return shutil.which("libreoffice") or shutil.which("soffice")


@pytest.mark.skipif(_soffice() is None, reason="LibreOffice (libreoffice/soffice) is not on PATH; "
                    "install Debian package libreoffice-calc to run this test")
def test_libreoffice_keeps_print_setup_and_counts(written, tmp_path):
    """LibreOffice opens the workbook and saves it again (its own writer): the print setup and
    the record counts come back the same."""
    res = subprocess.run([_soffice(), f"-env:UserInstallation=file://{tmp_path}/profile",
                          "--headless", "--convert-to", "xlsx:Calc MS Excel 2007 XML",
                          "--outdir", str(tmp_path / "lo"), str(written[1])],
                         capture_output=True, text=True, timeout=300)
    again = tmp_path / "lo" / written[1].name
    assert again.exists(), res.stdout + res.stderr
    _check_print_setup(again)
    _check_record_counts(again)


@needs(GOLDEN / "input")
def test_golden_full_addresses_are_the_composed_halves_and_the_vendors(tmp_path):
    """Every GDMA/SDMA command of a real dump: src/dst_start_addr = (h13 << 32) + l32, placed just
    before l32, and equal to the vendor workbook's src_start_addr/dst_start_addr column."""
    from reportgen.parsers.pmu import load_dump

    p = load_dump(GOLDEN / "input")
    path = xlsx.write(p, engine_summary(p), tmp_path, quiet=True)
    ours = openpyxl.load_workbook(path, read_only=True)
    ref = openpyxl.load_workbook(next((GOLDEN / "reference-0.3.7" / "PerfDoc").glob("*.xlsx")),
                                 read_only=True)

    def table(ws):
        rows = list(ws.iter_rows(values_only=True))
        h = next(i for i, r in enumerate(rows) if r and r[0] == "Engine Id")
        return pd.DataFrame([r[:len(rows[h])] for r in rows[h + 1:]], columns=rows[h], dtype=object)

    checked = 0
    try:
        for name in ours.sheetnames:
            if not name.startswith(("GDMA", "SDMA")):
                continue
            o, r = table(ours[name]), table(ref[name])
            heads = list(o.columns)
            assert heads[2] == "Global Idx" and "Asic Cycle" in heads
            assert o["Asic Cycle"].tolist() == r["Asic Cycle"].tolist(), name
            for side in ("src", "dst"):
                full, low, high = f"{side}_start_addr", f"{side}_start_addr_l32", f"{side}_start_addr_h13"
                assert heads.index(full) + 1 == heads.index(low), name
                known = o[low].notna()
                composed = [(int(h) << 32) + int(l) for h, l in zip(o.loc[known, high], o.loc[known, low])]
                assert o.loc[known, full].tolist() == composed, (name, side)
                vendor = [int(v, 16) if isinstance(v, str) else v for v in r[full]]
                assert o[full].tolist() == vendor, (name, side)
                checked += int(known.sum())
    finally:
        ours.close()
        ref.close()
    assert checked > 1_000
