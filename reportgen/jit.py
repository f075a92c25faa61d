"""numba's set-up done once, in the process that forks.

The first call of any compiled function in a process loads numba's typing and target
registries (``BaseContext.refresh``: ~250 modules' declarations, 0.2-0.25 s of CPU), even when
the machine code comes from the cache. A forked process inherits them loaded; a process forked
before the first call loads them again for itself. :func:`ready` loads them here (through a
public call: a tiny cached function), before the pipeline forks the writers and the analysis'
child, so the run pays once instead of once per process; with the cyclic garbage collector
paused meanwhile (its collections over the ~50k objects it makes, all kept, cost 0.05 s more).
"""
from __future__ import annotations

from numba import njit

from reportgen.heap import collector_paused


@njit(cache=True)
def _identity(x):
    return x


def ready() -> None:
    """Load numba's registries in this process (a no-op once done)."""
    with collector_paused():
        _identity(0)
