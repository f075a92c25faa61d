"""Tests of the synthetic PMU dump writer (reportgen.testing.synth).

The written dumps are read back here with nothing but the record dtypes of
reportgen/parsers/pmu/records.py, the register tables (data/<chip>.csv) and the rules of
shared/spec/pmu-dump-format.md, re-implemented in a few independent lines:

* structure: TLV block order, record counts against global.profile, writer checklist §15;
* the truth CSV against the raw PMU records (own u32 time unwrap, 16-bit id unwrap, init
  slicing, cross-core alignment on TIU record #1, CDMA anchoring on the VSDMA sends, origin);
* DYN_DATA id runs against PMU id runs (§15.4); DYN_EXTRA entries against their nodes (§15.5);
* determinism per seed; names exist in the mode-1/mode-2 name tables;
* round trip through our decoder (reportgen.parsers.pmu.load_dump) for modes 0/1/2, AKS/AKSV.
* writer specifics: descriptors re-packed byte for byte against the golden dumps, the init
  preamble equal to the golden's, TIU record #1 as one physical instant, options, CLI.

Sizes and speeds are printed (``pytest -s``), never asserted.
"""
from __future__ import annotations

import csv
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reportgen.parsers.pmu.records import (BLOCK_HEADER, CDMA_RECORD, DMA_RECORD, TIU_RECORD,
                                           Block)
from reportgen.testing import dumpformat as df
from shared_data import PMU, needs
from truth import truth_pairs
from reportgen.testing.synth import (SynthConfig, main, pack_descriptors, register_layouts,
                                     unpack_descriptors, write_dump)

DATA = Path(__file__).resolve().parents[1] / "reportgen" / "parsers" / "pmu" / "data"
GOLDEN_C8 = PMU / "aks-m2-c8" / "input"    # golden dump written by another generator
U32 = 1 << 32
# spec §1: engine field codes, CORE_NUM, arch codes
ENGINE_CODES = {"AKS": {"TIU": 0, "GDMA": 1, "SDMA": 3, "CDMA": 4, "VSDMA": 5},
                "AKSV": {"TIU": 0, "GDMA": 1, "SDMA": 2, "CDMA": 3, "VSDMA": 4}}
CORE_NUM = {"AKS": 8, "AKSV": 4}
ARCH_CODE = {"AKS": "8800", "AKSV": "140814"}
MEM = {0: "DDR", 1: "L2M", 2: "LMEM"}
TAG_MEM = {31: "LMEM", 30: "L2M"}


# ------------------------------------------------------------------------------------------
# independent readers
# ------------------------------------------------------------------------------------------
def read_blocks(path: Path) -> list[tuple[int, bytes]]:
    raw = path.read_bytes()
    out, off = [], 0
    while off < len(raw):
        assert len(raw) - off >= BLOCK_HEADER.itemsize, f"{path.name}: truncated header"
        typ, length = (int(x) for x in np.frombuffer(raw, "<u4", 2, off))
        assert off + 8 + length <= len(raw), f"{path.name}: truncated block {typ}"
        out.append((typ, raw[off + 8: off + 8 + length]))
        off += 8 + length
    return out


def read_global(ddir: Path) -> list[tuple[str, str]]:
    lines = (ddir / "global.profile").read_text().split("\n")
    assert lines[-1] == "" and all(lines[:-1]), "global.profile: blank line"
    return [tuple(x.split("=", 1)) for x in lines[:-1]]


def core_files(ddir: Path) -> list[Path]:
    return sorted(ddir.glob("cdmlib*.profile"), key=lambda p: int(p.stem.split("_")[-1]))


def port_files(ddir: Path) -> dict[int, Path]:
    return {int(p.stem.split("_")[-1]): p for p in ddir.glob("cdma_*.profile")}


def monitor(blocks, btype, dtype) -> np.ndarray:
    pay = [b for t, b in blocks if t == btype]
    return np.frombuffer(pay[0], dtype) if pay else np.zeros(0, dtype)


