"""Several dumps at once: ``bigTpuProfile RUN_DIR OUT`` where RUN_DIR holds one dump directory
per device (``cdm_profile_data_dev0-0``, ``cdm_profile_data_dev1-0``, ...).

Each dump gets its own complete report in ``OUT/<dump name>/`` from the same pipeline as a single
dump; the dumps are processed in parallel processes (each writing its outputs one after another),
and ``OUT/index.html`` compares them (one row per dump: the Overall row of its engine summary) and
links to each report.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from reportgen import parallel, pipeline
from reportgen.errors import OutputError, ReportgenError
from reportgen.options import Options

_NUMBERS = re.compile(r"\d+")
INDEX = "index.html"


def dump_dirs(path: Path) -> list[Path]:
    """Dump directories directly inside ``path`` (only when ``path`` is not itself a dump)."""
    if not path.is_dir() or (path / "global.profile").exists():
        return []
    found = [p for p in path.iterdir() if p.is_dir() and (p / "global.profile").is_file()]
    return sorted(found, key=lambda p: ([int(n) for n in _NUMBERS.findall(p.name)], p.name))


def _one(options: Options) -> dict:
    """Child process: one dump's full report; returns what the index page shows."""
    from reportgen.writers.text import summary_document

    try:
        done = pipeline.report(options)
    except ReportgenError as exc:
        return {"input": options.input, "output": options.output, "error": str(exc)}
    return {"input": options.input, "output": options.output, "seconds": done.seconds,
            "files": [str(p) for p in done.files],
            "summary": summary_document(done.profile, done.summary)}


def _check_out(out: Path, dumps: list[Path]) -> None:
    """Refuse, before anything is written, an OUT that cannot hold one folder per dump and
    the index beside them."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: exists and is not a folder (several dumps need a folder)")
    for d in dumps:
        if d.name == INDEX:
            raise OutputError(f"{d}: a dump folder named {INDEX} would take the place of "
                              f"{out / INDEX} (rename the dump folder)")
        if (out / d.name).is_symlink():
            raise OutputError(f"{out / d.name} is a symbolic link: not writing through it "
                              "(remove or rename it)")


def run_many(dumps: list[Path], options: Options) -> int:
    from reportgen.writers.index import write_index

    out = options.out_path
    _check_out(out, dumps)
    # one process per dump, its writers one after another (jobs=1); a worker dies with us
    runs = [options.replace(input=str(d), output=str(out / d.name), quiet=True, jobs=1) for d in dumps]
    with ProcessPoolExecutor(max_workers=min(parallel.workers(options.jobs), len(runs)),
                             initializer=parallel.die_with_parent, initargs=(os.getpid(),)) as pool:
        try:
            results = list(pool.map(_one, runs))
        except BaseException:
            # a signal or a lost worker: leaving the pool would wait for every running dump
            for proc in mp.active_children():
                proc.kill()
            raise
    try:
        index = write_index(out, results)
    except OSError as exc:
        raise OutputError(f"{out / INDEX}: cannot write the index: {exc.strerror or exc}") from None
    if not options.quiet:
        for r in results:
            state = f"error: {r['error']}" if "error" in r else f"{len(r['files'])} files, {r['seconds']:.1f} s"
            print(f"{r['input']} -> {r['output']}: {state}")
        print(f"Index of {len(results)} dump(s): {index}")
    return 1 if any("error" in r for r in results) else 0
