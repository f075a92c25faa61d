"""Many dumps at once (batch / cluster mode): ``bigTpuProfile RUN_DIR OUT`` where RUN_DIR holds two
or more dump folders at any depth (``node3/cdm_profile_data_dev5-1``: device 5, call 1), or two
or more framework (Kineto / Chrome) trace files: one per rank, directly inside or one per
``rank_*`` folder. A folder holding dumps is a batch of its dumps only: a trace beside them is
their host trace, not another device. A trace is shown by its own lanes (the union of the
device's streams) where a dump shows its engines; a list of both kinds (``run_many``'s API) is
judged for stragglers kind by kind. An Ascend / MindSpore profiler folder is not a batch: it is
one report with a Ranks table.

Each dump (trace) is one task on Dask distributed: the task runs the same pipeline as a single dump and
writes that dump's complete report into ``OUT/<its path below RUN_DIR>/`` (atomically, as every
report), and sends back only a few kB (status, engine summary rows, kernel breakdown rows: a
:class:`~reportgen.analysis.cluster.DeviceRun`). The client then writes the cluster report:
``OUT/index.html``, ``OUT/cluster.xlsx``, ``OUT/cluster.json`` (writers/cluster.py).

Where the tasks run: a ``LocalCluster`` of one single-threaded worker process per CPU we may use
(``--jobs``), or the running scheduler given by ``--scheduler ADDRESS`` (the workers must see
RUN_DIR and OUT at the same paths: shared storage). A dump that fails is listed with its one-line
error; the others still report; the exit code is 1 when any failed.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from reportgen import parallel, pipeline
from reportgen.analysis.cluster import DeviceRun, top_findings
from reportgen.parsers import detect
from reportgen.errors import InputError, OutputError, ReportgenError
from reportgen.options import Options

_NUMBERS = re.compile(r"\d+")
#: what the cluster report writes at the top of OUT: no dump may be named like them
RESERVED = ("index.html", "cluster.xlsx", "cluster.json")
#: how deep below RUN_DIR dump folders are looked for (device / call / host folders)
MAX_DEPTH = 4
#: the names a framework trace file is looked for by (its content is sniffed too): Kineto
#: writes ``*.pt.trace.json`` (``.gz``), other tools ``*.json``
TRACE_SUFFIXES = (".json", ".json.gz", ".json.zip")


def _natural(p: Path):
    return [(int(n) if n.isdigit() else n) for n in re.split(r"(\d+)", str(p))]


def _search(path: Path, take, descend) -> list[Path]:
    """The entries below ``path``, up to :data:`MAX_DEPTH` levels, that ``take(entry)`` accepts,
    in natural order; a folder is searched when ``descend(entry)`` says so, never through a link
    (links could loop). Hidden entries are skipped."""
    found, level = [], [path]
    for _ in range(MAX_DEPTH):
        below = []
        for folder in level:
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            for p in entries:
                if p.name.startswith("."):
                    continue
                if take(p):
                    found.append(p)
                elif p.is_dir() and not p.is_symlink() and descend(p):
                    below.append(p)
        level = below
    return sorted(found, key=lambda p: _natural(p.relative_to(path)))


def _is_dump(p: Path) -> bool:
    return p.is_dir() and (p / "global.profile").is_file()


def find_dumps(path: Path) -> list[Path]:
    """Dump folders (holding ``global.profile``) below ``path`` up to :data:`MAX_DEPTH` levels,
    in natural order; none when ``path`` is itself a dump. A link is taken when it is a dump
    (runs are assembled so), never descended into."""
    if not path.is_dir() or (path / "global.profile").exists():
        return []
    return _search(path, _is_dump, lambda p: True)


def find_traces(path: Path) -> list[Path]:
    """Framework trace files (named as :data:`TRACE_SUFFIXES`, holding trace events) below ``path``
    up to :data:`MAX_DEPTH` levels, in natural order: directly inside or one per rank folder.
    None when ``path`` is a dump or an Ascend / MindSpore profiler folder (one report of all its
    ranks); dump and profiler folders below are not searched."""
    if not path.is_dir() or (path / "global.profile").exists() or detect.is_ascend_folder(path):
        return []
    return _search(path, lambda p: p.is_file() and p.name.lower().endswith(TRACE_SUFFIXES)
                   and detect.holds_trace_events(p),
                   lambda p: not (p / "global.profile").exists() and not detect.is_ascend_folder(p))


#: torch.profiler.tensorboard_trace_handler's file names: ``{worker}.{time in ms}.pt.trace.json``
HANDLER_NAME = re.compile(r"^(?P<worker>.+)\.\d+\.pt\.trace\.json(?:\.gz)?$")


def window_folders(traces: list[Path]) -> list[Path]:
    """Trace files with the window files of one worker grouped: a folder whose trace files are
    all ``tensorboard_trace_handler`` files of one worker (one per active window of its
    ``schedule``) is one run, listed as the folder; other files stay runs of their own."""
    by_folder: dict[Path, list[Path]] = {}
    for t in traces:
        by_folder.setdefault(t.parent, []).append(t)
    out = []
    for folder, files in by_folder.items():
        workers = {m.group("worker") if (m := HANDLER_NAME.match(f.name)) else None for f in files}
        if len(files) > 1 and len(workers) == 1 and None not in workers:
            out.append(folder)
        else:
            out.extend(files)
    return out


def find_runs(path: Path) -> list[Path]:
    """The dump folders below ``path`` (:func:`find_dumps`); when there are none, its trace
    files (:func:`find_traces`), one worker's window files as one run (:func:`window_folders`:
    a TensorBoard logdir's runs are separate reports, one run's windows one report); when there
    are none, the runs of a TensorBoard logdir of Ascend / MindSpore profiles (each run one
    report). Dumps win: a trace beside dumps is their host trace (``--trace_file``), not another
    device."""
    from reportgen.parsers.ascend import runs_below

    return find_dumps(path) or window_folders(find_traces(path)) or runs_below(path)


def _kind(path: Path) -> str:
    """A found run's kind: a dump is a folder holding global.profile, a trace a file, a folder
    of one run's window files or an Ascend run folder (a framework trace's report)."""
    return "dump" if _is_dump(path) else "trace"


def _counted(kinds: list[str]) -> str:
    """"4 dumps", "2 traces", "2 dumps and 1 trace"."""
    words = [f"{n} {kind}{'s' if n != 1 else ''}" for kind in ("dump", "trace")
             if (n := kinds.count(kind))]
    return " and ".join(words)


def report_one(options: Options, name: str, kind: str = "dump") -> DeviceRun:
    """One dump's (trace's) full report (runs in a worker); returns only its small summary
    tables: a dump's engine summary, a trace's span (its engine summary's Overall row has no
    engines) and Device lanes, and the kernels."""
    try:
        done = pipeline.report(options)
    except ReportgenError as exc:
        return DeviceRun(name, options.input, options.output, _one_line(str(exc)), kind=kind)
    except Exception as exc:  # noqa: BLE001 - one dump's bug must not sink the other dumps
        return DeviceRun(name, options.input, options.output,
                         _one_line(f"{options.input}: failed: {type(exc).__name__}: {exc}"), kind=kind)
    m, summary = done.profile.meta, done.summary
    digest = done.profile.digest              # attached by analysis.derive
    engines = summary if kind == "dump" else summary[["core", "span_ns"]].tail(1)
    return DeviceRun(
        name, options.input, options.output, "ok", done.seconds, len(done.files),
        {"chip": m.chip, "cores": m.num_cores, "mode": m.mode, "commands": int(len(done.profile.commands)),
         "warnings": len(m.warnings)},
        _rows(engines), _rows(digest.kernels), _rows(digest.lanes) if kind == "trace" else [], kind,
        steps=_rows(done.profile.tables.get("Rank Step Breakdown", pd.DataFrame())),
        findings=top_findings(_findings_of(done.profile)))


def _findings_of(profile) -> pd.DataFrame | None:
    """The run's ranked findings: a trace's framework diagnosis, a dump's PMU diagnosis."""
    diag = profile.framework_diagnosis or profile.diagnosis
    return diag.findings if diag is not None else None


