"""Several dumps at once: ``bigTpuProfile RUN_DIR OUT`` where RUN_DIR holds one dump directory
per device (``cdm_profile_data_dev0-0``, ``cdm_profile_data_dev1-0``, ...).

Each dump gets its own complete report in ``OUT/<dump name>/``; the dumps are processed in
parallel processes, and ``OUT/index.html`` compares them (one row per dump: the Overall row of
its engine summary) and links to each report.
"""
from __future__ import annotations

import argparse
import copy
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from reportgen import parallel
from reportgen.errors import ReportgenError

_NUMBERS = re.compile(r"\d+")


def dump_dirs(path: Path) -> list[Path]:
    """Dump directories directly inside ``path`` (only when ``path`` is not itself a dump)."""
    if not path.is_dir() or (path / "global.profile").exists():
        return []
    found = [p for p in path.iterdir() if p.is_dir() and (p / "global.profile").is_file()]
    return sorted(found, key=lambda p: ([int(n) for n in _NUMBERS.findall(p.name)], p.name))


def _one(args: argparse.Namespace) -> dict:
    """Child process: one dump's full report; returns what the index page shows."""
    import os

    from reportgen.cli import run_one

    os.environ["REPORTGEN_JOBS"] = "1"      # dumps already run in parallel: writers in series

    try:
        written, seconds, _ = run_one(args)
    except ReportgenError as exc:
        return {"input": args.input, "output": args.output, "error": str(exc)}
    import json

    summary = json.loads((Path(args.output) / "summary.json").read_text()) \
        if (Path(args.output) / "summary.json").exists() else {}
    return {"input": args.input, "output": args.output, "seconds": seconds,
            "files": [str(p) for p in written], "summary": summary}


def run_many(dumps: list[Path], args: argparse.Namespace) -> int:
    from reportgen.writers.index import write_index

    out = Path(args.output)
    jobs = []
    for d in dumps:
        a = copy.copy(args)
        a.input, a.output, a.quiet = str(d), str(out / d.name), True
        jobs.append(a)
    # each dump uses one process; its own writers then run one after another
    with ProcessPoolExecutor(max_workers=min(parallel.workers(), len(jobs))) as pool:
        results = list(pool.map(_one, jobs))
    index = write_index(out, results)
    failed = [r for r in results if "error" in r]
    if not args.quiet:
        for r in results:
            state = f"error: {r['error']}" if "error" in r else f"{len(r['files'])} files, {r['seconds']:.1f} s"
            print(f"{r['input']} -> {r['output']}: {state}")
        print(f"Index of {len(results)} dump(s): {index}")
    return 1 if failed else 0
