"""The uArch rate over time of result.html when every TIU command has its own ops (more distinct
(Alg Ops, uArch Ops) pairs than the exact block holds): the page keeps fine bins per core, its
block stays within its size bound, and its sums for a window stay within the bound docs/metrics.md
states of the Python rule (``uarch_timeline.rate_bins``), in real headless Chromium."""
from __future__ import annotations

import gzip
import re

import numpy as np
import pytest

from reportgen.analysis.derive import derive
from reportgen.analysis.uarch_timeline import modelled_tiu, rate_bins
from reportgen.testing.html_page import _unshuffle, read_page, text7_decode
from reportgen.testing.profiles import make_profile
from reportgen.writers import html as html_writer
from reportgen.writers.html.diagnosis import FINE_BINS_TOTAL, PAIRS_EXACT_MAX

from test_html_browser import CHROMIUM, PageWatch, launch, sync_playwright

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)"),
    pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)"),
]
CORE = 1
FLOAT32 = 2.0 ** -24


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    # make_profile draws random ops for every TIU command: ~22k modelled commands, as many pairs
    profile = make_profile(cores=2, per_engine=15000, seed=5)
    derive(profile)
    path = html_writer.write(profile, profile.summary, tmp_path_factory.mktemp("html-urate"), quiet=True)
    text = path.read_text(encoding="utf-8")
    data, _ = read_page(text, items=False)
    block = re.search(r'<script id="rg-diag-urate" type="[^"]+" data-bytes="(\d+)">(.*?)</script>', text, re.DOTALL)
    raw = gzip.decompress(text7_decode(block.group(2), int(block.group(1))))
    return {"profile": profile, "path": path, "data": data, "t0": int(data["t0_ns"]), "raw": raw}


@pytest.fixture(scope="module")
def page(tmp_path_factory, report):
    with sync_playwright() as pw:
        context = launch(pw, tmp_path_factory.mktemp("chromium-urate"))
        watch = PageWatch.ready(context, report["path"].as_uri() + "#core-1")
        yield watch
        context.close()


def _fine(report, core):
    """(lo, hi, Σ alg, Σ uarch) of the core's fine bins as the page stores them (float32)."""
    (head,) = [h for h in report["data"]["diagnosis"]["urate"]["cores"] if h["core"] == core]
    f = head["fine"]
    col = [_unshuffle(report["raw"][c["offset"]:c["offset"] + 4 * c["n"]], np.dtype("<f4"), c["n"])
           for c in (f["alg"], f["uarch"])]
    return f["lo"], f["hi"], col[0].astype(np.float64), col[1].astype(np.float64)


def _edge_bound(fine_ops, lo, hi, a, b, buckets):
    """Per bucket: Σ ops of the fine bins its two edges cut (the documented bound)."""
    width, n = (b - a) / buckets, len(fine_ops)
    edges = a + np.arange(buckets + 1) * width
    j = np.floor((edges - lo) / ((hi - lo) / n)).astype(np.int64)
    cut = np.where((edges > lo) & (edges < hi), fine_ops[np.clip(j, 0, n - 1)], 0.0)
    return cut[:-1] + cut[1:]


def test_the_block_holds_fine_bins_within_its_size_bound(report):
    urate = report["data"]["diagnosis"]["urate"]
    modelled = sum(len(v[0]) for v in modelled_tiu(report["profile"]).values())
    assert modelled > PAIRS_EXACT_MAX                  # random ops: one pair per command
    assert "pairs" not in urate and all("codes" not in h for h in urate["cores"])
    assert [h["core"] for h in urate["cores"]] == [0, 1]
    for h in urate["cores"]:
        assert h["fine"]["alg"]["n"] == h["fine"]["uarch"]["n"] == FINE_BINS_TOTAL // 2
    assert len(report["raw"]) == FINE_BINS_TOTAL * 8   # two float32 per fine bin, nothing per command


