"""What the layer view adds to result.html on a big layer capture: render time and page size in
Python, then in headless Chromium the time to the page's ready state and to the first draw of
the Core 0, All cores and Layers tabs, with and without the layer view (the same Profile, its
``layer_view`` dropped for the second page).

    python benchmarks/bench_html_layers.py DUMP      # a dump folder with tensor_location.json + final.mlir

A big capture: ``python -m reportgen.testing.synth OUT --cores 8 --cmds-per-core 125000 --layers
10000`` (benchmarks/bench_layers.py writes the same one). Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _browser_times(path: Path, tabs: list[str]) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as user:
        ctx = pw.chromium.launch_persistent_context(user, executable_path=chromium, headless=True,
                                                    args=["--headless", "--no-sandbox", "--disable-gpu"],
                                                    viewport={"width": 1500, "height": 1000})
        page = ctx.new_page()
        t = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_function("document.body.dataset.ready !== '0'", timeout=300_000)
        out = {"ready_s": time.perf_counter() - t}
        page.evaluate("__report.ready")
        for tab in tabs:
            t = time.perf_counter()
            page.evaluate(f"__report.show('{tab}')")
            out[f"{tab}_s"] = time.perf_counter() - t
        ctx.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", type=Path)
    a = ap.parse_args(argv)

    from reportgen.analysis.derive import derive
    from reportgen.parsers.detect import load_profile
    from reportgen.writers.html.page import render

    profile = load_profile(a.dump)
    summary = derive(profile)
    view = profile.layer_view
    print(f"{len(profile.commands):,} commands, {len(view.layers):,} layers, {len(view.spans):,} layer bars")
    render(profile, summary)                                   # plotly.js bundled once
    with tempfile.TemporaryDirectory() as tmp:
        for label, tabs in (("with layers", ["core-0", "compare", "layers"]), ("without", ["core-0", "compare"])):
            t = time.perf_counter()
            text = render(profile, summary)
            took = time.perf_counter() - t
            path = Path(tmp) / f"{label.split()[0]}.html"
            path.write_text(text, encoding="utf-8")
            times = _browser_times(path, tabs)
            print(f"{label:12s} render {took:6.2f} s  page {len(text) / 1e6:6.2f} MB  " +
                  "  ".join(f"{k} {v:.2f}" for k, v in times.items()))
            profile.layer_view = None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
