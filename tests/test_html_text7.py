"""The 7-bits-per-byte text of the page's timeline and why blocks (reportgen.writers.html.text7):
cases worked out by hand, round trips through the Python twin, and the page's own decoder in Chromium."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from reportgen.testing.html_page import read_page, text7_decode
from reportgen.testing.profiles import derived, make_profile
from reportgen.writers import html as html_writer
from reportgen.writers.html import why as why_html
from reportgen.writers.html.jsonsafe import clean
from reportgen.writers.html.text7 import encode
from test_html_browser import CHROMIUM, PageWatch, browser, playwright, report, sync_playwright  # noqa: F401


@pytest.mark.parametrize("data, text", [
    (b"", ""),
    (b"A", " @"),                 # 01000001 -> 0100000 (32 ' '), 1 + 000000 padding (64 '@')
    (b"\x00", "\u0080"),          # chunk 0 is NUL: paired with the (padding) chunk after it
    (b"\x78", "\u0180"),          # 0111100 = '<' (unsafe #2), then 0 + 000000: U+0080 + 2*128 + 0
    # 00011010 00100000: chunks 0001101 (CR, unsafe #1) + 0001000 (8) -> U+0080 + 128 + 8; then
    # 00 + 00000 padding is NUL, the last chunk: it pairs with an added zero chunk -> U+0080
    (b"\x1a\x20", "\u0108\u0080"),
])
def test_hand_worked_cases(data, text):
    assert encode(data) == text
    assert text7_decode(text, len(data)) == data


def test_random_and_worst_case_bytes_round_trip_at_8_7_of_their_size():
    rng = np.random.default_rng(7)
    for n in (1, 6, 7, 8, 13, 999, 100_003):
        for data in (rng.integers(0, 256, n, dtype=np.uint8).tobytes(), bytes(n), b"\xff" * n):
            text = encode(data)
            assert not {"\0", "\r", "<"} & set(text)
            assert text7_decode(text, n) == data
            assert len(text.encode("utf-8")) in ((8 * n + 6) // 7, (8 * n + 6) // 7 + 1)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)")
@pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)")
def test_the_page_decoder_reads_what_python_wrote(browser, report):
    rng = np.random.default_rng(3)
    data = bytes(range(256)) + b"\x00\x0d\x3c" * 50 + rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    watch = PageWatch.ready(browser, report["path"].as_uri())
    got = watch.page.evaluate("([t, n]) => Array.from(__report.decode.b7ToBytes(t, n))", [encode(data), len(data)])
    assert bytes(got) == data
    watch.check()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)")
@pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)")
def test_the_why_blocks_bulky_parts_reach_the_page_whole(browser, tmp_path):
    """why.path and why.waits travel in the gzip'd rg-lazy block; the page merges them back."""
    profile = derived(make_profile(cores=2, per_engine=600, seed=4))
    want = json.loads(json.dumps(clean(why_html.parts(profile)[1])))
    assert want["waits"] and want["path"]
    path = html_writer.write(profile, profile.summary, tmp_path, quiet=True)
    text = path.read_text(encoding="utf-8")
    inline = json.loads(re.search(r'<script id="rg-data"[^>]*>(.*?)</script>', text, re.S).group(1))
    assert "waits" not in inline["why"] and "path" not in inline["why"]
    assert read_page(text, items=False)[0]["why"] == want                 # the Python twin
    watch = PageWatch.ready(browser, path.as_uri())
    got = watch.page.evaluate("({path: __report.data.why.path, waits: __report.data.why.waits})")
    assert got == {"path": want["path"], "waits": want["waits"]}
    watch.check()


def test_the_why_path_steps_sum_back_to_the_models_path_commands(tmp_path):
    """The page's why.path holds each sheet's path commands as ascending global_idx steps (the
    first, then differences, which why.js sums back): summed, they are the (sheet, global_idx)
    of the model's critical path rows."""
    profile = derived(make_profile(cores=2, per_engine=600, seed=4))
    why = profile.diagnosis.why
    assert len(why.path.rows) <= why_html.PATH_SHOWN
    path = html_writer.write(profile, profile.summary, tmp_path, quiet=True)
    steps = read_page(path.read_text(encoding="utf-8"), items=False)[0]["why"]["path"]
    got = sorted((sheet, int(g)) for sheet, s in steps.items() for g in np.cumsum(s))
    c = profile.commands
    want = sorted(zip(c["sheet"].astype(str).to_numpy()[why.path.rows].tolist(),
                      c["global_idx"].to_numpy()[why.path.rows].tolist()))
    assert got == want and len(want) > 10
    assert all(s[0] >= 0 and min(s[1:], default=1) > 0 for s in steps.values())   # ascending


