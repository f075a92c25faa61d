"""Columns of a sheet: a header, typed numpy data, and the cell values and width it shows.

Each pandas column is converted once, vectorised: numbers stay int64/float64 with a mask of
empty cells, texts become codes into their distinct values (so each distinct text is
prepared once, however many rows repeat it). Missing values (NaN, ``<NA>``, None, "") are
empty cells; integers beyond 2**53, which a spreadsheet cannot hold exactly, become ``0x...``
text; texts longer than Excel's cell limit are cut. How a column becomes cells: the public
cell API takes :meth:`Column.values`, the fast path ``sheet_xml.cell_parts``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

#: Excel's limit for the characters in one cell.
CELL_MAX_CHARS = 32_767


@dataclass
class Column:
    """One column of a sheet.

    ``kind`` "number": ``data`` int64 or float64; "bool": bool; "text": ``data`` holds int codes
    into ``categories`` (strings, -1 = empty); "mixed": an object array of Python values (small
    tables only). ``missing`` marks empty cells of number and bool columns.
    """

    header: str
    kind: str
    data: np.ndarray
    missing: np.ndarray | None = None
    categories: np.ndarray | None = None
    num_format: str | None = None
    note: str = ""          # shown as a comment on the header cell
    cut: int = 0            # texts cut to Excel's cell limit
    printed: bool = True    # in the print area (register fields are not: see workbook.print_setup)
    # per distinct text, prepared once (not per chunk: a column can have a million of them):
    # its cell value, and per cell style its XML cell (filled by ``sheet_xml.cell_parts``)
    _lookup: np.ndarray | None = field(default=None, repr=False)
    xml_cells: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.data)

    def values(self, lo: int = 0, hi: int | None = None) -> list:
        """Python cell values of rows lo:hi, None for an empty cell."""
        if self.kind == "text":
            if self._lookup is None:
                self._lookup = np.append(self.categories, None).astype(object)
            return self._lookup[self.data[lo:hi]].tolist()   # code -1 picks the trailing None
        out = self.data[lo:hi].astype(object)
        if self.missing is not None:
            out[self.missing[lo:hi]] = None
        return out.tolist()

    def width(self) -> float:
        """Display width from the header and the first rows (autofit would be too slow)."""
        sample = slice(0, 300)
        if self.kind == "text":
            codes = self.data[sample]
            used = np.unique(codes[codes >= 0])
            longest = max((len(t) for t in self.categories[used].tolist()), default=0)
        elif self.kind == "number":
            data = self.data[sample]
            if self.missing is not None:
                data = data[~self.missing[sample]]
            top = float(np.abs(data.astype(np.float64)).max()) if len(data) else 0.0
            digits = len(str(int(top))) + (1 if (data < 0).any() else 0)
            if self.num_format not in ("0", None):
                digits += (digits - 1) // 3          # thousands separators
            longest = digits + (3 if data.dtype.kind == "f" else 0)
        elif self.kind == "bool":
            longest = 5
        else:
            longest = max((len(str(v)) for v in self.values(0, 300) if v is not None), default=0)
        return float(min(max(len(self.header) + 2, longest + 2, 6), 60))



def column_from_series(header: str, series: pd.Series, num_format: str | None = None,
                       note: str = "") -> Column:
    """Convert one pandas column to a typed Column, vectorised; missing values become empty."""
    s = series
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _text_column(header, s, note)
    if pd.api.types.is_bool_dtype(dtype):
        missing = s.isna().to_numpy(bool)
        data = s.to_numpy(dtype=bool, na_value=False)
        return Column(header, "bool", data, missing if missing.any() else None, note=note)
    if pd.api.types.is_integer_dtype(dtype):
        return _integer_column(header, s, num_format or "0", note)
    if dtype == object:
        typed = _typed_objects(s)
        if typed is not None:
            return column_from_series(header, typed, num_format, note)
    if pd.api.types.is_float_dtype(dtype):
        data = s.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = ~np.isfinite(data)  # inf has no cell value either (e.g. a zero-length rate)
        if num_format is None:
            # whole numbers stored as float (register tables with NaN gaps): integers with
            # format "0", so a 40-bit address shows all its digits instead of 1.09951E+12
            ok = data[~missing]
            if len(ok) and (ok == np.round(ok)).all() and (np.abs(ok) <= 2**53).all():
                return Column(header, "number", np.where(missing, 0, data).astype(np.int64),
                              missing if missing.any() else None, num_format="0", note=note)
        return Column(header, "number", data, missing if missing.any() else None,
                      num_format=num_format, note=note)
    return _text_column(header, s, note)


def _typed_objects(s: pd.Series) -> pd.Series | None:
    """An object column that holds only numbers or only booleans, as a typed column.

    Register tables and framework tables often carry Python ints with None; written as text
    they could not be sorted or summed.
    """
    kind = pd.api.types.infer_dtype(s, skipna=True)
    try:
        if kind == "integer":
            return s.astype("Int64")
        if kind in ("floating", "mixed-integer-float", "decimal"):
            return pd.to_numeric(s).astype(np.float64)
        if kind == "boolean":
            return s.astype("boolean")
    except (OverflowError, TypeError, ValueError):
        return None  # e.g. integers beyond 64 bits: written as text
    return None


def _integer_column(header: str, s: pd.Series, num_format: str, note: str) -> Column:
    """Integers as numbers; a column holding values a double cannot represent becomes hex text."""
    missing = s.isna().to_numpy(bool)
    if str(s.dtype).lower() == "uint64":
        raw = s.to_numpy(dtype=np.uint64, na_value=0)
        big = bool((raw > 2**53).any())
        data = raw if big else raw.astype(np.int64)
    else:
        data = s.to_numpy(dtype=np.int64, na_value=0)
        big = bool(((data > 2**53) | (data < -(2**53))).any())
    if big:
        text = pd.Series([hex(int(v)) if v >= 0 else "-" + hex(-int(v)) for v in data.tolist()],
                         dtype=object).where(~missing, None)
        return _text_column(header, text, (note + " " if note else "") +
                            "Values beyond 2**53 are written as hex text.")
    return Column(header, "number", data, missing if missing.any() else None,
                  num_format=num_format, note=note)


def _text_column(header: str, series: pd.Series, note: str) -> Column:
    """Texts as codes into their distinct values, so each distinct text is prepared once."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy().astype(np.int64)
        cats, long = _category_texts(series.dtype)
    else:
        s = series.astype(object)
        s = s.where(s.notna(), None)
        if pd.api.types.infer_dtype(s, skipna=True) not in ("string", "empty"):
            s = s.map(lambda v: v if v is None or type(v) is str else str(v))
        codes, uniques = pd.factorize(s, use_na_sentinel=True)
        codes = codes.astype(np.int64)
        cats, long = _safe_texts(pd.Series(uniques, dtype=object))
        cats = cats.to_numpy(dtype=object)
    empty = np.flatnonzero(cats == "")
    if len(empty):
        codes = np.where(np.isin(codes, empty), -1, codes)  # "" is an empty cell, not a text
    cut = int(np.isin(codes, np.flatnonzero(long)).sum()) if long.any() else 0
    return Column(header, "text", codes, None, cats, None, note, cut)


