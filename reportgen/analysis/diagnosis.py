"""The diagnosis of a PMU profile (model.Diagnosis): breakdown, kernels, overlap, findings.

Called once by ``analysis.derive`` after the engine summary (the shares use its busy times).
"""
from __future__ import annotations

import pandas as pd

from reportgen.analysis.breakdown import breakdowns, command_arrays
from reportgen.model import (FINDING_COLUMNS, KERNEL_CALL_COLUMNS, KERNEL_COLUMNS, OVERLAP_COLUMNS,
                             STRETCH_COLUMNS, Diagnosis, Profile)


def _empty(columns) -> pd.DataFrame:
    return pd.DataFrame(columns=list(columns))


def diagnose(profile: Profile) -> Diagnosis:
    a = command_arrays(profile.commands)
    breakdown, functions = breakdowns(profile, a)
    return Diagnosis(breakdown=breakdown, functions=functions,
                     kernel_calls=_empty(KERNEL_CALL_COLUMNS), kernels=_empty(KERNEL_COLUMNS),
                     overlap=_empty(OVERLAP_COLUMNS), stretches=_empty(STRETCH_COLUMNS),
                     findings=_empty(FINDING_COLUMNS))