def unwrap_times(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Records are in time order: a raw start below the previous one is a u32 wrap."""
    s = start.astype(np.int64)
    e = end.astype(np.int64)
    wraps = np.r_[0, np.cumsum(s[1:] < s[:-1])]
    s = s + wraps * U32
    e = e + wraps * U32
    e = np.where(e < s, e + U32, e)
    return s, e


def unwrap_ids(raw: np.ndarray) -> np.ndarray:
    r = raw.astype(np.int64)
    lift = np.r_[0, np.cumsum((r[:-1] >= 65001) & (r[:-1] <= 65535) & (r[1:] < 1000))]
    return r + lift * 65536


def layouts(arch: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    with open(DATA / f"{arch}.csv", newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            op = r["op"].split("（")[0]
            d = out.setdefault(op, {"bytes": int(r["descriptor_bits"]) // 8, "f": {}})
            d["f"].setdefault(r["field"], (int(r["bit_offset"]), int(r["bit_width"])))
    return out


def bits(desc: bytes, off: int, width: int) -> int:
    return (int.from_bytes(desc, "little") >> off) & ((1 << width) - 1)


def dyn_nodes(words: np.ndarray) -> list[tuple[int, int, int, int, int]]:
    """(type, engine, typ, eu, extra) of each DYN_DATA record, FUNC strings skipped."""
    out, i = [], 0
    w = words.astype(np.int64)
    while i < len(w):
        t = int(w[i] & 0x7F)
        if t == 0:                      # FUNC: packed = byte length, then the string words
            i += 1 + -(-int(w[i] >> 7) // 4)
            out.append((0, 0, 0, 0, 0))
            continue
        out.append((t, int(w[i] >> 7 & 7), int(w[i] >> 10 & 31), int(w[i] >> 15 & 31),
                    int(w[i] >> 20)))
        i += 1
    return out


def dyn_extra_entries(payload: bytes) -> list[bytes]:
    out, off = [], 0
    while off < len(payload):
        pid, typ, n = (int(x) for x in np.frombuffer(payload, "<u4", 3, off))
        assert typ == 1
        out.append(payload[off + 12: off + 12 + n])
        off += 12 + n
    return out


def runs(ids: np.ndarray) -> list[int]:
    """Lengths of the runs of consecutive ids (+1 steps)."""
    if not len(ids):
        return []
    cut = np.flatnonzero(np.diff(ids.astype(np.int64)) != 1) + 1
    return np.diff(np.r_[0, cut, len(ids)]).tolist()


# ------------------------------------------------------------------------------------------
# generation fixtures
# ------------------------------------------------------------------------------------------
_CACHE: dict[tuple, tuple[Path, pd.DataFrame, dict]] = {}


def make(tmp_root: Path, **kw) -> tuple[Path, pd.DataFrame, dict]:
    key = tuple(sorted(kw.items()))
    if key not in _CACHE:
        out = tmp_root / ("d%d" % len(_CACHE))
        t0 = time.perf_counter()
        res = write_dump(out, SynthConfig(**kw))
        dt = time.perf_counter() - t0
        ddir = Path(res.dump_dir)
        size = sum(f.stat().st_size for f in ddir.iterdir())
        truth = pd.read_csv(out / "expected_commands.csv", keep_default_na=False)
        import json
        meta = json.loads((out / "generator_meta.json").read_text())
        print(f"\nsynth {kw}: {len(truth)} commands, {size / 1e6:.3f} MB in {dt:.2f} s")
        _CACHE[key] = (ddir, truth, meta)
    return _CACHE[key]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("synth")


BASIC = [dict(arch="AKS", mode=2, seed=11), dict(arch="AKS", mode=1, seed=12),
         dict(arch="AKS", mode=0, seed=13), dict(arch="AKSV", mode=2, seed=14),
         dict(arch="AKSV", mode=1, seed=15, rvt_ratio=0.4)]


def _kw(**kw):
    return {"cmds_per_core": 400, **kw}


# ------------------------------------------------------------------------------------------
# structure
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", BASIC, ids=lambda k: f"{k['arch']}-m{k['mode']}")
def test_structure_and_counts(root, kw):
    ddir, truth, meta = make(root, **_kw(**kw))
    arch, mode = kw["arch"], kw["mode"]
    g = read_global(ddir)
    keys = [k for k, _ in g]
    vals = dict(g)
    assert keys[0] == "arch" and vals["arch"] == ARCH_CODE[arch]
    assert keys[-1] == "tail_offset_ns"
    rec_keys = [k for k in keys if k.endswith("_record")]
    assert keys.index("max_record_num") < keys.index(rec_keys[0])
    cores = core_files(ddir)
    assert len(cores) == CORE_NUM[arch] == int(vals["core_num"])
    want_order = [Block.MONITOR_BD, Block.MONITOR_GDMA, Block.MONITOR_SDMA]
    want_order += [Block.DYN_EXTRA] * (mode == 2) + [Block.DYN_DATA] * (mode >= 1)
    for c, f in enumerate(cores):
        assert f.name == f"cdmlib0_{c}.profile"
        blocks = read_blocks(f)
        assert [t for t, _ in blocks] == [int(b) for b in want_order], f.name
        for name, bt, dt in (("tiu", 3, TIU_RECORD), ("gdma", 4, DMA_RECORD), ("sdma", 11, DMA_RECORD)):
            r = monitor(blocks, bt, dt)
            assert len(blocks[[t for t, _ in blocks].index(bt)][1]) % dt.itemsize == 0
            assert int(vals[f"core{c}_{name}_record"]) == len(r) >= 2
            assert len(r) < int(vals["max_record_num"])
            s, e = unwrap_times(r["inst_start_time"], r["inst_end_time"])
            assert (np.diff(s) > 0).all() and (e >= s).all(), f"{f.name} {name} not time-sorted"
            assert (np.diff(e[:-1]) > 0).all() or len(r) < 3
            # the 2 profile-init records are system-looking
            if name == "tiu":
                assert (r["thread_id_and_bank_conflict"][:2] == 2).all()
            else:
                assert (r["axi_d0_wr_vaild_cntr"][:2] + r["axi_d0_rd_vaild_cntr"][:2] == 0).all()
    ports = port_files(ddir)
    assert sorted(ports) == meta["cdma_ports"]
    for p, f in ports.items():
        blocks = read_blocks(f)
        assert [t for t, _ in blocks] == [int(Block.MONITOR_CDMA)]
        r = monitor(blocks, 12, CDMA_RECORD)
        assert int(vals[f"cdma_port{p}_record"]) == len(r)
        ids = r["inst_id_word"] & 0xFFFFFF
        assert (ids[:2] != 1).all() and ids[2] == 1          # sync pair, then a launch
        launches = np.split(ids[2:], np.flatnonzero(np.diff(ids[2:].astype(np.int64)) < -10) + 1)
        assert all(len(x) > 10 and x[0] == 1 and (np.diff(x) == 1).all() for x in launches)


def test_records_match_truth(root):
    for kw in BASIC:
        ddir, truth, meta = make(root, **_kw(**kw))
        check_truth_against_records(ddir, truth, meta)


def check_truth_against_records(ddir: Path, truth: pd.DataFrame, meta: dict) -> None:
    """Re-derive every kept record in the decoder's frame and compare with the truth."""
    arch = meta["arch"]
    vals = dict(read_global(ddir))
    f_tiu = float(vals.get("tpu_freq", 1000))
    derived = []
    sync = {}
    anchor_sdma = None
    n_ports = len(meta["cdma_ports"])
    for c, f in enumerate(core_files(ddir)):
        blocks = read_blocks(f)
        for name, bt, dt in (("TIU", 3, TIU_RECORD), ("GDMA", 4, DMA_RECORD), ("SDMA", 11, DMA_RECORD)):
            r = monitor(blocks, bt, dt)
            s, e = unwrap_times(r["inst_start_time"], r["inst_end_time"])
            if name == "TIU":
                s = np.round(s / f_tiu * 1000).astype(np.int64)
                e = np.round(e / f_tiu * 1000).astype(np.int64)
                sync[c] = int(e[1])
            ids = unwrap_ids(r["inst_id"]) + 1
            nbytes = (r["gif_mem_w_cntr"].astype(np.int64) + r["axi_d0_w_cntr"]) if name != "TIU" \
                else np.zeros(len(r), np.int64)
            drop = 2
            if name == "SDMA" and c == CORE_NUM[arch] - 1 and n_ports:
                anchor_sdma = e[2:2 + n_ports]
                drop += n_ports
            derived.append(pd.DataFrame({"core": c, "engine": name, "port": -1, "cmd_id": ids[drop:],
                                         "start_ns": s[drop:], "end_ns": e[drop:],
                                         "bytes": nbytes[drop:]}))
    ref = sync[min(sync)]
    for d in derived:
        c = int(d["core"].iloc[0]) if len(d) else None
        if c is not None:
            d["start_ns"] -= sync[c] - ref
            d["end_ns"] -= sync[c] - ref
    anchor = CORE_NUM[arch] - 1
    for i, (p, f) in enumerate(sorted(port_files(ddir).items())):
        r = monitor(read_blocks(f), 12, CDMA_RECORD)
        s, e = unwrap_times(r["inst_start_time"], r["inst_end_time"])
        # the port's tx_wait ends with the anchor's VSDMA send of this port (§9.4)
        offset = e[0] - (anchor_sdma[i] - (sync[anchor] - ref))
        derived.append(pd.DataFrame({"core": -1, "engine": "CDMA", "port": p,
                                     "cmd_id": (r["inst_id_word"][2:] & 0xFFFFFF).astype(np.int64),
                                     "start_ns": s[2:] - offset, "end_ns": e[2:] - offset,
                                     "bytes": r["m0_data_aw_cntr"][2:].astype(np.int64)}))
    d = pd.concat(derived, ignore_index=True)
    zero = d["start_ns"].min()
    d["start_ns"] -= zero
    d["end_ns"] -= zero
    t = truth.copy()
    t["port"] = pd.to_numeric(t["port"], errors="coerce").fillna(-1).astype(int)
    t.loc[t["engine"] == "CDMA", "core"] = -1
    assert len(t) == len(d), "truth row count != kept PMU records"
    cols = ["core", "engine", "port", "start_ns", "end_ns", "cmd_id", "bytes"]
    a = t[cols].sort_values(cols[:4]).reset_index(drop=True)
    b = d[cols].sort_values(cols[:4]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a.astype({"bytes": np.int64, "cmd_id": np.int64}),
                                  b.astype({"bytes": np.int64, "cmd_id": np.int64}),
                                  check_dtype=False)
    assert t["start_ns"].min() == 0 and (t["end_ns"] >= t["start_ns"]).all()


# ------------------------------------------------------------------------------------------
# dynamic nodes and descriptors
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [k for k in BASIC if k["mode"] >= 1],
                         ids=lambda k: f"{k['arch']}-m{k['mode']}")
