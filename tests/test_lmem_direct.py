"""The local-memory accesses decoded straight from the descriptor batches (no register table
assembled) equal those read from the register tables, on every golden dump; the compiled
geometry equals the vectorised formulas of spec lmem-view.md §2.3-§2.4 (re-stated here)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shared_data import DATA, PMU
from reportgen.analysis.lmem_access import (ACCESS_COLUMNS, COMPACT, FREE, LINE_ALIGNED, OFFSET,
                                            accesses, geometry)
from reportgen.parsers.detect import load_profile

GOLDENS = ([DATA / "lmem" / c / "input" for c in ("aks-m2-lmem-basic", "aks-m2-lmem-kernels")]
           + ([p / "input" for p in sorted(PMU.iterdir()) if (p / "input").exists()] if PMU.exists() else []))


@pytest.mark.parametrize("path", GOLDENS, ids=lambda p: p.parent.name)
def test_direct_decoding_equals_the_register_tables(path):
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    profile = load_profile(path)
    assert profile.registers.batches() is not None            # nothing assembled yet
    direct = accesses(profile)
    assert profile.registers.batches() is not None and not profile.registers.built
    list(profile.registers.values())                          # now read the tables
    assert profile.registers.batches() is None or not list(profile.registers)
    tables = accesses(profile)
    pd.testing.assert_frame_equal(direct, tables)
    assert list(direct.columns) == list(ACCESS_COLUMNS)
    if "m0" not in path.parent.name and "m1" not in path.parent.name:
        assert direct["decoded"].sum() > 100


def test_direct_decoding_leaves_no_decoded_field_on_the_profile():
    path = DATA / "lmem" / "aks-m2-lmem-kernels" / "input"
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    profile = load_profile(path)
    accesses(profile)
    for chunks in profile.registers.batches().values():
        for _, fields in chunks:
            assert fields.fields._read == {}


def test_released_tables_are_not_read_by_the_direct_path():
    path = DATA / "lmem" / "aks-m2-lmem-basic" / "input"
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    profile = load_profile(path)
    profile.registers.release()
    assert profile.registers.batches() is None
    with pytest.raises(RuntimeError):
        accesses(profile)


def _align(x, a):
    return -(-x // a) * a


def _geometry_formulas(addr, shape, esize, layout, strides=None):
    """Spec §2.3-§2.4 as whole-array formulas (the module's former vectorised code)."""
    lane, off = (addr >> 18) & 63, addr & ((1 << 18) - 1)
    n, c, h, w = (np.broadcast_to(np.asarray(x, np.int64), addr.shape) for x in shape)
    rows = (lane + c - 1) // 64 + 1
    per64 = np.where(esize > 0, np.round(64 / np.where(esize > 0, esize, 1)), 1).astype(np.int64)
    hs = np.where(layout == LINE_ALIGNED, _align(w, per64), w)
    cs = np.select([layout == COMPACT, layout == OFFSET, layout == LINE_ALIGNED],
                   [h * w, np.ones_like(w), h * _align(w, per64)], _align(h * w, per64))
    hs = np.where(layout == OFFSET, 0, hs)
    ws = np.where(layout == OFFSET, 0, 1)
    ns = np.where(layout == OFFSET, 0, rows * cs)
    if strides is not None:
        ns, cs, hs, ws = (np.where(layout == FREE, s, d) for s, d in zip(strides, (ns, cs, hs, ws)))
    last = (n - 1) * ns + (rows - 1) * cs + (h - 1) * hs + (w - 1) * ws
    with np.errstate(invalid="ignore"):
        extent = np.ceil((last + 1) * esize).astype(np.int64)
        data = np.ceil(n * (-(-c // 64)) * h * w * esize).astype(np.int64)
    lanes = np.minimum(c, 64)
    masks = [(((1 << int(min(max(k, 0), 64))) - 1) << int(s) | ((1 << int(min(max(k, 0), 64))) - 1) >> (64 - int(s)))
             & ((1 << 64) - 1) for s, k in zip(lane, lanes)]
    ok = (n > 0) & (c > 0) & (h > 0) & (w > 0) & (esize > 0) & (extent > 0)
    return {"start_lane": lane, "lanes": lanes, "lane_offset": off, "extent_bytes": extent,
            "data_bytes_per_lane": data, "first_bank": off >> 14, "last_bank": (off + np.maximum(extent, 1) - 1) >> 14,
            "lane_mask": np.array(masks, np.uint64), "ok": ok}


@pytest.mark.parametrize("free", [False, True])
def test_compiled_geometry_equals_the_formulas_on_random_operands(free):
    rng = np.random.default_rng(7 + free)
    k = 20_000
    addr = rng.integers(0, 1 << 26, k)
    shape = tuple(rng.integers(-1, 300, k) for _ in range(4))
    esize = np.array([1, 2, 4, 2, 4, 2, 0.5, 1, 2.5, 4, np.nan])[rng.integers(0, 11, k)]
    layout = rng.integers(0, 8, k)                 # every short_*_str code, the special ones too
    strides = tuple(rng.integers(0, 5000, k) for _ in range(4)) if free else None
    ours, want = geometry(addr, shape, esize, layout, strides), _geometry_formulas(addr, shape, esize, layout, strides)
    assert set(ours) == set(want)
    for key in want:
        np.testing.assert_array_equal(ours[key], want[key], err_msg=key)
    assert ours["ok"].sum() > k // 3


def test_compiled_geometry_conv_kernel_is_ic_aligned():
    # spec §7 C: sCONV kernel oc 32, ic 32, 3x3, BF16 at lane 1 -> 9 x align_up(32, 32) = 288 elements, 576 B
    g = geometry(np.array([0x40000]), ("conv", np.array([32]), np.array([32]), np.array([3]), np.array([3])),
                 np.array([2.0]), 5)
    assert (g["start_lane"][0], g["lanes"][0], g["extent_bytes"][0], g["first_bank"][0]) == (1, 32, 576, 0)


@pytest.mark.parametrize("path", GOLDENS, ids=lambda p: p.parent.name)
def test_same_bank_rows_are_those_of_the_listed_pairs(path):
    from reportgen.analysis.lmem import _same_bank_pairs, _same_bank_rows
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    profile = load_profile(path)
    acc = accesses(profile)
    if acc.empty:
        return
    row, _, _, i, _, _ = _same_bank_pairs(acc, profile.commands)
    got = _same_bank_rows(acc, profile.commands)
    np.testing.assert_array_equal(got, np.unique(row[i]))
    if path.parent.name == "aks-m2-lmem-kernels":          # spec §7 C: the sCONV of TIU idx 18
        assert len(got) > 0
