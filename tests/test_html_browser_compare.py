"""result.html's Compare tab (``--baseline``) in real headless Chromium: the tab opens from the tab
bar, its side-by-side bars are drawn in proportion to the known delta of a test pair (the dump
writer's conv kernel made 2x slower, on a layer capture), and the page raises no error."""
from __future__ import annotations

import json

import pytest

from reportgen import cli
from reportgen.testing.synth import SynthConfig, write_dump
from reportgen.writers.html.compare import BAR_W

from test_html_browser import CHROMIUM, PageWatch, launch, shot, sync_playwright

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)"),
    pytest.mark.skipif(sync_playwright is None, reason="playwright not installed (pip install playwright)"),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare-pair")
    dumps = {name: write_dump(root / name, SynthConfig(cores=2, cmds_per_core=1500, layers=40, seed=5,
                                                       **changes)).dump_dir
             for name, changes in {"base": {}, "slow": dict(slow_kernel="conv")}.items()}
    out = root / "report"
    assert cli.main([str(dumps["slow"]), str(out), "--baseline", str(dumps["base"]),
                     "--no_perfetto", "--disable_doc", "--quiet"]) == 0
    return {"path": out / "PerfWeb" / "result.html",
            "compare": json.loads((out / "summary.json").read_text())["compare"]}


@pytest.fixture(scope="module")
def page(tmp_path_factory, report):
    with sync_playwright() as pw:
        context = launch(pw, tmp_path_factory.mktemp("chromium-compare"))
        watch = PageWatch.ready(context, report["path"].as_uri())
        yield watch
        context.close()


def _bar_widths(p, row_selector: str) -> list[tuple[float, float]]:
    """Rendered widths (px) of the baseline and this-run bars of each row."""
    return p.evaluate(f"""Array.from(document.querySelectorAll({json.dumps(row_selector)})).map(tr => {{
        const r = tr.querySelectorAll('svg rect');
        return [r[0].getBoundingClientRect().width, r[1].getBoundingClientRect().width];
    }})""")


def test_compare_tab_opens_and_draws_the_known_delta(page, report):
    p = page.page
    assert p.evaluate("document.body.dataset.ready") == "1"
    assert p.is_hidden("#panel-baseline")
    p.get_by_role("tab", name="Compare").click()
    p.wait_for_function("!document.getElementById('panel-baseline').hidden")
    assert p.is_visible("#compare-layers")
    layers = report["compare"]["layers"]
    shown = _bar_widths(p, "#compare-layers tbody tr")
    assert len(shown) == min(25, len(layers))
    scale = max(max(r["base_busy_ns"], r["new_busy_ns"]) for r in layers[:len(shown)])
    for (base_px, new_px), r in zip(shown, layers):
        assert base_px == pytest.approx(BAR_W * r["base_busy_ns"] / scale, abs=0.15)
        assert new_px == pytest.approx(BAR_W * r["new_busy_ns"] / scale, abs=0.15)
    # the largest change is a conv layer made about twice slower: its new bar about twice the old
    top = shown[0]
    assert layers[0]["status"] == "changed" and top[1] / top[0] == pytest.approx(
        layers[0]["new_busy_ns"] / layers[0]["base_busy_ns"], rel=1e-3)
    assert 1.7 < top[1] / top[0] < 2.1
    # the kernel table: the conv kernel's bars in the ratio of its wall times
    conv = next(k for k in report["compare"]["kernels"] if "conv" in k["name"])
    (base_px, new_px), = _bar_widths(p, f"#panel-baseline tr:has(> th[title='{conv['name']}'])")
    assert new_px / base_px == pytest.approx(conv["new_total_ns"] / conv["base_total_ns"], rel=1e-3)
    assert new_px > 1.5 * base_px
    shot(p, "html_compare.png")
    page.check()