def test_node_runs_mirror_pmu_runs(root, kw):
    """§15.4: per engine, the id runs of DYN_DATA equal the id runs of the PMU stream."""
    ddir, truth, meta = make(root, **_kw(**kw))
    arch = kw["arch"]
    codes = ENGINE_CODES[arch]
    eng_of = {codes["TIU"]: "TIU", codes["GDMA"]: "GDMA", codes["SDMA"]: "SDMA",
              codes["VSDMA"]: "SDMA"}
    for c, f in enumerate(core_files(ddir)):
        blocks = read_blocks(f)
        nodes = dyn_nodes(np.frombuffer([b for t, b in blocks if t == 5][0], "<u4"))
        counter = {"TIU": 0, "GDMA": 0, "SDMA": 0}
        node_ids = {e: [] for e in counter}
        seen = {e: 0 for e in counter}
        for t, e, typ, eu, extra in nodes:
            if t in (1, 13) and e in eng_of:
                name = eng_of[e]
                seen[name] += 1
                if seen[name] > 2:                        # the 2 init nodes are sliced off
                    node_ids[name].append(counter[name])
                counter[name] += 1
            elif t == 12 and e in eng_of:
                counter[eng_of[e]] = 0
            assert t in (0, 1, 12, 13, 15), f"unexpected node type {t}"
        for name, bt, dt in (("TIU", 3, TIU_RECORD), ("GDMA", 4, DMA_RECORD), ("SDMA", 11, DMA_RECORD)):
            r = monitor(blocks, bt, dt)
            pmu = unwrap_ids(r["inst_id"][2:])
            assert runs(pmu) == runs(np.array(node_ids[name])), f"core {c} {name}"
            assert (pmu == np.array(node_ids[name])).all()
            # no run ends in the 16-bit danger window when another run follows (§15.4, Q8)
            ends = np.cumsum(runs(pmu))[:-1] - 1
            assert not ((pmu[ends] % 65536 >= 65001) & (pmu[ends] % 65536 <= 65535)).any()


@pytest.mark.parametrize("kw", [k for k in BASIC if k["mode"] == 2],
                         ids=lambda k: f"{k['arch']}-m{k['mode']}")
def test_dyn_extra_matches_nodes(root, kw):
    """§15.5/§15.6: one decodable descriptor per TDI NODE_SET, of the node's engine and op."""
    ddir, truth, meta = make(root, **_kw(**kw))
    arch = kw["arch"]
    lay = layouts(arch)
    codes = ENGINE_CODES[arch]
    by_head = {}
    for op, d in lay.items():
        by_head[op] = d
    for f in core_files(ddir):
        blocks = read_blocks(f)
        types = [t for t, _ in blocks]
        assert types.index(6) < types.index(5)
        nodes = [n for n in dyn_nodes(np.frombuffer(blocks[types.index(5)][1], "<u4")) if n[0] == 1]
        ents = dyn_extra_entries(blocks[types.index(6)][1])
        assert len(ents) >= len(nodes)
        for (t, e, typ, eu, extra), desc in zip(nodes, ents):
            if e == codes["TIU"]:
                assert bits(desc, 41, 4) == typ and bits(desc, 45, 5) == eu
                if typ == 15:
                    assert len(desc) == lay["SYS"]["bytes"] and eu in (0, 1, 2, 3, 4, 5, 8, 9, 30, 31)
                else:
                    assert bits(desc, 0, 1) == 1                    # short form only
                    assert len(desc) in (32, 48, 64)
            elif e == codes["CDMA"]:
                assert bits(desc, 4, 4) == typ and bits(desc, 8, 3) == eu
                op = {0: "CDMA_send", 4: "CDMA_receive", 7: "sCDMA_sys"}[typ]
                assert len(desc) == lay[op]["bytes"]
            else:                                                   # GDMA / SDMA / VSDMA
                assert bits(desc, 32, 5) == typ and bits(desc, 37, 3) == eu
                if typ == 6:
                    assert bits(desc, 3, 1) == 1 and len(desc) == lay["sDMA_sys"]["bytes"]
                    continue
                L = lay["DMA_tensor"]["f"]
                assert len(desc) == lay["DMA_tensor"]["bytes"] and bits(desc, 3, 1) == 0
                assert bits(desc, *L["src_data_format"]) == extra & 0xF <= 8
                for side, shift in (("src", 4), ("dst", 6)):
                    tag = bits(desc, *L[f"{side}_start_addr_h13"]) >> 8
                    assert tag in (1, 30, 31)
                    assert TAG_MEM.get(tag, "DDR") == MEM[extra >> shift & 3]
                assert bits(desc, *L["localmem_mask_l32"]) == 0xFFFFFFFF


