"""BM1688 / CV84X6 decoding beyond the generic golden tests, and TIU clock overrides.

Independent sources: the generator truth (expected_commands.csv: register layouts, bytes) and
the clock rule of issue 25 (an override rescales TIU around the sync instant; DMA untouched).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shared_data import PMU, needs
from truth import truth_pairs
from reportgen.parsers.pmu import load_dump
from reportgen.parsers.pmu.chips import chip_for_arch

DESCRIPTOR_CASES = ["bm1688-m2-c2", "bm1688-bmodel-c2", "cv84x6-m2-c4", "cv84x6-bmodel-c4"]


def _case(name: str):
    """A golden case's folder, or a skip naming where it was looked for."""
    base = PMU / name
    if not base.is_dir():
        pytest.skip(f"shared golden data not found at {base}")
    return base


@pytest.mark.parametrize("case", DESCRIPTOR_CASES)
def test_function_type_is_the_register_layout(case):
    """With a descriptor, Function Type is the register op the generator encoded."""
    base = _case(case)
    profile = load_dump(base / "input")
    truth = pd.read_csv(base / "expected_commands.csv", keep_default_na=False)
    for where, g, t in truth_pairs(profile.commands, truth, False):
        want = t["register_layout"].str.replace("（0x000）", "", regex=False).tolist()
        assert g["func_type"].astype(str).tolist() == want, where


@pytest.mark.parametrize("arch, chip", [("4", "BM1688"), ("bm1688", "BM1688"), ("CV186X", "BM1688"),
                                        ("7", "CV84X6"), ("BM1684X2", "CV84X6"), ("cv84x6", "CV84X6")])
def test_arch_values(arch, chip):
    assert chip_for_arch(arch).name == chip


def test_chip_id_form_is_not_accepted():
    assert chip_for_arch("0x1686") is None and chip_for_arch("5768") is None


@needs(PMU / "cv84x6-m0-c4")
def test_cv84x6_strays_are_dropped_and_accounted():
    """One stray at each end of every TIU stream (spec §7.3): dropped, counted, truth met."""
    profile = load_dump(PMU / "cv84x6-m0-c4" / "input")
    for core in range(4):
        entry = profile.meta.accounting[f"TIU_{core}"]
        assert entry["dropped: TIU edge stray"] == 2
    assert profile.meta.chip == "CV84X6" and profile.meta.tiu_freq_mhz == 1400
    assert profile.meta.dma_freq_mhz == 1200


# -- clock overrides ---------------------------------------------------------------------------

def _engine(p, engine):
    c = p.commands[p.commands["engine"] == engine].sort_values(["core", "global_idx"])
    return c["start_ns"].to_numpy(), c["end_ns"].to_numpy()


@needs(PMU / "aks-m2-c8")
def test_tiu_freq_override_rescales_tiu_around_the_sync_point():
    """--tiu_freq 800 on a 1000 MHz capture: TIU durations x1.25, DMA untouched, span within 25 %
    (the reference moves TIU by counter x clock difference: 2,144 -> 235,357 µs, Q22)."""
    base = load_dump(PMU / "aks-m2-c8" / "input")
    slow = load_dump(PMU / "aks-m2-c8" / "input", tiu_freq=800)
    assert slow.meta.tiu_freq_mhz == 800
    s0, e0 = _engine(base, "TIU")
    s1, e1 = _engine(slow, "TIU")
    # cycles are native; each duration is (cycles - 1) / 800 MHz instead of / 1000 MHz
    assert np.abs((e1 - s1) - 1.25 * (e0 - s0)).max() <= 1
    for engine in ("GDMA", "SDMA", "CDMA"):
        a, b = _engine(base, engine), _engine(slow, engine)
        assert (a[0] == b[0]).all() and (a[1] == b[1]).all(), engine
    span = lambda p: p.commands["end_ns"].max() - p.commands["start_ns"].min()  # noqa: E731
    # measured from the sync instant (the end of the preamble's TIU record #1, ~2 µs before the
    # first shown record) the span grows by at most the clock ratio; overall by 25.02 % here
    lead = _sync_lead(base)
    assert 0 < lead < 10_000
    assert span(base) < span(slow) and span(slow) + lead <= 1.25 * (span(base) + lead) + 1
    assert span(slow) <= 1.251 * span(base)


