"""Writes ``perfetto.pftrace``: track descriptors, then the first packet of every sequence, then
the events of each group chunk by chunk."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.errors import OutputError
from reportgen.model import Profile
from reportgen.heap import release_free_memory
from reportgen.progress import bar as progress_bar
from reportgen.writers.atomic import atomic_open
from reportgen.writers.perfetto.commands import commands_plan
from reportgen.writers.perfetto.counters import counters_plan
from reportgen.writers.perfetto.device import Device
from reportgen.writers.perfetto.host import host_plan
from reportgen.writers.perfetto.kernels import kernel_calls, kernels_plan
from reportgen.writers.perfetto.layers import layers_plan
from reportgen.writers.perfetto.overlap import overlap_plan
from reportgen.writers.perfetto.riding import riding
from reportgen.writers.perfetto.trace import Plan, Trace, pairs

FILE_NAME = "perfetto.pftrace"
CHUNK = 32_768                      # slices encoded and written at a time


def write(profile: Profile, summary: pd.DataFrame | None, out_dir, *, quiet: bool = False) -> Path:
    """Write ``out_dir/perfetto.pftrace`` (atomically) and return its path; ``summary`` (the
    engine summary) describes the core tracks, ``quiet`` hides the progress bar."""
    out = Path(out_dir) / FILE_NAME
    try:
        with atomic_open(out, "wb") as fh:
            _write_trace(profile, summary, Trace(fh), quiet)
    except OSError as err:
        raise OutputError(f"{out}: cannot write the Perfetto trace ({err.strerror or err})") from None
    return out


def _write_trace(profile: Profile, summary: pd.DataFrame | None, trace: Trace, quiet: bool) -> None:
    device = Device(profile, summary, trace)
    c = profile.commands
    plans: list[Plan | None] = []
    if len(c):
        ride = riding(c)
        plans.append(commands_plan(device, c, getattr(profile.diagnosis, "why", None), ride))
        plans.append(kernels_plan(device, kernel_calls(profile)))
        plans.extend(counters_plan(device, ride.counters))
        if profile.layer_view is not None:
            plans.append(layers_plan(device, profile.layer_view))
    plans.append(overlap_plan(device, profile))
    if len(profile.host):
        plans.append(host_plan(device, profile.host, c))
    plan = [x for x in plans if x is not None and x.n]
    trace.flush_descriptors()

    def cat(key):
        return np.concatenate([getattr(x, key) for x in plan]) if plan else np.zeros(0, np.int64)

    # interned data of every sequence first: all of a sequence's events come after it
    used = {}
    for table in ("names", "cats", "args", "strings"):
        used_pairs = [pairs(*x.used[table]) for x in plan if table in x.used]
        used[table] = (np.concatenate([p[0] for p in used_pairs] or [np.zeros(0, np.int64)]),
                       np.concatenate([p[1] for p in used_pairs] or [np.zeros(0, np.int64)]))
    counters = np.concatenate([x.counters if x.counters is not None else np.zeros(len(x.seq_ids), np.int64)
                               for x in plan]) if plan else np.zeros(0, np.int64)
    trace.intern(cat("seq_ids"), cat("tracks"), cat("first_ts"), used, counters)
    release_free_memory()       # the plans' temporaries: back to the system for the (long) encoding
    chunks = sum(math.ceil(x.n / CHUNK) for x in plan)
    with progress_bar(chunks, "perfetto", "chunk", quiet) as bar:
        for x in plan:
            for lo in range(0, x.n, CHUNK):
                trace.write(x.encode(lo, min(lo + CHUNK, x.n)))
                bar.update()
