"""The ``--trace_file`` host trace (tpudnn / tpu-train / PyTorch chrome trace) as read: its
complete events with host-clock times.  Placing them on the device time axis is
:mod:`reportgen.analysis.host_align`'s job.

As the reference does (pmu-dump-format.md §12.3), only complete events (``"ph": "X"``) are
kept; ``B``/``E`` pairs, instants, counters and metadata are ignored.  Times are validated as in
every trace (:mod:`reportgen.parsers.times`): an event whose ``ts`` or ``dur`` is not a number
within the ±2^62 ns window, or that would end beyond it, is dropped and counted.  Start =
``ts`` µs × 1000 rounded to ns, end = (``ts`` + ``dur``) × 1000 rounded (missing or negative
``dur`` = 0), so rounding never makes a nested event stick out of its parent.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.model import HostTrace
from reportgen.options import MAX_INPUT_MB
from reportgen.parsers.chrome.events import plain_ids
from reportgen.parsers.chrome.reader import read_events
from reportgen.parsers.times import TIME_LIMIT_NS, parse_us, spans


def read_host_trace(path: str | Path, *, max_input_mb: int = MAX_INPUT_MB) -> HostTrace:
    """Read a host trace (plain, gzip or zip; an event array or a ``traceEvents`` object) of at
    most ``max_input_mb`` MB of JSON text."""
    path = Path(path)
    events, _, warnings = read_events(path, label="host trace", max_input_mb=max_input_mb)
    cols = {k: np.fromiter([ev.get(k) for ev in events], dtype=object, count=len(events))
            for k in ("name", "cat", "ph", "ts", "dur", "pid", "tid", "args")}
    position = np.flatnonzero(cols["ph"] == "X")           # index in the file's event list
    x = {k: v[position] for k, v in cols.items()}
    times = spans(parse_us(x["ts"]), parse_us(x["dur"]), position, noun="complete events")
    warnings = warnings + times.warnings
    df = pd.DataFrame({k: v[times.keep] for k, v in x.items()})
    # the end is rounded from ts + dur, not start + rounded dur: a child that ends inside its
    # parent in µs still does after rounding (rounding is monotone).  Both are valid numbers
    # now (pandas reads them as floats, so the end may land a float step past the window)
    ts_us = pd.to_numeric(df["ts"], errors="coerce").to_numpy(np.float64)
    dur_us = np.maximum(pd.to_numeric(df["dur"], errors="coerce").fillna(0.0).to_numpy(np.float64), 0.0)
    end = np.rint((ts_us + dur_us) * 1000.0)
    end = np.where(np.isfinite(end), end, times.start + times.dur).astype(np.int64)
    end = np.clip(end, times.start, TIME_LIMIT_NS - 1)
    frame = pd.DataFrame({
        "name": df["name"].astype(object).where(df["name"].notna(), "").astype(str).to_numpy(object),
        "cat": df["cat"].astype(object).where(df["cat"].notna(), "").to_numpy(object),
        "pid": plain_ids(df["pid"].to_numpy(object))[0],
        "tid": plain_ids(df["tid"].to_numpy(object))[0],
        "args": df["args"].to_numpy(object),
        "start_ns": times.start, "end_ns": end,
    })
    return HostTrace(str(path), frame, len(events), warnings)
