"""Entry point: an Ascend output folder of any supported layout -> one Profile (see the package
doc); several ranks are the "cores" of one report, a worker's spans are steps of one rank."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.errors import InputError
from reportgen.model import Meta, Profile, VendorOutput, empty_commands
from reportgen.options import MAX_INPUT_MB
from reportgen.parsers import limits
from reportgen.parsers.ascend.files import numeric_table, read_csv, tolerated
from reportgen.parsers.ascend.layout import (APO, MS_TIMELINE, find_rank_dirs, is_cann_prof,
                                             is_legacy_mindspore, is_output_dir, rank_id, worker_spans,
                                             DB_EXPORT)
from reportgen.parsers.ascend.legacy import load_cann_prof, load_mindspore_legacy
from reportgen.parsers.ascend.rank import finish_profile, load_rank


def load_ascend(path: str | Path, *, max_input_mb: int = MAX_INPUT_MB) -> Profile:
    """An Ascend output folder of any supported layout -> Profile (see module doc); no file of
    it larger than ``max_input_mb`` MB (or a compressed one expanding beyond) is read."""
    with limits.bounded(max_input_mb):
        return _load_ascend(Path(path))


def _load_ascend(path: Path) -> Profile:
    if path.is_file() and MS_TIMELINE.match(path.name):
        return load_mindspore_legacy(path.parent, only=path)
    if path.is_file() and DB_EXPORT.match(path.name):
        return _load_ranks(path.parent, [[path.parent]], db=path)
    if not path.is_dir():
        raise InputError(str(path), "expected an Ascend profiler output folder")
    # torch_npu/MindSpore rank folders hold both ASCEND_PROFILER_OUTPUT and the raw PROF_*
    # data: the processed output wins
    rank_dirs = find_rank_dirs(path)
    if not rank_dirs:
        if is_cann_prof(path, deep=True):
            return load_cann_prof(path)
        if is_legacy_mindspore(path):
            return load_mindspore_legacy(path)
    if not rank_dirs and is_output_dir(path):
        rank_dirs = [path]
    if not rank_dirs:
        raise InputError(str(path), f"no {APO} folder, kernel_details.csv or trace_view.json found")
    return _load_ranks(path, worker_spans(rank_dirs))


def _load_ranks(path: Path, workers: list[list[Path]], db: Path | None = None) -> Profile:
    """Each worker (its spans in time order) is one rank, a "core" of the report."""
    meta = Meta(source="ascend", input_path=str(path))
    ranks = [rank_id(spans[0], i) for i, spans in enumerate(workers)]
    if len(set(ranks)) != len(ranks):
        meta.warn("rank-ids", "rank ids repeat across rank folders; numbered by folder order", str(path))
        ranks = list(range(len(workers)))
    cmd_parts, host_parts, memory_parts, vendor_outputs = [], [], [], {}
    offset = 0
    for spans, r in zip(workers, ranks):
        vendors = []
        for span, d in enumerate(spans):
            if db is not None:
                from reportgen.parsers.ascend.sqlite import load_db_rank

                cmds, host, vendor, memory = load_db_rank(db, r, meta)
            else:
                cmds, host, vendor, memory = load_rank(d, r, meta)
            if len(spans) > 1 and len(cmds):
                cmds = cmds.assign(span=span + 1)
            if memory is not None:
                memory_parts.append(memory)
            if host is not None and len(host):
                host = _shift_rows(host, offset)
                cmds = cmds.copy()
                for c in ("launch_row", "op_row"):
                    if c in cmds.columns:
                        cmds[c] = np.where(cmds[c].to_numpy() >= 0, cmds[c].to_numpy() + offset, -1)
                offset += len(host)
                host_parts.append(host)
            cmd_parts.append(cmds)
            vendors.append(vendor)
        vendor_outputs[r] = merge_spans(vendors)
    commands = pd.concat([c for c in cmd_parts if len(c)], ignore_index=True) if any(len(c) for c in cmd_parts) \
        else empty_commands()
    if len(commands):
        commands = commands.sort_values(["core", "engine", "start_ns"], kind="stable")
        commands = _renumber(commands)
    host = pd.concat(host_parts, ignore_index=True) if host_parts else Profile().host
    profile = Profile(commands=commands, host=host, meta=meta, vendor_outputs=vendor_outputs)
    if memory_parts:
        profile.memory_events = pd.concat(memory_parts, ignore_index=True)
    cl = next((c for c in (path / "cluster_step_trace_time.csv",
                           path / "cluster_analysis_output" / "cluster_step_trace_time.csv") if c.is_file()), None)
    if cl is not None:
        with tolerated(meta, cl):
            profile.source_tables["Cluster Steps"] = numeric_table(read_csv(cl))
    finish_profile(profile)
    return profile


def merge_spans(vendors: list[VendorOutput]) -> VendorOutput:
    """One worker's spans as one rank's files: every table and per-call frame concatenated in
    span order, with a ``Span`` column (1, 2, ...) when there are several."""
    if len(vendors) == 1:
        return vendors[0]
    out = VendorOutput()
    for name in dict.fromkeys(n for v in vendors for n in v.tables):
        out.tables[name] = pd.concat([v.tables[name].assign(Span=i + 1) for i, v in enumerate(vendors)
                                      if name in v.tables], ignore_index=True)
    for field in VendorOutput.FRAMES:
        parts = [getattr(v, field).assign(Span=i + 1) for i, v in enumerate(vendors)
                 if getattr(v, field) is not None]
        setattr(out, field, pd.concat(parts, ignore_index=True) if parts else None)
    return out


def _shift_rows(host: pd.DataFrame, offset: int) -> pd.DataFrame:
    host = host.copy()
    for c in ("parent", "op_row"):
        v = host[c].to_numpy()
        host[c] = np.where(v >= 0, v + offset, -1)
    host.index = host.index + offset
    return host


def _renumber(commands: pd.DataFrame) -> pd.DataFrame:
    commands = commands.reset_index(drop=True)
    commands["global_idx"] = commands.groupby(commands["sheet"].astype(str)).cumcount().astype(np.int64)
    commands["cmd_id"] = commands["global_idx"] + 1
    return commands