def test_truth_names_exist_in_name_tables(root):
    m2 = pd.read_csv(DATA / "mode2-names.csv")
    m2_keys = set(zip(m2["function_type"], m2["eu_or_special"]))
    for kw in BASIC:
        ddir, truth, meta = make(root, **_kw(**kw))
        m1 = pd.read_csv(DATA / f"{kw['arch']}-mode1-names.csv")
        m1_keys = set(zip(m1["engine"], m1["cmd_type"], m1["special_or_eu"]))
        tiu = truth[truth["engine"] == "TIU"]
        assert set(zip(tiu["register_layout"], tiu["eu_or_special"])) <= m2_keys
        assert {("TIU", a, b) for a, b in zip(tiu["tsk_or_cmd_type"], tiu["eu_or_special"])} <= m1_keys
        dma = truth[truth["engine"].isin(["GDMA", "SDMA"])]
        assert {("DMA", a, b) for a, b in zip(dma["tsk_or_cmd_type"], dma["eu_or_special"])} <= m1_keys
        # DMA byte counts are tile sizes; TIU and DMA system commands (waits) move no bytes
        assert (truth.loc[truth["engine"] == "TIU", "bytes"] == 0).all()
        work = truth[(truth["engine"] != "TIU") & (truth["register_layout"] != "sDMA_sys")]
        assert (work["bytes"] > 0).all()
        assert set(work["src"]) | set(work["dst"]) <= {"DDR", "L2M", "LMEM"}
        assert (truth.loc[truth["register_layout"] == "sDMA_sys", "bytes"] == 0).all()


