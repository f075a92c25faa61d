"""The per-Function-Type breakdown against the reference workbook's statistics block (the
TIU_<core> sheets of bigTpuProfile 0.3.7, reference-tool.md §2.3) on every shared dump, and the
same diagnosis numbers in summary.json, summary.txt and the workbook.

Where the reference is right our counts, Asic cycles, Alg Ops, Alg Cycles and uArch Ops equal
its own. Its known error (op-metrics.md §5 bug 13): commands without an op model (modes 0/1,
RVT nodes) count 1 Alg Op, 1 uArch Op and 0 Alg Cycles each, where ours are unknown.
"""
from __future__ import annotations

import json
import math

import openpyxl
import pytest

from shared_data import PMU, needs
from reportgen.parsers.pmu import load_dump
from reportgen.testing.profiles import derived

CASES = sorted(p.name for p in PMU.glob("*/") if (p / "input").is_dir()) if PMU.exists() else []


def reference_statistics(workbook):
    """{(core, Function Type): (Instr Num, Alg Ops, Alg Cycle, uArch Ops, Asic Cycle)}."""
    wb = openpyxl.load_workbook(workbook, read_only=True)
    out = {}
    for name in wb.sheetnames:
        if not name.startswith("TIU_"):
            continue
        ws = wb[name]
        assert ws.cell(6, 2).value == "Function Name"        # holds the Function Type (§2.3)
        for r in ws.iter_rows(min_row=7, max_col=11, values_only=True):
            if r[1] is None or r[1] == "Overall":
                break
            out[int(name[4:]), r[1]] = (r[2], r[3], r[5], r[7], r[10])
    wb.close()
    return out


@needs(PMU)
@pytest.mark.parametrize("name", CASES)
def test_function_types_match_the_reference_statistics(name):
    base = PMU / name
    profile = derived(load_dump(base / "input"))
    b = profile.diagnosis.breakdown
    tiu = b[(b["engine"] == "TIU") & (b["core"] != "Overall")]
    # our rows split work and waiting; the reference has one row per Function Type
    ours = tiu.groupby(["core", "func_type"]).agg(
        count=("count", "sum"), alg=("alg_ops", lambda s: s.sum(min_count=1)),
        alg_cycles=("alg_cycles", lambda s: s.sum(min_count=1)),
        uarch=("uarch_ops", lambda s: s.sum(min_count=1)), cycles=("cycles", "sum"))
    ref = reference_statistics(next((base / "reference-0.3.7" / "PerfDoc").glob("*.xlsx")))
    assert set(ref) == set(ours.index)
    unmodelled = 0
    for key, (count, alg, alg_cycle, uarch, asic) in ref.items():
        mine = ours.loc[key]
        assert (mine["count"], mine["cycles"]) == (count, asic), key
        if math.isnan(mine["alg"]):                          # bug 13: 1/1/0 per command there
            unmodelled += 1
            assert (alg, uarch, alg_cycle) == (count, count, 0), key
        else:
            assert (mine["alg"], mine["alg_cycles"], mine["uarch"]) == (alg, alg_cycle, uarch), key
    # only the captures without descriptors take the bug-13 branch
    assert (unmodelled > 0) == (name in ("aks-m0-c8", "aks-m1-c8", "aksv-m2-c4-rvt", "bm1688-m1-c2",
                                         "cv84x6-m0-c4")), unmodelled


@needs(PMU / "aks-m2-c8")
def test_the_same_numbers_in_json_text_and_workbook(tmp_path):
    from reportgen.writers import xlsx
    from reportgen.writers.text import write_summary

    profile = derived(load_dump(PMU / "aks-m2-c8" / "input"))
    txt_path, json_path = write_summary(profile, profile.summary, tmp_path)
    doc = json.loads(json_path.read_text(encoding="utf-8"))
    text = txt_path.read_text(encoding="utf-8")
    wb = openpyxl.load_workbook(xlsx.write(profile, profile.summary, tmp_path, quiet=True), read_only=True)

    def sheet(name):
        rows = list(wb[name].iter_rows(values_only=True))
        return [dict(zip(rows[0], r)) for r in rows[1:]]

    d = profile.diagnosis
    # findings: every text, value and rank the same in all three
    cells = sheet("Findings")
    assert len(doc["findings"]) == len(cells) == len(d.findings) > 0
    for js, cell in zip(doc["findings"], cells):
        assert (js["rank"], js["rule"], js["text"]) == (cell["Rank"], cell["Rule"], cell["Finding"])
        # a workbook number keeps 16 significant digits (xlsxwriter's "%.16g"; Excel shows 15)
        assert cell["Value"] == pytest.approx(js["value"], rel=1e-15)
        assert f"{js['rank']:>3}. [{js['severity']}] {js['rule']}: " in text
    # summary.txt wraps long findings at 120 columns: compare the words
    assert " ".join(doc["findings"][0]["text"].split()) in " ".join(text.split())
    section = text[text.index("Findings ("):text.index("Warnings") if "Warnings" in text else None]
    assert max(len(ln) for ln in section.splitlines()) <= 120
    # the top Function Type over all cores: busy time and uArch rate
    top = max((r for r in doc["breakdown"] if r["core"] == "Overall"), key=lambda r: r["busy_ns"])
    cell = next(c for c in sheet("Function Types") if (c["Core"], c["Engine"], c["Function Type"],
                                                       c["Category"]) ==
                (top["core"], top["engine"], top["func_type"], top["category"]))
    assert cell["Busy (ns)"] == top["busy_ns"] and cell["Commands"] == top["count"]
    line = next(ln for ln in text.splitlines() if ln.split("|")[:2] == [f"{top['engine']:>6} ", f" {top['func_type']:>13} "])
    assert f"{top['busy_ns'] / 1000:.3f}" in line and f" {top['count']} " in line
    # kernels: total time per name
    kernels = {c["Kernel"]: c["Total (ns)"] for c in sheet("Kernels")}
    for k in doc["kernels"]:
        assert kernels[k["name"]] == k["total_ns"]
        assert f"{k['total_ns'] / 1000:.3f}" in next(ln for ln in text.splitlines()
                                                     if k["name"] in ln and " | " in ln)
    # overlap per core: json keys the issue names, and the text table
    for r in doc["overlap"]:
        assert {"both_ns", "tiu_only_ns", "dma_only_ns", "idle_ns"} <= set(r)
        line = next(ln.split("|") for ln in text.splitlines()
                    if ln.count("|") == 8 and ln.split("|")[0].strip() == str(r["core"]))
        assert [c.strip() for c in line[1:5]] == [f"{r[k] / 1000:.3f}" for k in
                                                  ("both_ns", "tiu_only_ns", "dma_only_ns", "idle_ns")]
    wb.close()
