"""Which parser fits an input path: sniff contents and folder layout, never trust extensions.

Kinds (``detect_kind``):

* ``pmu``          a TPU PMU dump folder (holds ``global.profile``)
* ``chrome``       one Chrome trace JSON file (plain, gzip or zip; array or object form)
* ``chrome-ranks`` a folder of Chrome trace files, one per rank
* ``ascend``       an ``ASCEND_PROFILER_OUTPUT`` folder, a rank folder holding one, a folder of
                   rank folders at any depth, a bare output folder (kernel_details.csv /
                   trace_view.json), an msprof / torch_npu DB export, a CANN ``PROF_*`` folder
                   or a legacy MindSpore profiler folder

Anything else raises :class:`InputError` naming the path and what was expected.
"""
from __future__ import annotations

from pathlib import Path

from reportgen.errors import InputError
from reportgen.model import Profile
from reportgen.options import MAX_INPUT_MB
from reportgen.parsers.chrome.reader import sniff, strip_bom

EXPECTED = ("a PMU dump folder (with global.profile), a Chrome/PyTorch trace JSON (.json, .gz, "
            ".zip), a folder of per-rank traces, or an Ascend/MindSpore profiler folder")


def looks_like_trace(path: Path) -> bool:
    """JSON array of objects, or an object whose first keys include traceEvents (or that is
    not obviously something else; the parser then says precisely what is wrong)."""
    head = strip_bom(sniff(path))
    # any JSON array/object goes to the trace reader, which says precisely what is wrong
    # with non-trace JSON (execution trace, memory timeline export, summaries)
    return head[:1] in (b"[", b"{")


#: how much of a file :func:`holds_trace_events` reads (Kineto writes device properties first)
TRACE_HEAD_BYTES = 1 << 16


def holds_trace_events(path: Path) -> bool:
    """Stricter than :func:`looks_like_trace`, for files found in a folder rather than named by
    the user: a JSON array, or an object with a ``traceEvents`` key in its first
    :data:`TRACE_HEAD_BYTES` (metadata, execution traces and summaries beside traces are not)."""
    head = strip_bom(sniff(path, TRACE_HEAD_BYTES)).lstrip()
    return head[:1] == b"[" or (head[:1] == b"{" and b'"traceEvents"' in head)


def is_ascend_folder(path: Path) -> bool:
    """An Ascend / MindSpore profiler folder (one rank or several at any depth: read as one
    report). A TensorBoard logdir of several runs is not one: its runs are a batch
    (:func:`reportgen.parsers.ascend.runs_below`)."""
    from reportgen.parsers import ascend
    from reportgen.parsers.ascend import layout

    if path.name == ascend.APO or (path / ascend.APO).is_dir():
        return True
    if layout.is_cann_prof(path) or layout.is_legacy_mindspore(path):
        return True
    if ascend.find_rank_dirs(path):
        return not ascend.runs_below(path)
    return ascend.is_output_dir(path)


def ascend_db(path: Path) -> bool:
    """An msprof / torch_npu DB export named as they name it."""
    from reportgen.parsers.ascend.layout import DB_EXPORT

    return bool(DB_EXPORT.match(path.name))


def trace_files(path: Path) -> list[Path]:
    """Trace files directly inside a folder (content-sniffed), sorted by name."""
    out = []
    for p in sorted(path.iterdir()):
        if p.is_file() and not p.name.startswith(".") and looks_like_trace(p):
            out.append(p)
    return out


def detect_kind(path: str | Path) -> str:
    """``pmu`` | ``chrome`` | ``chrome-ranks`` | ``ascend``; InputError for anything else."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(p), "no such file or folder; expected " + EXPECTED)
    if p.is_dir():
        if (p / "global.profile").is_file():
            return "pmu"
        if is_ascend_folder(p):
            return "ascend"
        if trace_files(p):
            return "chrome-ranks"
        raise InputError(str(p), "folder holds no recognised profile; expected " + EXPECTED)
    if p.is_file():
        from reportgen.parsers.ascend import MS_TIMELINE

        if MS_TIMELINE.match(p.name) and looks_like_trace(p):
            return "ascend"  # legacy MindSpore device timeline: every slice is a device task
        if looks_like_trace(p):
            return "chrome"
        head = sniff(p)
        if head.startswith(b"SQLite format 3") and ascend_db(p):
            return "ascend"
        what = "an empty file" if not head else "an SQLite database that is no msprof / torch_npu " \
            "export (msprof_*.db, ascend_pytorch_profiler*.db)" if head.startswith(b"SQLite format 3") \
            else "not JSON"
        raise InputError(str(p), f"file is {what}; expected " + EXPECTED)
    raise InputError(str(p), "not a regular file or folder; expected " + EXPECTED)


def load_profile(path: str | Path, tiu_freq: float | None = None, quiet: bool = True,
                 max_input_mb: int = MAX_INPUT_MB) -> Profile:
    """Read any supported input into a Profile, as the input says it (framework tables are
    derived by :func:`reportgen.analysis.framework.attach_framework_tables`).  ``tiu_freq`` and
    ``quiet`` concern PMU dumps: the TIU clock override, and no progress output;
    ``max_input_mb`` bounds what is read (:mod:`reportgen.parsers.limits`)."""
    kind = detect_kind(path)
    if kind == "pmu":
        from reportgen.parsers.layers import read_layer_files
        from reportgen.parsers.pmu import load_dump  # written in parallel; import lazily
        from reportgen.parsers.pmu.container import core_files, core_number

        profile = load_dump(path, tiu_freq=tiu_freq, quiet=quiet, max_input_mb=max_input_mb)
        folder = Path(path) if Path(path).is_dir() else Path(path).parent
        profile.layers = read_layer_files(folder, profile.meta, max_input_mb,
                                          [core_number(f) for f in core_files(folder)])
        return profile
    if kind == "ascend":
        from reportgen.parsers.ascend import load_ascend

        return load_ascend(path, max_input_mb=max_input_mb)
    from reportgen.parsers.chrome import load_chrome_trace, load_chrome_traces

    if kind == "chrome":
        return load_chrome_trace(path, max_input_mb=max_input_mb)
    files = trace_files(Path(path))
    if len(files) == 1:
        return load_chrome_trace(files[0], max_input_mb=max_input_mb)
    return load_chrome_traces(files, str(path), max_input_mb=max_input_mb)


__all__ = ["detect_kind", "holds_trace_events", "is_ascend_folder", "load_profile", "looks_like_trace", "trace_files"]