def _rows(frame: pd.DataFrame) -> list[dict]:
    return [{k: _plain(v) for k, v in r.items()} for r in frame.to_dict("records")]


def _one_line(text: str) -> str:
    """A status is one line (the index, the JSON and the terminal show it as one)."""
    return " ".join(text.split())


def _plain(v):
    """numpy scalars as Python values, NaN / NA as None (the rows travel and become JSON)."""
    if v is None or v is pd.NA:
        return None
    if hasattr(v, "item"):
        v = v.item()
    return None if isinstance(v, float) and v != v else v


def _check_out(out: Path, root: Path, dumps: list[Path]) -> None:
    """Refuse, before anything is written, an OUT that cannot hold one folder per dump and
    the cluster report beside them."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: exists and is not a folder (several dumps need a folder)")
    for d in dumps:
        parts = d.relative_to(root).parts
        if parts[0] in RESERVED:
            raise OutputError(f"{d}: a dump folder named {parts[0]} would take the place of "
                              f"{out / parts[0]} (rename the dump folder)")
        for depth in range(1, len(parts) + 1):       # every folder between OUT and the report
            if out.joinpath(*parts[:depth]).is_symlink():
                raise OutputError(f"{out.joinpath(*parts[:depth])} is a symbolic link: not writing "
                                  "through it (remove or rename it)")


@contextmanager
def _client(options: Options, n_dumps: int):
    """A Dask client: on ``options.scheduler``, else on a LocalCluster sized to the machine."""
    import dask
    from distributed import Client, LocalCluster

    # dask's own log lines (worker start/stop, lost workers) would interleave with ours
    for name in ("distributed", "dask"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if options.scheduler:
        try:
            client = Client(options.scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise InputError(f"--scheduler {options.scheduler}",
                             f"cannot reach the Dask scheduler ({exc})") from None
        with client:
            yield client, f"the Dask scheduler at {options.scheduler}"
        return
    n = min(parallel.workers(options.jobs), n_dumps)
    # workers may fork (the workbook's helper); reports are bounded by --max_input_mb, not by a
    # worker memory limit that would restart a worker in the middle of a report
    with dask.config.set({"distributed.worker.daemon": False}), \
            LocalCluster(n_workers=n, threads_per_worker=1, processes=True, memory_limit=0,
                         dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        yield client, f"a local Dask cluster of {n} worker process{'es' if n > 1 else ''}"


class _Progress:
    """One bar over dumps on a terminal; otherwise one line per finished dump (stderr)."""

    def __init__(self, total: int, quiet: bool):
        from tqdm import tqdm

        self.total, self.done, self.quiet = total, 0, quiet
        self.bar = tqdm(total=total, desc="dumps", unit="dump", file=sys.stderr) \
            if not quiet and sys.stderr.isatty() else None

    def finished(self, run: DeviceRun) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        elif not self.quiet:
            state = "ok" if run.ok else f"error: {run.status}"
            print(f"[{self.done}/{self.total}] {run.name}: {state}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_tasks(runs: list[tuple[Options, str, str]], options: Options) -> tuple[list[DeviceRun], str]:
    """Every run's report as a Dask task (options, name, kind); the DeviceRuns in input order
    and where they ran."""
    from distributed import as_completed

    results: dict[str, DeviceRun] = {}
    with _client(options, len(runs)) as (client, where):
        # said even with --quiet (it silences progress only): which mode this run is in
        print(f"bigTpuProfile: batch mode, {_counted([k for *_, k in runs])} on {where}",
              file=sys.stderr, flush=True)
        progress = _Progress(len(runs), options.quiet)
        futures = {client.submit(report_one, o, name, kind, key=f"report-{i}-{name}", pure=False):
                   (o, name, kind) for i, (o, name, kind) in enumerate(runs)}
        try:
            for future in as_completed(futures):
                o, name, kind = futures[future]
                try:
                    run = future.result()
                except Exception as exc:  # noqa: BLE001 - a worker lost while running this dump
                    run = DeviceRun(name, o.input, o.output,
                                    _one_line(f"{o.input}: worker failed: {type(exc).__name__}: {exc}"),
                                    kind=kind)
                future.release()
                results[name] = run
                progress.finished(run)
        finally:
            progress.close()
            client.cancel(list(futures))
    return [results[name] for _, name, _ in runs], where


def run_many(root: Path, dumps: list[Path], options: Options) -> int:
    from reportgen.analysis.cluster import cluster_analysis
    from reportgen.writers.cluster import write_cluster

    t0 = time.perf_counter()
    out = options.out_path
    _check_out(out, root, dumps)
    out_abs, root_abs = out.resolve(), root.resolve()
    # absolute paths: the workers' working folder is not ours (and not on our machine with
    # --scheduler); their writers run one after another (jobs=1): one process per dump
    runs = [(options.replace(input=str(root_abs / d.relative_to(root)),
                             output=str(out_abs / d.relative_to(root)), quiet=True, jobs=1),
             d.relative_to(root).as_posix(), _kind(d)) for d in dumps]
    results, where = run_tasks(runs, options)
    cluster = cluster_analysis(results)
    try:
        files = write_cluster(out, cluster, results)
    except OSError as exc:
        raise OutputError(f"{out}: cannot write the cluster report: {exc.strerror or exc}") from None
    # results are printed even with --quiet (it silences progress only)
    for r in results:
        if not r.ok:
            print(f"{r.name}: error: {r.status}")
    print(f"Cluster report of {_counted([r.kind for r in results])} ({cluster.failed} failed) in "
          f"{time.perf_counter() - t0:.1f} s: {files[0]}")
    for s in cluster.stragglers.itertuples():
        print(f"  straggler: {s.name}: span {s.excess_pct:+.1f}% against the median")
    return 1 if cluster.failed else 0


def announce_single(root: Path, found: Path) -> None:
    """Said even with --quiet: the run is not in batch mode although INPUT is a folder (not
    said when the folder itself is the run: one worker's window files)."""
    if found == root:
        return
    print(f"bigTpuProfile: {root} holds one {_kind(found)} ({found.relative_to(root)}): a single "
          "report (batch mode needs two or more)", file=sys.stderr, flush=True)
