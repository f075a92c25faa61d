"""Adaptive time units of the page: one unit per axis or table column, chosen from its values.

The page's JavaScript has the same rule (``timeUnit`` in report.js) for the axes and hover
texts it draws itself; this module serves the tables and charts built in Python.
"""
from __future__ import annotations

import numpy as np

#: (name, ns per unit), smallest first
TIME_UNITS = [("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)]
#: units of the time columns of the analysis tables, by the suffix of their name
SUFFIX_NS = {"(ns)": 1.0, "_ns": 1.0, "(us)": 1e3, "(µs)": 1e3, "_us": 1e3, "(ms)": 1e6, "_ms": 1e6,
             "(s)": 1e9}


def time_unit(values_ns) -> tuple[str, float]:
    """The largest unit in which the largest magnitude of ``values_ns`` is still >= 1
    (ns when nothing is known), e.g. 1,211,585 ns -> ms."""
    arr = np.abs(np.asarray(values_ns, dtype=np.float64))
    arr = arr[np.isfinite(arr)]
    top = float(arr.max()) if len(arr) else 0.0
    name, scale = TIME_UNITS[0]
    for n, s in TIME_UNITS:
        if top >= s:
            name, scale = n, s
    return name, scale


def fmt_duration(ns: float) -> str:
    """One duration in its own unit, 3 decimals above ns: ``1.212 ms``, ``850 ns``."""
    name, scale = time_unit([ns])
    return f"{ns:,.0f} ns" if scale == 1.0 else f"{ns / scale:.3f} {name}"


def column_time_unit(name: str) -> tuple[str, float] | None:
    """(stem, ns per stored unit) of a table column named as a time (``busy_ns``, ``Steps (ns)``,
    ``Host-Device (ms)``), None for other columns."""
    for suffix, scale in SUFFIX_NS.items():
        if name.endswith(suffix):
            return name[: -len(suffix)].rstrip(" _") or name, scale
    return None