def _sync_lead(p) -> int:
    """ns from core 0's sync instant to time 0 of the report (the earliest shown record)."""
    from reportgen.parsers.pmu.dump import read_dump
    raw = read_dump(p.meta.input_path)
    c0 = raw.cores[0]
    starts = [int(s["start_ns"][0]) for s in c0.streams.values() if len(s)]
    return min(starts) - c0.sync_ns


@needs(PMU / "aks-m2-f900")
def test_override_equal_to_the_declared_clock_changes_nothing():
    """aks-m2-f900 declares tpu_freq=900: --tiu_freq 900 is the capture itself, and the
    counters are converted at 900 MHz absolutely (the golden truth)."""
    a = load_dump(PMU / "aks-m2-f900" / "input")
    b = load_dump(PMU / "aks-m2-f900" / "input", tiu_freq=900)
    assert a.commands["start_ns"].equals(b.commands["start_ns"])
    c = load_dump(PMU / "aks-m2-f900" / "input", tiu_freq=1000)
    span = lambda p: p.commands["end_ns"].max() - p.commands["start_ns"].min()  # noqa: E731
    assert 0.8 * span(a) <= span(c) <= span(a)


@needs(PMU / "bm1688-m2-c2")
def test_override_on_bm1688_keeps_cores_aligned():
    """BM1688 syncs on the closing wait_msg (the last TIU record): every core's last TIU record
    still ends at the same instant after an override, and GDMA durations are unchanged."""
    a = load_dump(PMU / "bm1688-m2-c2" / "input")
    b = load_dump(PMU / "bm1688-m2-c2" / "input", tiu_freq=1080)
    last = lambda p: p.commands[p.commands["engine"] == "TIU"].groupby("core")["end_ns"].max()  # noqa: E731
    assert last(b).nunique() == 1 and last(a).nunique() == 1
    ga, gb = _engine(a, "GDMA"), _engine(b, "GDMA")
    assert ((ga[1] - ga[0]) == (gb[1] - gb[0])).all()


# -- chip facts --------------------------------------------------------------------------------

@pytest.mark.parametrize("case, want", [
    # the reference's RegInfo arch block (spec chips-bm1688-cv84x6.md §10) and the derived peaks
    ("bm1688-m2-c2", {"NPU lanes per core": 32, "Local memory per core": 4, "DDR frequency": 4266,
                      "TIU frequency": 900, "DMA frequency": 750, "DDR peak per core": 32,
                      "DDR peak per chip (derived)": 64,
                      # 32 lanes x 32 IC x 4 OHOW MACs x 2 ops x 900 MHz
                      "int8 peak per core (derived)": 32 * 32 * 4 * 2 * 900e6 / 1e12,
                      "f32 peak per core (derived)": 32 * 4 * 2 * 900e6 / 1e12}),
    ("cv84x6-m0-c4", {"NPU lanes per core": 16, "Local memory per core": 0.25, "TIU frequency": 1400,
                      "DMA frequency": 1200, "DDR peak per chip (derived)": 256}),
])
def test_chip_facts_in_the_workbook(case, want, tmp_path):
    """The Engine Summary sheet lists the Detail Spec items with units, and the peaks."""
    import openpyxl
    from reportgen.analysis.metrics import engine_summary
    from reportgen.writers import xlsx

    base = _case(case)
    p = load_dump(base / "input")
    path = xlsx.write(p, engine_summary(p), tmp_path, quiet=True)
    ws = openpyxl.load_workbook(path, read_only=True)["Engine Summary"]
    rows = [r for r in ws.iter_rows(values_only=True)]
    start = next(i for i, r in enumerate(rows) if r[0] == "Chip facts and peaks")
    assert rows[start + 1][:4] == ("Item", "Value", "Unit", "Source")
    got = {}
    for r in rows[start + 2:]:
        if r[0] is None:
            break
        got[r[0]] = (r[1], r[2])
    for label, value in want.items():
        assert got[label][0] == pytest.approx(value), label
    assert got["TIU frequency"][1] == "MHz" and got["Local memory per core"][1] == "MiB"


