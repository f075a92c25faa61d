"""The ``--trace_file`` host trace (tpudnn / tpu-train / PyTorch chrome trace) as read: its
complete events with host-clock times.  Placing them on the device time axis is
:mod:`reportgen.analysis.host_align`'s job.

As the reference does (pmu-dump-format.md §12.3), only complete events (``"ph": "X"``) with a
``ts`` are kept; ``B``/``E`` pairs, instants, counters and metadata are ignored.  Start =
``ts`` µs × 1000 rounded to ns, end = (``ts`` + ``dur``) × 1000 rounded (missing ``dur`` = 0), so
rounding never makes a nested event stick out of its parent.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.model import HostTrace
from reportgen.options import MAX_INPUT_MB
from reportgen.parsers.chrome.reader import read_events


def _us_to_ns(us) -> np.ndarray:
    return np.round(np.asarray(us, np.float64) * 1000.0).astype(np.int64)


def read_host_trace(path: str | Path, *, max_input_mb: int = MAX_INPUT_MB) -> HostTrace:
    """Read a host trace (plain, gzip or zip; an event array or a ``traceEvents`` object) of at
    most ``max_input_mb`` MB of JSON text."""
    path = Path(path)
    events, _, warnings = read_events(path, label="host trace", max_input_mb=max_input_mb)
    cols = {k: [ev.get(k) for ev in events] for k in ("name", "cat", "ph", "ts", "dur", "pid", "tid", "args")}
    df = pd.DataFrame(cols)
    ts = pd.to_numeric(df["ts"], errors="coerce")
    complete = ((df["ph"] == "X") & ts.notna()).to_numpy(bool)
    df = df[complete]
    ts = ts[complete].to_numpy(np.float64)
    dur = np.maximum(pd.to_numeric(df["dur"], errors="coerce").fillna(0.0).to_numpy(np.float64), 0.0)
    # the end is rounded from ts + dur, not start + rounded dur: a child that ends inside its
    # parent in µs still does after rounding (rounding is monotone)
    frame = pd.DataFrame({
        "name": df["name"].astype(object).where(df["name"].notna(), "").astype(str).to_numpy(object),
        "cat": df["cat"].astype(object).where(df["cat"].notna(), "").to_numpy(object),
        "pid": df["pid"].to_numpy(object), "tid": df["tid"].to_numpy(object),
        "args": df["args"].to_numpy(object),
        "start_ns": _us_to_ns(ts), "end_ns": _us_to_ns(ts + dur),
    })
    return HostTrace(str(path), frame, len(events), warnings)
