"""Reading one Ascend / MindSpore file: CSV and JSON with the vendor's quirks, and the rule that a
broken or unknown file in a known folder is a warning naming the file, never a refusal.

CSV quirks handled for every file (mapped by header name, never by position): trailing tabs
inside numbers, CRLF, ``N/A``, shapes wrapped in tripled quotes, optional/renamed columns.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.errors import InputError
from reportgen.model import Meta
from reportgen.parsers import limits


def read_csv(path: Path) -> pd.DataFrame:
    """An Ascend CSV as clean strings: headers and cells stripped of spaces/tabs/quotes,
    ``N/A`` and empty cells as missing."""
    limits.check_file(path, limits.current(None))
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True,
                         encoding="utf-8-sig")
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"not a readable CSV ({exc})") from None
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    df.columns = [str(c).strip() for c in df.columns]
    for c in df.columns:
        s = df[c].astype(str).str.strip().str.strip('"').str.strip()
        df[c] = s.where(~s.isin(["", "N/A", "NA", "nan", "None"]), None)
    return df


def read_json(f: Path):
    """A JSON file, or InputError naming it."""
    limits.check_file(f, limits.current(None))
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(str(f), f"invalid JSON ({exc})") from None


def num(s: pd.Series | None) -> pd.Series:
    """A column's numbers; text that is no number and infinities ("inf", "1e400") missing."""
    if s is None:
        return pd.Series(dtype=float)
    v = pd.to_numeric(s, errors="coerce")
    return v.where(np.isfinite(v.astype(np.float64)))


def col(df: pd.DataFrame, *names: str) -> pd.Series | None:
    """First column present among header variants (Block Dim / Block Num, ...)."""
    for n in names:
        if n in df.columns:
            return df[n]
    return None


def numeric_table(df: pd.DataFrame) -> pd.DataFrame:
    """Columns that are entirely numbers become numbers; the rest stays text."""
    out = df.copy()
    for c in out.columns:
        v = num(out[c])
        if v.notna().sum() == out[c].notna().sum() and out[c].notna().any():
            out[c] = v
    return out


@contextmanager
def tolerated(meta: Meta, path: Path):
    """Read one optional file of a known folder: a broken file (InputError) or an unexpected
    layout inside it (KeyError, TypeError, ValueError) becomes a warning naming the file, and
    the rest of the folder is still read."""
    try:
        yield
    except InputError as exc:
        meta.warn("unreadable-file", f"skipped: {exc.problem}", str(path))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        meta.warn("unreadable-file", f"skipped: unexpected content ({type(exc).__name__}: {exc})",
                  str(path))
