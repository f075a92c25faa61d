"""The Tables tab of framework traces: every analysis table of ``profile.tables``, column by
column, as one gzip'd JSON block (:func:`table_payload`) that the page draws as sortable tables,
and the Device lanes table formatted here for the static framework overview.

``reportgen.testing.html_page.read_tables`` reads the block back (the page's reader in Python).
"""
from __future__ import annotations

import gzip
import json
import math
from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis.framework import TABLE_DEFINITIONS
from reportgen.model import Profile
from reportgen.writers.html.units import column_time_unit, time_unit

#: Rows drawn per table at once (the page says how many rows exist).
TABLE_ROWS_SHOWN = 500
#: Rows embedded per table: sorting a column sorts all of them. Longer tables keep their first
#: rows in the page (the workbook and tables/*.csv have every row) and the page says so.
TABLE_ROWS_EMBEDDED = 20_000
#: Call Stacks rows embedded at most (the frames of the Operators by Stack rows embedded)
CALL_STACK_ROWS_EMBEDDED = 10 * TABLE_ROWS_EMBEDDED
#: Definitions of tables that are not framework analyses (analysis.framework has the others).
EXTRA_DEFINITIONS = {
    "Device lanes": "Per device, one row per stream/lane: commands, busy = union of the lane's "
                    "work intervals (ns), idle = span - busy, util = busy / span of the whole "
                    "profile; then the device row, busy = union over all its lanes (never above "
                    "the span); Overall adds the devices.",
}


def table_definition(name: str) -> str:
    return TABLE_DEFINITIONS.get(name) or EXTRA_DEFINITIONS.get(name, "")


def table_order(profile: Profile) -> list[str]:
    """Device lanes first (it is the framework overview), then the analyses in their own order."""
    names = list(profile.tables)
    return [n for n in names if n == "Device lanes"] + [n for n in names if n != "Device lanes"]


def column_format(name: str, values: pd.Series) -> dict[str, Any]:
    """How the page shows a column: ``kind`` int | bigint | float | frac | time | text,
    ``decimals``, and the header ``label``.

    A duration column (its name ends in ``_ns``, ``(ns)``, ``(us)``, ``(ms)``...) is shown in
    one unit chosen from its values (:func:`units.time_unit`) and named in its header
    (``busy_ns`` -> ``busy (ms)``): ``kind`` time, ``factor`` = stored value -> shown unit.
    Other numbers are shown as the analysis stored them; only the number of decimals is chosen
    here: none for whole numbers, 2 for percentages, 3 otherwise. A 0..1 utilisation column
    (``util``) is shown as a percentage. Sorting always uses the stored values.
    """
    fmt = _value_format(name, values)
    stored = column_time_unit(name)
    if stored is not None and fmt["kind"] in ("int", "float"):
        stem, ns_per_stored = stored
        arr = values.to_numpy(np.float64, na_value=np.nan) * ns_per_stored
        unit, scale = time_unit(arr)
        return {"kind": "time", "decimals": 0 if scale == 1.0 else 3, "factor": ns_per_stored / scale,
                "label": f"{stem} ({unit})"}
    return {**fmt, "label": name}


def _value_format(name: str, values: pd.Series) -> dict[str, Any]:
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype):
        return {"kind": "text", "decimals": 0}
    if pd.api.types.is_integer_dtype(dtype):
        # beyond 2**53 (epoch nanoseconds) a JavaScript number is not exact: the page gets the
        # digits as text and formats and sorts them as BigInt
        known = values.dropna()
        big = len(known) and max(abs(int(known.min())), abs(int(known.max()))) > 2**53
        return {"kind": "bigint" if big else "int", "decimals": 0}
    arr = values.to_numpy(np.float64, na_value=np.nan)
    finite = arr[np.isfinite(arr)]
    if name == "util" or name.endswith("_util"):
        return {"kind": "frac", "decimals": 2}
    if len(finite) and np.all(finite == np.round(finite)) and np.abs(finite).max() < 2**53:
        return {"kind": "int", "decimals": 0}
    return {"kind": "float", "decimals": 2 if "%" in name else 3}


