"""The one way to produce a report: parse, derive, write every requested output, commit.

``report(options)`` is what the command line, the several-dump runner and tests call:

    parse (parsers.detect) -> derive (analysis.derive) -> writers, side by side -> commit OUT

Which outputs exist, when each is wanted and how it is written is the :data:`OUTPUTS` table. A
run writes into a private staging folder inside OUT that is committed, all or nothing, only
when every writer succeeded (reportgen/outdir: no write through links, only our own files
replaced or removed, recovery of a killed run).
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from reportgen import heap, jit, outdir, parallel, progress
from reportgen.errors import OutputError
from reportgen.model import NODE_COLUMNS, LazyTables, Profile
from reportgen.options import REGINFO_AUTO_LIMIT, Options
from reportgen.textsafe import clean_profile


def load(options: Options) -> Profile:
    """Parse the input (and the ``--trace_file`` host trace) into a Profile (no analysis), its
    text made encodable (textsafe.clean_profile: replaced and counted, never fatal)."""
    from reportgen.parsers.chrome.host_trace import read_host_trace
    from reportgen.parsers.detect import load_profile

    profile = load_profile(options.input, tiu_freq=options.tiu_freq, quiet=options.quiet,
                           max_input_mb=options.max_input_mb)
    if options.trace_file:
        profile.host_trace = read_host_trace(options.trace_file, max_input_mb=options.max_input_mb)
    clean_profile(profile)
    return profile


def analyse(profile: Profile, options: Options) -> pd.DataFrame:
    """Every derived table, attached once; returns the engine summary."""
    from reportgen.analysis.derive import derive

    return derive(profile, min_depth=options.min_depth, max_depth=options.max_depth,
                  categories=seed_options(options), stack_frames=options.stack_frames,
                  jobs=options.jobs)


def seed_options(options: Options) -> dict:
    """The ``-mc/-hc/-dc`` choices (None: fitting the trace, analysis.host_device)."""
    return {"monitor": options.monitor_cat, "launch": options.host_cat, "device": options.device_cat}


def load_baseline(options: Options):
    """The ``--baseline`` run's digest: an earlier report folder's summary.json (its ``summary``
    and ``digest``: nothing else is needed, so old reports stay comparable), or any input a
    report can be made of (parsed and analysed like the run itself)."""
    import json

    from reportgen.analysis.digest import digest_from_document
    from reportgen.errors import InputError

    base = Path(options.baseline)
    doc = base / "summary.json" if base.is_dir() and not (base / "global.profile").exists() else base
    if doc.name == "summary.json" and doc.is_file():
        try:
            with open(doc, encoding="utf-8") as fh:
                content = json.load(fh)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(doc, f"not a readable summary.json ({exc})") from None
        if not isinstance(content, dict) or not isinstance(content.get("summary"), list):
            raise InputError(doc, "no 'summary' list: not a reportgen summary.json")
        return digest_from_document(content, str(base))
    if base.is_dir() and not (base / "global.profile").exists() and (base / "PerfWeb").is_dir():
        raise InputError(base, "a report folder without summary.json (made with "
                         "--disable_summary?): nothing to compare with")
    run = options.replace(input=str(base), trace_file=None, baseline=None, quiet=True)
    profile = load(run)
    analyse(profile, run)
    profile.digest.source = str(base)
    return profile.digest


def attach_comparison(profile: Profile, options: Options) -> None:
    """``--baseline``: this run compared with the baseline, for every writer to show."""
    from reportgen.analysis.compare import compare

    profile.comparison = compare(load_baseline(options), profile.digest)


# -- the outputs -----------------------------------------------------------------------------

def _want_reginfo(options: Options, profile: Profile, warn: bool = True) -> bool:
    if options.reginfo == "off" or not profile.meta.is_pmu:
        return False
    if options.reginfo == "on":
        return True
    if not options.workbook:
        return False
    if len(profile.commands) > REGINFO_AUTO_LIMIT:
        if warn:
            profile.meta.warn("reginfo-skipped", f"RegInfo text files not written: "
                              f"{len(profile.commands)} commands would make about "
                              f"{len(profile.commands) * 1.2e-3:.0f} MB of text (--reginfo on writes "
                              "them; the workbook and perfetto trace hold the same data)")
        return False
    return True


def writers_read_registers(options: Options, profile: Profile) -> bool:
    """Whether a writer of this run reads the register tables: the RegInfo files or the
    workbook's register columns (each within its own size limit)."""
    from reportgen.writers.xlsx import register_columns_wanted

    return (_want_reginfo(options, profile, warn=False)
            or (options.workbook and register_columns_wanted(profile, options.registers_wanted)))