@pytest.mark.parametrize("window", [(0.13, 0.71), (0.5, 0.5005)], ids=["wide", "deeper-than-a-fine-bin"])
def test_page_rate_within_the_documented_bound_of_the_rule(page, report, window):
    p = page.page
    profile, t0 = report["profile"], report["t0"]
    lo, hi, fine_alg, fine_uarch = _fine(report, CORE)       # the core's TIU extent
    a, b = round(lo + (hi - lo) * window[0]), round(lo + (hi - lo) * window[1])
    p.evaluate(f"__report.zoom('core-{CORE}', {a}, {b})")
    p.evaluate("__report.diagnosis.drawn()")
    p.wait_for_function(f"document.getElementById('urate-core-{CORE}') && "
                        f"document.getElementById('urate-core-{CORE}').dataset.range === '{a},{b}'")
    y = np.array([np.nan if v is None else v
                  for v in p.evaluate(f"document.getElementById('urate-core-{CORE}').data[0].y")], float)
    W = len(y)
    got = p.evaluate(f"__report.diagnosis.uarchBins({CORE}, {a}, {b}, {W})")
    A, U = np.array(got["A"]), np.array(got["U"])
    np.testing.assert_allclose(y, np.where(U > 0, A / np.where(U > 0, U, 1) * 100, np.nan), rtol=1e-12)

    # the page applies the rule to the fine bins it stores, as if each were a command
    n = len(fine_alg)
    fine_start = lo + np.arange(n) * ((hi - lo) / n)
    fine_end = lo + np.arange(1, n + 1) * ((hi - lo) / n)
    want_a, want_u = rate_bins(fine_start, fine_end, fine_alg, fine_uarch, a, b, W)
    np.testing.assert_allclose(A, want_a, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(U, want_u, rtol=1e-9, atol=1e-6)

    # ... which is the rule on the commands within the fine bins the bucket edges cut (+ float32)
    start, end, alg, uarch = modelled_tiu(profile)[CORE]
    true_a, true_u = rate_bins(start - t0, end - t0, alg, uarch, a, b, W)
    for page_sum, true_sum, fine in ((A, true_a, fine_alg), (U, true_u, fine_uarch)):
        bound = _edge_bound(fine, lo, hi, a, b, W)
        assert np.all(np.abs(page_sum - true_sum) <= bound + 4 * FLOAT32 * (true_sum + bound) + 1e-6)
    assert np.isfinite(y).sum() > 100
    if window == (0.13, 0.71):     # ~50 fine bins per bucket: the bound is tight and so is the curve
        ok = true_u > 0
        assert np.median((_edge_bound(fine_uarch, lo, hi, a, b, W) / np.where(ok, true_u, 1))[ok]) < 0.1
        rate = np.where(ok, true_a / np.where(ok, true_u, 1) * 100, np.nan)
        assert np.nanmedian(np.abs(y - rate)) < 2.0


def test_whole_span_is_the_engine_summary_rate(page, report):
    p = page.page
    span = float(report["data"]["span_ns"])
    whole = p.evaluate(f"__report.diagnosis.uarchBins({CORE}, 0, {span + 1}, 1)")
    summary = report["profile"].summary
    rate = summary.loc[summary["core"].astype(str) == str(CORE), "tiu_uarch_rate"].iloc[0]
    assert whole["A"][0] / whole["U"][0] == pytest.approx(rate, rel=4 * FLOAT32)
    note = p.evaluate(f"document.querySelector('#panel-core-{CORE} .note[data-span-rate]').textContent")
    (head,) = [h for h in report["data"]["diagnosis"]["urate"]["cores"] if h["core"] == CORE]
    width = (head["fine"]["hi"] - head["fine"]["lo"]) / head["fine"]["alg"]["n"] / 1e3
    assert f"drawn from {FINE_BINS_TOTAL // 2} fine bins of {width:.3g} µs" in note
    page.check()
