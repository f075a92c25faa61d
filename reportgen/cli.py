"""`bigTpuProfile INPUT [OUT]`: command-line compatible with the vendor tool 0.3.0 and 0.3.7.

Outputs (all on by default; see README "Outputs and options"):
  OUT/summary.txt + summary.json      off with --disable_summary
  OUT/PerfDoc/PerfAI_output.xlsx      off with --disable_doc (--enable_doc accepted: 0.3.7 spelling)
  OUT/PerfDoc/instr_world.csv         PMU captures, with the workbook: every command, time-sorted
  OUT/*RegInfo_*.txt                  with the workbook up to 200k commands; --reginfo on|off
  OUT/tables/*.csv, host_device.csv   framework traces: every analysis table, the seed tool's CSV
                                      (host_device.csv.gz above 64 MB; categories: -mc/-hc/-dc)
  OUT/PerfWeb/result.html             off with --disable_web
  OUT/perfetto.pftrace                off with --no_perfetto (--perfetto accepted: 0.3.0 spelling)

Progress goes to stderr (reportgen/progress.py): bars only when stderr is a terminal, else one
line per finished stage; ``--quiet`` silences it, never the summary, the files written or the
warnings (printed on stderr when the summary is not).

A user mistake (bad input, bad option) prints one line and exits non-zero; a writer failure
exits 3 and leaves no half-written file (every output is written under a temporary name).
SIGINT, SIGTERM and SIGHUP stop a run the same way: the writers are killed, the stage is
removed (OUT keeps the previous report), one line, exit 128 + the signal number.
"""
from __future__ import annotations

import argparse
import atexit
import os
import signal
import sys
import threading
from pathlib import Path

from reportgen.errors import ReportgenError
from reportgen.options import MAX_INPUT_MB, REGINFO_AUTO_LIMIT, OptionError, Options
from reportgen.version import __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bigTpuProfile",
        description="Profile reports (xlsx, html, perfetto, summary) from a TPU PMU dump "
                    "directory or a framework trace.",
        epilog="Batch (cluster) mode: when INPUT is a folder holding two or more dump folders "
               "(at any depth, e.g. node0/cdm_profile_data_dev3-1) or two or more framework trace "
               "files (*.json, *.json.gz: one per rank, directly inside or in rank_* folders), each "
               "gets its own report in OUT/<its path>/ and OUT/index.html, cluster.xlsx and "
               "cluster.json compare the devices (stragglers, utilisation heat map, kernel spread, "
               "calls of one device). They run as Dask tasks on a local cluster (one worker per "
               "CPU) or on --scheduler. A folder holding one dump (trace) runs as its single "
               "report; a trace beside dumps is their host trace, not a rank. The exit code is 1 when "
               "any failed. An Ascend/MindSpore profiler folder "
               "(ASCEND_PROFILER_OUTPUT, PROF_*, profiler_data/rank_N) is not a batch: its ranks "
               "make one report with a Ranks table.")
    p.add_argument("input", help="PMU dump directory (cdm_profile_data_devX-Y/), chrome trace JSON, "
                   "Ascend ASCEND_PROFILER_OUTPUT or MindSpore profiler folder")
    p.add_argument("output", nargs="?", default="profile_out", help="output folder (default: profile_out)")
    p.add_argument("--disable_web", action="store_true", help="do not write PerfWeb/result.html")
    p.add_argument("--disable_doc", action="store_true", help="do not write the xlsx and RegInfo files")
    p.add_argument("--enable_doc", action="store_true", help="(0.3.7) write the xlsx and RegInfo files: on by default")
    p.add_argument("--perfetto", action="store_true", help="(0.3.0) write perfetto.pftrace: on by default")
    p.add_argument("--no_perfetto", action="store_true", help="do not write perfetto.pftrace")
    p.add_argument("--disable_summary", action="store_true", help="do not write summary.txt/summary.json")
    p.add_argument("--trace_file", metavar="F", help="host chrome trace (tpudnn/PyTorch JSON, .gz) to "
                   "merge above the device timeline")
    p.add_argument("--tiu_freq", type=float, metavar="MHZ", help="TIU clock in MHz (default: tpu_freq "
                   "from global.profile, else the chip default)")
    p.add_argument("--num_core", type=int, metavar="N", help="(0.3.0) accepted for compatibility; the "
                   "core count comes from the dump")
    p.add_argument("--registers", choices=("auto", "on", "off"), default="auto",
                   help="register columns in the workbook (auto: only below ~200k commands)")
    p.add_argument("--reginfo", choices=("auto", "on", "off"), default="auto",
                   help="RegInfo text files (auto: with the workbook, up to %d commands: "
                        "beyond that they run to gigabytes)" % REGINFO_AUTO_LIMIT)
    p.add_argument("--min_depth", type=int, default=None, help="framework traces: shallowest call depth kept")
    p.add_argument("--max_depth", type=int, default=None, help="framework traces: deepest call depth kept (-1: no limit)")
    p.add_argument("--stack_frames", type=int, default=5, metavar="N",
                   help="framework traces: the Operators by Stack table groups by name and the top N "
                        "frames of the call stack (torch's group_by_stack_n; default 5)")
    p.add_argument("-mc", "--monitor_cat", metavar="CAT", help="framework traces, host_device.csv and "
                   "the Host-Device tables: monitored host category (as profile_parser_main -mc; "
                   "default: python_function when the trace has python frames, else its aten ops: "
                   "cpu_op, or Operator in 2021-era traces)")
    p.add_argument("-hc", "--host_cat", metavar="CAT", help="framework traces: launch (runtime) "
                   "category (as profile_parser_main -hc; default: the trace's runtime categories, "
                   "e.g. cuda_runtime and cuda_driver)")
    p.add_argument("-dc", "--device_cat", metavar="CAT", help="framework traces: device category "
                   "(as profile_parser_main -dc; 'all' for every device slice that is work; "
                   "default: kernel when the trace has kernels, else all)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr (bars on a terminal, "
                   "one line per stage otherwise); the summary and warnings are still printed")
    p.add_argument("--max_input_mb", type=int, default=MAX_INPUT_MB, metavar="N",
                   help="read at most N MB of input (default %(default)s): a larger file, a "
                        "compressed trace expanding beyond it (or beyond 100 times its own size "
                        "past N/16 MB), or PMU core files larger in total are refused with one line")
    p.add_argument("--baseline", metavar="BASE", help="compare with an earlier run: a dump, a "
                   "framework trace or an earlier report folder (its summary.json); adds the "
                   "Compare tab, sheet and summary.json 'compare' key")
    p.add_argument("--scheduler", metavar="ADDRESS", help="batch mode: submit the dumps to this "
                   "running Dask scheduler (tcp://host:8786; the workers must see INPUT and OUT "
                   "at the same paths) instead of a local cluster")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return p


