"""The dump writer's layer files (tensor_location.json, final.mlir) read by the rules of
shared/spec/layer-info.md §2-§4, re-implemented here in a few independent lines, and checked
first against the spec's worked example (§4) and the golden captures' expected_layers.csv."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from shared_data import LAYERS, needs
from reportgen.testing.synth import SynthConfig, write_dump

C2 = LAYERS / "aks-layers-c2"


def read_layer_files(folder) -> tuple[pd.DataFrame, dict]:
    """Records with the Cmd Ids they own ((before, after] per engine, §2.2) and their group
    line (§3: the body of a `"tpu.Group"` op, closed by the `})` at its region depth)."""
    group_of, header, stack = {}, {}, []
    with open(folder / "final.mlir", encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            text = line.strip()
            if not header and text.split(" ", 1)[0] == "module":
                attrs = re.search(r"attributes \{(.*)\} \{$", text).group(1)
                for m in re.finditer(r'([\w.]+) = ("[^"]*"|[^,]+)', attrs):
                    header[m.group(1)] = m.group(2).strip('"').split(" : ")[0]
                name = re.match(r'module @"?([\w.-]+)"?', text)
                header["name"] = name.group(1) if name else header.get("module.name")
            if re.match(r'%\w+ = "tpu\.Group"\(', text):
                stack.append(no)
            elif text.startswith("})") and stack:
                stack.pop()
            elif stack:
                group_of[no] = stack[-1]
    rows = []
    for i, r in enumerate(json.loads((folder / "tensor_location.json").read_text())):
        old = "bdc_gdma_id(before)" in r
        before = r["bdc_gdma_id(before)" if old else "tiu_dma_id(before)"]
        after = r["bdc_gdma_id(after)" if old else "tiu_dma_id(after)"]
        owned = [(b + 1, a) if a > b else (None, None) for b, a in zip(before, after)]
        rows.append({"record": i, "core": r.get("core_id", 0), "subnet_id": r["subnet_id"],
                     "file_line": r["file-line"], "opcode": r["opcode"],
                     "is_local": r.get("is_local", r["file-line"] in group_of),
                     "group_line": group_of.get(r["file-line"]),
                     "tiu_cmd_first": owned[0][0], "tiu_cmd_last": owned[0][1],
                     "gdma_cmd_first": owned[1][0], "gdma_cmd_last": owned[1][1]})
    return pd.DataFrame(rows), header


def _same(ours: pd.DataFrame, truth: pd.DataFrame) -> None:
    assert len(ours) == len(truth)
    for col in truth.columns:
        a = ours[col].astype(object).where(ours[col].notna(), "").astype(str).str.lower()
        b = truth[col].astype(object).where(truth[col].notna(), "").astype(str).str.lower()
        a = a.str.replace(r"\.0$", "", regex=True)
        b = b.str.replace(r"\.0$", "", regex=True)
        assert a.tolist() == b.tolist(), col


@needs(C2)
def test_reader_reproduces_the_worked_example():
    recs, header = read_layer_files(C2 / "input")
    r = recs.set_index("record")
    assert (r.loc[0, "opcode"], r.loc[0, "tiu_cmd_first"], r.loc[0, "tiu_cmd_last"]) == ("tpu.Pool2D", 3, 4)
    assert (r.loc[0, "gdma_cmd_first"], r.loc[0, "gdma_cmd_last"]) == (3, 6)
    assert r.loc[1, "opcode"] == "tpu.Reshape" and pd.isna(r.loc[1, "tiu_cmd_first"])
    assert pd.isna(r.loc[1, "gdma_cmd_first"])
    assert r.loc[6, ["opcode", "gdma_cmd_first", "gdma_cmd_last"]].tolist() == ["tpu.Load", 19, 19]
    assert pd.isna(r.loc[6, "tiu_cmd_first"])
    assert r.loc[7, ["opcode", "tiu_cmd_first", "tiu_cmd_last"]].tolist() == ["tpu.Conv2D", 11, 11]
    assert pd.isna(r.loc[7, "gdma_cmd_first"])
    assert r.loc[8, ["opcode", "gdma_cmd_first", "gdma_cmd_last"]].tolist() == ["tpu.Store", 20, 20]
    assert r.loc[6, "group_line"] == 22 and header["module.FLOPs"] == "466176040"
    assert header["name"] == "layers_c2" and header["module.mode"] == "F16"


@needs(LAYERS)
@pytest.mark.parametrize("case", ["aks-layers-c2", "aks-layers-c8"])
def test_reader_matches_golden_truth(case):
    recs, _ = read_layer_files(LAYERS / case / "input")
    _same(recs, pd.read_csv(LAYERS / case / "expected_layers.csv"))


SIZES = [dict(cores=2, cmds_per_core=500, layers=20, seed=31),
         dict(cores=8, cmds_per_core=1500, layers=120, seed=32, mode=1),
         dict(cores=1, cmds_per_core=600, layers=40, seed=33, layer_format="old"),
         dict(cores=4, cmds_per_core=800, layers=30, seed=34, layer_format="old", mode=0),
         dict(arch="AKSV", cores=4, cmds_per_core=700, layers=50, seed=35, layer_tail=0)]


@pytest.mark.parametrize("kw", SIZES, ids=lambda k: "-".join(f"{a}{b}" for a, b in k.items()))
def test_writer_files_follow_the_spec(tmp_path, kw):
    res = write_dump(tmp_path, SynthConfig(**kw))
    folder = res.dump_dir
    recs, header = read_layer_files(folder)
    truth = pd.read_csv(tmp_path / "expected_layers.csv")
    _same(recs, truth)
    old = kw.get("layer_format") == "old"
    raw = json.loads((folder / "tensor_location.json").read_text())
    assert all(("core_id" in r) != old and ("is_local" in r) != old for r in raw)
    first = (folder / "final.mlir").read_text().split("\n", 1)[0]
    assert first.startswith("#loc") if old else first.startswith("module @")
    assert header["module.mode"] == "F16" and int(header["module.FLOPs"]) > 0
    # the kinds the spec describes are all there
    assert {"tpu.Load", "tpu.Store"} <= set(recs["opcode"])
    assert recs["group_line"].notna().any() and not recs.loc[recs.opcode == "tpu.GroupNorm",
                                                               "group_line"].notna().any()
    zero = recs["tiu_cmd_first"].isna() & recs["gdma_cmd_first"].isna()
    assert recs.loc[zero, "opcode"].isin(["tpu.Reshape", "tpu.Squeeze"]).all()
    local = recs["group_line"].notna()
    assert recs.loc[local & recs.opcode.isin(["tpu.Load", "tpu.Store"]), "tiu_cmd_first"].isna().all()
    assert recs.loc[local & ~recs.opcode.isin(["tpu.Load", "tpu.Store"]), "gdma_cmd_first"].isna().all()
    # owned ids are commands of the dump, each owned once; the rest is the unowned tail
    cmds = res.truth
    cores = sorted(set(recs["core"]))
    assert cores == ([0] if old else list(range(kw["cores"])))
    tail = kw.get("layer_tail", 3)
    for core in cores:
        for engine, first_col, last_col in (("TIU", "tiu_cmd_first", "tiu_cmd_last"),
                                            ("GDMA", "gdma_cmd_first", "gdma_cmd_last")):
            mine = recs[(recs.core == core) & recs[first_col].notna()]
            owned = [k for a, b in zip(mine[first_col], mine[last_col]) for k in range(int(a), int(b) + 1)]
            ids = sorted(cmds.loc[(cmds.core == core) & (cmds.engine == engine), "cmd_id"])
            assert len(owned) == len(set(owned))
            assert sorted(owned) == ids[:len(ids) - tail], (core, engine)
