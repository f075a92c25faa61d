"""The layer view of result.html in a real headless Chromium, on the shared ``aks-layers-c2``
capture: the Layers tab's table shows one row per layer with the generator's command counts and
summary.json's numbers; clicking a row zooms the timeline to the layer and brings its lane into
view; a layer bar's hover names the layer and clicking it marks its row; a command's hover names
its layer. Screenshots go to tests/_artifacts/."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis.derive import derive
from reportgen.parsers.detect import load_profile
from reportgen.testing.html_page import read_page
from reportgen.writers import html as html_writer
from reportgen.writers.layers_text import layers_document

from shared_data import LAYERS, needs
from test_html_browser import PageWatch, _bar_centre, browser, launch, playwright, pytestmark, shot  # noqa: F401

CASE = LAYERS / "aks-layers-c2"
pytestmark = [*pytestmark, needs(CASE)]
PICK = 24            # final.mlir line of a Conv2D inside the group of line 22: 2 cores x 2 steps


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    profile = load_profile(CASE / "input")
    summary = derive(profile)
    path = html_writer.write(profile, summary, tmp_path_factory.mktemp("html-layers"), quiet=True)
    data, items = read_page(path.read_text(encoding="utf-8"))
    return {"profile": profile, "path": path, "data": data, "items": items}


@pytest.fixture(scope="module")
def page(browser, report):
    watch = PageWatch.ready(browser, report["path"].as_uri())
    watch.page.evaluate("__report.show('layers')")
    watch.page.evaluate("__report.layers.table()")
    watch.wait_idle("layers")
    yield watch
    watch.page.close()


def _table(p) -> pd.DataFrame:
    """The Layers table as drawn: header texts and cell texts."""
    heads = p.evaluate("Array.from(document.querySelectorAll('#layer-table thead th')).map(t => t.firstChild.textContent)")
    cells = p.evaluate("Array.from(document.querySelectorAll('#layer-table tbody tr'))"
                       ".map(tr => Array.from(tr.children).map(td => td.textContent))")
    return pd.DataFrame(cells, columns=heads)


def _number(text: str):
    return None if text == "n/a" else float(text.replace(",", "").rstrip("%"))


def test_table_rows_are_the_layers_of_the_capture(page, report):
    p = page.page
    table = _table(p)
    doc = layers_document(report["profile"].layer_view)["layers"]         # summary.json "layers"
    assert len(table) == len(doc) == 32                                  # 31 layers + unattributed
    # one row per final.mlir line of expected_layers.csv, TIU/GDMA counts from its Cmd Id ranges
    exp = pd.read_csv(CASE / "expected_layers.csv")
    lines = [int(_number(t)) for t in table["layer (line)"] if t != "n/a"]
    assert lines == list(dict.fromkeys(exp["file_line"]))                  # file order
    for engine, (first, last) in {"TIU": ("tiu_cmd_first", "tiu_cmd_last"),
                                  "GDMA": ("gdma_cmd_first", "gdma_cmd_last")}.items():
        counts = (exp[last] - exp[first] + 1).fillna(0).groupby(exp["file_line"]).sum()
        shown = table.set_index("layer (line)").drop(index="n/a")[f"{engine} cmds"].map(_number)
        assert np.array_equal(shown.to_numpy(), counts.loc[[int(_number(x)) for x in shown.index]].to_numpy())
    # every number equals summary.json's (at the table's decimals)
    for row, obj in zip(table.to_dict("records"), doc):
        assert row["op"] == obj["name"] and row["data type"] == (obj["dtype"] or "n/a")
        assert _number(row["busy (ns)"]) == obj["busy_ns"]
        assert _number(row["rank"]) == obj["rank"]
        assert row["share"] == f"{obj['time_share'] * 100:,.2f}%"
        assert row["uArch rate"] == ("n/a" if obj["uarch_rate"] is None else f"{obj['uarch_rate'] * 100:,.2f}%")
        assert row["GDMA GB/s"] == ("n/a" if obj["gdma_gbps"] is None else f"{obj['gdma_gbps']:,.2f}")
        assert _number(row["TIU cycles"]) == obj["tiu_cycles"] and _number(row["alg ops"]) == obj["alg_ops"]
    # sortable and filterable by name
    p.locator("#layer-table th", has_text="busy (ns)").first.click()
    ranks = [_number(t) for t in _table(p)["rank"]]
    assert ranks[:5] == [1, 2, 3, 4, 5]
    p.locator("#layer-table input.table-filter").fill("conv2d")
    ops = set(_table(p)["op"])
    assert ops == {"Conv2D"}
    p.locator("#layer-table input.table-filter").fill("")
    page.check()


def test_clicking_a_row_zooms_to_the_layer_and_shows_its_lane(page, report):
    p = page.page
    view = report["profile"].layer_view
    spans = view.spans[view.spans["file_line"] == PICK]
    t0 = int(report["data"]["t0_ns"])
    a, b = int(spans["start_ns"].min()) - t0, int(spans["end_ns"].max()) - t0
    p.evaluate("window.scrollTo(0, 0)")
    row = p.locator("#layer-table tbody tr", has=p.locator("td:nth-child(2)", has_text=re.compile(f"^{PICK}$")))
    row.click()
    p.wait_for_function(f"__report.layers.selected >= 0 && __report.views.layers.range[1] - __report.views.layers.range[0] < {2 * (b - a)}")
    page.wait_idle("layers")
    lo, hi = p.evaluate("__report.views.layers.range")
    assert lo <= a and hi >= b and (hi - lo) <= 1.2 * (b - a)        # zoomed to the layer's span
    assert "selected" in row.get_attribute("class")
    # the layer's bars are drawn and outlined; the first one's lane is inside the viewport
    bars = p.evaluate("__report.layers.bars(__report.layers.selected)")
    assert len(bars) == len(spans) == 4
    x, y = _bar_centre(p, "layers", bars[0])
    assert 0 < y < p.viewport_size["height"]
    shapes = p.evaluate("document.querySelector('#view-layers .timeline-plot').layout.shapes")
    outlined = sorted(round(s["x0"] * 1e3) for s in shapes if s.get("line", {}).get("color") == "#d50000")
    assert outlined == sorted(spans["start_ns"].to_numpy() - t0)
    shot(p, "layers-c2-row-click.png")
    page.check()


def test_layer_bar_hover_and_click_name_its_layer(page, report):
    p = page.page
    p.evaluate("__report.layers.select(-1)")             # none selected: the row click below
    view = report["profile"].layer_view
    k = int(np.flatnonzero(view.layers["file_line"].to_numpy() == 17)[0])   # tpu.Add, global
    bar = p.evaluate(f"__report.layers.bars({k})[0]")
    ext = p.evaluate(f"__report.layers.extent({k})")
    p.evaluate(f"__report.zoom('layers', {ext[0] - 100}, {ext[1] + 100})")
    page.wait_idle("layers")
    x, y = _bar_centre(p, "layers", bar)
    p.mouse.move(x, y)
    p.wait_for_selector(".hoverlayer .hovertext", timeout=5000)
    text = " ".join(p.evaluate("Array.from(document.querySelectorAll('.hoverlayer .hovertext text.nums tspan.line'))"
                               ".map(t => t.textContent)"))
    row = view.layers.iloc[k]
    assert text.startswith("Add · line 17")
    assert f"rank {row['rank']} · busy {row['busy_ns']:,} ns · share {row['time_share'] * 100:.2f}%" in text
    p.mouse.click(x, y)
    p.wait_for_function(f"__report.layers.selected === {k}")
    selected = p.locator("#layer-table tbody tr.selected td:nth-child(2)").text_content()
    assert selected == "17"
    page.check()


def test_a_commands_hover_names_its_layer(page, report):
    p = page.page
    items, profile = report["items"], report["profile"]
    view = profile.layer_view
    for sheet, name, line in (("TIU_1", "Conv2D", PICK), ("GDMA_0", "Load", 23)):
        k = int(np.flatnonzero(view.layers["file_line"].to_numpy() == line)[0])
        pick = items[(items["sheet"] == sheet) & (items["layer"] == k)].iloc[0]
        index = p.evaluate(f"__report.findItem('{sheet}', {int(pick['global_idx'])})")
        assert p.evaluate(f"__report.hoverText({index})").endswith(f"layer {name} · line {line} (group line 22)")
    page.check()