def registers_read(options: Options, profile: Profile) -> bool:
    """Whether this run reads the register tables: a writer, or the local-memory view (within
    its size limit). A large capture reads none, and their decoded fields (~100 B per mode-2
    command) need not reach the analysis and every forked writer."""
    from reportgen.analysis.lmem import MAX_COMMANDS

    return len(profile.commands) <= MAX_COMMANDS or writers_read_registers(options, profile)


def drop_unread_columns(options: Options, profile: Profile) -> None:
    """Remove the command columns no output of this run reads, before the analysis and the
    writers carry them: a mode-1 command's dynamic-node fields (``model.NODE_COLUMNS``, 6 MB at
    678k commands) are listed by the RegInfo files only. The other columns are not copied."""
    if not _want_reginfo(options, profile, warn=False):
        for col in NODE_COLUMNS:
            if col in profile.commands.columns:
                del profile.commands[col]


def _workbook(profile, summary, out, options):
    from reportgen.writers import xlsx
    return xlsx.write(profile, summary, out, quiet=options.quiet, registers=options.registers_wanted)


def _instr_world(profile, summary, out, options):
    from reportgen.writers import instr_world
    return instr_world.write(profile, out)


def _instr_world_compiled(profile, options) -> dict:
    # its compiled loops loaded before the fork: the child would otherwise import numba and load
    # them itself (~0.6 s of CPU beside the analysis, which imports numba anyway)
    from reportgen.writers import instr_world
    instr_world.compile_loops()
    return {}


def _reginfo(profile, summary, out, options):
    from reportgen.writers import text
    return text.write_reginfo(profile, out)


def _perfetto(profile, summary, out, options):
    from reportgen.writers import perfetto
    return perfetto.write(profile, summary, out, quiet=options.quiet)


def _web(profile, summary, out, options):
    from reportgen.writers import html
    return html.write(profile, summary, out, quiet=options.quiet)


def _summary(profile, summary, out, options):
    from reportgen.writers import text
    return text.write_summary(profile, summary, out)


def _csv_tables(profile, summary, out, options):
    from reportgen.writers import csv_tables
    return csv_tables.write_tables(profile, out)


def _seed_csv_compression(profile, options) -> dict:
    from reportgen.analysis.host_device import seed_csv_gzip
    return {"compress": seed_csv_gzip(profile, **seed_options(options), min_depth=options.min_depth,
                                      max_depth=options.max_depth)}


def _seed_csv(profile, summary, out, options, compress=False):
    from reportgen.writers import csv_tables
    return csv_tables.write_seed_csv(profile, out / "host_device.csv", **seed_options(options),
                                     compress=compress, min_depth=options.min_depth,
                                     max_depth=options.max_depth)


@dataclass(frozen=True)
class Output:
    label: str
    wanted: Callable[[Options, Profile], bool]
    write: Callable[..., object]
    #: what is decided before the writers fork (so its warnings reach the summary): keyword
    #: arguments of ``write``
    prepare: Callable[[Profile, Options], dict] | None = None
    #: writes from the parsed profile alone (no analysis result, no warning decided by
    #: ``wanted``): may start while the analysis runs, on the CPUs it leaves free
    early: bool = False


