"""Synthetic PMU dump writer: structure, truth vs records, determinism, decoder round trip.

The checks read the written files back with the record dtypes only (no decoder) and recompute
times from the counter bases in generator_meta.json, so the truth CSV is checked against an
independent path; descriptors are checked against bytes of the golden dumps in shared/data.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reportgen.testing import dumpformat as df
from reportgen.testing.synth import (SynthConfig, main, pack_descriptors, register_layouts,
                                     unpack_descriptors, write_dump)

GOLDEN = Path("/work/shared/data/pmu")
U32 = 1 << 32


# ---------------------------------------------------------------------------- helpers

def read_blocks(path: Path) -> list[tuple[int, bytes]]:
    data = path.read_bytes()
    out, off = [], 0
    while off < len(data):
        btype, length = np.frombuffer(data, "<u4", 2, off)
        out.append((int(btype), data[off + 8: off + 8 + int(length)]))
        off += 8 + int(length)
    assert off == len(data)
    return out


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

def _golden_extra(case: str, core: int) -> list[bytes]:
    path = GOLDEN / case / "input" / f"cdmlib0_{core}.profile"
    (payload,) = [p for t, p in read_blocks(path) if t == df.BlockType.DYN_EXTRA]
    return extra_entries(payload)


@pytest.mark.skipif(not GOLDEN.exists(), reason="golden dumps not available")
def test_packer_reproduces_golden_descriptors():
    """Golden descriptors (written by another generator) re-packed from their field values."""
    lay = register_layouts("AKS")
    ex = _golden_extra("aks-m2-c8", 0)
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
    ex7 = _golden_extra("aks-m2-c8", 7)
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


# ---------------------------------------------------------------------------- structure

def test_block_structure_and_record_counts(aks2):
    out, res = aks2
    dump = res.dump_dir
    gp = global_profile(dump)
    assert gp["arch"] == 8800 and gp["core_num"] == 8 and gp["tpu_freq"] == 1000
    lines = (dump / "global.profile").read_text().splitlines()
    assert all(lines) and lines[0].startswith("arch=")
    assert [ln.split("=")[0] for ln in lines].index("max_record_num") < 4
    for core in range(8):
        path = dump / f"cdmlib0_{core}.profile"
        assert [t for t, _ in read_blocks(path)] == [3, 4, 11, 6, 5]    # EXTRA before DATA
        for btype, key in ((3, "tiu"), (4, "gdma"), (11, "sdma")):
            rec = records(path, btype)
            assert len(rec) == gp[f"core{core}_{key}_record"] >= 2
            assert gp[f"core{core}_{key}_record"] < gp["max_record_num"]
            assert (np.diff(rec["inst_start_time"].astype(np.int64)) > 0).all()
            assert (rec["inst_start_time"][1:] >= rec["inst_end_time"][:-1]).all()
        tiu = records(path, 3)
        assert (tiu["thread_id_and_bank_conflict"][:2] == 2).all()
        assert (tiu["inst_id"][:2] == [0, 1]).all()
    for port in (0, 1):
        path = dump / f"cdma_{port}.profile"
        assert [t for t, _ in read_blocks(path)] == [12]
        rec = records(path, 12)
        assert len(rec) == gp[f"cdma_port{port}_record"]
        ids = rec["inst_id_word"] & df.CDMA_ID_MASK
        assert ids[0] != 1 and ids[1] != 1 and ids[2] == 1
        assert (rec["m0_data_aw_cntr"][:2] == 0).all() and (rec["m0_data_aw_cntr"][2:] > 0).all()
        launches = np.split(ids[2:], np.flatnonzero(np.diff(ids[2:].astype(int)) < -10) + 1)
        assert all(len(x) > 10 and (x == np.arange(1, len(x) + 1)).all() for x in launches)


def test_sync_point_is_one_physical_instant(aks2):
    """TIU record #1 ends at the same instant on every core (counter base + 0 ns)."""
    out, res = aks2
    base = {int(k): v for k, v in res.meta["counter_base"].items()}
    for core in range(8):
        tiu = records(res.dump_dir / f"cdmlib0_{core}.profile", 3)
        assert int(tiu["inst_end_time"][1]) - base[core] == 0
    # and the counters are not synchronised
    assert len(set(base.values())) == 8


