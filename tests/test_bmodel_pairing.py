"""The bmodel second pairing pass (spec pmu-dump-format.md §10): in a bmodel capture the
descriptor blocks (BLOCK_DES_BDC/GDMA/SDMA) are paired with the PMU id runs first; when the
core file also has DYN_DATA, the records still unbound are paired with its commands afterwards.

Checked three ways:
* a golden capture made hybrid: in every core file of ``aks-bmodel`` one kernel's descriptor
  blocks are replaced by the equivalent DYN_DATA nodes; every record must still come out with
  the reference decoder's Cmd Id, times and cycles, the moved kernel's records bound to the
  nodes (mode TDI, the kernel name of the FUNC record), the others as the reference names them;
* synthetic bmodel captures (the project's writer, ``bmodel=True, dyn_ratio=...``) against
  their generator truth: count, Cmd Id, times, bytes and the kernel name, which only DYN_DATA
  carries;
* the layer captures (mode 2, all commands in DYN_DATA) marked as bmodel decode as before.
"""
from __future__ import annotations

import shutil
import struct

import numpy as np
import pandas as pd
import pytest

from reginfo import reference_sheets
from shared_data import LAYERS, PMU, needs
from truth import truth_pairs
from reportgen.parsers.pmu import load_dump
from reportgen.testing.synth import SynthConfig, write_dump

BMODEL = PMU / "aks-bmodel"
AKS_ENGINE = {"TIU": 0, "GDMA": 1, "SDMA": 3}          # spec §1 engine field codes
DES_BLOCK = {13: "TIU", 14: "GDMA", 15: "SDMA"}
NODE_SET, ID_RESET, FUNC, FUNC_END = 1, 12, 0, 15       # spec §6.2
MOVED_KERNEL = "moved_to_dyn_data"
DMA_BYTES = {0: 96, 6: 16}                              # DMA_tensor / sDMA_sys descriptor sizes
TIU_BYTES = {0: 64, 1: 64, 2: 32, 3: 64, 4: 32, 5: 32, 9: 32, 10: 48, 15: 16}  # short TIU ops


def _blocks(raw: bytes) -> list[tuple[int, bytes]]:
    out, off = [], 0
    while off < len(raw):
        typ, n = struct.unpack_from("<II", raw, off)
        out.append((typ, raw[off + 8: off + 8 + n]))
        off += 8 + n
    return out


def _heads(engine: str, payload: bytes) -> list[tuple[int, int]]:
    """(type, eu / special function) of each descriptor of a block, walked by op length."""
    out, off = [], 0
    while off < len(payload):
        head = int.from_bytes(payload[off: off + 8], "little")
        if engine == "TIU":
            typ, eu = (head >> 41) & 0xF, (head >> 45) & 0x1F
            off += TIU_BYTES[typ]
        else:
            typ, eu = (head >> 32) & 0x1F, (head >> 37) & 0x7
            off += DMA_BYTES[typ]
        out.append((typ, eu))
    return out


def _word(typ: int, engine: int = 0, tsk: int = 0, eu: int = 0) -> int:
    return typ | engine << 7 | tsk << 10 | eu << 15


def _dyn_data(kernel: dict[str, list[tuple[int, int]]]) -> bytes:
    """DYN_DATA: 2 profile-init nodes per engine, then the kernel between FUNC and FUNC_END."""
    words = [_word(NODE_SET, AKS_ENGINE[e], 15 if e == "TIU" else 6, 9 if e == "TIU" else 4)
             for e in ("TIU", "GDMA", "SDMA") for _ in range(2)]
    name = MOVED_KERNEL.encode() + b"\0" * (-len(MOVED_KERNEL) % 4)
    words += [FUNC | len(MOVED_KERNEL) << 7] + list(struct.unpack(f"<{len(name) // 4}I", name))
    words += [_word(ID_RESET, AKS_ENGINE[e]) for e in ("TIU", "GDMA", "SDMA")]
    for e, heads in kernel.items():
        words += [_word(NODE_SET, AKS_ENGINE[e], t, u) for t, u in heads]
    words.append(_word(FUNC_END))
    return struct.pack(f"<{len(words)}I", *words)


