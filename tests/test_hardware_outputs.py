"""The roofline and local-memory numbers read back from each output — summary.json, the
workbook (LibreOffice-independent: openpyxl on the written file), result.html's data and its
rendered table, summary.txt — equal the analysis' (computed once, shown everywhere)."""
from __future__ import annotations

import json
import math

import openpyxl
import pytest
from bs4 import BeautifulSoup

from reportgen.analysis.derive import derive
from reportgen.analysis.lmem import LISTED_CONFLICTS
from reportgen.parsers.pmu.dump import load_dump
from reportgen.testing.html_page import read_page
from reportgen.testing.profiles import make_profile
from reportgen.writers import html, text, xlsx

from shared_data import DATA

CASE = DATA / "lmem" / "aks-m2-lmem-kernels"
NUMBERS = ("ops", "ddr_bytes", "l2m_bytes", "ns", "intensity", "efficiency", "under_roof_ns")


def _same(a, b):
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return (a is None or (isinstance(a, float) and math.isnan(a))) and \
            (b is None or (isinstance(b, float) and math.isnan(b)))
    return a == pytest.approx(b, rel=1e-12, abs=0)


@pytest.fixture(scope="module", params=["golden", "synthetic"])
def outputs(request, tmp_path_factory):
    if request.param == "golden":
        if not CASE.exists():
            pytest.skip(f"shared data not present at {CASE}")
        profile = load_dump(CASE / "input")
    else:                                   # kernels, calls and several data types
        profile = make_profile(cores=2, per_engine=600, seed=5)
    derive(profile)
    out = tmp_path_factory.mktemp("hw-out")
    page = html.write(profile, profile.summary, out, quiet=True).read_text(encoding="utf-8")
    data, _ = read_page(page, items=False)
    text.write_summary(profile, profile.summary, out)
    book = openpyxl.load_workbook(xlsx.write(profile, profile.summary, out, quiet=True), read_only=True)
    return {"profile": profile, "page": page, "data": data, "book": book,
            "json": json.loads((out / "summary.json").read_text(encoding="utf-8")),
            "txt": (out / "summary.txt").read_text(encoding="utf-8")}


def test_roofline_the_same_everywhere(outputs):
    roof = outputs["profile"].diagnosis.roofline
    assert len(roof)
    js = outputs["json"]["roofline"]
    assert len(js) == len(roof)
    sheet = list(outputs["book"]["Roofline"].iter_rows(values_only=True))
    head, rows = sheet[0], sheet[1:]
    col = {h: i for i, h in enumerate(head)}
    assert len(rows) == len(roof)
    page_rows = outputs["data"]["diagnosis"]["roofline"]["rows"]
    assert len(page_rows) == min(len(roof), 200)
    names = {"ops": "Ops", "ddr_bytes": "DDR Bytes", "l2m_bytes": "L2M Bytes", "ns": "Time (ns)",
             "intensity": "Ops per DDR byte", "efficiency": "Efficiency", "under_roof_ns": "Under roof (ns)"}
    for i, r in enumerate(roof.to_dict("records")):
        j = js[i]
        assert (j["scope"], j["name"], j["core"], j["bound_by"]) == (r["scope"], str(r["name"]), r["core"], r["bound_by"])
        x = rows[i]
        assert (x[col["Scope"]], str(x[col["Name"]]), x[col["Bound by"]]) == (r["scope"], str(r["name"]), r["bound_by"])
        for k in NUMBERS:
            assert _same(j[k], r[k]), k
            assert _same(x[col[names[k]]], r[k]), k
            if i < len(page_rows):
                assert _same(page_rows[i][k], r[k]), k
    # the rendered table shows the same rows, in the same order, rounded for reading
    soup = BeautifulSoup(outputs["page"], "html.parser")
    trs = soup.select("table.diag-roofline tbody tr")
    assert len(trs) == len(page_rows)
    for tr, r in zip(trs[:20], roof.to_dict("records")):
        cells = [c.get_text() for c in tr.find_all(["td", "th"])]
        assert cells[1] == str(r["name"]) and cells[4] == f"{r['under_roof_ns'] / 1000:,.3f}"
        assert cells[6] == r["bound_by"]
    # summary.txt: the five scopes with the most time under the roof, in order
    txt = outputs["txt"]
    block = txt[txt.index("Time under the roof"):].split("\n")
    lines = [ln for ln in block[4:] if "|" in ln][:5]
    for ln, r in zip(lines, roof.head(5).to_dict("records")):
        cells = [c.strip() for c in ln.split("|")]
        assert cells[0] == r["scope"] and cells[-1] == f"{r['under_roof_ns'] / 1000:.3f}"