@pytest.mark.skipif(not GOLDEN.exists(), reason="golden dumps not available")
def test_init_preamble_mirrors_golden(aks2):
    """Profile-init nodes, anchor VSDMA/CDMA nodes and their descriptors equal the golden's."""
    out, res = aks2
    for core, n in ((0, 6), (7, 12)):
        mine = [p for t, p in read_blocks(res.dump_dir / f"cdmlib0_{core}.profile") if t == 5][0]
        gold = [p for t, p in read_blocks(GOLDEN / "aks-m2-c8/input" / f"cdmlib0_{core}.profile")
                if t == 5][0]
        assert mine[:4 * n] == gold[:4 * n]
        mine_ex = extra_entries([p for t, p in read_blocks(
            res.dump_dir / f"cdmlib0_{core}.profile") if t == 6][0])
        assert mine_ex[:n] == _golden_extra("aks-m2-c8", core)[:n]


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


def test_truth_matches_records(aks2):
    """Truth times / ids / bytes recomputed from the raw records and the counter bases."""
    out, res = aks2
    truth = pd.read_csv(out / "expected_commands.csv")
    assert list(truth.columns) == ["core", "engine", "port", "cmd_id", "start_ns", "end_ns",
                                   "register_layout", "op", "tsk_or_cmd_type", "eu_or_special",
                                   "bytes", "src", "dst", "kernel", "dep_cmd_id"]
    base = {int(k): v for k, v in res.meta["counter_base"].items()}
    rows = []
    for core in range(8):
        path = res.dump_dir / f"cdmlib0_{core}.profile"
        for btype, eng in ((3, "TIU"), (4, "GDMA"), (11, "SDMA")):
            rec = records(path, btype)[2:]
            if core == 7 and eng == "SDMA":
                vsdma, rec = rec[:2], rec[2:]          # one VSDMA send per port: anchoring
            nbytes = (rec["gif_mem_w_cntr"].astype(np.int64) + rec["axi_d0_w_cntr"]
                      if eng != "TIU" else np.zeros(len(rec), np.int64))
            rows.append(pd.DataFrame({"core": core, "engine": eng, "port": -1,
                                      "cmd_id": rec["inst_id"].astype(np.int64) + 1,
                                      "start_ns": rec["inst_start_time"] - base[core],
                                      "end_ns": rec["inst_end_time"] - base[core],
                                      "bytes": nbytes}))
    for i, port in enumerate((0, 1)):
        rec = records(res.dump_dir / f"cdma_{port}.profile", 12)
        tx_end = int(rec["inst_end_time"][0])
        anchor_phys = int(vsdma["inst_end_time"][i]) - base[7]
        phys = lambda x: x.astype(np.int64) - tx_end + anchor_phys  # noqa: E731
        rec = rec[2:]
        rows.append(pd.DataFrame({"core": -1, "engine": "CDMA", "port": port,
                                  "cmd_id": (rec["inst_id_word"] & df.CDMA_ID_MASK).astype(int),
                                  "start_ns": phys(rec["inst_start_time"]),
                                  "end_ns": phys(rec["inst_end_time"]),
                                  "bytes": rec["m0_data_aw_cntr"].astype(np.int64)}))
    mine = pd.concat(rows, ignore_index=True)
    zero = mine["start_ns"].min()
    mine["start_ns"] -= zero
    mine["end_ns"] -= zero
    assert len(mine) == len(truth)
    for (eng, key), g in mine.groupby(["engine", mine.core.where(mine.engine != "CDMA",
                                                                 mine.port)]):
        t = truth[(truth.engine == eng) & ((truth.core == key) if eng != "CDMA"
                                           else (truth.port == key))]
        g = g.sort_values("start_ns", kind="stable")
        assert len(g) == len(t)
        for c in ("cmd_id", "start_ns", "end_ns", "bytes"):
            assert (g[c].to_numpy() == t[c].to_numpy()).all(), (eng, key, c)
    assert truth.start_ns.min() == 0
    assert (truth.end_ns > truth.start_ns).all()
    # DMA bytes are consistent with the descriptor shape and with the counters
    dma = truth[truth.engine.isin(["GDMA", "SDMA"])]
    assert (dma.bytes > 0).all() and set(dma.src) | set(dma.dst) <= {"DDR", "L2M", "LMEM"}


def test_determinism_per_seed(tmp_path):
    def digest(d: Path):
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(d.rglob("*")) if p.is_file()}
    a = write_dump(tmp_path / "a", SynthConfig(cmds_per_core=120, seed=5))
    b = write_dump(tmp_path / "b", SynthConfig(cmds_per_core=120, seed=5))
    c = write_dump(tmp_path / "c", SynthConfig(cmds_per_core=120, seed=6))
    da, db, dc = digest(tmp_path / "a"), digest(tmp_path / "b"), digest(tmp_path / "c")
    assert da == db
    assert da["cdmlib0_0.profile"] != dc["cdmlib0_0.profile"]
    assert a.truth.equals(b.truth) and not a.truth.equals(c.truth)