def _hybrid(dst, segment: int) -> dict[int, dict[str, int]]:
    """Copy aks-bmodel with the descriptor blocks of its ``segment``-th kernel (a BDC block
    starts a kernel) moved into DYN_DATA; returns the commands moved per core and engine."""
    shutil.copytree(BMODEL / "input", dst)
    moved = {}
    for core in range(8):
        path = dst / f"cdmlib0_{core}.profile"
        blocks = _blocks(path.read_bytes())
        kernel_of, k = [], -1
        for typ, _ in blocks:
            k += typ == 13
            kernel_of.append(k if typ in DES_BLOCK else -1)
        kept, kernel = [], {}
        for (typ, payload), k in zip(blocks, kernel_of):
            if k == segment:
                kernel[DES_BLOCK[typ]] = _heads(DES_BLOCK[typ], payload)
            else:
                kept.append(struct.pack("<II", typ, len(payload)) + payload)
        dyn = _dyn_data(kernel)
        path.write_bytes(b"".join(kept) + struct.pack("<II", 5, len(dyn)) + dyn)
        moved[core] = {e: len(h) for e, h in kernel.items()}
    return moved


@needs(BMODEL)
# kernels 1 and 2 are not moved: on some core their run is as long as the next kernel's, and
# pairing by run length cannot tell which of the two the remaining block explains
@pytest.mark.parametrize("segment", [0, 3])
def test_golden_bmodel_with_dyn_data(tmp_path, segment):
    moved = _hybrid(tmp_path / "input", segment)
    prof = load_dump(tmp_path / "input")
    assert prof.meta.mode == "bmodel"
    ref = reference_sheets(BMODEL / "reference-0.3.7")
    c = prof.commands
    for sheet, recs in ref.items():
        g = c[c["sheet"] == sheet].sort_values("global_idx")
        r = pd.DataFrame(recs)
        assert len(g) == len(r), sheet
        for ours, theirs in (("cmd_id", "Cmd Id"), ("start_ns", "Start Time(ns)"),
                             ("end_ns", "End Time(ns)"), ("cycles", "Asic Cycle")):
            assert (g[ours].to_numpy() == r[theirs].astype(int).to_numpy()).all(), (sheet, ours)
        engine, core = sheet.split("_")
        dyn = (g["mode"] == "TDI").to_numpy()
        assert dyn.sum() == moved[int(core)].get(engine, 0), sheet
        assert (g["kernel"][dyn] == MOVED_KERNEL).all()
        assert (g["mode"][~dyn] == "BMODEL").all() and g["kernel"][~dyn].isna().all()
        # records still described by their descriptor: named as the reference names them
        assert g["func_name"][~dyn].astype(str).tolist() == r["Function Name"][~dyn].tolist()
        assert g["func_type"][~dyn].astype(str).tolist() == r["Function Type"][~dyn].tolist()
    truth = pd.read_csv(BMODEL / "expected_commands.csv", keep_default_na=False)
    for where, g, t in truth_pairs(c, truth, False):
        assert g["start_ns"].tolist() == t["start_ns"].tolist(), where
        assert g["cmd_id"].tolist() == t["cmd_id"].tolist(), where
    assert not [w for w in prof.meta.warnings if w.code in ("unpaired-sections", "edge-unbound")]


@needs(BMODEL)
def test_without_second_pass_records_would_be_lost(tmp_path):
    """The hybrid's moved kernel leaves PMU runs that no descriptor block explains: they are
    only described (and, at a TIU stream's edge, only kept) thanks to the DYN_DATA pass."""
    _hybrid(tmp_path / "input", 3)
    for f in (tmp_path / "input").glob("cdmlib*.profile"):
        f.write_bytes(b"".join(struct.pack("<II", t, len(p)) + p
                               for t, p in _blocks(f.read_bytes()) if t != 5))
    prof = load_dump(tmp_path / "input")
    ref = sum(len(v) for v in reference_sheets(BMODEL / "reference-0.3.7").values())
    assert len(prof.commands) < ref and (prof.commands["mode"] != "TDI").all()


SYNTH = [dict(seed=21, dyn_ratio=0.3), dict(seed=22, dyn_ratio=0.6),
         dict(seed=23, dyn_ratio=0.5, arch="AKSV", tiu_freq=900),
         dict(seed=24, dyn_ratio=1.0, cores=3)]


