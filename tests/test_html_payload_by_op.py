"""The timeline payload's op-grouped columns (payload.BY_OP): the stored layout worked out by hand,
and the page's own decoder (real headless Chromium) giving back every command's model values."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from reportgen.analysis.metrics import engine_summary
from reportgen.testing.html_page import decode_items, read_page
from reportgen.testing.profiles import make_profile
from reportgen.writers import html as html_writer
from reportgen.writers.html.payload import BY_OP, Items, encode_items
from test_html_browser import CHROMIUM, PageWatch, browser, playwright, sync_playwright  # noqa: F401


def _items() -> Items:
    """Two lanes; ops interleaved: lane 0 runs ops 1, 0, 1; lane 1 runs ops 0, 1."""
    start = np.array([0, 10, 30, 5, 20])
    dur = np.array([7, 3, 9, 4, 6])
    z = np.zeros(5, np.int64)
    return Items(lane=np.array([0, 0, 0, 1, 1]), start=start, end=start + dur,
                 op=np.array([1, 0, 1, 0, 1]), kernel=z, gidx=np.arange(5), cmd=np.arange(5),
                 nbytes=np.array([181, 0, 101, 131, 151]), bw=np.full(5, np.nan),
                 urate=np.array([11, 12, 13, 14, 15]))


def test_grouped_columns_are_stored_op_by_op_and_decode_back():
    items = _items()
    header, blob = encode_items(items, 2)
    raw = gzip.decompress(blob)
    spec = {c["name"]: c for c in header["columns"]}
    assert {name for name, c in spec.items() if c.get("by_op")} == set(BY_OP)

    def stored(name):
        c = spec[name]
        return np.frombuffer(raw, np.dtype("<" + c["dtype"]), c["n"], c["offset"]).tolist()  # 1-byte types

    # item order (lane, start): durations 7 3 9 | 4 6 with ops 1 0 1 | 0 1
    assert stored("op") == [1, 0, 1, 0, 1]
    # by op, then by bytes (+1): op 0: items 1 (0), 3 (131); op 1: items 2 (101), 4 (151), 0 (181)
    assert stored("dur") == [3, 4, 9, 6, 7]
    # gaps 0 3 17 | 5 11 (start - previous end), by op then by the lane's previous op (+1, 0 at
    # a lane's first item): op 0: item 3 (after none), item 1 (after op 1); op 1: item 0 (after
    # none), items 2 and 4 (after op 0)
    assert stored("gap") == [5, 3, 0, 17, 11]
    assert {name: c["then"] for name, c in spec.items() if c.get("then")} == {"gap": "prev_op", "dur": "bytes"}
    assert stored("bytes") == [0, 131, 181, 101, 151]
    assert stored("urate") == [12, 14, 11, 13, 15]
    assert stored("gidx") == [0, 1, 1, 3, 1]           # not grouped: lane deltas in item order
    out = decode_items(dict(header, ops=[[0, None, None, ""]] * 2, urate_scale=10), blob)
    assert out["start"].tolist() == [0, 10, 30, 5, 20] and out["end"].tolist() == [7, 13, 39, 9, 26]
    assert out["bytes"][[0, 2, 3, 4]].tolist() == [180, 100, 130, 150] and np.isnan(out["bytes"][1])
    assert out["urate"].tolist() == [1.0, 1.1, 1.2, 1.3, 1.4]


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)")
@pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)")
def test_the_page_decodes_every_command_to_its_model_values(browser, tmp_path):
    profile = make_profile(cores=2, per_engine=400, seed=5, cdma_ports=(0,))
    path = html_writer.write(profile, engine_summary(profile), tmp_path, quiet=True)
    _, frame = read_page(path.read_text(encoding="utf-8"))
    watch = PageWatch.ready(browser, path.as_uri())
    got = watch.page.evaluate("(() => { const IT = __report.items; return {"
                              "start: Array.from(IT.start), end: Array.from(IT.end),"
                              "bytes: Array.from(IT.bytesPlus1), urate: Array.from(IT.urateQ)}; })()")
    watch.check()
    t0 = int(profile.commands["start_ns"].min())
    # the page's items are in the payload's order, the Python twin's too: compare row by row,
    # then the twin against the model (sheet, global_idx) — so the page equals the model
    np.testing.assert_array_equal(np.array(got["start"]) + t0, frame["start_ns"].to_numpy())
    np.testing.assert_array_equal(np.array(got["end"]) + t0, frame["end_ns"].to_numpy())
    np.testing.assert_array_equal(np.where(np.array(got["bytes"]) > 0, np.array(got["bytes"]) - 1., np.nan),
                                  frame["bytes"].to_numpy(float))
    q = np.array(got["urate"], float)
    np.testing.assert_array_equal(np.where(q > 0, (q - 1) / 10_000, np.nan), frame["uarch_rate"].to_numpy(float))
    c = profile.commands.assign(sheet=profile.commands["sheet"].astype(str))
    want = c.set_index(["sheet", "global_idx"]).sort_index()
    have = frame.set_index(["sheet", "global_idx"]).sort_index()
    assert have.index.equals(want.index)
    for col in ("start_ns", "end_ns"):
        np.testing.assert_array_equal(have[col].to_numpy(np.int64), want[col].to_numpy(np.int64))
    np.testing.assert_allclose(have["uarch_rate"].to_numpy(float), want["uarch_rate"].to_numpy(float), atol=5e-5)
    assert len(set(frame["func_name"])) > 3          # several ops: the grouping really reorders


@pytest.mark.parametrize("n_ops", [3, 300, 70_000])
def test_grouping_is_the_stable_sort_by_op_then_previous_op(n_ops):
    """op_grouping (one stable sort of a combined key, radix for narrow keys) against numpy's
    lexsort of (op, previous op), and the unsorted-input path of the item order against lexsort."""
    from reportgen.writers.html.payload import _item_order, op_grouping, prev_ops

    rng = np.random.default_rng(n_ops)
    op = rng.integers(0, n_ops, 5000)
    first = np.array([0, 1200, 1201, 4000])
    prev = prev_ops(op, first)
    assert prev[first].tolist() == [0, 0, 0, 0] and prev[5] == op[4] + 1
    np.testing.assert_array_equal(op_grouping(op, prev), np.lexsort((prev, op)))
    np.testing.assert_array_equal(op_grouping(op), np.lexsort((op,)))
    lane, start = rng.integers(0, 4, 5000), rng.integers(0, 50, 5000)
    end = start + rng.integers(0, 3, 5000)
    np.testing.assert_array_equal(_item_order(lane, start, end), np.lexsort((end, start, lane)))
    o = np.lexsort((end, start, lane))
    assert _item_order(lane[o], start[o], end[o]) is None          # in order already: no sort
