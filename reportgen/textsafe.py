"""Input text made safe for every output, in one place.

* :func:`clean_profile` - text that no output encoding can hold is replaced once, right after
  parsing, and counted as one warning. Python keeps such text as *surrogate* code points: a lone
  ``\\ud800`` escape in a JSON trace, or a byte of a file or folder name that is not UTF-8 (the
  path is a "surrogateescape" str). UTF-8 cannot encode a surrogate, so one such name used to
  fail the workbook or perfetto writer and no report was written. Each surrogate becomes U+FFFD.
  The usual case (nothing to replace) is one JSON encoding pass per text column, in C; columns
  are only walked value by value when they hold something to replace, and categoricals are
  cleaned per category, never per command.
* :func:`relative_href` - the one way a link to a file of ours is built from input names (the
  several-dump ``index.html`` links to folders named after the dumps): every path segment is
  percent-encoded, so no name can become a scheme (``javascript:``), a query, a fragment or a
  parent folder. Nothing else is ever emitted as a link.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from reportgen.model import LazyTables, Profile

#: the code points UTF-8 (and so every output file) cannot encode
_SURROGATES = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
#: values encoded at once when checking a long column (bounds the temporary text)
CHUNK = 4096


def clean_text(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD."""
    return _SURROGATES.sub(REPLACEMENT, text)


def _opaque(value: Any) -> str:
    return ""          # numbers and objects that are not text: nothing to encode


def _encodable(values: Any) -> bool:
    """Whether every str in ``values`` (nested lists, tuples and dicts included) encodes as
    UTF-8: the C JSON encoder, no Python code per value; a long list in chunks (bounded memory)."""
    if isinstance(values, list) and len(values) > CHUNK:
        return all(_encodable(values[i:i + CHUNK]) for i in range(0, len(values), CHUNK))
    text = json.dumps(values, ensure_ascii=False, skipkeys=True, check_circular=False, default=_opaque)
    if text.isascii():                  # O(1): a str knows the widest character it holds
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_record(v: Any) -> bool:
    return dataclasses.is_dataclass(v) and not isinstance(v, type)


class _Cleaner:
    """Replaces surrogates in a Profile in place; counts the values it changed per place."""

    def __init__(self) -> None:
        self.changed: dict[str, int] = {}

    def value(self, v: Any, place: str) -> Any:
        """``v`` with its text cleaned (str, and the str inside lists, tuples and dicts)."""
        if isinstance(v, str):
            if _SURROGATES.search(v) is None:
                return v
            self.changed[place] = self.changed.get(place, 0) + 1
            return clean_text(v)
        if isinstance(v, dict):
            return {self.value(k, place): self.value(x, place) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(self.value(x, place) for x in v)
        return v

    def column(self, values: np.ndarray, place: str) -> np.ndarray:
        """An object column cleaned: each distinct value once, or cell by cell when the cells
        are not hashable (dicts of args)."""
        out = values.copy()
        try:
            codes, uniques = pd.factorize(values, use_na_sentinel=True)
        except TypeError:
            for i, v in enumerate(values):
                out[i] = self.value(v, place)
            return out
        fixed = np.empty(len(uniques), object)
        fixed[:] = [self.value(u, place) for u in uniques]
        changed = np.array([f is not u for f, u in zip(fixed, uniques)], bool)
        rows = np.flatnonzero((codes >= 0) & changed[np.maximum(codes, 0)])
        out[rows] = fixed[codes[rows]]
        return out

    def categorical(self, cat: pd.Categorical, place: str) -> pd.Categorical:
        fixed = np.array([self.value(c, place) for c in cat.categories], object)
        remap, uniques = pd.factorize(fixed)            # two names may now read the same
        codes = np.where(cat.codes >= 0, remap[np.maximum(cat.codes, 0)], -1)
        return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object),
                                         ordered=cat.ordered)

    def frame(self, df: pd.DataFrame, place: str) -> None:
        for j, name in enumerate(df.columns):
            s = df.iloc[:, j]
            where = f"{place}.{name}"
            if isinstance(s.dtype, pd.CategoricalDtype):
                if not _encodable(s.cat.categories.tolist()):
                    df.isetitem(j, pd.Series(self.categorical(s.array, where), index=df.index))
            elif pd.api.types.is_string_dtype(s.dtype):
                values = s.to_numpy(object)
                if not _encodable(values.tolist()):
                    df.isetitem(j, pd.Series(self.column(values, where), index=df.index, dtype=s.dtype))
        if not _encodable([c for c in df.columns if isinstance(c, str)]):
            df.columns = [self.value(c, f"{place} column names") for c in df.columns]

    def any(self, v: Any, place: str) -> Any:
        """Anything a Profile holds, cleaned in place where it is mutable; returns the value."""
        if isinstance(v, pd.DataFrame):
            self.frame(v, place)
        elif isinstance(v, LazyTables) and not v.built:
            pass                # register fields decoded from binary (text decoded with replace)
        elif _is_record(v):
            for f in dataclasses.fields(v):
                setattr(v, f.name, self.any(getattr(v, f.name), f"{place}.{f.name}"))
        elif isinstance(v, Mapping) and any(_is_record(x) or isinstance(x, pd.DataFrame) for x in v.values()):
            for key, x in v.items():                 # tables by name, vendor outputs by rank
                self.any(x, f"{place}[{key!r}]")
        elif isinstance(v, list) and any(_is_record(x) for x in v):
            for x in v:                              # warnings
                self.any(x, place)
        elif not _encodable(v):
            return self.value(v, place)
        return v


def clean_profile(profile: Profile) -> int:
    """Replace every surrogate in the profile's text (commands, host events, tables, meta, host
    trace, vendor outputs) by U+FFFD, in place; one ``text-replaced`` warning says how many
    values changed and where. Returns that count."""
    cleaner = _Cleaner()
    cleaner.any(profile, "profile")
    total = sum(cleaner.changed.values())
    if total:
        places = sorted(clean_text(p.removeprefix("profile.")) for p in cleaner.changed)   # names may be bad too
        profile.meta.warn("text-replaced",
                          f"{total} text value(s) held characters that are not valid Unicode (a lone "
                          "surrogate \\uD800-\\uDFFF in the trace, or a byte that is not UTF-8 in a file "
                          "or folder name); each such character is shown as U+FFFD",
                          ", ".join(places[:6]) + (f" and {len(places) - 6} more" if len(places) > 6 else ""))
    return total


def relative_href(*segments: str) -> str:
    """A relative link to a file below the page's folder, from its path segments.

    Each segment is percent-encoded from its file-system bytes (``os.fsencode``: a folder name
    that is not UTF-8 still links to itself), with no safe characters: ``:``, ``/``, ``?``, ``#``
    and ``%`` of a name are encoded, so a name cannot make the link absolute, give it a scheme
    or a query. Empty, ``.`` and ``..`` segments are refused (they would leave the folder).
    """
    if not segments or any(s in ("", ".", "..") for s in segments):
        raise ValueError(f"not a path below the page: {segments!r}")
    return "/".join(quote(os.fsencode(s), safe="") for s in segments)