@pytest.mark.parametrize("case", DESCRIPTOR_CASES)
def test_dma_dependencies_are_the_truth(case):
    """DMA cmd_id_dep: BM1688 holds a plain 24-bit TIU id, CV84X6 an enable bit and a 20-bit id
    (as AKS); both give the generator's dep_cmd_id (0 = none)."""
    base = _case(case)
    profile = load_dump(base / "input")
    truth = pd.read_csv(base / "expected_commands.csv", keep_default_na=False)
    for where, g, t in truth_pairs(profile.commands, truth, False):
        got = g["dep_cmd_id"].astype("Int64").fillna(0).to_numpy(int)
        assert (got == t["dep_cmd_id"].astype(int).to_numpy()).all(), where


# -- capture modes without a golden case of their own ------------------------------------------

def _without_blocks(case: str, drop: set[int], out):
    """``case``'s dump with the blocks of types ``drop`` removed: the same capture taken in a
    lower mode (no DYN_EXTRA: mode 1; no DYN_DATA either: mode 0)."""
    import struct

    from reportgen.parsers.pmu import container

    src = PMU / case / "input"
    out.mkdir()
    (out / "global.profile").write_bytes((src / "global.profile").read_bytes())
    for f in container.core_files(src):
        with (out / f.name).open("wb") as fh:
            for b in container.read_blocks(f):
                if b.type not in drop:
                    fh.write(struct.pack("<II", b.type, len(b.payload)) + bytes(b.payload))
    return out


@pytest.mark.parametrize("case, drop, mode", [
    ("bm1688-m1-c2", {5, 6}, "0"),          # BM1688 mode 0: no system labelling, sync on the last TIU
    ("bm1688-m2-c2", {6}, "1"),
    ("cv84x6-m2-c4", {6}, "1"),             # CV84X6 mode 1: strays dropped before the sync record
])
def test_lower_modes_meet_the_truth(case, drop, mode, tmp_path):
    _case(case)
    profile = load_dump(_without_blocks(case, drop, tmp_path / "dump"))
    assert profile.meta.mode == mode
    truth = pd.read_csv(PMU / case / "expected_commands.csv", keep_default_na=False)
    for where, g, t in truth_pairs(profile.commands, truth, mode == "0"):
        assert len(g) == len(t), where
        for col in ("cmd_id", "start_ns", "end_ns"):
            assert (g[col].to_numpy() == t[col].to_numpy()).all(), (where, col)
        if not where.startswith("TIU"):
            assert (g["bytes"].to_numpy(int) == t["bytes"].to_numpy(int)).all(), where
    if mode == "0":
        # nothing tells a barrier from work on BM1688 (spec §7.5): every record is unknown
        assert set(profile.commands["func_type"].astype(str)) == {"unknown"}
        assert not profile.commands["is_sys"].any()


# -- every output ------------------------------------------------------------------------------