def format_cell(value: Any, fmt: dict[str, Any]) -> str:
    """The text of one cell (the page's ``fmtCell`` does the same for the Tables tab)."""
    if value is None or value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    kind, d = fmt["kind"], fmt["decimals"]
    if kind == "text":
        return str(value)
    if kind == "frac":
        return f"{float(value) * 100:,.{d}f}%"
    if kind == "time":
        return f"{float(value) * fmt['factor']:,.{d}f}"
    return f"{float(value):,.{d}f}" if kind == "float" else f"{int(value):,}"   # int, bigint


def _column_values(values: pd.Series, kind: str) -> list[Any]:
    """JSON-ready values of one column: numbers as numbers (exact), text as text, missing None."""
    if kind == "text":
        obj = values.astype("object")
        return [None if (v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)))
                else str(v) for v in obj.tolist()]
    if kind in ("int", "bigint"):
        missing = values.isna().to_numpy(bool)
        ints = [None if m else int(v) for v, m in zip(values.astype("object").tolist(), missing)]
        return ints if kind == "int" else [None if v is None else str(v) for v in ints]
    out = values.to_numpy(np.float64, na_value=np.nan).tolist()
    return [None if not math.isfinite(v) else v for v in out]


def embedded_rows(tables: dict[str, pd.DataFrame], name: str) -> int:
    """Rows of table ``name`` the page holds: TABLE_ROWS_EMBEDDED; Call Stacks: every frame of
    the Operators by Stack rows the page holds (a click on one opens them), at most
    CALL_STACK_ROWS_EMBEDDED."""
    stacks = tables.get("Operators by Stack")
    if name != "Call Stacks" or stacks is None or "Stack Id" not in stacks.columns:
        return TABLE_ROWS_EMBEDDED
    last = stacks["Stack Id"].iloc[:TABLE_ROWS_EMBEDDED].max()
    if last is pd.NA or last != last:
        return 0
    ids = tables[name]["Stack Id"].to_numpy()
    return min(int(np.searchsorted(ids, int(last), "right")), CALL_STACK_ROWS_EMBEDDED)


def table_payload(profile: Profile) -> tuple[list[dict[str, Any]], bytes]:
    """Every table of ``profile.tables`` column by column, as one gzip'd JSON document.

    Returns the per-table headers (name, definition, rows, embedded rows, columns with their
    format), which the page also shows statically, and the compressed document ``[{"columns":
    [[values...], ...]}, ...]`` in the same order. :func:`read_tables` reads it back.
    """
    heads, bodies = [], []
    for i, name in enumerate(table_order(profile)):
        df = profile.tables[name]
        part = df.iloc[:embedded_rows(profile.tables, name)]
        cols, values = [], []
        for j, col in enumerate(df.columns):
            fmt = column_format(str(col), df.iloc[:, j])
            cols.append({"name": fmt.pop("label"), "stored_name": str(col), **fmt})
            values.append(_column_values(part.iloc[:, j], fmt["kind"]))
        heads.append({"id": f"t{i}", "name": name, "definition": table_definition(name),
                      "rows": int(len(df)), "embedded": int(len(part)), "columns": cols})
        bodies.append({"columns": values})
    raw = json.dumps(bodies, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    return heads, gzip.compress(raw, compresslevel=6, mtime=0)


def static_table(profile: Profile, name: str) -> dict[str, Any] | None:
    """A table formatted in Python for the static page (the framework overview's Device lanes)."""
    df = profile.tables.get(name)
    if df is None:
        return None
    fmts = [column_format(str(c), df.iloc[:, j]) for j, c in enumerate(df.columns)]
    rows = []
    for rec in df.itertuples(index=False):
        rows.append({"overall": str(rec[0]) == "Overall",
                     "cells": [format_cell(v, f) for v, f in zip(rec, fmts)]})
    return {"name": name, "definition": table_definition(name),
            "columns": [{"name": f["label"], "text": f["kind"] == "text"} for f in fmts],
            "rows": rows}

