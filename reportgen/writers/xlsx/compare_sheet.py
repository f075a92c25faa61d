"""The workbook's "Compare" sheet (``--baseline``): the engine, Function Type, kernel and (both
runs with layers) layer deltas of analysis/compare.py, one block under the other, each with its
header row."""
from __future__ import annotations

import math

import pandas as pd

from reportgen.analysis.compare import NOISE, Comparison
from reportgen.writers.xlsx.sheet_columns import table_columns
from reportgen.writers.xlsx.workbook import Book
from reportgen.writers.xlsx import xlsxwriter_private as private

SHEET = "Compare"


def _noise_text() -> str:
    return "; ".join(f"{unit}: |delta| <= max({rel:.0%} of baseline, {floor:g})"
                     for unit, (rel, floor) in NOISE.items())


def write_compare_sheet(book: Book, comparison: Comparison) -> str:
    """Write the sheet; returns its name."""
    name = book.unique_name(SHEET)
    ws = book.sheet(name, "#7030A0")
    row = 0
    for text in (f"This run: {comparison.new}", f"Baseline: {comparison.baseline}",
                 "Deltas are new - baseline; pct = delta / |baseline|. A 'noise' cell is TRUE when "
                 f"the change is within run-to-run noise ({_noise_text()}; docs/metrics.md).",
                 "Kernels: summed wall time of their calls (count = calls); Function Types: busy "
                 "time of their work commands (count = commands), per core and engine added up; "
                 "status new / gone: only in this run / only in the baseline."):
        ws.write_string(row, 0, text, book.key if row < 2 else None)
        row += 1
    blocks = [("Per core and engine", comparison.engines),
              ("Per Function Type", comparison.function_types), ("Per kernel", comparison.kernels)]
    if not comparison.operators.empty:          # framework traces
        blocks.append(("Per operator", comparison.operators))
    if not comparison.layers.empty:             # both runs with layers
        blocks.append(("Per layer (subnet_id, file_line = final.mlir line; status new / gone / "
                       "changed / noise)", comparison.layers))
    for title, frame in blocks:
        row += 1
        ws.write_string(row, 0, title, book.title)
        row += 1
        if frame.empty:
            ws.write_string(row, 0, "nothing on either side")
            row += 1
            continue
        columns = table_columns(frame.reset_index(drop=True))
        for c, col in enumerate(columns):
            private.check(ws.write_string(row, c, col.header, book.header), name, row)
            ws.set_column(c, c, max(col.width(), 11))
        row += 1
        for values in zip(*(col.values() for col in columns)):
            for c, v in enumerate(values):
                if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
                    continue                       # empty = unknown
                if isinstance(v, bool):
                    ws.write_boolean(row, c, v)
                elif isinstance(v, (int, float)):
                    ws.write_number(row, c, v)
                else:
                    ws.write_string(row, c, str(v))
            row += 1
    return name
