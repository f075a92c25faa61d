"""The roofline and the local-memory view in summary.txt and summary.json (keys ``roofline`` and
``lmem``): the tables of ``Diagnosis.roofline`` / ``Diagnosis.lmem`` as computed, nothing
recomputed (docs/metrics.md "Roofline", "Local memory")."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd

from reportgen.analysis.roofline import COLUMNS as ROOFLINE_COLUMNS
from reportgen.model import Diagnosis
from reportgen.writers.fixed_width import fixed_width, fmt

TOP_SCOPES = 5
NAME_WIDTH = 32
MAX_WIDTH = 120         # summary.txt lines fit a terminal
#: (column, header, kind) of the summary.txt roofline table
TEXT_COLUMNS = [("scope", "Scope", "id"), ("name", "Name", "id"), ("core", "Core", "id"),
                ("ns", "time", "ns"), ("bound_by", "bound by", "id"), ("intensity", "ops/DDR B", "ratio"),
                ("efficiency", "of roof", "fraction"), ("under_roof_ns", "under roof", "ns")]
CONFLICT_KEYS = ("dma", "dma_cmd_id", "tiu", "tiu_cmd_id", "overlap_start_ns", "overlap_ns", "banks",
                 "dma_operands", "tiu_operands", "dma_stall_cycles")


def _value(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if math.isnan(v) or math.isinf(v) else float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, (list, np.ndarray)):
        return [_value(x) for x in v]
    return v


def _cell(v, kind: str) -> str:
    if v is None:
        return "all" if kind == "id" else "n/a"
    if isinstance(v, str):
        return v if len(v) <= NAME_WIDTH else v[:NAME_WIDTH - 3] + "..."
    return fmt(v, kind)


def roofline_text(d: Diagnosis) -> str:
    """The five scopes with the most time under the roof, and each core's local-memory peak."""
    parts = []
    r = d.roofline
    if r is not None and len(r):
        top = r.head(TOP_SCOPES)
        headers = [f"{h}(us)" if k == "ns" else h for _, h, k in TEXT_COLUMNS]
        rows = [[_cell(row[c], k) for c, _, k in TEXT_COLUMNS] for row in top.to_dict("records")]
        parts.append(fixed_width(f"Time under the roof (top {len(top)} of {len(r)} scopes; "
                                 "docs/metrics.md \"Roofline\")", headers, rows))
    lm = d.lmem
    if lm is not None:
        lines = ["Local memory (live bytes per lane of 262,144; docs/metrics.md \"Local memory\")"]
        for c in lm.cores.itertuples(index=False):
            at = "n/a" if c.peak_at_ns != c.peak_at_ns else f"{c.peak_at_ns / 1000:.3f} us"
            lines += textwrap.wrap(f"core {c.core}: peak {c.peak_bytes:,} B at {at}; {c.accesses} accesses, "
                                   f"{c.undecoded} not placed; {c.conflict_candidates} TIU/DMA bank-conflict "
                                   f"candidates; {c.races} overwrite races", MAX_WIDTH,
                                   initial_indent="  ", subsequent_indent="    ")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def roofline_records(table: pd.DataFrame) -> list[dict]:
    if table is None or table.empty:
        return []
    return [{k: _value(v) for k, v in row.items()} for row in table[list(ROOFLINE_COLUMNS)].to_dict("records")]


def lmem_document(lm) -> dict:
    """``lmem``: per core (key = core index as text) peak_bytes, peak_at_ns, banks, counts, and the
    conflict candidates listed by the analysis (those with the largest stall × overlap, ranked;
    analysis/lmem.py LISTED_CONFLICTS per core, as in the workbook)."""
    if lm is None:
        return {}
    out = {}
    for c in lm.cores.to_dict("records"):
        core = int(c["core"])
        banks = lm.banks[lm.banks["core"] == core]
        conf = lm.conflicts[lm.conflicts["core"] == core]
        out[str(core)] = {
            **{k: _value(v) for k, v in c.items() if k != "core"},
            "banks": [{"bank": int(b.bank), "peak_bytes": int(b.peak_bytes), "peak_at_ns": _value(b.peak_at_ns)}
                      for b in banks.itertuples(index=False)],
            "conflict_candidates_listed": [{k: _value(r[k]) for k in CONFLICT_KEYS}
                                           for r in conf.to_dict("records")]}
    return out


def hardware_document(d: Diagnosis) -> dict:
    """summary.json keys ``roofline`` and ``lmem``."""
    return {"roofline": roofline_records(d.roofline), "lmem": lmem_document(d.lmem)}
