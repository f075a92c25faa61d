"""PerfDoc/instr_world.csv: order, columns, Concurrency, inert cells, the vendor's rows."""
from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest

from shared_data import PMU, needs

from reportgen.model import Meta, Profile, finalize_commands
from reportgen.writers import instr_world


def _profile(rows: list[dict]) -> Profile:
    frame = pd.DataFrame(rows)
    frame["global_idx"] = frame.groupby(["engine", "core"]).cumcount()
    return Profile(commands=finalize_commands(frame), meta=Meta(source="synthetic", num_cores=2))


def _read(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_order_duration_and_concurrency_by_hand(tmp_path):
    # core 0: TIU [0,100) and [100,150); GDMA [50,120) and a zero-length one at 100;
    # core 1: SDMA [0,100) (it never counts towards core 0)
    p = _profile([
        dict(core=0, engine="TIU", cmd_id=1, start_ns=0, end_ns=100, cycles=100, func_type="sMM2", func_name="mm2.nn"),
        dict(core=0, engine="TIU", cmd_id=2, start_ns=100, end_ns=150, cycles=50, func_type="sAR", func_name="arith.add"),
        dict(core=0, engine="GDMA", cmd_id=1, start_ns=50, end_ns=120, cycles=70, func_type="DMA_tensor", func_name="tensorLd",
             bytes=7000, ddr_bw=100.0, direction="DDR->LMEM"),
        dict(core=0, engine="GDMA", cmd_id=2, start_ns=100, end_ns=100, cycles=1, func_type="sys", func_name="wait"),
        dict(core=1, engine="SDMA", cmd_id=1, start_ns=0, end_ns=100, cycles=100, func_type="DMA_tensor", func_name="tensorSt",
             bytes=3000, ddr_bw=30.0, direction="LMEM->DDR"),
    ])
    rows = _read(instr_world.write(p, tmp_path))
    assert list(rows[0]) == instr_world.HEADER
    got = [(r["Engine Id"], r["Core Id"], r["Cmd Id"], r["Start Time(ns)"], r["Duration(ns)"], r["Concurrency"])
           for r in rows]
    # sorted by (start, end, cmd id, engine id, core); Concurrency by hand: at 0 on core 0 only
    # TIU#1 runs; at 50 TIU#1 + GDMA#1; the zero-length wait at 100 sees GDMA#1, TIU#2 and itself;
    # TIU#2 at 100 sees GDMA#1 and itself (TIU#1 ended at 100)
    assert got == [
        ("0", "0", "1", "0", "100", "1"),
        ("3", "1", "1", "0", "100", "1"),
        ("1", "0", "1", "50", "70", "2"),
        ("1", "0", "2", "100", "0", "3"),
        ("0", "0", "2", "100", "50", "2"),
    ]
    assert rows[2]["DDR Bandwidth(GB/s)"] == "100" and rows[2]["L2M Bandwidth(GB/s)"] == ""
    assert rows[2]["Sheet"] == "GDMA_0" and rows[2]["Global Idx"] == "0"


def test_concurrency_never_below_one():
    rng = np.random.default_rng(7)
    start = rng.integers(0, 1000, 5000)
    end = start + rng.integers(0, 50, 5000)
    core = rng.integers(0, 3, 5000)
    got = instr_world.concurrency(core, start, end)
    # brute force on a sample
    for i in rng.integers(0, 5000, 200):
        same = core == core[i]
        expected = int(np.sum(same & (start <= start[i]) & (end > start[i])))
        expected += int(end[i] <= start[i])
        assert got[i] == expected
    assert got.min() >= 1


def test_cells_are_inert_and_quoted(tmp_path):
    p = _profile([
        dict(core=0, engine="TIU", cmd_id=1, start_ns=0, end_ns=10, cycles=10, func_type="=cmd|' /C calc'!A0",
             func_name='a,"b"', kernel="line\rbreak", uarch_rate=0.6984, alg_ops=401408.0, uarch_ops=802816.0),
        dict(core=0, engine="TIU", cmd_id=2, start_ns=20, end_ns=30, cycles=10, func_type="-12.5", func_name="x",
             alg_ops=1.5, uarch_ops=3.0, uarch_rate=0.5),
    ])
    path = instr_world.write(p, tmp_path)
    rows = _read(path)
    assert rows[0]["Function Type"] == "'=cmd|' /C calc'!A0"
    assert rows[0]["Function Name"] == 'a,"b"'
    assert rows[0]["Kernel"] == "line\r\nbreak"
    assert rows[0]["uArch Rate"] == "69.8%" and rows[0]["Alg Ops"] == "401408"
    assert rows[1]["Function Type"] == "-12.5"          # a plain number is not a formula
    assert rows[1]["Alg Ops"] == "1.5" and rows[1]["uArch Ops"] == "3"
    assert len(rows) == 2


def test_numbers_read_back_exactly(tmp_path):
    """Every number column of a million-scale-like random profile reads back as the model's value."""
    from reportgen.testing.profiles import make_profile

    p = make_profile(cores=2, per_engine=3000)
    c = p.commands
    back = pd.read_csv(instr_world.write(p, tmp_path), keep_default_na=False, na_values=[""])
    assert len(back) == len(c)
    key = c.set_index(["sheet", "global_idx"], drop=False)
    back = back.set_index(["Sheet", "Global Idx"], drop=False).loc[key.index]
    for header, name, kind in instr_world.COLUMNS:
        if kind in ("int", "float") and name in c:
            want = key[name].astype("Float64").to_numpy(np.float64, na_value=np.nan)
            np.testing.assert_array_equal(back[header].to_numpy(np.float64), want, err_msg=header)
    np.testing.assert_array_equal(back["Duration(ns)"].to_numpy(), (key["end_ns"] - key["start_ns"]).to_numpy())


def test_chunks_join_seamlessly(tmp_path, monkeypatch):
    from reportgen.testing.profiles import make_profile

    p = make_profile(cores=2, per_engine=500)
    whole = instr_world.write(p, tmp_path / "a").read_bytes()
    monkeypatch.setattr(instr_world, "CHUNK", 37)
    assert instr_world.write(p, tmp_path / "b").read_bytes() == whole


CASE = PMU / "aks-m2-c8"


@needs(CASE / "input")
def test_rows_match_the_vendors_instr_world(tmp_path):
    """Same commands in the same order as the vendor's Instr World (reference 0.3.7), with the
    same ids, names, cycles, times, ops, rate, data type, size and direction."""
    from reportgen.parsers.pmu import load_dump

    ours = pd.read_csv(instr_world.write(load_dump(CASE / "input"), tmp_path), dtype=str,
                       keep_default_na=False)
    ref = pd.read_csv(CASE / "reference-0.3.7" / "PerfDoc" / "reference-0.3.7.csv", dtype=str,
                      keep_default_na=False)
    assert len(ours) == len(ref)
    same = ["Engine Id", "Core Id", "Global Idx", "Cmd Id", "Function Type", "Function Name", "Asic Cycle",
            "Start Time(ns)", "End Time(ns)", "Alg Ops", "uArch Ops", "uArch Rate", "DMA data size(B)",
            "Direction"]
    for col in same:
        assert ours[col].tolist() == ref[col].tolist(), col
    # TIU data types; a system command's is unknown here (docs/metrics.md), "None -> None" there
    tiu = ref["Engine Id"] == "0"
    known = tiu & (ours["Data Type"] != "")
    assert ours.loc[known, "Data Type"].tolist() == ref.loc[known, "Data Type"].tolist()
    assert set(ref.loc[tiu & ~known, "Data Type"]) <= {"None -> None"}


def _python_rows(c: pd.DataFrame, order: np.ndarray) -> str:
    """The file as an independent plain-Python writer makes it: the csv module (minimal quoting),
    ``str`` of integers, ``repr`` of floats (whole numbers below 2**53 without ".0"), the
    vendor's ``{:.1%}`` of rates, empty cells for missing values."""
    engine_id = instr_world.engine_ids(c["engine"])
    conc = instr_world.concurrency(c["core"].to_numpy(np.int64), c["start_ns"].to_numpy(np.int64),
                                   c["end_ns"].to_numpy(np.int64))
    derived = {"engine_id": engine_id, "concurrency": conc,
               "duration": (c["end_ns"] - c["start_ns"]).to_numpy()}

    def text(value, kind):
        if value is None or value is pd.NA or (isinstance(value, float) and value != value):
            return ""
        if kind == "rate":
            return f"{value:.1%}"
        if kind == "float":
            value = float(value)
            return str(int(value)) if value.is_integer() and abs(value) < 2 ** 53 else repr(value)
        return str(value) if kind == "text" else str(int(value))

    columns = [derived[name].tolist() if name in derived else c[name].astype(object).tolist()
               if name in c else [None] * len(c) for _, name, _ in instr_world.COLUMNS]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(instr_world.HEADER)
    for i in order.tolist():
        w.writerow([text(col[i], kind) for col, (_, _, kind) in zip(columns, instr_world.COLUMNS)])
    return out.getvalue()


@pytest.mark.parametrize("rates", [20, None])
def test_file_equals_a_plain_python_csv_writer(tmp_path, monkeypatch, rates):
    """Edge values in every kind of column (any float bits, huge and negative integers, NaN and
    NA, rates of few and of many values, names to quote), written by the chunked compiled
    writer (chunks of 1,000 rows) and by a plain Python writer: the same bytes. Rates of 20
    values are formatted from a table of their cells, rates of many values per chunk."""
    from reportgen.testing.profiles import make_profile

    p = make_profile(cores=2, per_engine=700)
    c = p.commands
    n = len(c)
    rng = np.random.default_rng(17)
    k = np.arange(n)
    c["ddr_bw"] = np.where(k % 11 == 0, np.nan, np.round(rng.uniform(0, 500, n), 3))
    c["l2m_bw"] = np.where(k % 3 == 0, np.nan, rng.standard_normal(n) * 10.0 ** rng.integers(-8, 22, n))
    c["alg_ops"] = np.where(k % 5 == 0, np.nan, rng.integers(0, 2 ** 60, n).astype(np.float64))
    rate = rng.uniform(0, 1.2, n) if rates is None else rng.choice(rng.uniform(0, 1.2, rates), n)
    c["uarch_rate"] = np.where(k % 4 == 0, np.nan, rate)
    c["cycles"] = rng.integers(-(2 ** 63), 2 ** 63 - 1, n, dtype=np.int64, endpoint=True)
    c["dep_cmd_id"] = pd.array(np.where(k % 7 == 0, None, rng.integers(-5, 10 ** 12, n)), dtype="Int64")
    c["port"] = pd.array(np.where(k % 2 == 0, None, k % 3), dtype="Int16")
    c["func_name"] = pd.Categorical(np.array(["a,b", 'say "hi"', "line\nbreak", "ünï", "plain"])[k % 5])
    monkeypatch.setattr(instr_world, "CHUNK", 1_000)
    source = instr_world._Source(c)
    assert ("uarch_rate" in source.tables) == (rates is not None)
    got = instr_world.write(p, tmp_path).read_bytes().decode()
    assert got == _python_rows(c, instr_world.sort_order(c, source.engine_id))


def test_rate_tables_write_the_same_cells(tmp_path, monkeypatch):
    """Rates of few distinct values are written from a table of their cells (one byte a code,
    missing -> the empty cell): the same bytes as formatted chunk by chunk."""
    from reportgen.testing.profiles import make_profile

    p = make_profile(cores=2, per_engine=800)
    c = p.commands
    n = len(c)
    c["uarch_rate"] = np.array([1.0, 49 / 52, 0.5, np.nan])[np.arange(n) % 4]
    source = instr_world._Source(c)
    assert source.tables["uarch_rate"][0].dtype == np.int8
    tabled = instr_world.write(p, tmp_path / "a").read_bytes()
    monkeypatch.setattr(instr_world, "MAX_TABLE_VALUES", -1)
    assert "uarch_rate" not in instr_world._Source(c).tables
    assert instr_world.write(p, tmp_path / "b").read_bytes() == tabled
    back = pd.read_csv(io.BytesIO(tabled), keep_default_na=False)
    order = instr_world.sort_order(c, source.engine_id)
    assert back["uArch Rate"].tolist()[:8] == \
        [f"{x:.1%}" if x == x else "" for x in c["uarch_rate"].to_numpy()[order][:8]]


def test_sort_order_equals_a_six_key_lexsort():
    """Starts shared by many rows (ties on every key but the last): the order is numpy's
    lexsort over all six keys."""
    rng = np.random.default_rng(11)
    n = 5_000
    c = pd.DataFrame({"start_ns": rng.integers(0, 300, n), "end_ns": rng.integers(300, 320, n),
                      "cmd_id": rng.integers(0, 4, n), "core": rng.integers(0, 3, n).astype(np.int16),
                      "global_idx": rng.permutation(n)})
    engine_id = rng.integers(0, 3, n).astype(np.int8)
    want = np.lexsort((c["global_idx"], c["core"], engine_id, c["cmd_id"], c["end_ns"], c["start_ns"]))
    np.testing.assert_array_equal(instr_world.sort_order(c, engine_id), want)


def test_compile_loops_leaves_the_signatures_a_write_uses(tmp_path):
    """The loops loaded before the writers fork are the ones a write runs (a new signature
    would be compiled, or loaded, in the forked child)."""
    from reportgen.testing.profiles import make_profile
    from reportgen.writers import csv_lines

    instr_world.compile_loops()
    loops = (instr_world._in_flight, csv_lines._lines, csv_lines._classify)
    signatures = [len(f.signatures) for f in loops]
    instr_world.write(make_profile(cores=2, per_engine=300), tmp_path)
    assert [len(f.signatures) for f in loops] == signatures


def test_concurrency_of_every_command_by_brute_force():
    """Every command (not a sample): shared starts, zero durations, ends equal to other
    starts, core ids that do not start at 0, against the definition counted pair by pair."""
    rng = np.random.default_rng(23)
    n = 3_000
    start = rng.integers(0, 400, n)
    end = start + rng.integers(0, 30, n) * (rng.random(n) < 0.9)
    core = rng.integers(5, 9, n).astype(np.int16)
    same = core[:, None] == core[None, :]
    in_flight = same & (start[None, :] <= start[:, None]) & (end[None, :] > start[:, None])
    want = in_flight.sum(axis=1) + (end <= start)
    np.testing.assert_array_equal(instr_world.concurrency(core, start, end), want)
