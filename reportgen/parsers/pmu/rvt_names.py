"""Names of CV84X6 RVT nodes (spec chips-bm1688-cv84x6.md §5).

CV84X6 takes an RVT node's ``des_tsk_typ`` as the index of a descriptor generator function and
``(des_tsk_eu_typ & 0x1F) | ((extra_info & 0x7FF) << 5)`` as the index of a variant of it, both
looked up in ``data/CV84X6-rvt-names.csv``: Function Type = the generator's short name (``smm2``),
Function Name = the variant's (``rvt_mm2``); an unknown index is ``rvt`` / ``unknown``. A DMA
variant's direction follows its name: loads (``_ld``, ``_ldt``, ``_ldbc``, ``_mld``) DDR->LMEM,
stores (``_st``, ``_stt``, ``_mst``) LMEM->DDR. BM1688 names RVT nodes with its mode-1 table.
"""
from __future__ import annotations

import csv
from functools import lru_cache

import numpy as np

from reportgen.parsers.pmu.descriptors import _data_file
from reportgen.parsers.pmu.labels import LABELS

LOADS = ("_ld", "_ldt", "_ldbc", "_mld")
STORES = ("_st", "_stt", "_mst")


@lru_cache(maxsize=None)
def _table() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sorted keys (func_index << 16 | variant) and per key: Type code, Name code, direction
    (0 none, 1 load, 2 store)."""
    rows = []
    with _data_file("CV84X6-rvt-names.csv").open(encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            name = r["function_name"]
            way = 1 if name.endswith(LOADS) else 2 if name.endswith(STORES) else 0
            rows.append((int(r["func_index"]) << 16 | int(r["variant"]), r["function_type"], name, way))
    rows.sort()
    keys = np.array([k for k, *_ in rows], np.int64)
    return (keys, LABELS.codes(t for _, t, _, _ in rows), LABELS.codes(n for _, _, n, _ in rows),
            np.array([w for *_, w in rows], np.int8))


def cv84x6_rvt(tsk_typ: np.ndarray, eu: np.ndarray, extra: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Function Type codes, Function Name codes, direction 0/1/2) of CV84X6 RVT nodes."""
    keys, types, names, ways = _table()
    variant = (eu.astype(np.int64) & 0x1F) | ((extra.astype(np.int64) & 0x7FF) << 5)
    key = tsk_typ.astype(np.int64) << 16 | variant
    at = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
    hit = keys[at] == key
    return (np.where(hit, types[at], LABELS.code("rvt")), np.where(hit, names[at], LABELS.code("unknown")),
            np.where(hit, ways[at], 0))