@pytest.mark.parametrize("kw", SYNTH, ids=lambda k: "-".join(f"{a}{b}" for a, b in k.items()))
def test_synthetic_bmodel_with_dyn_data(tmp_path, kw):
    res = write_dump(tmp_path, SynthConfig(bmodel=True, mode=1, cmds_per_core=1500, **kw))
    assert res.meta["dyn_kernels"] and res.meta["bmodel"]
    prof = load_dump(res.dump_dir)
    truth = res.truth
    assert prof.meta.mode == "bmodel" and len(prof.commands) == len(truth)
    dyn_funcs = set(truth["kernel"]) - {""}
    assert dyn_funcs
    for where, g, t in truth_pairs(prof.commands, truth, False):
        assert len(g) == len(t), where
        assert g["cmd_id"].tolist() == t["cmd_id"].tolist(), where
        assert g["start_ns"].tolist() == t["start_ns"].tolist(), where
        assert g["end_ns"].tolist() == t["end_ns"].tolist(), where
        if not where.startswith("TIU"):
            assert g["bytes"].astype("int64").tolist() == t["bytes"].tolist(), where
        kernel = g["kernel"].astype(object).where(g["kernel"].notna(), "").tolist()
        assert kernel == t["kernel"].tolist(), where
        dyn = (t["kernel"] != "").to_numpy()
        assert (g["mode"].to_numpy()[dyn] == "TDI").all()
        assert (g["mode"].to_numpy()[~dyn] == "BMODEL").all()
        # descriptor-block commands carry their decoded register-table op
        assert g["func_type"].astype(str).to_numpy()[~dyn].tolist() == \
            t["register_layout"].to_numpy()[~dyn].tolist(), where


def test_synthetic_bmodel_blocks_only(tmp_path):
    """Without DYN_DATA every command comes from the descriptor blocks (first pass only)."""
    res = write_dump(tmp_path, SynthConfig(bmodel=True, mode=1, cmds_per_core=800, seed=25))
    types = {t for f in res.dump_dir.glob("cdmlib*") for t, _ in _blocks(f.read_bytes())}
    assert types == {3, 4, 11, 13, 14, 15}
    gp = (res.dump_dir / "global.profile").read_text().split("\n")
    assert gp[:2] == ["bmodel", "arch=5"]
    prof = load_dump(res.dump_dir)
    assert len(prof.commands) == len(res.truth) and (prof.commands["mode"] == "BMODEL").all()
    for where, g, t in truth_pairs(prof.commands, res.truth, False):
        assert g["start_ns"].tolist() == t["start_ns"].tolist(), where
        assert g["func_type"].astype(str).tolist() == t["register_layout"].tolist(), where


@pytest.mark.parametrize("bad", [dict(bmodel=True, mode=2), dict(bmodel=True, cdma_ports=(0,)),
                                 dict(dyn_ratio=0.5), dict(bmodel=True, mode=1, dyn_ratio=1.5)])
def test_bmodel_options_are_checked(tmp_path, bad):
    with pytest.raises(ValueError):
        write_dump(tmp_path, SynthConfig(cmds_per_core=100, **bad))


@needs(LAYERS)
@pytest.mark.parametrize("case", ["aks-layers-c2", "aks-layers-c8"])
def test_layer_capture_marked_bmodel_decodes_alike(tmp_path, case):
    """A bmodel capture without descriptor blocks is paired through DYN_DATA alone, exactly
    like the same capture without the bmodel line (the reference's RegInfo)."""
    src = LAYERS / case / "input"
    shutil.copytree(src, tmp_path / "in")
    gp = tmp_path / "in" / "global.profile"
    gp.write_text("bmodel\n" + gp.read_text())
    ours = load_dump(tmp_path / "in").commands
    plain = load_dump(src).commands
    assert len(ours) == len(plain)
    for col in ("sheet", "cmd_id", "start_ns", "end_ns", "func_name", "kernel"):
        assert ours[col].astype(str).tolist() == plain[col].astype(str).tolist(), col
    ref = reference_sheets(LAYERS / case / "reference-0.3.7")
    for sheet, recs in ref.items():
        g = ours[ours["sheet"] == sheet].sort_values("global_idx")
        assert g["cmd_id"].tolist() == [int(r["Cmd Id"]) for r in recs], sheet
        assert np.array_equal(g["start_ns"].to_numpy(), [int(r["Start Time(ns)"]) for r in recs])
