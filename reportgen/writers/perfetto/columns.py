"""Command-frame columns as the encoders need them: integer codes, engine masks, typed values."""
from __future__ import annotations

import numpy as np
import pandas as pd


def column_values(c: pd.DataFrame, name: str, kind: str):
    """(values, present) of a command column for an annotation of ``kind``."""
    return array_values(c[name].array, kind)


def array_values(s, kind: str):
    """(values, present) of a column's (extension) array for an annotation of ``kind``."""
    present = ~np.asarray(s.isna(), bool)
    if kind == "double":
        return s.to_numpy(np.float64, na_value=0.0), present
    if s.dtype.kind in "iub":                        # numpy or nullable (Int64) integers
        return s.to_numpy(np.int64, na_value=0), present
    return np.asarray(pd.array(s).astype("Float64").fillna(0).astype("int64"), np.int64), present


def column_reader(c: pd.DataFrame, name: str, kind: str):
    """``read(rows)`` -> (values, present) of column ``name`` at ``rows`` for an annotation of
    ``kind`` (as :func:`column_values`), without a copy of the whole column."""
    s = c[name]
    plain = s.dtype.kind if isinstance(s.dtype, np.dtype) else ""
    data = s.to_numpy() if plain else None
    if plain in ("i", "u", "b"):                                  # numpy integers: none missing
        dtype = np.float64 if kind == "double" else np.int64
        return lambda rows: (data[rows].astype(dtype), np.ones(len(rows), bool))
    if plain == "f" and kind == "double":
        def read_float(rows):
            v = data[rows]
            missing = np.isnan(v)
            return np.where(missing, 0.0, v), ~missing
        return read_float
    array = s.array
    return lambda rows: array_values(array[rows], kind)


def float_values(c: pd.DataFrame, name: str, rows: np.ndarray) -> np.ndarray:
    """Column ``name`` at ``rows`` as float64, NaN where missing (no copy of the whole column)."""
    return np.asarray(c[name].array[rows].to_numpy(np.float64, na_value=np.nan))


def category_codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and their labels; a categorical column's own codes (no copy of strings)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), column.cat.categories
    codes, uniques = pd.factorize(column.astype(object))
    return codes, pd.Index(uniques)


def engine_is(c: pd.DataFrame, engine: str) -> np.ndarray:
    """Per row: is the command's engine ``engine``."""
    codes, names = category_codes(c["engine"])
    hit = np.append(np.asarray(names.astype(str) == engine, bool), False)   # code -1: missing
    return hit[codes]