def options_from_args(args: argparse.Namespace) -> Options:
    """The run the command line asks for (vendor spellings: --enable_doc and --perfetto are on
    by default and accepted; --num_core is accepted and ignored)."""
    return Options(
        input=args.input, output=args.output,
        summary=not args.disable_summary, workbook=not args.disable_doc,
        web=not args.disable_web, perfetto=not args.no_perfetto,
        registers=args.registers, reginfo=args.reginfo, trace_file=args.trace_file,
        tiu_freq=args.tiu_freq, min_depth=args.min_depth, max_depth=args.max_depth,
        stack_frames=args.stack_frames,
        monitor_cat=args.monitor_cat, host_cat=args.host_cat, device_cat=args.device_cat,
        quiet=args.quiet, max_input_mb=args.max_input_mb, scheduler=args.scheduler,
        baseline=args.baseline)


def run(options: Options) -> int:
    # imported here: `--help` and usage errors answer without loading numpy and pandas; with
    # the collector paused: its ~300 passes over the ~45k objects the modules make (all kept,
    # next to no garbage) cost 0.06-0.09 s of CPU before the input is read. The console script
    # (one run per process) then freezes them: later passes skip them, as the forked writers do
    from reportgen.heap import collector_paused

    with collector_paused(freeze=_console):
        from reportgen import batch, pipeline
        from reportgen.writers.text import summary_text, warnings_text

    root = Path(options.input)
    found = batch.find_runs(root)
    if len(found) > 1:
        return batch.run_many(root, found, options)
    if found:
        batch.announce_single(root, found[0])
        options = options.replace(input=str(found[0]))
    done = pipeline.report(options)
    if options.summary:
        print(summary_text(done.profile, done.summary))
    elif done.profile.meta.warnings:
        print(warnings_text(done.profile.meta), file=sys.stderr)
    print(f"Wrote {len(done.files)} file(s) to {options.out_path.resolve()} in {done.seconds:.1f} s:")
    for p in done.files:
        print(f"  {p}")
    sys.stdout.flush()            # here, where a reader that left is handled (_main)
    return 0


class Stopped(KeyboardInterrupt):
    """A stop signal (SIGINT, SIGTERM, SIGHUP), raised where the main process is."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum, frame) -> None:
    raise Stopped(signum)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def main(argv: list[str] | None = None) -> int:
    # handlers can only be set from the main thread; elsewhere the caller's stay
    main_thread = threading.current_thread() is threading.main_thread()
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS} if main_thread else {}
    for signum, handler in previous.items():
        if handler is not signal.SIG_IGN:                   # nohup keeps SIGHUP ignored
            signal.signal(signum, _stop)
    try:
        return _main(argv)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        options = options_from_args(args)
    except OptionError as exc:
        parser.error(str(exc))
    try:
        return run(options)
    except ReportgenError as exc:
        if os.environ.get("REPORTGEN_DEBUG"):
            raise
        print(f"bigTpuProfile: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"bigTpuProfile: interrupted ({signal.Signals(signum).name})", file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:          # `bigTpuProfile ... | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


#: the code :func:`console` exits with once :func:`main` has returned (empty before)
_returned: list[int] = []
#: whether this process is the console script (one run, then the exit): :func:`console` sets it
_console = False


def _exit_now() -> None:
    """Registered first, so run last of the exit handlers: with main() done, the process ends
    here, without the interpreter's teardown."""
    if not _returned:
        return                      # an exception or SystemExit left main(): the usual exit
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):   # the reader left (| head) or the stream is closed
            pass
    os._exit(_returned[0])


def console() -> None:
    """The ``bigTpuProfile`` console script and ``python -m reportgen``: :func:`main`, then an
    exit that skips the interpreter's teardown (at 678k commands ~0.3 s on a quiet machine,
    0.5-1.0 s loaded; 0.2 s measured at 3.3M: freeing every table of the profile, the modules,
    numba's state, only for the process to end).

    Nothing is lost by skipping it: every output is committed (renamed into OUT) before main()
    returns, the writer processes are joined, and the exit still waits for non-daemon threads
    and runs every exit handler registered after this one (multiprocessing, logging, Dask,
    ``weakref.finalize``: all are registered later, when their modules load), in their order;
    only then are stdout and stderr flushed and the process ends. A tracer or profiler
    (coverage, a debugger) gets the usual exit: it may save its data in an exit handler
    registered before ours. Callers of :func:`main` (tests, notebooks) are not affected."""
    global _console
    _console = True
    if sys.gettrace() is None and sys.getprofile() is None:
        atexit.register(_exit_now)
    code = main()
    _returned.append(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    console()
