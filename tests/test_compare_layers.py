"""--baseline per layer (issue 17): two layer captures with a known difference (the dump writer's
slow kernel), checked layer by layer against the generator's truth; the golden c2 capture against
itself (all noise) and against a copy with one layer renumbered (gone / new)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from reportgen import cli
from reportgen.analysis.compare import NOISE
from reportgen.testing.synth import SynthConfig, write_dump
from shared_data import LAYERS, needs

FAST = ("--no_perfetto", "--disable_web", "--disable_doc", "--quiet")
SYS_OPS = ("tiu_send", "tiu_wait", "dma_send", "dma_wait", "cd_tx_wait", "cd_nop")
C2 = LAYERS / "aks-layers-c2" / "input"


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> dict[str, tuple[Path, object, Path]]:
    """base and slow (conv TIU commands 2x longer): dump, generator result, own report."""
    root = tmp_path_factory.mktemp("layer-runs")
    out = {}
    for name, changes in {"base": {}, "slow": dict(slow_kernel="conv")}.items():
        res = write_dump(root / name, SynthConfig(cores=2, cmds_per_core=1500, layers=40, seed=5, **changes))
        report = root / f"report-{name}"
        assert cli.main([str(res.dump_dir), str(report), *FAST]) == 0
        out[name] = (res.dump_dir, res, report)
    return out


def _compare(new: Path, baseline: Path, out: Path) -> dict:
    assert cli.main([str(new), str(out), "--baseline", str(baseline), *FAST]) == 0
    return json.loads((out / "summary.json").read_text())["compare"]


def _truth_layers(res) -> pd.DataFrame:
    """Per layer (file_line) from the generator's truth: busy = per core, the union of the owned
    TIU and GDMA work intervals, summed over cores; commands owned per engine."""
    truth, owners = res.truth, res.layers
    rows = []
    for engine, first, last in (("TIU", "tiu_cmd_first", "tiu_cmd_last"), ("GDMA", "gdma_cmd_first", "gdma_cmd_last")):
        for r in owners[owners[first].notna()].itertuples():
            cmds = truth[(truth["engine"] == engine) & (truth["core"] == r.core)
                         & truth["cmd_id"].between(getattr(r, first), getattr(r, last))]
            rows += [{"file_line": r.file_line, "core": r.core, "engine": engine, "start": c.start_ns,
                      "end": c.end_ns, "work": c.op not in SYS_OPS} for c in cmds.itertuples()]
    owned = pd.DataFrame(rows)
    out = {}
    for line, g in owned.groupby("file_line"):
        busy = 0
        for _, w in g[g["work"]].groupby("core"):
            reach = None
            for s, e in sorted(zip(w["start"], w["end"])):       # union of intervals, by hand
                if reach is None or s > reach:
                    busy += e - s
                    reach = e
                elif e > reach:
                    busy += e - reach
                    reach = e
        out[int(line)] = {"busy_ns": int(busy), "tiu_cmds": int((g["engine"] == "TIU").sum()),
                          "gdma_cmds": int((g["engine"] == "GDMA").sum())}
    return pd.DataFrame.from_dict(out, orient="index")


def test_slow_kernel_layers_match_the_truth(pair, tmp_path):
    doc = _compare(pair["slow"][0], pair["base"][0], tmp_path / "vs-dump")
    layers = {(r["subnet_id"], r["file_line"]): r for r in doc["layers"]}
    base, slow = _truth_layers(pair["base"][1]), _truth_layers(pair["slow"][1])
    assert set(layers) == {(0, line) for line in base.index} | {(-1, -1)}     # + the unattributed row
    rel, floor = NOISE["ns"]
    changed = 0
    for line in base.index:
        r = layers[(0, line)]
        b, n = base.loc[line], slow.loc[line]
        assert (r["base_busy_ns"], r["new_busy_ns"]) == (b["busy_ns"], n["busy_ns"]), line
        assert r["delta_busy_ns"] == n["busy_ns"] - b["busy_ns"]
        assert (r["base_tiu_cmds"], r["new_tiu_cmds"]) == (b["tiu_cmds"], n["tiu_cmds"])
        assert (r["base_gdma_cmds"], r["new_gdma_cmds"]) == (b["gdma_cmds"], n["gdma_cmds"])
        noise = abs(n["busy_ns"] - b["busy_ns"]) <= max(rel * b["busy_ns"], floor)
        assert r["status"] == ("noise" if noise else "changed"), line
        changed += not noise
    assert changed >= 5                              # the conv layers, about twice slower
    deltas = [abs(r["delta_busy_ns"]) for r in doc["layers"]]
    assert deltas == sorted(deltas, reverse=True)
    assert doc["layers"][0]["pct_busy_ns"] > 90


def test_old_report_folder_gives_the_same_layer_deltas(pair, tmp_path):
    from_dump = _compare(pair["slow"][0], pair["base"][0], tmp_path / "vs-dump")
    from_report = _compare(pair["slow"][0], pair["base"][2], tmp_path / "vs-report")
    assert from_report["layers"] == from_dump["layers"]


def test_no_layer_deltas_unless_both_runs_have_layers(pair, tmp_path):
    plain = write_dump(tmp_path / "plain", SynthConfig(cores=2, cmds_per_core=1500, seed=5)).dump_dir
    assert _compare(pair["slow"][0], plain, tmp_path / "vs-plain")["layers"] == []


@needs(C2)
def test_c2_against_itself_is_all_noise(tmp_path):
    own = _compare(C2, C2, tmp_path / "self")
    summary = json.loads((tmp_path / "self" / "summary.json").read_text())
    assert len(own["layers"]) == len(summary["layers"]) > 1
    assert all(r["status"] == "noise" and r["delta_busy_ns"] == 0 for r in own["layers"])
    busy = {(r["subnet_id"], r["file_line"]): r["busy_ns"] for r in summary["layers"]}
    assert {(r["subnet_id"], r["file_line"]): r["new_busy_ns"] for r in own["layers"]} == busy


@needs(C2)
def test_c2_with_a_layer_renumbered_is_gone_and_new(tmp_path):
    copy = tmp_path / "c2-copy"
    shutil.copytree(C2, copy)
    records = json.loads((copy / "tensor_location.json").read_text())
    moved = max({r["file-line"] for r in records}, key=lambda line: sum(r["file-line"] == line for r in records))
    for r in records:
        if r["file-line"] == moved:
            r["file-line"] = 999_999
    (copy / "tensor_location.json").write_text(json.dumps(records))
    doc = _compare(copy, C2, tmp_path / "renumbered")
    rows = {(r["subnet_id"], r["file_line"]): r for r in doc["layers"]}
    subnet = next(k[0] for k in rows if k[1] == moved)
    gone, new = rows[(subnet, moved)], rows[(subnet, 999_999)]
    assert gone["status"] == "gone" and new["status"] == "new"
    assert gone["new_busy_ns"] == 0 and new["base_busy_ns"] == 0
    assert gone["base_busy_ns"] == new["new_busy_ns"] > 0            # the same commands, renamed
    assert gone["base_tiu_cmds"] == new["new_tiu_cmds"] and gone["opcode"] == new["opcode"]
    assert all(r["status"] == "noise" for k, r in rows.items() if k[1] not in (moved, 999_999))


def test_layer_deltas_in_the_compare_sheet_and_tab(pair, tmp_path):
    """The workbook's Compare sheet lists every layer delta; the Compare tab the largest ones,
    with the same values."""
    import openpyxl
    from bs4 import BeautifulSoup

    from reportgen.writers.html.compare import TOP_NAMES

    out = tmp_path / "full"
    assert cli.main([str(pair["slow"][0]), str(out), "--baseline", str(pair["base"][0]),
                     "--no_perfetto", "--quiet"]) == 0
    layers = json.loads((out / "summary.json").read_text())["compare"]["layers"]
    rows = list(openpyxl.load_workbook(out / "PerfDoc" / "PerfAI_output.xlsx", read_only=True)["Compare"]
                .iter_rows(values_only=True))
    head = next(i for i, r in enumerate(rows) if str(r[0]).startswith("Per layer"))
    assert rows[head + 1][:8] == ("subnet_id", "file_line", "opcode", "status", "base_busy_ns", "new_busy_ns",
                                  "delta_busy_ns", "pct_busy_ns")
    assert [r[:7] for r in rows[head + 2:head + 2 + len(layers)]] == \
        [(r["subnet_id"], r["file_line"], r["opcode"], r["status"], r["base_busy_ns"], r["new_busy_ns"],
          r["delta_busy_ns"]) for r in layers]
    table = BeautifulSoup((out / "PerfWeb" / "result.html").read_text(), "html.parser").find(id="compare-layers")
    shown = table.tbody.find_all("tr")
    assert len(shown) == min(TOP_NAMES, len(layers))
    for tr, r in zip(shown, layers):
        cells = [td.get_text() for td in tr.find_all("td")]
        assert tr.th.get_text() == str(r["file_line"])
        assert cells[2:4] == [f"{r['base_busy_ns'] / 1000:,.1f}", f"{r['new_busy_ns'] / 1000:,.1f}"]
        assert ("(noise)" in cells[4]) == (r["status"] == "noise")