def test_dma_counters_consistent_with_bytes(root):
    ddir, truth, meta = make(root, **_kw(**BASIC[0]))
    for f in core_files(ddir):
        blocks = read_blocks(f)
        for bt in (4, 11):
            r = monitor(blocks, bt, DMA_RECORD)[2:]
            size = r["gif_mem_w_cntr"].astype(np.int64) + r["axi_d0_w_cntr"]
            work = size > 0
            beats = -(-size // 128)
            # exactly one side writes, beats match the bytes, AXI beats > 0 unless LMEM->LMEM
            assert ((r["gif_mem_w_cntr"] == 0) | (r["axi_d0_w_cntr"] == 0)).all()
            assert (r["gif_wr_valid_cntr"] + r["axi_d0_wr_vaild_cntr"])[work].tolist() == beats[work].tolist()
            lmem_mv = (r["gif_mem_w_cntr"] > 0) & (r["gif_mem_ar_cntr"] > 0)
            axi = r["axi_d0_wr_vaild_cntr"].astype(np.int64) + r["axi_d0_rd_vaild_cntr"]
            assert (axi[work & ~lmem_mv] > 0).all()


# ------------------------------------------------------------------------------------------
# options
# ------------------------------------------------------------------------------------------
def test_determinism_per_seed(root, tmp_path):
    kw = _kw(arch="AKS", mode=2, seed=21, cmds_per_core=200)

    def digest(out):
        write_dump(out, SynthConfig(**kw))
        h = hashlib.sha256()
        for f in sorted(out.rglob("*")):
            if f.is_file() and f.name != "generator_meta.json":
                h.update(f.name.encode() + f.read_bytes())
        return h.hexdigest()

    first = digest(tmp_path / "a")
    assert first == digest(tmp_path / "b")
    kw["seed"] = 22
    assert digest(tmp_path / "c") != first


def test_time_wrap(root):
    ddir, truth, meta = make(root, **_kw(arch="AKS", mode=2, seed=31, time_wrap=True))
    wrapped = 0
    for f in core_files(ddir):
        for bt, dt in ((3, TIU_RECORD), (4, DMA_RECORD)):
            r = monitor(read_blocks(f), bt, dt)
            wrapped += int((np.diff(r["inst_start_time"].astype(np.int64)) < 0).sum())
    assert wrapped >= 1, "no u32 counter wrap in the dump"
    check_truth_against_records(ddir, truth, meta)


def test_id_wrap(root):
    ddir, truth, meta = make(root, **_kw(arch="AKS", mode=1, seed=32, cmds_per_core=200, id_wrap=True))
    r = monitor(read_blocks(core_files(ddir)[0]), 3, TIU_RECORD)
    raw = r["inst_id"].astype(np.int64)
    assert ((raw[:-1] > 65000) & (raw[1:] < 1000)).any(), "no 16-bit id wrap"
    assert truth.loc[truth["engine"] == "TIU", "cmd_id"].max() > 65536
    check_truth_against_records(ddir, truth, meta)


def test_idle_core(root):
    ddir, truth, meta = make(root, **_kw(arch="AKS", mode=2, seed=33, idle_cores=(2,)))
    vals = dict(read_global(ddir))
    assert vals["core2_tiu_record"] == vals["core2_gdma_record"] == vals["core2_sdma_record"] == "2"
    assert not (truth["core"] == 2).any()
    check_truth_against_records(ddir, truth, meta)


def test_rvt_nodes(root):
    ddir, truth, meta = make(root, **_kw(arch="AKSV", mode=2, seed=34, rvt_ratio=0.5))
    assert meta["rvt_kernels"]
    n_rvt = 0
    for f in core_files(ddir):
        blocks = read_blocks(f)
        types = [t for t, _ in blocks]
        nodes = dyn_nodes(np.frombuffer(blocks[types.index(5)][1], "<u4"))
        n_rvt += sum(n[0] == 13 for n in nodes)
        tdi = sum(n[0] == 1 for n in nodes)
        assert len(dyn_extra_entries(blocks[types.index(6)][1])) == tdi   # none for RVT nodes
    assert n_rvt > 0
    check_truth_against_records(ddir, truth, meta)


def test_ring_rotation(root):
    ddir, truth, meta = make(root, **_kw(arch="AKS", mode=2, seed=35, cmds_per_core=600, ring_core=1))
    keys = [k for k, _ in read_global(ddir)]
    assert not any(k.endswith("_record") for k in keys)
    r = monitor(read_blocks(core_files(ddir)[1]), 4, DMA_RECORD)
    s = r["inst_start_time"].astype(np.int64)
    assert (np.diff(s) < 0).sum() == 1, "lapped ring = one rotation point"
    rot = np.argmin(s)
    assert (np.diff(np.roll(s, -rot)) > 0).all()
    assert len(r) == int(dict(read_global(ddir))["max_record_num"]) or meta.get("ring_capacity") == len(r)


# ------------------------------------------------------------------------------------------
# round trip through our decoder
# ------------------------------------------------------------------------------------------
ROUND_TRIP = [dict(arch="AKS", mode=0, seed=41), dict(arch="AKS", mode=1, seed=42),
              dict(arch="AKS", mode=2, seed=43), dict(arch="AKSV", mode=0, seed=44),
              dict(arch="AKSV", mode=1, seed=45), dict(arch="AKSV", mode=2, seed=46, rvt_ratio=0.3),
              dict(arch="AKS", mode=2, seed=47, time_wrap=True, idle_cores=(3,)),
              dict(arch="AKS", mode=2, seed=49, tiu_freq=900, cdma_ports=(0, 3, 5, 10)),
              dict(arch="AKS", mode=1, seed=50, ring_core=4),
              dict(arch="AKS", mode=2, seed=51, tiu_freq=1200, time_wrap=True),
              dict(arch="AKS", mode=1, seed=52, cores=2, idle_cores=(1,)),
              dict(arch="AKS", mode=2, seed=53, cdma_ports=tuple(range(11))),
              dict(arch="AKS", mode=2, seed=54, des_ratio=0.5, batch_idx=True),
              dict(arch="AKSV", mode=1, seed=55, des_ratio=0.4, rvt_ratio=0.4, batch_idx=True),
              dict(arch="AKS", mode=1, seed=48, cmds_per_core=200, id_wrap=True)]


def _rt_id(k):
    return "-".join(f"{a}{b}" for a, b in k.items())


@pytest.mark.parametrize("kw", ROUND_TRIP, ids=_rt_id)
def test_round_trip_decoder(root, kw):
    load_dump = pytest.importorskip("reportgen.parsers.pmu").load_dump
    ddir, truth, meta = make(root, **_kw(**kw))
    t0 = time.perf_counter()
    prof = load_dump(ddir)
    print(f"decode {kw}: {time.perf_counter() - t0:.2f} s")
    assert len(prof.commands) == len(truth)
    for where, g, t in truth_pairs(prof.commands, truth, kw["mode"] == 0):
        engine = where.split()[0]
        assert len(g) == len(t), f"{where}: count"
        assert g["cmd_id"].tolist() == t["cmd_id"].tolist(), f"{where}: cmd_id"
        assert g["start_ns"].tolist() == t["start_ns"].tolist(), f"{where}: start"
        assert g["end_ns"].tolist() == t["end_ns"].tolist(), f"{where}: end"
        if engine != "TIU":
            assert g["bytes"].astype("int64").tolist() == t["bytes"].tolist(), f"{where}: bytes"


# ------------------------------------------------------------------------------------------
# the committed sample dump
# ------------------------------------------------------------------------------------------
SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"


@pytest.mark.skipif(not (SAMPLE / "cdm_profile_data_dev0-0").is_dir(), reason="no sample_data")
def test_sample_data():
    import json
    ddir = SAMPLE / "cdm_profile_data_dev0-0"
    truth = pd.read_csv(SAMPLE / "expected_commands.csv", keep_default_na=False)
    meta = json.loads((SAMPLE / "generator_meta.json").read_text())
    size = sum(f.stat().st_size for f in ddir.iterdir())
    assert size < 1_000_000 and meta["mode"] == 2 and len(meta["cdma_ports"]) == 2
    assert 4 <= len(core_files(ddir)) <= 8
    check_truth_against_records(ddir, truth, meta)
    load_dump = pytest.importorskip("reportgen.parsers.pmu").load_dump
    c = load_dump(ddir).commands
    assert len(c) == len(truth)
    key = ["engine", "port", "start_ns", "end_ns", "cmd_id"]
    ours = c.assign(port=c["port"].astype("Int64").fillna(-1).astype(int),
                    engine=c["engine"].astype(str))[key]
    want = truth.assign(port=pd.to_numeric(truth["port"]).fillna(-1).astype(int))[key]
    ours = ours.sort_values(key).reset_index(drop=True)
    want = want.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(ours, want, check_dtype=False)


# ------------------------------------------------------------------------------------------
# writer-specific checks: golden bytes, sync instant, node/descriptor content, options, CLI
# ------------------------------------------------------------------------------------------
def records(path: Path, btype: int) -> np.ndarray:
    (payload,) = [p for t, p in read_blocks(path) if t == btype]
    return np.frombuffer(payload, df.MONITOR_RECORD[btype])


def extra_entries(payload: bytes) -> list[bytes]:
    out, off = [], 0
    while off < len(payload):
        _, etype, length = np.frombuffer(payload, "<u4", 3, off)
        assert etype == df.ExtraType.BINARY
        out.append(payload[off + 12: off + 12 + int(length)])
        off += 12 + int(length)
    return out


def node_list(words: np.ndarray) -> list[tuple]:
    """DYN_DATA words -> ('FUNC', name) / ('FUNC_END',) / (type, engine, typ, eu, extra)."""
    out, i = [], 0
    while i < len(words):
        w = int(words[i])
        t = w & 0x7F
        if t == df.DynType.FUNC:
            n = w >> 7
            nw = (n + 3) // 4
            out.append(("FUNC", words[i + 1: i + 1 + nw].tobytes()[:n].decode()))
            i += 1 + nw
            continue
        out.append(("FUNC_END",) if t == df.DynType.FUNC_END else
                   (t, (w >> 7) & 7, (w >> 10) & 31, (w >> 15) & 31, w >> 20))
        i += 1
    return out


def global_profile(dump: Path) -> dict[str, int]:
    return {k: int(v) for k, v in (ln.split("=", 1) for ln in
                                    (dump / "global.profile").read_text().splitlines())}


@pytest.fixture(scope="module")
def aks2(tmp_path_factory):
    out = tmp_path_factory.mktemp("aks2")
    res = write_dump(out, SynthConfig(arch="AKS", cmds_per_core=250, mode=2, seed=11))
    return out, res


# ---------------------------------------------------------------------------- bit packer

def _golden_extra(core: int) -> list[bytes]:
    path = GOLDEN_C8 / f"cdmlib0_{core}.profile"
    (payload,) = [p for t, p in read_blocks(path) if t == df.BlockType.DYN_EXTRA]
    return extra_entries(payload)


@needs(GOLDEN_C8)
def test_packer_reproduces_golden_descriptors():
    """Golden descriptors (written by another generator) re-packed from their field values."""
    lay = register_layouts("AKS")
    ex = _golden_extra(0)
    # entry 0: GDMA init send; entry 1: TIU init wait; entry 5: SDMA init wait (spec §8.1-8.3)
    assert pack_descriptors(lay["sDMA_sys"], 1, {"cmd_short": 1, "cmd_type": 6,
                            "cmd_special_function": 3, "constant_value": 1022}).tobytes() == ex[0]
    assert pack_descriptors(lay["SYS"], 1, {"tsk_typ": 15, "tsk_eu_typ": 9,
                            "imm": 0x1FF | (8 << 16)}).tobytes() == ex[1]
    assert ex[1].hex() == "00000000003e0100ff01080000000000"   # hand check: bits 41.. = 15, 9
    assert pack_descriptors(lay["sDMA_sys"], 1, {"cmd_short": 1, "cmd_type": 6,
                            "cmd_special_function": 4, "constant_value": 1023}).tobytes() == ex[5]
    # every golden TIU/DMA descriptor round-trips through unpack -> pack, 96-byte ones are
    # DMA_tensor, 64-byte ones short 512-bit TIU ops
    for raw in ex:
        name = {96: "DMA_tensor", 16: "SYS", 32: "sMM2"}.get(len(raw))
        if name is None:
            continue
        arr = np.frombuffer(raw, np.uint8)[None, :]
        vals = unpack_descriptors(lay[name], arr)
        assert pack_descriptors(lay[name], 1, vals).tobytes() == raw
    # CDMA init descriptor of the anchor core (sCDMA_sys tx_wait)
    ex7 = _golden_extra(7)
    assert pack_descriptors(lay["sCDMA_sys"], 1, {"cmd_type": 7, "cmd_special_function": 4,
                            "constant_value_l32": 0x10001}).tobytes() == ex7[8]


def test_packer_hand_computed_wide_fields():
    lay = register_layouts("AKS")["DMA_tensor"]
    addr = (31 << 40) | 0x12345678            # LMEM tag, crosses the 32-bit split
    raw = pack_descriptors(lay, 2, {"cmd_type": [0, 1], "src_start_addr_l32": addr & 0xFFFFFFFF,
                                    "src_start_addr_h13": addr >> 32, "localmem_mask_h32":
                                    0xFFFFFFFF})
    assert raw.shape == (2, 96)
    v = int.from_bytes(raw[1].tobytes(), "little")
    assert (v >> 32) & 31 == 1                                  # cmd_type 32/5
    assert (v >> 512) & 0xFFFFFFFF == 0x12345678                # src_start_addr_l32 512/32
    assert (v >> 544) & 0x1FFF == 31 << 8                       # h13 -> tag 31 = LMEM
    assert (v >> 736) & 0xFFFFFFFF == 0xFFFFFFFF


def test_sync_point_is_one_physical_instant(aks2):
    """TIU record #1 ends at the same instant on every core (counter base + 0 ns)."""
    out, res = aks2
    base = {int(k): v for k, v in res.meta["counter_base"].items()}
    for core in range(8):
        tiu = records(res.dump_dir / f"cdmlib0_{core}.profile", 3)
        assert int(tiu["inst_end_time"][1]) - base[core] == 0
    # and the counters are not synchronised
    assert len(set(base.values())) == 8


@needs(GOLDEN_C8)
def test_init_preamble_mirrors_golden(aks2):
    """Profile-init nodes, anchor VSDMA/CDMA nodes and their descriptors equal the golden's."""
    out, res = aks2
    for core, n in ((0, 6), (7, 12)):
        mine = [p for t, p in read_blocks(res.dump_dir / f"cdmlib0_{core}.profile") if t == 5][0]
        gold = [p for t, p in read_blocks(GOLDEN_C8 / f"cdmlib0_{core}.profile")
                if t == 5][0]
        assert mine[:4 * n] == gold[:4 * n]
        mine_ex = extra_entries([p for t, p in read_blocks(
            res.dump_dir / f"cdmlib0_{core}.profile") if t == 6][0])
        assert mine_ex[:n] == _golden_extra(core)[:n]


def test_dyn_nodes_and_extra_match_truth(aks2):
    out, res = aks2
    truth = res.truth
    lay = register_layouts("AKS")
    codes = df.ENGINE_CODES["AKS"]
    for core in range(8):
        path = res.dump_dir / f"cdmlib0_{core}.profile"
        blocks = dict(read_blocks(path))
        nodes = node_list(np.frombuffer(blocks[5], "<u4"))
        sets = [x for x in nodes if x[0] == df.DynType.NODE_SET]
        init = 6 + (6 if core == 7 else 0)           # 2 per engine; anchor: 2 VSDMA + 2x2 CDMA
        kern = sets[init:]
        t = truth[truth.core == core]
        for eng in ("TIU", "GDMA", "SDMA"):
            assert sum(1 for x in kern if x[1] == codes[eng]) == (t.engine == eng).sum()
        assert sum(1 for x in kern if x[1] == codes["CDMA"]) == (t.engine == "CDMA").sum()
        funcs = [x[1] for x in nodes if x[0] == "FUNC"]
        assert funcs == res.meta["kernel_sequence_funcs"][str(core)]
        assert sum(1 for x in nodes if x[0] == "FUNC_END") == len(funcs)
        # one DYN_EXTRA entry per TDI node; each decodes to the node's op codes
        ex = extra_entries(blocks[6])
        assert len(ex) == len(sets)
        for node, raw in zip(sets, ex):
            _, eng, typ, eu, _extra = node
            if eng == codes["TIU"]:
                v = int.from_bytes(raw, "little")
                assert ((v >> 41) & 15, (v >> 45) & 31) == (typ, eu)
            elif eng == codes["CDMA"]:
                assert ((raw[0] >> 4) & 15, raw[1] & 7) == (typ, eu)
            else:
                v = int.from_bytes(raw, "little")
                assert ((v >> 32) & 31, (v >> 37) & 7) == (typ, eu)
                if typ == 0:       # DMA_tensor: direction from the address tags = node extra
                    f = unpack_descriptors(lay["DMA_tensor"], np.frombuffer(raw, np.uint8)[None])
                    tag = {31: 2, 30: 1}
                    assert tag.get(int(f["src_start_addr_h13"][0]) >> 8, 0) == (_extra >> 4) & 3
                    assert tag.get(int(f["dst_start_addr_h13"][0]) >> 8, 0) == (_extra >> 6) & 3
                    assert int(f["localmem_mask_l32"][0]) == 0xFFFFFFFF


def test_modes_and_aksv(tmp_path):
    m0 = write_dump(tmp_path / "m0", SynthConfig(cmds_per_core=100, mode=0, seed=2))
    m1 = write_dump(tmp_path / "m1", SynthConfig(cmds_per_core=100, mode=1, seed=2))
    assert [t for t, _ in read_blocks(m0.dump_dir / "cdmlib0_0.profile")] == [3, 4, 11]
    assert [t for t, _ in read_blocks(m1.dump_dir / "cdmlib0_0.profile")] == [3, 4, 11, 5]
    assert "mv" not in set(m0.truth.op)       # LMEM->LMEM looks like a system record in mode 0
    v = write_dump(tmp_path / "v", SynthConfig(arch="AKSV", cmds_per_core=100, seed=2,
                                               rvt_ratio=0.5))
    gp = global_profile(v.dump_dir)
    assert gp["arch"] == 140814 and gp["core_num"] == 4
    assert sorted(p.name for p in v.dump_dir.glob("cdma_*")) == ["cdma_0.profile",
                                                                   "cdma_1.profile"]
    blocks = dict(read_blocks(v.dump_dir / "cdmlib0_3.profile"))
    nodes = node_list(np.frombuffer(blocks[5], "<u4"))
    rvt = [x for x in nodes if x[0] == df.DynType.RVT_NODE_SET]
    tdi = [x for x in nodes if x[0] == df.DynType.NODE_SET]
    assert rvt and len(extra_entries(blocks[6])) == len(tdi)
    # AKSV engine codes: SDMA 2, CDMA 3, VSDMA 4 (anchor core 3)
    assert tdi[4][1:4] == (2, 6, 3) and tdi[6][1] == 4 and tdi[8][1:4] == (3, 7, 4)
    assert v.meta["rvt_kernels"]


def test_options_wraps_ring_idle(tmp_path):
    tw = write_dump(tmp_path / "tw", SynthConfig(cmds_per_core=150, seed=4, time_wrap=True))
    tiu = records(tw.dump_dir / "cdmlib0_0.profile", 3)
    s = tiu["inst_start_time"].astype(np.int64)
    assert s[0] > U32 - 20000 and (np.diff(s) < -(1 << 31)).sum() == 1
    iw = write_dump(tmp_path / "iw", SynthConfig(cmds_per_core=60, seed=4, id_wrap=True,
                                                 mode=1))
    tiu = records(iw.dump_dir / "cdmlib0_0.profile", 3)
    assert tiu["inst_id"].max() <= 0xFFFF and len(tiu) > 65536 + 2
    assert iw.truth[(iw.truth.core == 0) & (iw.truth.engine == "TIU")].cmd_id.max() > 65536
    rg = write_dump(tmp_path / "rg", SynthConfig(cmds_per_core=300, seed=4, ring_core=2))
    gp = global_profile(rg.dump_dir)
    assert not any(k.endswith("_record") for k in gp)
    gdma = records(rg.dump_dir / "cdmlib0_2.profile", 4)
    assert len(gdma) == gp["max_record_num"] == rg.meta["ring_capacity"]
    k = int(np.argmin(gdma["inst_start_time"]))
    assert k > 0
    rolled = np.roll(gdma["inst_start_time"].astype(np.int64), -k)
    assert (np.diff(rolled) > 0).all()
    idle = write_dump(tmp_path / "idle", SynthConfig(cmds_per_core=100, seed=4,
                                                     idle_cores=(2, 5)))
    gp = global_profile(idle.dump_dir)
    assert gp["core2_tiu_record"] == gp["core5_gdma_record"] == 2
    assert not ({2, 5} & set(idle.truth.core))
    with pytest.raises(ValueError, match="anchor"):
        write_dump(tmp_path / "x", SynthConfig(cores=4, cdma_ports=(0,)))


def test_cli(tmp_path, capsys):
    assert main(["--arch", "AKSV", "--cmds-per-core", "80", "--mode", "1", "--seed", "3",
                 str(tmp_path)]) == 0
    assert "wrote" in capsys.readouterr().out
    meta = json.loads((tmp_path / "generator_meta.json").read_text())
    assert meta["arch"] == "AKSV" and meta["mode"] == 1
    assert (tmp_path / "cdm_profile_data_dev0-0" / "global.profile").is_file()
    assert main(["--arch", "AKS", "--cores", "3", "--ports", "0", str(tmp_path / "bad")]) == 2
    # an existing dump is replaced; a folder holding other files is not
    assert main(["--cmds-per-core", "40", str(tmp_path)]) == 0
    (tmp_path / "cdm_profile_data_dev0-0" / "notes.txt").write_text("mine")
    assert main(["--cmds-per-core", "40", str(tmp_path)]) == 2
    assert "refusing" in capsys.readouterr().err
    assert (tmp_path / "cdm_profile_data_dev0-0" / "notes.txt").read_text() == "mine"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]    # no leftovers
    assert main(["--cmds-per-core", "40", "--no-truth", str(tmp_path / "nt")]) == 0
    assert not (tmp_path / "nt" / "expected_commands.csv").exists()
    assert (tmp_path / "nt" / "generator_meta.json").exists()


