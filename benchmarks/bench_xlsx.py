"""Measure the PerfAI_output.xlsx writer: seconds, rows/s, file size and peak memory.

    cd /work/main && PYTHONPATH=. python benchmarks/bench_xlsx.py            # 10k, 100k, 640k
    PYTHONPATH=. python benchmarks/bench_xlsx.py --sizes 10000 --registers 40
    PYTHONPATH=. python benchmarks/bench_xlsx.py --sizes 80000,640000 --paths xml,cells,rust

Every case runs in its own process so the memory figures do not mix. Profiles come from
``reportgen.testing.profiles.make_profile`` with 8 cores (640k = the 8-core x 80k-command dump
of the issue). ``--registers N`` adds N synthetic integer register fields per engine
(addresses and small shape values), written when the writer's "auto" rule allows it (below
200k commands). "write s" is ``xlsx.write`` end to end (column conversion, rows, zip),
"CPU s" its CPU time with the helper process's; "peak +MB" is the highest RSS sampled every 20 ms
during the write minus the RSS just before it.

``--paths`` compares ways of writing the same profile (figures only, nothing asserted):

* ``xml``   -- ``xlsx.write`` as shipped (command sheets as sheet XML, ``xlsx.sheet_xml``);
* ``cells`` -- ``xlsx.write`` through xlsxwriter's public API only, as with an xlsxwriter
  version ``xlsx.xlsxwriter_private`` was not checked against (every cell by its cell API,
  xlsxwriter's own zip level, no helper process);
* ``rust``  -- the command sheets only (no Engine Summary, no header comments) through the
  Rust-backed ``rustpy-xlsxwriter`` package, if installed: the writer's typed columns turned
  into one pandas DataFrame per sheet (texts categorical, missing numbers NaN) and written
  with the same number formats, widths, bold header, autofilter and frozen panes. Its time
  includes that conversion. It was evaluated as an alternative backend and not adopted (see
  the ``reportgen.writers.xlsx`` docstring); this keeps the comparison reproducible.
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _cpu_s() -> float:
    """CPU seconds of this process and its reaped children (the writer's helper process)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _per_engine(total: int, cores: int = 8) -> int:
    # make_profile: cores x 3 engines x per_engine commands + per_engine // 4 CDMA commands
    return max(1, round(total / (3 * cores + 0.25)))


def synthetic_registers(profile, fields: int) -> None:
    import numpy as np
    import pandas as pd

    # like decoded descriptors: every 4th field an address walking through memory, the rest
    # shapes/strides/flags drawn from a handful of values
    rng = np.random.default_rng(1)
    c = profile.commands
    for engine in ("TIU", "GDMA", "SDMA", "CDMA"):
        idx = c.index[c["engine"] == engine]
        n = len(idx)
        regs = {}
        for k in range(fields):
            if k % 4 == 0:
                regs[f"reg{k}_addr"] = 2**40 + k * 2**24 + np.arange(n) * 4096
            else:
                regs[f"reg{k}"] = rng.choice([0, 1, 2, 28, 64, 128, 256, 1024], n)
        profile.registers[engine] = pd.DataFrame(regs, index=idx)


def write_rust(profile, out: str) -> str:
    """The command sheets through rustpy-xlsxwriter, laid out like xlsx.write's (see above)."""
    import numpy as np
    import pandas as pd
    import rustpy_xlsxwriter as rx

    from reportgen.writers.xlsx.sheet_columns import FREEZE_COLS, TAB_COLORS, command_columns

    header = (rx.Format().set_bold().set_background_color("#305496").set_font_color("#FFFFFF")
              .set_text_wrap().set_border("thin"))
    commands = profile.commands
    positions = commands.groupby("sheet", observed=True, sort=False).indices
    sheets, opts = [], {k: {} for k in ("column_formats", "column_widths", "freeze_panes",
                                        "autofilter", "header_format", "sheet_view")}
    for name in profile.sheets():
        frame = commands.iloc[positions[name]]
        frame = frame.iloc[np.argsort(frame["global_idx"].to_numpy(), kind="stable")]
        engine = str(frame["engine"].iloc[0])
        cols = command_columns(frame, engine, None)
        data = {}
        for col in cols:
            if col.kind == "text":
                data[col.header] = pd.Categorical.from_codes(col.data, col.categories)
            elif col.missing is not None:
                data[col.header] = np.where(col.missing, np.nan, col.data.astype(np.float64))
            else:
                data[col.header] = col.data
        sheets.append((name, pd.DataFrame(data)))
        opts["column_formats"][name] = [rx.Format().set_num_format(c.num_format) if c.num_format
                                        else rx.Format() for c in cols]
        opts["column_widths"][name] = [c.width() for c in cols]
        opts["freeze_panes"][name] = {"row": 1, "col": FREEZE_COLS}
        opts["autofilter"][name] = True
        opts["header_format"][name] = header
        opts["sheet_view"][name] = {"tab_color": TAB_COLORS.get(engine, "#31869B")}
    path = os.path.join(out, "rust.xlsx")
    rx.write_worksheets(sheets, path, **opts)
    return path


def run_one(total: int, registers: int, path_kind: str = "xml") -> dict:
    from pathlib import Path

    from reportgen.analysis.metrics import engine_summary
    from reportgen.testing.profiles import make_profile
    from reportgen.writers import xlsx
    from reportgen.writers.xlsx import xlsxwriter_private

    profile = make_profile(cores=8, per_engine=_per_engine(total), seed=0)
    if registers:
        synthetic_registers(profile, registers)
    summary = engine_summary(profile)
    if path_kind == "cells":
        xlsxwriter_private.USABLE = False
    if path_kind == "rust":
        try:
            import rustpy_xlsxwriter  # noqa: F401
        except ImportError:
            return {"skipped": "rustpy-xlsxwriter is not installed (pip install rustpy-xlsxwriter)"}
    peak = [0.0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mb())
            time.sleep(0.02)

    with tempfile.TemporaryDirectory() as out:
        # hand the memory freed while building the profile back to the OS first, otherwise the
        # writer reuses it unseen and the peak above the baseline reads as zero
        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass
        base = _rss_mb()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0, c0 = time.perf_counter(), _cpu_s()
        if path_kind == "rust":
            path = Path(write_rust(profile, out))
        else:
            path = xlsx.write(profile, summary, out, quiet=True)
        seconds, cpu = time.perf_counter() - t0, _cpu_s() - c0
        done.set()
        sampler.join()
        size = path.stat().st_size
    n = len(profile.commands)
    with_regs = bool(registers) and n < xlsx.REGISTER_AUTO_LIMIT and path_kind != "rust"
    return {"commands": n, "registers": registers if with_regs else 0, "seconds": seconds, "cpu": cpu,
            "rows_per_s": n / seconds, "size_mb": size / 1e6, "peak_mb": peak[0] - base,
            "rss_mb": base}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,640000", help="total commands, comma separated")
    ap.add_argument("--registers", type=int, default=0, help="synthetic register fields per engine")
    ap.add_argument("--paths", default="xml",
                    help="comma separated: xml (as shipped), cells (xlsxwriter public API only), "
                         "rust (rustpy-xlsxwriter, command sheets only)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child process: one case
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(run_one(args.one, args.registers, args.paths)))
        return
    print(f"{'path':>5} {'commands':>9} {'reg cols':>8} {'write s':>8} {'CPU s':>6} {'rows/s':>8} {'MB':>7} "
          f"{'peak +MB':>8} {'RSS before':>10}")
    for total in (int(s) for s in args.sizes.split(",")):
        for kind in args.paths.split(","):
            res = subprocess.run([sys.executable, __file__, "--one", str(total),
                                  "--registers", str(args.registers), "--paths", kind],
                                 capture_output=True, text=True, check=True)
            r = json.loads(res.stdout.strip().splitlines()[-1])
            if "skipped" in r:
                print(f"{kind:>5} {total:>9,} skipped: {r['skipped']}", flush=True)
                continue
            print(f"{kind:>5} {r['commands']:>9,} {r['registers']:>8} {r['seconds']:>8.1f} {r['cpu']:>6.1f} "
                  f"{r['rows_per_s']:>8,.0f} {r['size_mb']:>7.1f} {r['peak_mb']:>8.0f} "
                  f"{r['rss_mb']:>10.0f}", flush=True)


if __name__ == "__main__":
    main()
