"""The decoder's label table (text values as codes) and the lazily built register tables."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from reportgen.model import LazyTables
from reportgen.parsers.pmu.labels import LabelTable


def test_codes_are_positions_and_none_is_minus_one():
    t = LabelTable()
    assert t.codes(["sMM2", "sAR", None, "sMM2"]).tolist() == [0, 1, -1, 0]
    assert (t.name(1), t.name(-1)) == ("sAR", None)


def test_categorical_keeps_only_the_labels_that_occur_sorted():
    t = LabelTable()
    t.codes(["d", "c", "b", "a"])                             # codes 0..3 in this order
    cat = t.categorical(np.array([0, -1, 2, 0], np.int32))
    assert list(cat.categories) == ["b", "d"]                 # by text; unused a and c gone
    assert cat.codes.dtype == np.int8
    assert cat.astype(object).tolist()[0] == "d" and pd.isna(cat[1])
    assert [cat[0], cat[2], cat[3]] == ["d", "b", "d"]


def test_categorical_of_nothing_known():
    t = LabelTable()
    t.code("x")
    cat = t.categorical(np.full(3, -1, np.int32))
    assert len(cat.categories) == 0 and cat.isna().all()


def test_threads_adding_the_same_names_get_one_code_each():
    t = LabelTable()
    names = [f"kernel_{i % 50}" for i in range(5000)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda chunk: t.codes(chunk), [names[i::8] for i in range(8)]))
    assert len({t.name(c) for r in results for c in r.tolist()}) == 50
    assert sorted(t.code(f"kernel_{i}") for i in range(50)) == list(range(50))


def test_lazy_tables_build_once_on_first_use():
    calls = []

    def build():
        calls.append(1)
        return {"TIU": pd.DataFrame({"des_res0_c": [1, 2]})}

    tables = LazyTables(build, ["TIU"])
    assert list(tables) == ["TIU"] and len(tables) == 1 and not tables.built
    assert calls == []                                        # names known, nothing built yet
    assert tables["TIU"]["des_res0_c"].tolist() == [1, 2] and tables.built
    tables["GDMA"] = pd.DataFrame()
    assert len(tables) == 2 and tables.get("SDMA") is None and calls == [1]


def test_profile_knows_it_has_registers_without_building_them(tmp_path):
    from reportgen.parsers.pmu import load_dump
    from reportgen.testing.synth import write_dump

    m2 = load_dump(write_dump(tmp_path / "m2", arch="AKS", cores=2, cmds_per_core=60, mode=2,
                              seed=1).dump_dir)
    assert m2.has_registers() and not m2.registers.built
    assert set(m2.registers) == {"TIU", "GDMA", "SDMA"} and not m2.registers.built
    assert len(m2.registers["TIU"]) and m2.registers.built
    m1 = load_dump(write_dump(tmp_path / "m1", arch="AKS", cores=2, cmds_per_core=60, mode=1,
                              seed=1).dump_dir)
    assert not m1.has_registers() and len(m1.registers) == 0