def test_size_and_speed_report(tmp_path):
    """A mid-size mode-2 dump: its time and size are printed (run with -s), not asserted. Asserted:
    the reported sizes are the files' sizes, every file is its blocks and nothing else, and each
    monitor block holds as many records as global.profile says and the truth implies."""
    t0 = time.perf_counter()
    res = write_dump(tmp_path, SynthConfig(cmds_per_core=5000, mode=2, seed=1))
    dt = time.perf_counter() - t0
    size = sum(res.files.values())
    print(f"\nsynth AKS 8 cores x 5000 cmds mode 2: {dt:.2f} s, {size / 1e6:.2f} MB, "
          f"{len(res.truth)} truth rows")
    ddir, truth, meta = res.dump_dir, res.truth, res.meta
    assert res.files == {f.name: f.stat().st_size for f in ddir.iterdir()}
    gp = global_profile(ddir)
    for core, f in enumerate(core_files(ddir)):
        blocks = read_blocks(f)
        assert sum(BLOCK_HEADER.itemsize + len(p) for _, p in blocks) == f.stat().st_size
        mine = truth[truth.core == core]
        for name, btype, dtype in (("tiu", 3, TIU_RECORD), ("gdma", 4, DMA_RECORD),
                                   ("sdma", 11, DMA_RECORD)):
            (payload,) = [p for t, p in blocks if t == btype]
            count = gp[f"core{core}_{name}_record"]
            assert len(payload) == count * dtype.itemsize
            # 2 profile-init records per engine; the anchor's SDMA adds a VSDMA send per port
            extra = len(meta["cdma_ports"]) if (name, core) == ("sdma", meta["anchor"]) else 0
            assert count == 2 + extra + int((mine.engine == name.upper()).sum())
    for port, f in port_files(ddir).items():
        (payload,) = [p for t, p in read_blocks(f) if t == Block.MONITOR_CDMA]
        assert len(payload) == gp[f"cdma_port{port}_record"] * CDMA_RECORD.itemsize
        assert gp[f"cdma_port{port}_record"] == 2 + int((truth.port == port).sum())


