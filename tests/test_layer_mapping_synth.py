"""The layer mapping (analysis.layers) on synthetic layer captures of several sizes and both
layer-file formats equals the dump writer's ground truth: every TIU/GDMA command gets the record
expected_layers.csv gives it, the unowned tail (and, with an old file that knows core 0 only,
every other core) stays unattributed, SDMA never gets a layer, and every op is a layer."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis.derive import derive
from reportgen.parsers.detect import load_profile
from reportgen.testing.synth import SynthConfig, write_dump

CAPTURES = [dict(cores=2, cmds_per_core=400, layers=15, seed=41),
            dict(cores=8, cmds_per_core=3000, layers=300, seed=42, mode=1),
            dict(cores=4, cmds_per_core=20000, layers=2000, seed=43, layer_tail=7),
            dict(cores=1, cmds_per_core=800, layers=60, seed=44, layer_format="old"),
            dict(cores=3, cmds_per_core=1500, layers=90, seed=45, layer_format="old", mode=0),
            dict(arch="AKSV", cores=4, cmds_per_core=1000, layers=80, seed=46, layer_tail=0)]


def owned_commands(truth: pd.DataFrame) -> pd.DataFrame:
    """(engine, core, cmd_id, record): one row per command a record owns, from the ranges."""
    parts = []
    for engine, first, last in (("TIU", "tiu_cmd_first", "tiu_cmd_last"),
                                ("GDMA", "gdma_cmd_first", "gdma_cmd_last")):
        t = truth.dropna(subset=[first])
        a, b = t[first].to_numpy(np.int64), t[last].to_numpy(np.int64)
        n = b - a + 1
        start = np.repeat(a - np.cumsum(n) + n, n)
        parts.append(pd.DataFrame({"engine": engine, "core": np.repeat(t["core"].to_numpy(), n),
                                   "cmd_id": np.arange(n.sum()) + start,
                                   "record": np.repeat(t["record"].to_numpy(), n)}))
    return pd.concat(parts, ignore_index=True)


@pytest.mark.parametrize("kw", CAPTURES, ids=lambda k: "-".join(f"{a}{b}" for a, b in k.items()))
def test_layer_mapping_equals_the_writers_truth(tmp_path, kw):
    res = write_dump(tmp_path, SynthConfig(**kw))
    truth = pd.read_csv(tmp_path / "expected_layers.csv")
    profile = load_profile(res.dump_dir)
    derive(profile)
    view = profile.layer_view
    assert view is not None
    c = profile.commands
    engine = c["engine"].astype(str).to_numpy()
    got = pd.DataFrame({"engine": engine, "core": c["core"].to_numpy(np.int64),
                        "cmd_id": c["cmd_id"].to_numpy(np.int64), "record": view.command_record})
    work = got[np.isin(engine, ["TIU", "GDMA"])]
    want = work[["engine", "core", "cmd_id"]].merge(owned_commands(truth), how="left",
                                                    on=["engine", "core", "cmd_id"])
    assert len(want) == len(work)
    assert (work["record"].to_numpy() == want["record"].fillna(-1).to_numpy(np.int64)).all()
    assert (view.command_layer[~np.isin(engine, ["TIU", "GDMA"])] == -1).all()
    # what no record owns: the tail of every core, or every core but 0 with an old file
    tail = kw.get("layer_tail", 3)
    owned_cores = 1 if kw.get("layer_format") == "old" else kw["cores"]
    unowned = int((work["record"] == -1).sum())
    other_cores = int((work["core"] >= owned_cores).sum())
    assert unowned == 2 * tail * owned_cores + other_cores
    stray = view.unattributed.iloc[0]
    assert stray["tiu_cmds"] + stray["gdma_cmds"] == unowned
    # one layer per op (zero-command ops, Load/Store included), with the op's opcode
    ops = truth.drop_duplicates(["subnet_id", "file_line"]).set_index("file_line")["opcode"]
    layers = view.layers.set_index("file_line")
    assert sorted(layers.index) == sorted(ops.index)
    assert (layers.loc[ops.index, "opcode"] == ops).all()
