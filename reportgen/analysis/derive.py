"""The one analysis entry point: everything derived from a parsed Profile, computed once.

The pipeline calls :func:`derive` once per run, after parsing and before any writer. It attaches
the framework tables, places a host trace on the device time axis, adds the device-lanes table of
framework traces, diagnoses PMU profiles (breakdown, kernels, overlap, findings), and returns
the engine summary that every output shows.
"""
from __future__ import annotations

import pandas as pd

from reportgen.analysis.diagnosis import diagnose
from reportgen.analysis.digest import run_digest
from reportgen.analysis.framework import attach_framework_tables
from reportgen.analysis.fw_diagnosis import diagnose_framework
from reportgen.analysis.host_align import align_host_trace
from reportgen.analysis.layers import build_layer_view
from reportgen.analysis.metrics import engine_summary, lane_summary
from reportgen.model import Profile


def derive(profile: Profile, *, min_depth: int | None = None, max_depth: int | None = None,
           categories: dict | None = None, stack_frames: int = 5, jobs: int | None = 1) -> pd.DataFrame:
    """Attach every derived table to ``profile`` and return its engine summary.

    ``min_depth``/``max_depth`` bound the call depths of the framework host/device tables;
    ``categories`` are their ``-mc/-hc/-dc`` (monitor, launch, device) choices; ``jobs`` the
    processes the diagnosis may use (1: all of it in this one).
    """
    if not profile.meta.is_pmu:
        attach_framework_tables(profile, min_depth=min_depth, max_depth=max_depth,
                                categories=categories, stack_frames=stack_frames)
    if profile.host_trace is not None:
        align_host_trace(profile, profile.host_trace)
    profile.summary = engine_summary(profile)
    profile.layer_view = build_layer_view(profile)
    if profile.meta.is_pmu:
        profile.diagnosis = diagnose(profile, jobs)
    if not profile.meta.is_pmu:
        profile.tables["Device lanes"] = lane_summary(profile)
        profile.framework_diagnosis = diagnose_framework(profile)
    profile.digest = run_digest(profile, profile.summary)
    return profile.summary
