"""Where the profiles are in an Ascend / MindSpore folder (framework-traces.md §3.1, §4; the
MindSpore guide's layouts):

* one card: ``{worker}_{ts}_ascend_pt|ms/ASCEND_PROFILER_OUTPUT/`` (or the output folder itself, or
  a bare folder of its files);
* several cards: ``profiler_data/rank_N/profiler/rank-N_{ts}_ascend_ms/ASCEND_PROFILER_OUTPUT/`` or
  ``run/{worker}_{ts}_ascend_pt/…`` side by side, at any depth;
* a worker's spans (``{worker}_{span}_ascend_pt``, span = timestamp): windows of one rank, read as
  steps of one report (:func:`worker_spans`);
* a TensorBoard logdir (``logdir/{run}/{worker}_{span}_ascend_pt``): each run is a separate report
  (:func:`runs_below`, used by batch mode);
* legacy MindSpore ``profiler/`` / ``rank_N/profiler`` folders and CANN ``PROF_*`` folders (read by
  :mod:`.legacy`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from reportgen.parsers import limits
from reportgen.parsers.walk import glob_below

APO = "ASCEND_PROFILER_OUTPUT"
#: legacy MindSpore device timelines (ascend_/gpu_ prefixes, old unprefixed name)
MS_TIMELINE = re.compile(r"^(?:ascend_|gpu_)?timeline_display_(\d+)\.json$")
MSPROF_TIMELINE = re.compile(r"^msprof_(\d+)_.*\.json$|^msprof_.*\.json$")
#: a profiler output folder's name: worker (``{hostname}_{pid}``, MindSpore ``rank-N``), span
#: (a timestamp: ten digits or more), framework (pt: torch_npu, ms: MindSpore)
WORKER_DIR = re.compile(r"^(?P<worker>.+?)_(?P<span>\d{10,})_ascend_(?P<fw>pt|ms)$")
#: folders between a run and its profiler output folders in the multi-card layouts (never a run)
RANK_LEVEL = re.compile(r"^(?:rank[_-]?\d+|profiler|profiler_data|device_\d+)$", re.I)
#: DB exports of msprof and torch_npu (read by :mod:`.sqlite`)
DB_EXPORT = re.compile(r"^(?:msprof_.*|ascend_pytorch_profiler(?:_\d+)?)\.db$")


def find_rank_dirs(path: Path) -> list[Path]:
    """Folders that each hold one rank's ASCEND_PROFILER_OUTPUT (or are one), at any depth."""
    if path.name == APO:
        return [path.parent]
    if (path / APO).is_dir():
        return [path]
    return sorted({p.parent for p in glob_below(path, APO) if p.is_dir()})


def is_output_dir(path: Path) -> bool:
    """A bare Ascend output folder (kernel_details.csv / op_summary_*.csv / trace_view.json /
    a DB export / cluster files)."""
    return any((path / n).is_file() for n in ("kernel_details.csv", "trace_view.json",
                                              "operator_details.csv", "step_trace_time.csv")) \
        or any(path.glob("op_summary_*.csv")) or (path / "cluster_step_trace_time.csv").is_file() \
        or any(DB_EXPORT.match(p.name) for p in path.glob("*.db"))


def run_of(profile_dir: Path, root: Path) -> Path:
    """The run a profiler output folder belongs to: its parent, above the rank / profiler
    levels of the multi-card layouts (never above ``root``)."""
    run = profile_dir.parent
    while run != root and RANK_LEVEL.match(run.name) and root in run.parents:
        run = run.parent
    return run


def runs_below(root: Path) -> list[Path]:
    """The runs of a TensorBoard logdir (folders whose profiler output folders make one report),
    when ``root`` holds two or more of them; else [] (``root`` is one report, or no Ascend
    folder)."""
    if not root.is_dir() or root.name == APO or (root / APO).is_dir():
        return []
    runs = sorted({run_of(d, root) for d in find_rank_dirs(root)})
    return runs if len(runs) > 1 and root not in runs else []


def worker_spans(rank_dirs: list[Path]) -> list[list[Path]]:
    """Rank folders grouped by worker: the spans (windows) of one worker, in time order, are one
    group; a folder without the ``{worker}_{span}_ascend_*`` name is its own group."""
    groups: dict[tuple, list[Path]] = {}
    for d in rank_dirs:
        m = WORKER_DIR.match(d.name)
        key = (str(d.parent), m.group("worker"), m.group("fw")) if m else (str(d),)
        groups.setdefault(key, []).append(d)
    span = lambda d: int(WORKER_DIR.match(d.name).group("span")) if WORKER_DIR.match(d.name) else 0
    return [sorted(g, key=span) for g in groups.values()]


def rank_id(rank_dir: Path, default: int) -> int:
    """Rank: profiler_info_{r}.json rank_id, else the name (rank_N, rank-N_{ts}_ascend_ms),
    else the Device_id of kernel_details.csv (single-card runs record no rank), else default."""
    for info in sorted(rank_dir.glob("profiler_info*.json")):
        limits.check_file(info, limits.current(None))
        try:
            data = json.loads(info.read_text(encoding="utf-8"))
            r = data.get("rank_id") if isinstance(data, dict) else None
            if isinstance(r, int) and r >= 0:
                return r
        except (OSError, ValueError):
            pass
        m = re.search(r"profiler_info_(\d+)\.json$", info.name)
        if m:
            return int(m.group(1))
    m = re.search(r"rank[_-]?(\d+)", rank_dir.name, re.I)
    for above in (rank_dir.parent, rank_dir.parent.parent):   # rank_N/profiler/<output folder>
        m = m or re.fullmatch(r"rank[_-]?(\d+)", above.name, re.I)
    if m:
        return int(m.group(1))
    kd = (rank_dir / APO if (rank_dir / APO).is_dir() else rank_dir) / "kernel_details.csv"
    if kd.is_file():
        try:
            head = pd.read_csv(kd, nrows=1, dtype=str, encoding="utf-8-sig")
        except (ValueError, OSError, UnicodeDecodeError):
            return default
        head.columns = [str(c).strip() for c in head.columns]
        if "Device_id" in head.columns and len(head):
            v = pd.to_numeric(head["Device_id"].str.strip(), errors="coerce").iloc[0]
            if pd.notna(v):
                return int(v)
    return default


def is_legacy_mindspore(path: Path) -> bool:
    """A legacy MindSpore ``profiler/`` folder, or a folder of them (``rank_N/profiler``)."""
    return any(MS_TIMELINE.match(p.name) for p in path.iterdir()) or \
        any(path.glob("profiler/*timeline_display_*.json")) or \
        any(path.glob("*/profiler/*timeline_display_*.json"))


def is_cann_prof(path: Path, deep: bool = False) -> bool:
    """A CANN ``PROF_*`` folder or a folder holding them; ``deep``: exported timelines
    (``mindstudio_profiler_output/msprof_*.json``) at any depth count too (the loader's test;
    detection looks one level down only, as it runs on every folder of a batch search)."""
    if path.name.startswith("PROF_") or any(path.glob("PROF_*/device_*/timeline")) or \
            any(path.glob("PROF_*/mindstudio_profiler_output")):
        return True
    return deep and any(glob_below(path, "mindstudio_profiler_output/msprof_*.json"))