def test_des_chains_and_batch(tmp_path):
    """DES kernels: two-word references in DYN_DATA, one BLOCK_DES_KV chain per reference
    (key, cmd_num, descriptors back to back, §6.5/§7.2), no DYN_EXTRA entries for them."""
    res = write_dump(tmp_path, SynthConfig(cmds_per_core=300, seed=8, des_ratio=0.5,
                                           batch_idx=True))
    assert res.meta["des_kernels"]
    lay = register_layouts("AKS")
    for core in range(8):
        blocks = read_blocks(res.dump_dir / f"cdmlib0_{core}.profile")
        types = [t for t, _ in blocks]
        n_kv = types.count(df.BlockType.BLOCK_DES_KV)
        assert types == [3, 4, 11] + [17] * n_kv + [6, 5]
        words = np.frombuffer(blocks[types.index(5)][1], "<u4")
        refs, i, batches, n_set = [], 0, [], 0
        while i < len(words):
            w = int(words[i])
            t = w & 0x7F
            if t == df.DynType.FUNC:
                i += 1 + ((w >> 7) + 3) // 4
                continue
            if t in (8, 9, 10, 11):
                refs.append((t, w >> 7, int(words[i + 1])))
                i += 2
                continue
            if t == df.DynType.BATCH_IDX:
                batches.append(w >> 7)
            n_set += t == df.DynType.NODE_SET
            i += 1
        # DES kernels have no NODE_SETs and no DYN_EXTRA entries: one entry per TDI node
        assert len(extra_entries(blocks[types.index(6)][1])) == n_set
        assert batches == [k % 4 for k in range(len(batches))] and batches
        kv = [np.frombuffer(p, "<u4", 3) for t, p in blocks if t == 17]
        assert [(int(k), int(n)) for k, n, _ in kv] == [(key, n) for _, key, n in refs]
        assert all(int(c) == core for _, _, c in kv)
        for (t, key, n), (_, payload) in zip(refs, [b for b in blocks if b[0] == 17]):
            chain = payload[12:]
            if t == df.DynType.DES_TIU:            # walk the chain by each head's op length
                off, cnt = 0, 0
                while off < len(chain):
                    v = int.from_bytes(chain[off:off + 8], "little")
                    typ = (v >> 41) & 15
                    name = {0: "sCONV", 1: "sPorD", 2: "sMM2", 3: "sAR", 4: "sRQ&sDQ",
                            5: "sCW&sBC", 9: "sSFU", 10: "sLIN", 15: "SYS"}[typ]
                    off += lay[name].nbytes
                    cnt += 1
                assert off == len(chain) and cnt == n
            else:                                  # DMA: 96-byte tensors or 16-byte sys
                assert 16 * n <= len(chain) <= 96 * n
    # every DES command is reported: the truth has the DES kernels' commands of every core
    des_funcs = {res.meta["kernel_sequence_funcs"]["0"][k] for k in res.meta["des_kernels"]}
    assert res.truth.kernel.isin(des_funcs).sum() > 0
