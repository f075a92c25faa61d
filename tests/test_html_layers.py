"""The layer view in result.html, read back without a browser (reportgen.testing.html_page): every
command carries its layer (Profile.layer_view.command_layer), the layer lanes hold one bar per
record with commands (LayerView.spans) and one group bar per core and group, and the Layers
table's values are summary.json's ``layers``, on both shared layer captures."""
from __future__ import annotations

import base64
import gzip
import json
import re

import numpy as np
import pytest

from reportgen.analysis.derive import derive
from reportgen.analysis.metrics import engine_summary
from reportgen.parsers.detect import load_profile
from reportgen.testing.html_page import read_page
from reportgen.testing.profiles import make_profile
from reportgen.writers.html.page import render
from reportgen.writers.layers_text import layers_document

from shared_data import LAYERS

CASES = ["aks-layers-c2", "aks-layers-c8"]


@pytest.fixture(scope="module", params=CASES)
def page(request):
    if not (LAYERS / request.param).exists():
        pytest.skip(f"shared data not present at {LAYERS / request.param}")
    profile = load_profile(LAYERS / request.param / "input")
    summary = derive(profile)
    text = render(profile, summary)
    data, items = read_page(text)
    return profile, text, data, items


def test_every_command_carries_its_layer(page):
    profile, _, data, items = page
    c = profile.commands
    lanes = data["lanes"]
    kind = np.array([l.get("layer") for l in lanes], object)
    sheet_kind = dict(zip([l["name"] for l in lanes], kind))
    commands = items[[sheet_kind[s] is None for s in items["sheet"]]]
    # the page's items are sorted by lane and start: match them to the model by sheet + global_idx
    model = c.assign(sheet=c["sheet"].astype(str), layer=profile.layer_view.command_layer)
    got = commands.merge(model[["sheet", "global_idx", "layer"]], on=["sheet", "global_idx"], suffixes=("", "_model"))
    assert len(got) == len(c)
    assert np.array_equal(got["layer"].to_numpy(), got["layer_model"].to_numpy())


def test_layer_and_group_lanes_hold_the_spans(page):
    profile, _, data, items = page
    view = profile.layer_view
    t0 = int(data["t0_ns"])
    lanes = {l["name"]: l for l in data["lanes"]}
    on = items["sheet"].map(lambda s: lanes[s].get("layer"))
    bars = items[on == "layers"].assign(core=lambda d: d["sheet"].map(lambda s: lanes[s]["cores"][0]))
    expected = view.spans.assign(start=view.spans["start_ns"], record=view.spans["record"])
    got = bars.sort_values(["core", "start_ns", "global_idx"]).reset_index(drop=True)
    exp = expected.sort_values(["core", "start_ns", "record"]).reset_index(drop=True)
    assert np.array_equal(got["start_ns"].to_numpy(), exp["start_ns"].to_numpy())
    assert np.array_equal(got["end_ns"].to_numpy(), exp["end_ns"].to_numpy())
    assert np.array_equal(got["global_idx"].to_numpy(), exp["record"].to_numpy())     # the record
    assert np.array_equal(got["cmd_id"].to_numpy(), exp["cmds"].to_numpy())          # its commands
    assert np.array_equal(got["layer"].to_numpy(), exp["layer"].to_numpy())
    assert (bars["start_ns"] >= t0).all()
    # a group bar per core and group: from its members' first start to their last end
    groups = items[on == "groups"]
    member = view.spans.dropna(subset=["group_line"])
    span = member.groupby(["core", "group_line"]).agg(a=("start_ns", "min"), b=("end_ns", "max"))
    assert len(groups) == len(span) == member.groupby(["core", "group_line"]).ngroups
    core = groups["sheet"].map(lambda s: lanes[s]["cores"][0]).to_numpy()
    for k, line, a, b in zip(core, groups["global_idx"], groups["start_ns"], groups["end_ns"]):
        assert (a, b) == tuple(span.loc[(k, line)])
    # every core view shows its layer lanes above its engines; the Layers view has them all
    views = {v["id"]: [data["lanes"][i]["name"] for i in v["lanes"]] for v in data["views"]}
    assert views["core-0"][:2] == ["GROUP_0", "LAYER_0"] and views["core-0"][2] == "TIU_0"
    assert set(views["layers"]) == {n for n, l in lanes.items() if l.get("layer") or
                                    l["engine"] in ("TIU", "GDMA")}


def test_the_table_holds_summary_json_layers(page):
    profile, text, data, _ = page
    block = re.search(r'<script id="rg-layers" type="application/octet-stream">(.*?)</script>', text, re.S)
    body = json.loads(gzip.decompress(base64.b64decode(block.group(1))))
    columns = [c["stored_name"] for c in data["layers"]["table"]["columns"]]
    doc = layers_document(profile.layer_view)["layers"]
    assert data["layers"]["table"]["rows"] == len(doc)
    for name, values in zip(columns, body["columns"]):
        want = [o[name] for o in doc]
        if name in ("file_line", "subnet_id"):          # the unattributed row has none
            want[-1] = None
        assert values == want, name
    assert any(t["id"] == "layers" for t in data["tabs"])


def test_a_page_without_layer_files_has_no_layer_view():
    profile = make_profile(cores=2, per_engine=50, seed=3)
    data, items = read_page(render(profile, engine_summary(profile)))
    assert "layers" not in data and "layer" not in items
    assert not any(l.get("layer") for l in data["lanes"])
    assert "layer" not in {c["name"] for c in data["payload"]["columns"]}