@needs(PMU / "cv84x6-m0-c4")
def test_every_output_on_a_new_chip(tmp_path):
    """The CLI on a CV84X6 mode-0 capture: every output written; summary.json carries the
    all-direction GDMA bandwidth (DDR BW unknown without directions) and summary.txt prints the
    same number; the perfetto trace holds every command at its decoded time, with no SDMA or
    CDMA track (the chip has neither)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from test_perfetto import command_slices, decode
    from reportgen.analysis.metrics import engine_summary

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "reportgen", str(PMU / "cv84x6-m0-c4" / "input"),
                          str(out), "--quiet"], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=str(root)))
    assert res.returncode == 0, res.stderr
    for rel in ("summary.txt", "summary.json", "PerfDoc/PerfAI_output.xlsx", "PerfWeb/result.html",
                "perfetto.pftrace", "tiuRegInfo_3.txt", "tdmaRegInfo_3.txt"):
        assert (out / rel).stat().st_size > 0, rel
    assert not list(out.glob("cdmaRegInfo*"))
    profile = load_dump(PMU / "cv84x6-m0-c4" / "input")
    want = engine_summary(profile)
    doc = json.loads((out / "summary.json").read_text())
    for row, expect in zip(doc["summary"], want.to_dict("records")):
        assert row["gdma_bytes"] == expect["gdma_bytes"] > 0
        assert row["gdma_bw_busy"] == pytest.approx(expect["gdma_bw_busy"])
        assert row["gdma_ddr_bw_busy"] is None                  # no direction in mode 0
    text = (out / "summary.txt").read_text()
    assert "GDMA BW(GB/s)" in text and f"{want['gdma_bw_busy'].iloc[-1]:.2f}" in text
    # the HTML's second summary table shows the same all-direction bandwidth (2 decimals)
    from bs4 import BeautifulSoup
    page = BeautifulSoup((out / "PerfWeb" / "result.html").read_text(encoding="utf-8"), "html.parser")
    more = page.find(id="engine-summary-more")
    heads = [th.get_text() for th in more.find_all("tr")[1].find_all("th")]
    overall = [td.get_text() for td in more.find("tr", class_="overall").find_all("td")]
    assert overall[heads.index("BW (GB/s)")] == f"{want['gdma_bw_busy'].iloc[-1]:.2f}"   # GDMA first
    assert overall[heads.index("DDR read BW (GB/s)")] == "n/a"                         # mode 0
    dec = decode(out / "perfetto.pftrace")
    paths = {p.split("/")[-1] for p in command_slices(dec)["path"]}
    assert {"TIU", "GDMA"} <= paths and not {"SDMA", "CDMA"} & paths
    sl = command_slices(dec)
    assert len(sl) == len(profile.commands)
    assert sorted(sl["ts"]) == sorted(profile.commands["start_ns"].tolist())


def _as_des_capture(case: str, out):
    """``case`` (mode 2) re-dispatched through descriptor chains: every kernel's TIU and GDMA
    NODE_SETs (and their ID_RESETs) become one DES_TIU and one DES_GDMA reference whose chains
    (BLOCK_DES_KV) hold the kernel's DYN_EXTRA descriptors in order (spec pmu-dump-format.md
    §6.5, §7.2); DYN_EXTRA is dropped."""
    import struct

    import numpy as np

    from reportgen.parsers.pmu import container
    from reportgen.parsers.pmu.dump import _dyn_extra_entries
    from reportgen.parsers.pmu.nodes import _strings_and_des
    from reportgen.parsers.pmu.records import Block, Node, node_fields

    src = PMU / case / "input"
    out.mkdir()
    (out / "global.profile").write_bytes((src / "global.profile").read_bytes())
    chip = chip_for_arch([ln.split("=")[1] for ln in (src / "global.profile").read_text().splitlines()
                          if ln.startswith("arch=")][0])
    for f in container.core_files(src):
        blocks = container.read_blocks(f)
        extra = next(bytes(b.payload) for b in blocks if b.type == Block.DYN_EXTRA)
        offs, lens = _dyn_extra_entries(memoryview(extra), f, 0, lambda *a: None)
        words = np.frombuffer(next(b.payload for b in blocks if b.type == Block.DYN_DATA), "<u4")
        fields = node_fields(words)
        payload, _, _ = _strings_and_des(words, fields["type"], f, 0)
        new, kv, pending, entry = [], [], {}, 0
        key = 1
        for i, w in enumerate(words.tolist()):
            t, eng = int(fields["type"][i]), chip.node_engines.get(int(fields["engine"][i]))
            if payload[i]:
                new.append(w)
            elif t == Node.NODE_SET:
                pending.setdefault(eng, []).append(extra[offs[entry]: offs[entry] + lens[entry]])
                entry += 1
            elif t == Node.ID_RESET:
                continue
            elif t == Node.FUNC_END:
                for engine, node in (("TIU", Node.DES_TIU), ("GDMA", Node.DES_GDMA)):
                    chain = pending.pop(engine, [])
                    if chain:
                        new += [int(node) | key << 7, len(chain)]
                        kv.append(struct.pack("<III", key, len(chain), 0) + b"".join(chain))
                        key += 1
                new.append(w)
            else:
                new.append(w)
        with (out / f.name).open("wb") as fh:
            for b in blocks:
                if b.type == Block.DYN_EXTRA:
                    continue
                data = np.array(new, "<u4").tobytes() if b.type == Block.DYN_DATA else bytes(b.payload)
                fh.write(struct.pack("<II", b.type, len(data)) + data)
            for chain in kv:
                fh.write(struct.pack("<II", int(Block.BLOCK_DES_KV), len(chain)) + chain)
    return out


@pytest.mark.parametrize("case", ["bm1688-m2-c2", "cv84x6-m2-c4"])
def test_des_dispatch_meets_the_truth(case, tmp_path):
    """The DES capture path (descriptor chains walked with the chip's head layout and stop
    rules) gives the same commands, times, bytes, register ops and ops as mode 2."""
    _case(case)
    des = load_dump(_as_des_capture(case, tmp_path / "dump"))
    m2 = load_dump(PMU / case / "input")
    assert set(des.commands["mode"].astype(str)) == {"DES"}
    truth = pd.read_csv(PMU / case / "expected_commands.csv", keep_default_na=False)
    for where, g, t in truth_pairs(des.commands, truth, False):
        for col in ("cmd_id", "start_ns", "end_ns"):
            assert (g[col].to_numpy() == t[col].to_numpy()).all(), (where, col)
        want = t["register_layout"].str.replace("（0x000）", "", regex=False).tolist()
        assert g["func_type"].astype(str).tolist() == want, where
    for col in ("func_name", "bytes", "direction", "alg_ops", "uarch_ops", "kernel"):
        a, b = des.commands[col].astype(str).tolist(), m2.commands[col].astype(str).tolist()
        assert a == b, col


def test_cv84x6_rvt_names_follow_the_generator_table():
    """RVT nodes on CV84X6: generator index x variant -> names (the shared spec's table, read
    here independently), DMA direction from the variant's suffix, unknown -> rvt / unknown."""
    import csv

    import numpy as np

    from reportgen.parsers.pmu.labels import LABELS
    from reportgen.parsers.pmu.rvt_names import cv84x6_rvt

    spec = PMU.parent.parent / "spec" / "registers" / "CV84X6-rvt-names.csv"
    if not spec.is_file():
        pytest.skip(f"shared spec not found at {spec}")
    rows = list(csv.DictReader(spec.open(encoding="utf-8")))
    idx = np.array([int(r["func_index"]) for r in rows])
    variant = np.array([int(r["variant"]) for r in rows])
    ftype, fname, way = cv84x6_rvt(idx, variant & 0x1F, variant >> 5)
    assert [LABELS.name(int(c)) for c in ftype] == [r["function_type"] for r in rows]
    assert [LABELS.name(int(c)) for c in fname] == [r["function_name"] for r in rows]
    loads = [r["function_name"].endswith(("_ld", "_ldt", "_ldbc", "_mld")) for r in rows]
    assert ((way == 1) == np.array(loads)).all() and (way == 1).any() | (way == 2).any()
    t, n, w = cv84x6_rvt(np.array([31]), np.array([0]), np.array([0]))
    assert (LABELS.name(int(t[0])), LABELS.name(int(n[0])), int(w[0])) == ("rvt", "unknown", 0)


