"""result.html at scale: file size, write time and first render in headless Chromium.

    PYTHONPATH=. python benchmarks/bench_html.py                 # 10^6 commands, 3 browser runs
    PYTHONPATH=. python benchmarks/bench_html.py --commands 100000 --runs 1
    PYTHONPATH=. python benchmarks/bench_html.py --dump benchmarks/_work/aks-m2-8x390000/cdm_profile_data_dev0-0

Budget (issue 4): for 10^6 commands the page is <= 10 MB and the first render <= 3 s.
"First render" is navigation start -> overview drawn (``document.body.dataset.ready``), read from
the page's own ``performance.now()``. Also shown: when the items are decoded, the first core
timeline (occupancy view of 1/8 of the commands) and two zooms. Times depend on machine load,
which is printed with them.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from reportgen.testing.profiles import derived, make_profile
from reportgen.writers import html as html_writer
from reportgen.writers.html.page import plotly_bundle

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
SIZE_BUDGET = 10e6
RENDER_BUDGET_MS = 3000


def profile_with(commands: int, cores: int = 8):
    # make_profile: cores x 3 engines x per_engine, plus per_engine // 4 on one CDMA port
    per_engine = math.ceil(commands / (cores * 3 + 0.25))
    return make_profile(cores=cores, per_engine=per_engine, seed=0)


def browser_runs(path: Path, runs: int) -> list[dict]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    results = []
    with sync_playwright() as pw:
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as profile_dir:
                ctx = pw.chromium.launch_persistent_context(
                    profile_dir, executable_path=chromium, args=FLAGS, headless=True,
                    viewport={"width": 1500, "height": 1000})
                page = ctx.new_page()
                errors = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(path.as_uri(), wait_until="commit")
                page.wait_for_function("document.body && document.body.dataset.ready !== '0'",
                                       timeout=120_000, polling=10)
                page.evaluate("__report.ready")
                timing = page.evaluate("__report.timing")
                fcp = page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime")
                t = time.perf_counter()
                first = page.evaluate("__report.show('core-0')")[0]
                core_ms = (time.perf_counter() - t) * 1e3
                a, b = first["range"]
                t = time.perf_counter()
                one_pct = page.evaluate(f"__report.zoom('core-0', {a + (b - a) * 0.5}, {a + (b - a) * 0.51})")
                zoom_ms = (time.perf_counter() - t) * 1e3
                t = time.perf_counter()
                bars = page.evaluate(f"__report.zoom('core-0', {a + (b - a) * 0.5}, {a + (b - a) * 0.5005})")
                bars_ms = (time.perf_counter() - t) * 1e3
                t = time.perf_counter()
                every = page.evaluate("__report.show('compare')")[0]     # all lanes, occupancy view
                all_ms = (time.perf_counter() - t) * 1e3
                t = time.perf_counter()
                page.evaluate(f"__report.zoom('all', {a + (b - a) * 0.2}, {a + (b - a) * 0.3})")
                all_zoom_ms = (time.perf_counter() - t) * 1e3
                heap = page.evaluate("performance.memory ? performance.memory.usedJSHeapSize : 0")
                ctx.close()
                results.append({"fcp_ms": fcp, "ready_ms": timing["ready_ms"], "decoded_ms": timing.get("decode_ms"),
                                "core0_ms": core_ms, "core0_visible": first["visible"],
                                "zoom1pct_ms": zoom_ms, "zoom1pct_tier": one_pct["tier"],
                                "bars_ms": bars_ms, "bars": bars["bars"], "all_ms": all_ms,
                                "all_visible": every["visible"], "all_zoom_ms": all_zoom_ms, "heap_mb": heap / 1e6,
                                "errors": errors})
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commands", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3, help="browser runs (0: no browser)")
    ap.add_argument("--dump", default=None, help="a PMU dump folder to load instead of a made profile "
                    "(e.g. bench_pipeline.py --size max's 3.3M-command capture, the issue 28 case)")
    ap.add_argument("--out", default=None, help="folder for the page (default: a temporary one)")
    args = ap.parse_args(argv)

    if args.dump:                           # as the command line loads and analyses it
        from reportgen import pipeline
        from reportgen.options import Options
        opts = Options(input=args.dump)
        profile = pipeline.load(opts)
        summary = pipeline.analyse(profile, opts)
    else:
        profile = profile_with(args.commands)
        summary = derived(profile).summary      # every analysis the page shows (diagnosis included)
    n = len(profile.commands)
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_html_"))
    t = time.perf_counter()
    path = html_writer.write(profile, summary, out, quiet=True)
    cold = time.perf_counter() - t                      # includes reading plotly.js (once per process)
    t = time.perf_counter()
    path = html_writer.write(profile, summary, out, quiet=True)
    warm = time.perf_counter() - t
    size = path.stat().st_size
    plotly = len(plotly_bundle()) * 8 / 7                # text7: 8 characters per 7 bytes
    print(f"commands           {n:,}")
    print(f"html size          {size / 1e6:.2f} MB (plotly.js {plotly / 1e6:.2f} MB, "
          f"{(size - plotly) / n:.2f} B/command for the rest)  budget {SIZE_BUDGET / 1e6:.0f} MB: "
          f"{'ok' if size <= SIZE_BUDGET else 'OVER'}")
    print(f"write time         {cold:.2f} s first in process, {warm:.2f} s after")
    report = {"commands": n, "bytes": size, "write_s_cold": cold, "write_s_warm": warm}
    if args.runs and shutil.which("chromium"):
        try:
            import playwright  # noqa: F401
        except ImportError:
            print("browser            skipped: playwright not installed")
        else:
            load = os.getloadavg()[0]
            runs = browser_runs(path, args.runs)
            for r in runs:
                print(f"browser run        static summary painted {r['fcp_ms'] or float('nan'):.0f} ms, "
                      f"ready {r['ready_ms']:.0f} ms, items decoded {r['decoded_ms']:.0f} ms, "
                      f"core 0 ({r['core0_visible']:,} cmds) {r['core0_ms']:.0f} ms, zoom 1% "
                      f"{r['zoom1pct_ms']:.0f} ms ({r['zoom1pct_tier']}), zoom to {r['bars']} bars "
                      f"{r['bars_ms']:.0f} ms, all cores ({r['all_visible']:,} cmds) {r['all_ms']:.0f} ms, "
                      f"its 10% zoom {r['all_zoom_ms']:.0f} ms, JS heap {r['heap_mb']:.0f} MB"
                      + (f", ERRORS {r['errors']}" if r["errors"] else ""))
            best = min(r["ready_ms"] for r in runs)
            median = sorted(r["ready_ms"] for r in runs)[len(runs) // 2]
            print(f"first render       median {median:.0f} ms, best {best:.0f} ms (load average {load:.1f} "
                  f"on {os.cpu_count()} cores)  budget {RENDER_BUDGET_MS} ms: "
                  f"{'ok' if median <= RENDER_BUDGET_MS else 'OVER'}")
            report.update(runs=runs, ready_ms_median=median, load_average=load)
    else:
        print("browser            skipped: no chromium on PATH" if args.runs else "browser            not run")
    print(json.dumps(report, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
