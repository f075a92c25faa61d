"""The workbook's rows built as byte matrices (writers/xlsx/sheet_bytes.py) are byte for byte
the XML of the string path (sheet_xml.row_chunks): on the command sheets of a synthetic dump
(register fields and all) and on columns made to hit every corner (negative and huge integers,
missing values, floats repr'd in scientific notation, escaped and non-ASCII texts, a text too
wide for a matrix)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reportgen.parsers.pmu import load_dump
from reportgen.testing.synth import SynthConfig, write_dump
from reportgen.writers.xlsx import sheet_bytes, sheet_xml
from reportgen.writers.xlsx.columns import column_from_series
from reportgen.writers.xlsx.sheet_columns import command_sheet_columns


def _both(columns, first_row=1, lo=0, hi=None, styles=None):
    hi = len(columns[0]) if hi is None else hi
    styles = styles or [0] * len(columns)
    text = "".join(x for _, _, x in sheet_xml.row_chunks(columns, lo, hi, first_row, styles))
    data = b"".join(x for _, _, x in sheet_bytes.row_chunks(columns, lo, hi, first_row, styles))
    return text.encode("utf-8"), data


def test_command_sheets_as_bytes_equal_the_string_path(tmp_path, monkeypatch):
    monkeypatch.setattr(sheet_xml, "CHUNK_CELLS", 5_000)      # many chunks, boundaries inside
    dump = write_dump(tmp_path, SynthConfig(cores=2, cmds_per_core=1500, seed=3, write_truth=False)).dump_dir
    p = load_dump(dump)
    c = p.commands
    for engine in ("TIU", "GDMA"):
        pos = np.flatnonzero((c["engine"] == engine).to_numpy() & (c["core"] == 0).to_numpy())
        columns = command_sheet_columns(p, pos, True)
        styles = [k % 3 for k in range(len(columns))]           # some cells styled
        text, data = _both(columns, styles=styles)
        assert data == text and len(data) > 10_000
        text, data = _both(columns, first_row=5, lo=7, hi=len(pos) - 3, styles=styles)
        assert data == text


def test_corner_cells_as_bytes_equal_the_string_path():
    n = 400
    rng = np.random.default_rng(5)
    ints = pd.Series(rng.integers(-10**15, 10**15, n), dtype="Int64")
    ints[::7] = pd.NA
    floats = pd.Series(rng.normal(0, 1, n) * 10.0 ** rng.integers(-8, 20, n))
    floats[::5] = np.nan
    floats[3] = 0.0
    fours = pd.Series([round(x, int(d)) for x, d in zip(rng.normal(0, 1000, n), rng.integers(0, 5, n))])
    fours[1:9] = [-0.0, 0.0, 1e15, -123456789.0, 99_999_999_999.9999, 0.0001, -0.5, 2.25]
    fours[::9] = np.nan
    whole = pd.Series(rng.integers(-10**15, 10**15, n).astype(float))
    words = ["plain", "a & b <c>", " lead", "_x0041_ literal", "ctl\x01x", "ünïcödé 字", "", None]
    texts = pd.Series([words[i % len(words)] for i in range(n)], dtype=object)
    flags = pd.Series([True, False, None, True] * (n // 4), dtype="boolean")
    columns = [column_from_series("i", ints), column_from_series("f", floats),
               column_from_series("t", texts), column_from_series("b", flags),
               column_from_series("4", fours), column_from_series("w", whole)]
    assert [c.kind for c in columns] == ["number", "number", "text", "bool", "number", "number"]
    assert sheet_bytes._float_reprs(columns[4].data, columns[4].missing) is not None   # vectorised
    assert sheet_bytes._float_reprs(columns[1].data, columns[1].missing) is None       # repr'd
    text, data = _both(columns, styles=[1, 2, 0, 3, 0, 4])
    assert data == text
    assert b"<v>-0.0</v>" in data and b"<v>99999999999.9999</v>" in data and b"<v>1000000000000000.0</v>" in data
    wide = column_from_series("w", pd.Series(["x" * 3000 if i == 9 else "y" for i in range(n)]))
    assert sheet_bytes.chunk_bytes([wide], 0, n, 0, [0]) is None      # the string way...
    text, data = _both([wide, columns[0]])
    assert data == text                                                # ...same bytes


def test_repeating_ratios_as_bytes_equal_the_string_path():
    """Ratios (uArch Rate) repeat a few values that are not 4-decimal: formatted once per
    distinct value and picked; a chunk holding -0.0 is repr'd value by value (factorize would
    take it for 0.0)."""
    n = 600
    ratios = pd.Series(np.array([1.0, 49 / 52, 1 / 3, 2 / 3, 1e-7 / 3, 0.0]).take(np.arange(n) % 6))
    ratios[::11] = np.nan
    ratios[450] = -0.0                                  # in the last chunk of 150 rows only
    col = column_from_series("r", ratios)
    assert sheet_bytes._float_reprs(col.data[:150], col.missing[:150]) is None
    text, data = _both([col], styles=[2])
    assert data == text
    assert b"<v>0.3333333333333333</v>" in data and b"<v>-0.0</v>" in data
    assert b"<v>%s</v>" % repr(1e-7 / 3).upper().encode() in data   # 3.33...E-08
    chunks = [x for _, _, x in sheet_bytes.row_chunks([col], 0, 150, 1, [0])]
    assert chunks[0].count(b"<c/>") == 14               # NaN rows stay empty cells


def test_category_texts_follow_each_columns_own_order():
    """Unordered categoricals with the same categories in another order compare equal as
    dtypes; each column's prepared texts must still be in its own categories' order."""
    a = pd.Series(["SYS", "sPorD", "SYS"], dtype=pd.CategoricalDtype(["SYS", "sPorD"]))
    b = pd.Series(["SYS", "sPorD", "SYS"], dtype=pd.CategoricalDtype(["sPorD", "SYS"]))
    assert a.dtype == b.dtype
    for s in (a, b, a):
        col = column_from_series("t", s)
        assert [col.categories[k] for k in col.data] == ["SYS", "sPorD", "SYS"]


def test_columns_of_one_value_as_bytes_equal_the_string_path(monkeypatch):
    """A chunk whose integers are all one value (a command sheet's Engine Id and Core Id) is one
    constant cell: negative, huge, zero, styled or not, with an empty cell (then cell by cell),
    and a column constant in some chunks only."""
    monkeypatch.setattr(sheet_xml, "CHUNK_CELLS", 600)      # 100 rows a chunk at 6 columns
    n = 350
    steps = pd.Series(np.repeat([7, -3, 10**15, 0], [100, 100, 100, 50]))
    holed = pd.Series(np.full(n, 42), dtype="Int64")
    holed[120] = pd.NA
    columns = [column_from_series("neg", pd.Series(np.full(n, -12345))),
               column_from_series("zero", pd.Series(np.zeros(n, np.int64))),
               column_from_series("huge", pd.Series(np.full(n, 2**52 + 1))),
               column_from_series("holed", holed), column_from_series("steps", steps),
               column_from_series("u8", pd.Series(np.full(n, 200, np.uint8)))]
    assert all(c.kind == "number" for c in columns)
    text, data = _both(columns, styles=[0, 1, 2, 3, 4, 0])
    assert data == text
    assert data.count(b"<v>-12345</v>") == n and data.count(b"<v>4503599627370497</v>") == n
    assert data.count(b"<v>42</v>") == n - 1 and data.count(b"<v>-3</v>") == 100