# -- B6: BM1688 DMA system commands --------------------------------------------------------------

def _patched_node_dump(src, dst, engine: int, tsk_typ: int, eu: int):
    """A copy of dump ``src`` in ``dst`` whose first NODE_SET of ``engine`` (core 0) is turned
    into a (tsk_typ, eu) command."""
    import shutil
    from reportgen.parsers.pmu.container import read_blocks
    from reportgen.parsers.pmu.records import Block, Node, node_fields, pack_node

    shutil.copytree(src, dst)
    path = dst / "cdmlib0_0.profile"
    data = bytearray(path.read_bytes())
    block = next(b for b in read_blocks(path, bytes(data)) if b.type == Block.DYN_DATA)
    words = np.frombuffer(bytes(block.payload), "<u4")
    f = node_fields(words)
    sets = np.flatnonzero((f["type"] == Node.NODE_SET) & (f["engine"] == engine))
    i = int(sets[0])
    word = pack_node(Node.NODE_SET, engine, tsk_typ, eu, int(f["extra_info"][i]))
    at = block.offset + 8 + 4 * i
    data[at:at + 4] = int(word).to_bytes(4, "little")
    path.write_bytes(bytes(data))


@needs(PMU / "bm1688-m1-c2")
@pytest.mark.parametrize("eu, name", [(3, "sys_send"), (4, "sys_wait"), (1, "nop")])
def test_bm1688_dma_system_commands_are_typed_sys(tmp_path, eu, name):
    """B6: the reference types every BM1688 cmd_type-6 DMA command "chain end" (its table's
    entry (6, 0)); they are system commands: Type "sys" as on CV84X6, the name by special
    function from the chip's table (spec chips-bm1688-cv84x6.md §8.1, §11 B6)."""
    _patched_node_dump(PMU / "bm1688-m1-c2" / "input", tmp_path / "in", engine=1, tsk_typ=6, eu=eu)
    c = load_dump(tmp_path / "in").commands
    first = c[(c["sheet"] == "GDMA_0") & (c["global_idx"] == 0)].iloc[0]
    assert (first["func_type"], first["func_name"]) == ("sys", name)
    assert first["is_sys"] and first["sys_wait"] == (name == "sys_wait")
    assert pd.isna(first["direction"]) and pd.isna(first["dtype"])
    # the rest of the stream is described as before
    rest = c[(c["sheet"] == "GDMA_0") & (c["global_idx"] > 0)]
    assert set(rest["func_type"].astype(str)) == {"DMA_tensor"}