#: id(categories) -> (categories, safe texts, cut flags) of the last categorical columns seen
_CATEGORY_TEXTS: dict[int, tuple[pd.Index, np.ndarray, np.ndarray]] = {}


def _category_texts(dtype: pd.CategoricalDtype) -> tuple[np.ndarray, np.ndarray]:
    """The safe texts of a categorical column's categories and which were cut, once per
    categories object: every command sheet slices the same categorical columns (kernel,
    function names ...). Keyed by the object itself, not the dtype: unordered dtypes with the
    same categories in another order compare equal. Read-only: the arrays are shared."""
    categories = dtype.categories
    hit = _CATEGORY_TEXTS.get(id(categories))
    if hit is not None and hit[0] is categories:
        return hit[1], hit[2]
    cats, long = _safe_texts(pd.Series(categories.astype(str), dtype=object))
    cats = cats.to_numpy(dtype=object)
    cats.flags.writeable = long.flags.writeable = False
    if len(_CATEGORY_TEXTS) >= 32:
        _CATEGORY_TEXTS.clear()
    _CATEGORY_TEXTS[id(categories)] = (categories, cats, long)
    return cats, long


def _safe_texts(texts: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """Cut over-long texts to Excel's cell limit; defuse xlsxwriter's raw rich-string path.

    xlsxwriter writes a string of the form ``<r>...</r>`` into the XML unescaped (it takes it
    for a pre-built rich string), which would corrupt the sheet; a trailing space keeps such a
    value visible as typed while sending it through the escaping path. Returns the texts and
    which of them were cut.
    """
    if texts.empty:
        return texts, np.zeros(0, bool)
    long = (texts.str.len() > CELL_MAX_CHARS).to_numpy(bool)
    rich = (texts.str.startswith("<r>") & texts.str.endswith("</r>")).to_numpy(bool)
    if not (long.any() or rich.any()):
        return texts, long
    texts = texts.copy()
    texts[long] = texts[long].str.slice(0, CELL_MAX_CHARS - 1) + "…"
    texts[rich] = texts[rich] + " "
    return texts, long


def cut_count(columns: list[Column]) -> int:
    """Text cells of ``columns`` cut to Excel's cell limit."""
    return sum(col.cut for col in columns)
