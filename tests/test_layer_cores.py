"""Layer records follow the core their ``core_id`` names, i.e. the number in the core file's name,
even when a core file is missing and the decoder renumbers the following cores by position
(spec layer-info.md §4; pmu-dump-format.md Q1)."""
from __future__ import annotations

import shutil

import numpy as np
import pandas as pd

from reportgen.analysis.derive import derive
from reportgen.parsers.detect import load_profile
from shared_data import LAYERS, needs

CASE = LAYERS / "aks-layers-c8"
pytestmark = needs(CASE)
MISSING = 3          # a middle core: cores 4..7 are decoded as 3..6


def _owned(exp: pd.DataFrame) -> pd.DataFrame:
    """(engine, core named by the file, cmd_id) -> record, from expected_layers.csv."""
    rows = []
    for engine, (first, last) in {"TIU": ("tiu_cmd_first", "tiu_cmd_last"),
                                  "GDMA": ("gdma_cmd_first", "gdma_cmd_last")}.items():
        for r in exp.dropna(subset=[first]).itertuples():
            for k in range(int(getattr(r, first)), int(getattr(r, last)) + 1):
                rows.append((engine, r.core, k, r.record))
    return pd.DataFrame(rows, columns=["engine", "file_core", "cmd_id", "record"])


def test_a_missing_core_file_does_not_shift_layers(tmp_path):
    folder = tmp_path / "input"
    shutil.copytree(CASE / "input", folder)
    (folder / f"cdmlib{MISSING}.profile").unlink()
    profile = load_profile(folder)
    derive(profile)
    view = profile.layer_view
    c = profile.commands
    # decoded core -> the number in its file name: 0, 1, 2, 4, 5, 6, 7
    file_core = np.array([k for k in range(8) if k != MISSING])[c["core"].to_numpy(np.int64)]
    ours = pd.DataFrame({"engine": c["engine"].astype(str).to_numpy(), "file_core": file_core,
                         "cmd_id": c["cmd_id"].to_numpy(np.int64), "record": view.command_record})
    truth = _owned(pd.read_csv(CASE / "expected_layers.csv"))
    got = ours[ours["engine"].isin(["TIU", "GDMA"])].merge(
        truth, on=["engine", "file_core", "cmd_id"], how="left", suffixes=("", "_truth"))
    got["record_truth"] = got["record_truth"].fillna(-1).astype(np.int64)
    assert (got["file_core"] > MISSING).sum() > 500        # the shifted cores carry commands
    assert np.array_equal(got["record"].to_numpy(), got["record_truth"].to_numpy())
    # the records of the missing core own nothing, and the report says so
    codes = [w.code for w in profile.meta.warnings]
    assert "layer-core-missing" in codes
    lost = pd.read_csv(CASE / "expected_layers.csv").query("core == @MISSING")["record"]
    assert not np.isin(view.command_record, lost.to_numpy()).any()
    assert set(view.spans["core"]) == set(range(7))
