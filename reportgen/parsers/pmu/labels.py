"""Text values of the command model (names, modes, kernels, directions, data types) as codes.

The decoder handles a million commands whose text columns take a few hundred distinct values.
Carrying them as integer codes into one shared table, instead of Python strings, keeps every
per-command step a numpy operation and lets the model's categorical columns be built from the
codes directly, without hashing a million strings. Code -1 is "unknown" (missing).
"""
from __future__ import annotations

import threading
from typing import Iterable

import numpy as np
import pandas as pd

CODE = np.int32


class LabelTable:
    """A growing list of distinct strings; a string's code is its position."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._index: dict[str, int] = {}
        self._lock = threading.Lock()        # core files are read by several threads

    def code(self, name: str | None) -> int:
        if name is None:
            return -1
        found = self._index.get(name)
        if found is None:
            with self._lock:
                found = self._index.setdefault(name, len(self._names))
                if found == len(self._names):
                    self._names.append(name)
        return found

    def codes(self, names: Iterable[str | None]) -> np.ndarray:
        return np.array([self.code(n) for n in names], CODE)

    def name(self, code: int) -> str | None:
        return self._names[code] if code >= 0 else None

    def categorical(self, codes: np.ndarray) -> pd.Categorical:
        """A categorical of these codes holding only the labels that occur, sorted by text.

        Sorted, not in code order: codes are handed out as worker threads meet new labels, so
        their order may differ from run to run, and the outputs must not."""
        codes = np.asarray(codes)
        known = codes >= 0
        used = np.flatnonzero(np.bincount(codes[known], minlength=len(self._names)))
        names = np.array([self._names[i] for i in used], dtype=object)
        order = np.argsort(names, kind="stable")
        remap = np.full(len(self._names), -1, CODE)
        remap[used[order]] = np.arange(len(used), dtype=CODE)
        dense = np.where(known, remap[np.where(known, codes, 0)], -1)
        small = np.int8 if len(used) < 127 else np.int16 if len(used) < 32767 else CODE
        return pd.Categorical.from_codes(dense.astype(small),
                                         categories=pd.Index(names[order], dtype=object))


#: the one table every part of every dump shares, so codes can be concatenated freely
LABELS = LabelTable()

#: codes of the model's ``mode`` values (how a command was described)
MODE = {m: LABELS.code(m) for m in ("PMU", "TDI", "RVT", "DES", "BMODEL")}
