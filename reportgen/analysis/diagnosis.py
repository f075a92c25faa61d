"""The diagnosis of a PMU profile (model.Diagnosis): breakdown, kernels, overlap, findings.

Called once by ``analysis.derive`` after the engine summary (shares and findings read its busy
times and bytes). The per-command arrays are extracted once and shared by every part.

Two halves of about equal cost run side by side (``jobs`` > 1): the tables of :func:`tables`
(breakdowns, kernel calls, overlap, roofline: none reads the other half) in a forked process
(parallel.Beside), while this one explains the critical path (analysis/why.py, the largest part,
whose working state is too large to send back) and computes the local-memory view (from the
descriptor fields it reads: no register table is assembled). The findings join both.
"""
from __future__ import annotations

import pandas as pd

from reportgen import heap, parallel
from reportgen.analysis.breakdown import breakdowns, command_arrays
from reportgen.analysis.chip import peaks_for
from reportgen.analysis.finding_gains import rank_by_gain
from reportgen.analysis.findings import findings
from reportgen.analysis.kernel_calls import device_calls, host_calls, kernel_table
from reportgen.analysis.lmem import lmem_findings, local_memory
from reportgen.analysis.overlap import overlap
from reportgen.analysis.why import explain
from reportgen.analysis.roofline import roofline, roofline_findings
from reportgen.model import Diagnosis, Profile


def tables(profile: Profile) -> tuple[dict, list]:
    """The Diagnosis fields of the half computed beside the critical path (small tables), and
    the warnings it added to ``profile.meta`` (lost with the child unless carried back)."""
    before = len(profile.meta.warnings)
    a = command_arrays(profile.commands)
    ncores = max(profile.meta.num_cores, int(a["core"].max()) + 1 if len(a["core"]) else 0)
    span = int(a["end"].max() - a["start"].min()) if len(a["start"]) else 0
    # the roofline's temporaries are the largest here: first, while explain's state beside it
    # is still small (it grows until its end)
    roof = roofline(profile, a, peaks_for(profile.meta))
    heap.release_free_memory()
    breakdown, functions = breakdowns(profile, a)
    calls = pd.concat([t for t in (device_calls(profile, a), host_calls(profile, a, ncores))
                       if not t.empty] or [device_calls(profile, a)], ignore_index=True)
    per_core, stretches = overlap(a, ncores)
    fields = dict(breakdown=breakdown, functions=functions, kernel_calls=calls,
                  kernels=kernel_table(calls, span, ncores), overlap=per_core, stretches=stretches,
                  roofline=roof)
    return fields, profile.meta.warnings[before:]


def diagnose(profile: Profile, jobs: int | None = 1) -> Diagnosis:
    """``jobs``: processes at most (parallel.workers); 1 computes everything here."""
    # the engine summary's freed temporaries: given back before the fork, else the pages this
    # process reuses are copied while the child still holds them
    heap.release_free_memory()
    with parallel.Beside("diagnosis tables", lambda: tables(profile), jobs) as side:
        lmem = local_memory(profile)
        why = explain(profile) if len(profile.commands) else None
        t, warned = side.result()
    if side.forked:
        profile.meta.warnings += warned
    found = findings(profile.summary, t["breakdown"], t["kernels"], t["stretches"], peaks_for(profile.meta),
                     extra=roofline_findings(t["roofline"]) + lmem_findings(lmem))
    if why is not None:
        found = rank_by_gain(found, why)
        why.drop_working_state()
    return Diagnosis(**t, findings=found, why=why, lmem=lmem)