def test_lmem_the_same_everywhere(outputs):
    lm = outputs["profile"].diagnosis.lmem
    if lm is None:
        assert outputs["json"]["lmem"] == {} and "Local Memory" not in outputs["book"].sheetnames
        return
    js = outputs["json"]["lmem"]
    sheet = list(outputs["book"]["Local Memory"].iter_rows(values_only=True))
    col = {h: i for i, h in enumerate(sheet[0])}
    page = {c["core"]: c for c in outputs["data"]["diagnosis"]["lmem"]["cores"]}
    conf = list(outputs["book"]["LMEM Conflicts"].iter_rows(values_only=True))
    ccol = {h: i for i, h in enumerate(conf[0])}
    assert sum(1 for r in conf[1:] if r[ccol["Core"]] is not None) == len(lm.conflicts)
    for c in lm.cores.to_dict("records"):
        core = int(c["core"])
        j = js[str(core)]
        assert (j["peak_bytes"], j["peak_at_ns"]) == (c["peak_bytes"], c["peak_at_ns"])
        whole = next(r for r in sheet[1:] if r[col["Core"]] == core and r[col["Bank"]] is None)
        assert (whole[col["Peak (B per lane)"]], whole[col["Peak at (ns)"]]) == (c["peak_bytes"], c["peak_at_ns"])
        t0 = int(outputs["data"]["t0_ns"])
        assert page[core]["peak_bytes"] == c["peak_bytes"] and page[core]["peak_at_ns"] == c["peak_at_ns"] - t0
        banks = lm.banks[lm.banks["core"] == core]
        assert [b["peak_bytes"] for b in j["banks"]] == banks["peak_bytes"].tolist() == page[core]["bank_peaks"]
        in_sheet = [r[col["Peak (B per lane)"]] for r in sheet[1:] if r[col["Core"]] == core and r[col["Bank"]] is not None]
        assert in_sheet == banks["peak_bytes"].tolist()
        assert f"core {core}: peak {c['peak_bytes']:,} B" in outputs["txt"]
        # the same ranked conflict candidates in summary.json and the LMEM Conflicts sheet
        listed = [(r["dma"], r["tiu"], r["overlap_ns"], r["dma_stall_cycles"]) for r in j["conflict_candidates_listed"]]
        assert listed == [(r[ccol["DMA"]], r[ccol["TIU"]], r[ccol["Overlap (ns)"]], r[ccol["DMA Stall Cycle"]])
                          for r in conf[1:] if r[ccol["Core"]] == core]
        assert len(listed) == min(c["conflict_candidates"], LISTED_CONFLICTS) and j["conflict_candidates"] == c["conflict_candidates"]
        weight = [(s or 0) * o for _, _, o, s in listed]
        assert weight == sorted(weight, reverse=True)


def _soffice():
    import shutil

    return shutil.which("libreoffice") or shutil.which("soffice")


@pytest.mark.skipif(_soffice() is None, reason="LibreOffice (libreoffice/soffice) is not on PATH; "
                    "install Debian package libreoffice-calc to run this test")
def test_libreoffice_reads_the_sheets(tmp_path):
    """LibreOffice opens the workbook and reads the Roofline and Local Memory sheets' numbers
    (re-saved by LibreOffice, then read back): no formula, the analysis' values."""
    import subprocess
    import zipfile

    if not CASE.exists():
        pytest.skip(f"shared data not present at {CASE}")
    profile = load_dump(CASE / "input")
    derive(profile)
    path = xlsx.write(profile, profile.summary, tmp_path / "out", quiet=True)
    res = subprocess.run([_soffice(), f"-env:UserInstallation=file://{tmp_path}/lo-profile", "--headless",
                          "--convert-to", "xlsx", "--outdir", str(tmp_path / "lo"), str(path)],
                         capture_output=True, text=True, timeout=300)
    resaved = tmp_path / "lo" / path.name
    assert resaved.exists(), res.stdout + res.stderr
    with zipfile.ZipFile(resaved) as z:
        assert not any("<f>" in z.read(n).decode("utf-8", "replace") for n in z.namelist()
                       if n.startswith("xl/worksheets/"))
    book = openpyxl.load_workbook(resaved, read_only=True)
    rows = list(book["Roofline"].iter_rows(values_only=True))
    col = {h: i for i, h in enumerate(rows[0])}
    roof = profile.diagnosis.roofline
    assert [r[col["Under roof (ns)"]] for r in rows[1:]] == pytest.approx(roof["under_roof_ns"].tolist(), rel=1e-12)
    assert [r[col["Bound by"]] for r in rows[1:]] == roof["bound_by"].tolist()
    mem = list(book["Local Memory"].iter_rows(values_only=True))
    mcol = {h: i for i, h in enumerate(mem[0])}
    lm = profile.diagnosis.lmem
    peaks = [r[mcol["Peak (B per lane)"]] for r in mem[1:] if r[mcol["Bank"]] in (None, "")]
    assert peaks == lm.cores["peak_bytes"].tolist()
