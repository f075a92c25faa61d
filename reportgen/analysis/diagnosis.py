"""The diagnosis of a PMU profile (model.Diagnosis): breakdown, kernels, overlap, findings.

Called once by ``analysis.derive`` after the engine summary (shares and findings read its busy
times and bytes). The per-command arrays are extracted once and shared by every part.
"""
from __future__ import annotations

import pandas as pd

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


def diagnose(profile: Profile) -> Diagnosis:
    a = command_arrays(profile.commands)
    ncores = max(profile.meta.num_cores, int(a["core"].max()) + 1 if len(a["core"]) else 0)
    span = int(a["end"].max() - a["start"].min()) if len(a["start"]) else 0
    breakdown, functions = breakdowns(profile, a)
    calls = pd.concat([t for t in (device_calls(profile, a), host_calls(profile, a, ncores))
                       if not t.empty] or [device_calls(profile, a)], ignore_index=True)
    kernels = kernel_table(calls, span, ncores)
    per_core, stretches = overlap(a, ncores)
    roof = roofline(profile, a, peaks_for(profile.meta))
    lmem = local_memory(profile)
    found = findings(profile.summary, breakdown, kernels, stretches, peaks_for(profile.meta),
                     extra=roofline_findings(roof) + lmem_findings(lmem))
    why = explain(profile) if len(profile.commands) else None
    if why is not None:
        found = rank_by_gain(found, why)
        why.drop_working_state()
    return Diagnosis(breakdown=breakdown, functions=functions, kernel_calls=calls, kernels=kernels,
                     overlap=per_core, stretches=stretches, findings=found, why=why,
                     roofline=roof, lmem=lmem)