# ---------------------------------------------------------------------------- modes / options

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


# ---------------------------------------------------------------------------- round trip

def _load_dump():
    try:
        from reportgen.parsers.pmu import load_dump
    except ImportError:          # decoder not written yet
        return None
    return load_dump


def _compare(decoded: pd.DataFrame, truth: pd.DataFrame) -> list[str]:
    problems = []
    dec = decoded.assign(engine=decoded.engine.astype(str))
    if len(dec) != len(truth):
        problems.append(f"count {len(dec)} != {len(truth)}")
    for (eng, core), t in truth.groupby(["engine", "core"]):
        if eng == "CDMA":
            d = dec[(dec.engine == "CDMA") & (dec.port == t.port.iloc[0])]
        else:
            d = dec[(dec.engine == eng) & (dec.core == core)]
        d = d.sort_values("global_idx")
        if len(d) != len(t):
            problems.append(f"{eng} {core}: {len(d)} != {len(t)}")
            continue
        for col in ("cmd_id", "start_ns", "end_ns"):
            bad = np.flatnonzero(d[col].to_numpy() != t[col].to_numpy())
            if len(bad):
                problems.append(f"{eng} {core} {col}: {len(bad)} differ, first row {bad[0]}")
        if eng != "TIU":
            b = d["bytes"].astype("Int64").fillna(-1).to_numpy()
            if (b != t["bytes"].to_numpy()).any():
                problems.append(f"{eng} {core} bytes differ")
    return problems


ROUND_TRIP = {
    "aks-m0": SynthConfig(mode=0, cmds_per_core=200, seed=21),
    "aks-m1": SynthConfig(mode=1, cmds_per_core=200, seed=22),
    "aks-m2": SynthConfig(mode=2, cmds_per_core=200, seed=23),
    "aks-m2-f900-ports4": SynthConfig(mode=2, cmds_per_core=200, seed=24, tiu_freq=900,
                                      cdma_ports=(0, 3, 5, 10)),
    "aksv-m2-rvt": SynthConfig(arch="AKSV", mode=2, cmds_per_core=200, seed=25, rvt_ratio=0.4),
    "aks-m2-idle": SynthConfig(mode=2, cmds_per_core=200, seed=26, idle_cores=(3,)),
    "aks-m2-timewrap": SynthConfig(mode=2, cmds_per_core=200, seed=27, time_wrap=True),
    "aks-m1-ring": SynthConfig(mode=1, cmds_per_core=400, seed=28, ring_core=4),
}


@pytest.mark.parametrize("case", list(ROUND_TRIP))
def test_round_trip_with_decoder(tmp_path, case):
    load_dump = _load_dump()
    if load_dump is None:
        pytest.skip("reportgen.parsers.pmu.load_dump not available")
    res = write_dump(tmp_path, ROUND_TRIP[case])
    prof = load_dump(res.dump_dir)
    assert _compare(prof.commands, res.truth) == []


def test_round_trip_id_wrap(tmp_path):
    """> 65536 TIU commands in one kernel. The truth numbers commands past the 16-bit wrap
    with the unwrapped id (65537, ...), as spec §9.1 step 2 lifts the ids."""
    load_dump = _load_dump()
    if load_dump is None:
        pytest.skip("reportgen.parsers.pmu.load_dump not available")
    res = write_dump(tmp_path, SynthConfig(mode=2, cmds_per_core=60, seed=29, id_wrap=True))
    problems = _compare(load_dump(res.dump_dir).commands, res.truth)
    timing = [p for p in problems if "cmd_id" not in p]
    assert timing == []                       # counts, times, bytes: exact
    if problems:
        pytest.xfail("decoder reports the raw 16-bit PMU id + 1 after a wrap: " + problems[0])


def test_size_and_speed_report(tmp_path):
    """Printed, not asserted (run with -s): time and size of a mid-size mode-2 dump."""
    t0 = time.perf_counter()
    res = write_dump(tmp_path, SynthConfig(cmds_per_core=5000, mode=2, seed=1))
    dt = time.perf_counter() - t0
    size = sum(res.files.values())
    print(f"\nsynth AKS 8 cores x 5000 cmds mode 2: {dt:.2f} s, {size / 1e6:.2f} MB, "
          f"{len(res.truth)} truth rows")
    assert size > 0