#: every output, longest to write first (the writer processes then finish close together)
OUTPUTS = (
    Output("workbook", lambda o, p: o.workbook, _workbook),
    Output("RegInfo files", _want_reginfo, _reginfo),
    Output("perfetto trace", lambda o, p: o.perfetto, _perfetto),
    # the vendor writes its Instr World beside the workbook (PerfDoc) whenever it writes one
    Output("Instr World", lambda o, p: o.workbook and p.meta.is_pmu and len(p.commands) > 0, _instr_world,
           _instr_world_compiled, early=True),
    Output("web report", lambda o, p: o.web, _web),
    Output("summary", lambda o, p: o.summary, _summary),
    Output("CSV tables", lambda o, p: o.workbook and bool(p.tables), _csv_tables),
    # every trace with host slices (PyTorch, torch_npu trace_view.json, ...)
    Output("seed CSV", lambda o, p: o.workbook and not p.meta.is_pmu and len(p.host) > 0,
           _seed_csv, _seed_csv_compression),
)


def writer_jobs(options: Options, profile: Profile, summary: pd.DataFrame | None, out: Path,
                early: bool | None = None) -> list[tuple[str, Callable[[], object]]]:
    """The (label, writer) jobs this run asks for, writing into ``out``: all of them, or
    only those that can (``early=True``, before the analysis) or cannot start early."""
    wanted = [o for o in OUTPUTS if (early is None or o.early == early) and o.wanted(options, profile)]
    if any(o.write is _reginfo for o in wanted):
        # RegInfo reads every register table: assemble them before the writers fork, so a
        # workbook that shows them too shares these tables instead of building its own
        list(profile.registers.values())
    decided = {o.label: o.prepare(profile, options) if o.prepare else {} for o in wanted}
    return [(o.label, lambda o=o: o.write(profile, summary, out, options, **decided[o.label]))
            for o in wanted]


# -- one run -----------------------------------------------------------------------------------

@dataclass
class Report:
    """What a run produced: the files (at their final place), its time, the profile and summary."""
    files: list[Path]
    seconds: float
    profile: Profile
    summary: pd.DataFrame


def report(options: Options) -> Report:
    """Parse, derive and write every requested output of one input into ``options.output``."""
    t0 = time.perf_counter()
    final = options.out_path
    outdir.recover(final)         # a killed earlier run: finished before anything else
    profile = load(options)
    t1 = time.perf_counter()
    progress.line(f"input read ({profile.meta.source}): {len(profile.commands):,} commands in "
                  f"{progress.seconds(t1 - t0)}", options.quiet)
    if isinstance(profile.registers, LazyTables) and not registers_read(options, profile):
        profile.registers.release()
    drop_unread_columns(options, profile)
    heap.release_free_memory()          # the decode's freed buffers: not for the writers
    early = any(o.early and o.wanted(options, profile) for o in OUTPUTS)
    # the stage opens before the analysis only when a writer can start during it
    with contextlib.ExitStack() as stack:
        if early:
            out = stack.enter_context(outdir.staged(final))
            pool = stack.enter_context(parallel.Writers(options.jobs, options.quiet))
            pool.start(writer_jobs(options, profile, None, out, early=True))
        if profile.meta.is_pmu or options.web or options.perfetto:
            # numba's registries loaded here, once, before the analysis' child and the writers
            # fork: each would load them again (jit.ready; Instr World, an early writer, loads
            # its loops, and with them the registries, in its `prepare` before it forks)
            jit.ready()
        summary = analyse(profile, options)
        progress.line(f"analysed in {progress.seconds(time.perf_counter() - t1)}", options.quiet)
        if options.baseline:
            attach_comparison(profile, options)
        if isinstance(profile.registers, LazyTables) and not writers_read_registers(options, profile):
            profile.registers.release()     # read by the local-memory view only: not by the writers
        heap.release_free_memory()      # the analysis' freed intermediates, likewise
        if not early:
            out = stack.enter_context(outdir.staged(final))
            pool = stack.enter_context(parallel.Writers(options.jobs, options.quiet))
        try:
            written = pool.finish(writer_jobs(options, profile, summary, out, early=False))
        except OutputError as exc:
            # writers name files in the private stage; the user knows them under OUT
            named = OutputError(str(exc).replace(str(out), str(final)))
            named.exit_code = exc.exit_code
            raise named from None
    files = [final / p.relative_to(out) for p in written]
    return Report(files, time.perf_counter() - t0, profile, summary)