def test_lazy_split_moves_the_named_values_and_keeps_the_rest():
    """writers/html/lazy.split on a hand-made page data: the LAZY values leave the inline data
    (a sibling such as roofline.chart stays), the block holds them in the same shape, and the
    Python twin of the page's merge puts them back as they were."""
    import copy
    import gzip as gz

    from reportgen.testing.html_page import _merge_into
    from reportgen.writers.html import lazy

    data = {"why": {"classes": ["a"], "path": {"TIU_0": [3, 1]}, "waits": [["TIU_0", 4, "w", None, None]]},
            "diagnosis": {"kernels": [1], "calls": [{"name": "k"}], "roofline": {"chart": {"data": []}, "rows": [{"x": 1}]}},
            "types": [0]}
    want = copy.deepcopy(data)
    rest, block = lazy.split(data)
    assert data == want                              # the input is left as it was
    assert rest == {"why": {"classes": ["a"]}, "diagnosis": {"kernels": [1], "roofline": {"chart": {"data": []}}},
                    "types": [0]}
    assert json.loads(gz.decompress(block)) == {
        "why": {"path": {"TIU_0": [3, 1]}, "waits": [["TIU_0", 4, "w", None, None]]},
        "diagnosis": {"calls": [{"name": "k"}], "roofline": {"rows": [{"x": 1}]}}}
    _merge_into(rest, json.loads(gz.decompress(block)))
    assert rest == want
    assert lazy.split({"types": [0], "diagnosis": {"roofline": {"chart": {}}}}) == \
        ({"types": [0], "diagnosis": {"roofline": {"chart": {}}}}, b"")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)")
@pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)")
def test_the_diagnosis_rows_reach_the_page_whole(browser, tmp_path):
    """The Diagnosis tab's call and roofline rows travel in rg-lazy too: after loading, the
    page's data holds them next to the inline roofline chart, as the writer made them."""
    profile = derived(make_profile(cores=2, per_engine=600, seed=4))
    path = html_writer.write(profile, profile.summary, tmp_path, quiet=True)
    text = path.read_text(encoding="utf-8")
    inline = json.loads(re.search(r'<script id="rg-data"[^>]*>(.*?)</script>', text, re.S).group(1))
    assert "calls" not in inline["diagnosis"] and "rows" not in inline["diagnosis"]["roofline"]
    page = read_page(text, items=False)[0]["diagnosis"]
    assert page["calls"] and page["roofline"]["rows"] and page["roofline"]["chart"]
    watch = PageWatch.ready(browser, path.as_uri())
    got = watch.page.evaluate("({calls: __report.data.diagnosis.calls, roofline: __report.data.diagnosis.roofline})")
    assert got == {"calls": page["calls"], "roofline": page["roofline"]}
    watch.check()


def test_strict_dumps_is_json_of_the_cleaned_value():
    """jsonsafe.strict_dumps skips the clean() walk only when it changes nothing: the text is
    json.dumps(clean(x)) whether x is plain JSON already or holds NaN, inf and numpy scalars."""
    from reportgen.writers.html.jsonsafe import strict_dumps

    plain = {"a": [1, 2.5, "x<y", None, True], "b": {"c": (3, 4)}}
    odd = {"a": [np.int64(7), np.float64("nan"), float("inf"), np.bool_(True)], "b": np.float32(0.5)}
    for value, want in ((plain, '{"a":[1,2.5,"x<y",null,true],"b":{"c":[3,4]}}'),
                        (odd, '{"a":[7,null,null,true],"b":0.5}')):
        assert strict_dumps(value, separators=(",", ":")) == want
        assert strict_dumps(value, separators=(",", ":")) == json.dumps(clean(value), separators=(",", ":"))