def test_dma_type_fix_is_bm1688_only():
    """CV84X6 names cmd_type 6 "sys" from its own table; BM1688 now agrees; the names by special
    function stay each chip's (spec §8.1)."""
    from reportgen.parsers.pmu.chips import BM1688, CV84X6
    from reportgen.parsers.pmu.describe import _names
    from reportgen.parsers.pmu.labels import LABELS

    ctype, sp = np.array([6, 6, 6, 0]), np.array([0, 3, 4, 0])
    for chip in (BM1688, CV84X6):
        ft, fn = _names(chip, "GDMA", ctype, sp)
        assert [LABELS.name(int(x)) for x in ft] == ["sys", "sys", "sys", "DMA_tensor"]
        assert [LABELS.name(int(x)) for x in fn][:3] == ["chain end", "sys_send", "sys_wait"]


# -- TIU extras of the two chips (spec chips-bm1688-cv84x6.md §8.3) -------------------------------

def _fields(**cols):
    n = len(next(iter(cols.values())))
    return {k: np.asarray(v if isinstance(v, list) else [v] * n, np.uint64) for k, v in cols.items()}


def test_initial_cycles_message_ids_and_modelled_bank_conflicts():
    """Hand-computed from the spec's tables: initial cycles per op and eu, Msg Id = imm & 0x7F and
    Sd\\Wt Count = (imm >> 16) & 7 for send/wait msg only, BM1688's sRQ&sDQ conflict model."""
    from reportgen.parsers.pmu.tiu_ops_chips import tiu_extras_chip

    mm2 = tiu_extras_chip("CV84X6", "sMM2", _fields(tsk_eu_typ=[4, 5, 6, 7, 9, 11, 13]))
    assert mm2["init_cycles"].tolist() == [81, 56, 37, 81, 37, 56, 56]
    assert "bank_conflict_model" not in mm2                     # CV84X6 measures them
    assert tiu_extras_chip("BM1688", "CONV", _fields(tsk_eu_typ=[0]))["init_cycles"].tolist() == [23]
    sfu = tiu_extras_chip("BM1688", "sSFU", _fields(tsk_eu_typ=[17, 12]))
    assert sfu["init_cycles"].tolist() == [14, 0]
    cw = tiu_extras_chip("BM1688", "sCW&sBC", _fields(tsk_eu_typ=[0, 1, 2, 3, 4, 5]))
    assert cw["init_cycles"].tolist() == [30, 0, 27, 27, 3, 3]
    assert np.isnan(tiu_extras_chip("CV84X6", "sVC", _fields(tsk_eu_typ=[0]))["init_cycles"]).all()

    sys_ = tiu_extras_chip("BM1688", "SYS", _fields(tsk_eu_typ=[8, 9, 3], imm=[(2 << 16) | 5, (4 << 16) | 0x85, 7]))
    assert sys_["msg_id"].tolist() == [5, 5, -1] and sys_["sd_wt_count"].tolist() == [2, 4, -1]
    assert sys_["init_cycles"].tolist() == [0, 0, 0] and sys_["bank_conflict_model"].tolist() == [0, 0, 0]

    rq = tiu_extras_chip("BM1688", "sRQ&sDQ", _fields(tsk_eu_typ=[0, 0], res0_addr=[0x100, 0x100],
                                                       opd0_addr=[0x200, 0x300]))
    assert rq["bank_conflict_model"].tolist() == [2, 1] and rq["init_cycles"].tolist() == [11, 11]
