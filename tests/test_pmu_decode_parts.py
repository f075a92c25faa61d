"""Parts of the PMU decode that issue 28 made lazy or vectorised, against independent rules:
register fields decoded on read (checked with ``descriptors.extract``, a byte-by-byte reader of
the same bit layout), the TIU edge trim's counts (checked with Counter), sections of an
unsorted command list, and a core's input freed once its engines are bound."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from reportgen.parsers.pmu import bind, descriptors as D
from reportgen.parsers.pmu.describe import RegisterFields
from reportgen.parsers.pmu.nodes import CommandList

PMU = Path(__file__).resolve().parents[2] / "shared" / "data" / "pmu"


@pytest.mark.parametrize("chip", ["AKS", "BM1688", "CV84X6"])
def test_fields_decoded_on_read_equal_a_byte_by_byte_reading(chip):
    rng = np.random.default_rng(7)
    for op, layout in D.layouts(chip).items():
        buf = rng.integers(0, 256, (37, layout.nbytes), dtype=np.uint8)
        fields = D.Fields(buf, layout)
        # a name the table lists twice ("reserved") is one field: the last entry's bits
        last = {name: (off, width) for name, off, width in layout.fields}
        assert list(fields) == list(last)
        for name, (off, width) in last.items():
            want = D.extract(buf, off, width)
            got = fields[name]
            assert got.dtype == D.field_dtype(width), (op, name)
            assert np.array_equal(got.astype(np.uint64), want), (op, name)
        rows = np.array([3, 0, 36, 5])
        taken = fields.take(rows)
        for name, (off, width) in last.items():
            assert np.array_equal(taken[name].astype(np.uint64), D.extract(buf[rows], off, width))


def test_a_batch_kept_for_the_register_tables_holds_no_decoded_field():
    layout = D.layouts("AKS")["DMA_tensor"]
    buf = np.random.default_rng(1).integers(0, 256, (10, layout.nbytes), dtype=np.uint8)
    fields = D.Fields(buf, layout)
    fields["cmd_type"]
    kept = fields.unread()
    assert kept.words is fields.words and not kept._read
    assert kept.words.nbytes == buf.nbytes          # the descriptors' bytes, nothing more


def test_register_fields_name_tiu_fields_and_join_dma_addresses():
    tiu = D.layouts("AKS")["sMM2"]
    buf = np.random.default_rng(2).integers(0, 256, (4, tiu.nbytes), dtype=np.uint8)
    reg = RegisterFields(D.Fields(buf, tiu), "TIU")
    assert list(reg) == ["des_" + name for name, _, _ in tiu.fields]
    dma = D.layouts("AKS")["DMA_tensor"]
    buf = np.random.default_rng(3).integers(0, 256, (4, dma.nbytes), dtype=np.uint8)
    reg = RegisterFields(D.Fields(buf, dma), "DMA")
    names = [name for name, _, _ in dma.fields]
    assert list(reg) == names + ["src_start_addr", "dst_start_addr"]
    at = {name: (off, width) for name, off, width in dma.fields}
    for side in ("src", "dst"):
        hi = D.extract(buf, *at[f"{side}_start_addr_h13"])
        lo = D.extract(buf, *at[f"{side}_start_addr_l32"])
        assert reg[f"{side}_start_addr"].tolist() == [int(h) * 2**32 + int(lo_) for h, lo_ in zip(hi, lo)]
    assert list(reg.take(np.array([2]))) == list(reg)


def _trim_by_counter(ids, cmd_ids):
    """The rule of _edge_trim_tiu written with Counter: leading ids no command has are dropped,
    trailing records while their id occurs more often among the records than the commands."""
    keep = np.ones(len(ids), bool)
    known = set(cmd_ids.tolist())
    first = next((i for i, v in enumerate(ids.tolist()) if v in known), len(ids))
    keep[:first] = False
    excess = Counter(ids.tolist())
    excess.subtract(Counter(cmd_ids.tolist()))
    i = len(ids) - 1
    while i >= first and excess[int(ids[i])] > 0:
        excess[int(ids[i])] -= 1
        keep[i] = False
        i -= 1
    return keep


@pytest.mark.parametrize("spread", [1, 10**9])       # a counter's range; ids far apart
def test_tiu_edge_trim_counts_as_the_rule_says(spread):
    rng = np.random.default_rng(5)
    for _ in range(50):
        cmd = np.arange(int(rng.integers(1, 40))) * spread
        ids = np.concatenate([rng.integers(1, 4, int(rng.integers(0, 3))) * spread * 1000 + 7,   # no command
                              cmd, rng.choice(cmd, int(rng.integers(0, 4)))])                   # trailing repeats
        assert np.array_equal(bind._edge_trim_tiu(ids, cmd), _trim_by_counter(ids, cmd))
    # a hand-computed case: 5 leads with no command; the trailing 2 and 3 are repeats
    ids = np.array([5, 0, 1, 2, 3, 2, 3])
    assert bind._edge_trim_tiu(ids, np.arange(4)).tolist() == [False, True, True, True, True, False, False]


def test_sections_of_an_unsorted_command_list_are_found_as_of_a_sorted_one():
    n = 7
    z = np.zeros(n, np.int64)
    section = np.array([2, 0, 2, 4, 0, 4, 4], np.int32)
    cl = CommandList("TIU", np.array([0, 0, 1, 0, 1, 1, 2], np.int32), z, z, z, z, z - 1, z - 1, z - 1,
                     z - 1, section, des={1: (9, 3)}, des_tags={})
    secs = bind._node_sections(cl, None, "TIU", None)
    assert secs.spans.tolist() == [2, 3, 2, 3]                  # sections 0, 1 (DES), 2, 4
    assert [m.tolist() if m is not None else None for m in secs.members] == [[1, 4], None, [0, 2], [3, 5, 6]]
    assert secs.des == [None, (9, 3), None, None]


@pytest.mark.skipif(not (PMU / "aks-m2-c8").is_dir(), reason="../shared/data/pmu/aks-m2-c8 is absent")
def test_a_bound_core_keeps_only_what_its_cdma_ports_need():
    from reportgen.parsers.pmu.dump import build_profile, read_dump

    raw = read_dump(PMU / "aks-m2-c8" / "input")
    assert all(len(c.file) for c in raw.cores)
    profile = build_profile(raw)
    assert len(profile.commands)
    for core in raw.cores:
        assert not core.streams and set(core.commands) <= {k for k in core.commands if k.startswith("CDMA")}
        assert len(core.file) == 0 or core.kv           # the file stays only for DES chains
        assert not len(core.extra_off) and core.extra_off.base is None   # no view keeps the array
