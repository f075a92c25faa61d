"""The commands table's storage: Int64 columns held as Int32 when every value fits, columns unknown
for every command sharing one read-only array, and the mode-1 node fields dropped when no
output reads them. Same values, same outputs, fewer bytes (issue 28)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reportgen import model, pipeline
from reportgen.model import NODE_COLUMNS, finalize_commands, narrow_int
from reportgen.options import Options
from reportgen.parsers.pmu import describe
from test_pipeline import _contents

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "cdm_profile_data_dev0-0"
M1_GOLDEN = ROOT.parent / "shared" / "data" / "pmu" / "aks-m1-c8" / "input"
I32 = np.iinfo(np.int32)


@pytest.mark.parametrize("values, known, width", [
    ([0, 5, I32.max], None, np.int32),
    ([I32.min, -1, 7], None, np.int32),
    ([0, I32.max + 1], None, np.int64),             # 2 GiB of DMA data: the wide type is kept
    ([I32.min - 1, 0], None, np.int64),
    ([], None, np.int32),
    ([0, 2**40, 3], [True, False, True], np.int32),  # an unknown entry's placeholder does not count
    ([0, 2**40, 3], [True, True, True], np.int64),
])
def test_narrow_int_is_int32_only_when_every_known_value_fits(values, known, width):
    v = np.array(values, np.int64)
    assert narrow_int(v, None if known is None else np.array(known)) == np.dtype(width)


def _frame(**columns) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    base = {"core": np.zeros(n, np.int16), "engine": np.array(["GDMA"] * n, object), "global_idx": np.arange(n),
            "cmd_id": np.arange(n) + 1, "start_ns": np.arange(n) * 10, "end_ns": np.arange(n) * 10 + 5,
            "cycles": np.full(n, 6)}
    return finalize_commands({**base, **columns})


def test_int64_columns_are_held_as_int32_with_the_same_values():
    wide = pd.array([0, None, 2**31 - 1, 4096], dtype="Int64")
    c = _frame(bytes=wide, stall_cycles=pd.array([1, 2, None, 3], dtype="Int64"))
    assert str(c["bytes"].dtype) == "Int32" and str(c["stall_cycles"].dtype) == "Int32"
    assert c["bytes"].isna().tolist() == [False, True, False, False]
    assert c["bytes"].to_numpy(np.int64, na_value=-1).tolist() == [0, -1, 2**31 - 1, 4096]
    assert c["bytes"].astype("Int64").equals(pd.Series(wide))
    assert c["bytes"].sum() == 2**31 - 1 + 4096          # reductions widen: no wrap-around


def test_a_value_beyond_int32_keeps_the_column_int64():
    values = [3, None, 2**33 + 5]                      # an 8 GiB transfer
    for given in (pd.array(values, dtype="Int64"), np.array([3.0, np.nan, 2**33 + 5])):
        c = _frame(bytes=given)
        assert str(c["bytes"].dtype) == "Int64"
        assert c["bytes"].to_numpy(np.float64, na_value=np.nan)[[0, 2]].tolist() == [3, 2**33 + 5]


def test_plain_int64_columns_stay_int64():
    """Readers take positions, ids and times as int64 views (``to_numpy(np.int64)``): held
    narrower, each forked writer would hold its own widened copy instead of sharing them."""
    c = _frame(bytes=pd.array([1, 2, 3], dtype="Int64"))
    assert all(c[k].dtype == np.int64 for k in ("global_idx", "cmd_id", "start_ns", "end_ns", "cycles"))
    assert np.shares_memory(c["global_idx"].to_numpy(np.int64), c["global_idx"].to_numpy())


def test_columns_unknown_everywhere_share_one_read_only_array():
    c = _frame(bytes=pd.array([1, 2, 3], dtype="Int64"))
    floats = [c[k].to_numpy() for k in ("alg_ops", "uarch_ops", "alg_cycle", "uarch_rate")]
    assert all(np.isnan(f).all() and f.dtype == np.float64 for f in floats)
    assert all(np.shares_memory(floats[0], f) for f in floats[1:])
    ints = [c[k].array for k in ("func_scope", "batch", "dep_cmd_id")]
    assert all(a.isna().all() and str(a.dtype) == "Int32" for a in ints)
    assert c["bytes"].notna().all()                    # a known column is its own
    with pytest.raises(ValueError, match="read-only"):
        c.loc[0, "alg_ops"] = 1.0                      # never a silent write into the others
    copy = c.copy()
    copy.loc[0, "alg_ops"] = 1.0                       # a copy is the caller's own
    assert copy["alg_ops"].notna().sum() == 1 and c["uarch_ops"].isna().all()


def test_a_partly_known_column_is_not_shared():
    c = _frame(ddr_bw=np.array([np.nan, 2.5, np.nan]), l2m_bw=np.full(3, np.nan))
    assert c["ddr_bw"].tolist()[1] == 2.5 and c["l2m_bw"].isna().all()
    assert not np.shares_memory(c["ddr_bw"].to_numpy(), c["l2m_bw"].to_numpy())


def _wide(monkeypatch):
    """The storage before issue 28: Int64 kept wide, unknown columns each their own array."""
    monkeypatch.setattr(model, "narrow_int", lambda values, known=None: np.dtype(np.int64))
    monkeypatch.setattr(describe, "narrow_int", lambda values, known=None: np.dtype(np.int64))
    monkeypatch.setattr(model, "share_unknown_columns", lambda columns, n: columns)
    monkeypatch.setattr(pipeline, "drop_unread_columns", lambda options, profile: None)


def test_a_pmu_capture_reads_the_same_narrow_or_wide(monkeypatch):
    narrow = pipeline.load(Options(str(SAMPLE), quiet=True)).commands
    _wide(monkeypatch)
    wide = pipeline.load(Options(str(SAMPLE), quiet=True)).commands
    narrowed = [k for k in wide if str(wide[k].dtype) != str(narrow[k].dtype)]
    assert all({"Int64": "Int32", "int64": "int32"}[str(wide[k].dtype)] == str(narrow[k].dtype)
               for k in narrowed)
    assert "bytes" in narrowed and wide["bytes"].notna().any()
    pd.testing.assert_frame_equal(narrow, wide, check_dtype=False)


@pytest.mark.skipif(not M1_GOLDEN.is_dir(), reason="../shared/data/pmu/aks-m1-c8 not found next to the checkout")
@pytest.mark.parametrize("reginfo", ["on", "off"])
def test_every_output_is_the_same_narrow_or_wide(tmp_path, monkeypatch, reginfo):
    """A mode-1 capture (node fields, many unknown columns): every file of the report, RegInfo
    included or not, byte for byte that of the wide storage."""
    narrow = pipeline.report(Options(str(M1_GOLDEN), output=str(tmp_path / "narrow"), quiet=True,
                                     reginfo=reginfo, jobs=1))
    assert all(k in narrow.profile.commands for k in NODE_COLUMNS) == (reginfo == "on")
    _wide(monkeypatch)
    pipeline.report(Options(str(M1_GOLDEN), output=str(tmp_path / "wide"), quiet=True,
                            reginfo=reginfo, jobs=1))
    a, b = _contents(tmp_path / "narrow"), _contents(tmp_path / "wide")
    assert sorted(a) == sorted(b) and "perfetto.pftrace" in a
    assert any("RegInfo" in n for n in a) == (reginfo == "on")
    assert [n for n in a if a[n] != b[n]] == []
