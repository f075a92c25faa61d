"""A catalogue of broken and odd PMU dumps, each with its exact outcome.

Every case starts from a valid dump written by the project's own generator and breaks it in one
way. The outcome is one of:

* ``Reject(needles, offset=?, line=?)``: ``load_dump`` raises InputError whose one-line message
  names the file and contains every needle (and the byte offset / line where one applies);
* ``Tolerate(codes, check)``: the dump decodes, the listed warning codes are reported, every
  record is accounted for (read = shown + dropped with a reason), and ``check`` holds.

A seeded sweep of random mutations then asserts the same two-way outcome on inputs nobody
wrote a case for, and a hypothesis test fuzzes the block reader directly.
"""
from __future__ import annotations

import random
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from reportgen.errors import InputError
from reportgen.parsers.pmu import load_dump
from reportgen.parsers.pmu.container import read_blocks
from reportgen.parsers.pmu.records import Block, pack_node
from reportgen.testing.synth import write_dump


# -- helpers ----------------------------------------------------------------------------------

def blocks_of(path: Path) -> list[tuple[int, int, bytes]]:
    data, off, out = path.read_bytes(), 0, []
    while off + 8 <= len(data):
        t, n = struct.unpack_from("<II", data, off)
        out.append((off, t, data[off + 8: off + 8 + n]))
        off += 8 + n
    return out


def write_blocks(path: Path, blocks: list[tuple[int, bytes]]) -> None:
    path.write_bytes(b"".join(struct.pack("<II", t, len(p)) + p for t, p in blocks))


def edit_block(path: Path, btype: int, fn: Callable[[bytes], bytes | None], which: int = 0) -> None:
    """Replace (or drop, when fn returns None) the which-th block of a type."""
    out, seen = [], 0
    for _, t, p in blocks_of(path):
        if t == btype:
            if seen == which:
                p = fn(p)
            seen += 1
        if p is not None:
            out.append((t, p))
    write_blocks(path, out)


def global_lines(d: Path, fn: Callable[[list[str]], list[str]]) -> None:
    gp = d / "global.profile"
    gp.write_text("\n".join(fn(gp.read_text().splitlines())) + "\n")


def block_offset(path: Path, btype: int, which: int = 0) -> int:
    return [o for o, t, _ in blocks_of(path) if t == btype][which]


def first_func_word(payload: bytes) -> int:
    """Index of the first FUNC (kernel name) word of a DYN_DATA payload."""
    words = np.frombuffer(payload, "<u4")
    return int(np.flatnonzero((words & 0x7F) == 0)[0])


@dataclass
class Reject:
    needles: tuple[str, ...]
    offset: int | Callable[[Path], int] | None = None
    line: int | None = None


@dataclass
class Tolerate:
    codes: tuple[str, ...] = ()
    check: Callable = field(default=lambda profile, dump: None)


# -- the catalogue ----------------------------------------------------------------------------

C = "cdmlib0_{}.profile"


def _trunc_in_block(btype):
    def mutate(d):
        f = d / C.format(2)
        off = block_offset(f, btype)
        n = struct.unpack_from("<I", f.read_bytes(), off + 4)[0]
        f.write_bytes(f.read_bytes()[: off + 8 + n // 2 + 3])
    return mutate


def _core_count(core, engine):
    return lambda p, d: p.meta.accounting[f"{engine}_{core}"]["read"]


def _swap_cores(d):
    (d / C.format(2)).rename(d / "tmp.profile")
    (d / C.format(3)).rename(d / C.format(2))
    (d / "tmp.profile").rename(d / C.format(3))


def _junk_node(d):
    def fn(p):
        words = bytearray(p)
        words[-4:] = struct.pack("<I", 0x55)           # record type 0x55 does not exist
        return bytes(words)
    edit_block(d / C.format(1), Block.DYN_DATA, fn)


def _bad_engine_node(d):
    def fn(p):
        return p + struct.pack("<I", pack_node(1, engine=7))
    edit_block(d / C.format(1), Block.DYN_DATA, fn)


def _long_func_name(d):
    def fn(p):
        return p + struct.pack("<I", (4000 << 7) | 0)   # FUNC of 4000 bytes, none follow
    edit_block(d / C.format(1), Block.DYN_DATA, fn)


def _des_without_count(d):
    def fn(p):
        return p + struct.pack("<I", (5 << 7) | 8)       # DES_TIU without its count word
    edit_block(d / C.format(1), Block.DYN_DATA, fn)


def _non_utf8_kernel(d):
    def fn(p):
        i = first_func_word(p)
        b = bytearray(p)
        b[4 * (i + 1)] = 0xFF                          # first byte of the name
        return bytes(b)
    edit_block(d / C.format(0), Block.DYN_DATA, fn)


def _extra_unknown_type(d):
    def fn(p):
        b = bytearray(p)
        b[4:8] = struct.pack("<I", 9)
        return bytes(b)
    edit_block(d / C.format(1), Block.DYN_EXTRA, fn)


def _extra_half(d):
    def fn(p):
        off, entries = 0, []
        while off + 12 <= len(p):
            n = struct.unpack_from("<I", p, off + 8)[0]
            entries.append(p[off: off + 12 + n])
            off += 12 + n
        return b"".join(entries[: len(entries) // 2])
    edit_block(d / C.format(1), Block.DYN_EXTRA, fn)


def _garbage_descriptors(d):
    def fn(p):
        b = bytearray(p)
        off = 0
        while off + 12 <= len(b):                      # scramble every descriptor's head
            n = struct.unpack_from("<I", b, off + 8)[0]
            b[off + 12: off + 12 + min(n, 8)] = b"\xff" * min(n, 8)
            off += 12 + n
        return bytes(b)
    edit_block(d / C.format(1), Block.DYN_EXTRA, fn)


def _partial_records(d):
    edit_block(d / C.format(4), Block.MONITOR_BD, lambda p: p + b"\x01\x02\x03\x04\x05")


def _second_monitor(d):
    f = d / C.format(5)
    bl = [(t, p) for _, t, p in blocks_of(f)]
    bl.append((Block.MONITOR_BD, bl[0][1][:32]))
    write_blocks(f, bl)


def _zero_record_inside(d):
    def fn(p):
        b = bytearray(p)
        b[16 * 10: 16 * 11] = bytes(16)                # record 10 all zeros
        return bytes(b)
    edit_block(d / C.format(6), Block.MONITOR_BD, fn)


def _unsorted_tiu(d):
    def fn(p):
        rec = np.frombuffer(p, "<u4").reshape(-1, 4).copy()
        rec[[20, 21]] = rec[[21, 20]]                  # two records out of order
        return rec.tobytes()
    edit_block(d / C.format(3), Block.MONITOR_BD, fn)


def _cdma_with_dyn_data(d):
    f = d / "cdma_0.profile"
    write_blocks(f, [(t, p) for _, t, p in blocks_of(f)] + [(Block.DYN_DATA, struct.pack("<I", 1))])


def _cdma_sync_only(d):
    edit_block(d / "cdma_1.profile", Block.MONITOR_CDMA, lambda p: p[: 2 * 128])
    global_lines(d, lambda ls: ["cdma_port1_record=2" if l.startswith("cdma_port1_record") else l
                                for l in ls])


def _drop_block(btype, core):
    return lambda d: edit_block(d / C.format(core), btype, lambda p: None)


def _des_kv_short(d):
    f = d / C.format(2)
    write_blocks(f, [(t, p) for _, t, p in blocks_of(f)] + [(Block.BLOCK_DES_KV, b"\x01\x02")])


def _garbage_core(d):
    (d / C.format(3)).write_bytes(random.Random(3).randbytes(5000))


def _rename(old, new):
    return lambda d: (d / old).rename(d / new)


def _gp_replace(old, new):
    return lambda d: global_lines(d, lambda ls: [new if l.startswith(old) else l for l in ls])


CASES: dict[str, tuple[Callable, Reject | Tolerate]] = {
    # global.profile
    "global-missing": (lambda d: (d / "global.profile").unlink(), Reject(("no global.profile",))),
    "global-empty": (lambda d: (d / "global.profile").write_text(""), Reject(("does not declare the chip",))),
    "global-binary": (lambda d: (d / "global.profile").write_bytes(bytes(range(256))), Reject(("does not declare the chip",))),
    "arch-unknown": (_gp_replace("arch=", "arch=1234"), Reject(("unsupported chip arch='1234'",), line=1)),
    "arch-name": (_gp_replace("arch=", "arch=sg2260"), Tolerate()),
    "tpu-freq-zero": (_gp_replace("tpu_freq=", "tpu_freq=0"), Reject(("tpu_freq must be > 0",), line=2)),
    "tpu-freq-text": (_gp_replace("tpu_freq=", "tpu_freq=fast"), Reject(("tpu_freq='fast': expected a number",), line=2)),
    "record-over-max": (_gp_replace("core0_tiu_record=", "core0_tiu_record=999999"), Reject(("exceeds max_record_num=131072",), line=5)),
    "record-negative": (_gp_replace("core0_gdma_record=", "core0_gdma_record=-3"), Reject(("cannot be negative",), line=6)),
    "record-not-int": (_gp_replace("core1_tiu_record=", "core1_tiu_record=lots"), Reject(("expected an integer",), line=8)),
    "record-mismatch": (_gp_replace("core2_gdma_record=", "core2_gdma_record=7"), Tolerate(("record-count",))),
    "record-zero": (_gp_replace("core3_sdma_record=", "core3_sdma_record=0"), Tolerate(("idle-engine",))),
    "blank-and-junk-lines": (lambda d: global_lines(d, lambda ls: [""] + ls[:3] + ["", "nonsense", "  "] + ls[3:]),
                             Tolerate(("global-junk",))),
    # directory shape
    "no-core-files": (lambda d: [p.unlink() for p in d.glob("cdmlib*")], Reject(("no cdmlib*.profile core files",))),
    "missing-core-file": (lambda d: (d / C.format(2)).unlink(),
                          Tolerate(("core-numbering",), lambda p, d: p.meta.num_cores == 8)),
    "numbering-gap": (_rename(C.format(7), C.format(9)), Tolerate(("core-numbering",),
                      lambda p, d: (p.commands["core"] == 7).any())),
    "files-swapped": (_swap_cores, Tolerate((), lambda p, d: p.meta.accounting["TIU_2"]["read"] > 0)),
    "zero-length-core": (lambda d: (d / C.format(4)).write_bytes(b""),
                         Tolerate(("empty-core",), lambda p, d: not (p.commands["core"] == 4).any())),
    "anchor-core-missing": (lambda d: (d / C.format(7)).unlink(), Tolerate(("cdma-unanchored",))),
    "cdma-port-too-high": (_rename("cdma_1.profile", "cdma_11.profile"), Reject(("CDMA port 11 does not exist on AKS",))),
    "cdma-bad-name": (_rename("cdma_1.profile", "cdma_x.profile"), Reject(("CDMA file name should be",))),
    "cdma-empty-file": (lambda d: (d / "cdma_1.profile").write_bytes(b""), Tolerate(("empty-port",))),
    "cdma-with-dyn-data": (_cdma_with_dyn_data, Tolerate()),
    "cdma-only-sync-pair": (_cdma_sync_only, Tolerate((), lambda p, d: "CDMA_1" not in p.sheets())),
    # TLV container
    "truncated-tiu-block": (_trunc_in_block(Block.MONITOR_BD), Reject(("claims", "truncated file?"))),
    "truncated-gdma-block": (_trunc_in_block(Block.MONITOR_GDMA), Reject(("claims", "truncated file?"))),
    "truncated-dyn-data": (_trunc_in_block(Block.DYN_DATA), Reject(("DYN_DATA claims",))),
    "truncated-dyn-extra": (_trunc_in_block(Block.DYN_EXTRA), Reject(("DYN_EXTRA claims",))),
    "unknown-block-type": (lambda d: (d / C.format(1)).write_bytes((d / C.format(1)).read_bytes() + struct.pack("<II", 99, 0)),
                           Reject(("unknown block type 99",))),
    "huge-length": (lambda d: (d / C.format(0)).write_bytes((d / C.format(0)).read_bytes() + struct.pack("<II", 3, 0xFFFFFFF0)),
                    Reject(("claims 4294967280 payload bytes",))),
    "garbage-core-file": (_garbage_core, Reject(("cdmlib0_3.profile at byte offset 0",))),
    "partial-records": (_partial_records, Tolerate(("partial-record",))),
    "second-monitor-block": (_second_monitor, Tolerate(("extra-monitor-block",))),
    "missing-sdma-block": (_drop_block(Block.MONITOR_SDMA, 2), Tolerate((), lambda p, d: "SDMA_2" not in p.sheets())),
    "missing-tiu-block": (_drop_block(Block.MONITOR_BD, 2), Tolerate(("no-sync",))),
    "des-kv-too-short": (_des_kv_short, Reject(("BLOCK_DES_KV shorter than its 12-byte header",))),
    "zero-record-inside": (_zero_record_inside, Tolerate(("zero-record",),
                           lambda p, d: p.meta.accounting["TIU_6"]["dropped: after an all-zero record"] > 0)),
    # dynamic nodes and descriptors
    "unknown-node-type": (_junk_node, Reject(("unknown dynamic node type 85",))),
    "node-engine-out-of-range": (_bad_engine_node, Reject(("engine code 7",))),
    "func-name-past-end": (_long_func_name, Reject(("kernel name of 4000 bytes runs past the end",))),
    "des-without-count": (_des_without_count, Reject(("descriptor reference without its count word",))),
    "non-utf8-kernel-name": (_non_utf8_kernel, Tolerate((), lambda p, d: p.commands["kernel"].astype(str).str.contains("\ufffd").any())),
    "dyn-extra-unknown-type": (_extra_unknown_type, Reject(("DYN_EXTRA entry of unknown type 9",))),
    "dyn-extra-too-few": (_extra_half, Tolerate(("missing-extra",))),
    "garbage-descriptors": (_garbage_descriptors, Tolerate(("undecodable",))),
    "drop-dyn-data": (_drop_block(Block.DYN_DATA, 5), Tolerate((), lambda p, d: (p.commands.loc[p.commands["core"] == 5, "mode"].astype(str) == "PMU").all())),
    # streams
    "unsorted-tiu": (_unsorted_tiu, Tolerate((), lambda p, d: (p.commands["start_ns"] >= 0).all())),
}


def _truncated_header(d):
    f = d / C.format(2)
    last = blocks_of(f)[-1][0]
    f.write_bytes(f.read_bytes()[: last + 4])


CASES["truncated-header"] = (_truncated_header, Reject(("truncated block header: 4 bytes left",)))

#: generator options that are odd but real (each a case of its own)
SYNTH_CASES = {
    "u32-time-wrap": (dict(time_wrap=True), ("time-wrap",)),
    "lapped-ring": (dict(mode=1, ring_core=4), ("ring-rotated",)),
    "idle-core": (dict(idle_cores=(3,)), ()),
    "16-bit-id-wrap": (dict(mode=1, cmds_per_core=200, id_wrap=True), ()),
    "aksv-rvt": (dict(arch="AKSV", rvt_ratio=0.5), ()),
    "mode-0": (dict(mode=0), ()),
}


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    return write_dump(root, arch="AKS", cores=8, cmds_per_core=120, mode=2, seed=5).dump_dir


@pytest.fixture
def dump(base, tmp_path) -> Path:
    d = tmp_path / base.name
    shutil.copytree(base, d)
    return d


def assert_accounted(profile):
    rows = profile.commands.groupby("sheet", observed=True).size()
    for sheet, entry in profile.meta.accounting.items():
        dropped = sum(v for k, v in entry.items() if k.startswith("dropped: "))
        assert entry.get("read", 0) == entry.get("shown", 0) + dropped, (sheet, entry)
        assert entry.get("shown", 0) == rows.get(sheet, 0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_catalogue(name, dump):
    mutate, outcome = CASES[name]
    mutate(dump)
    if isinstance(outcome, Reject):
        with pytest.raises(InputError) as err:
            load_dump(dump)
        msg = str(err.value)
        assert "\n" not in msg and str(dump) in msg
        for needle in outcome.needles:
            assert needle in msg, msg
        if outcome.line is not None:
            assert err.value.line == outcome.line
        if "byte offset" in msg or "claims" in msg:
            assert err.value.offset is not None
    else:
        profile = load_dump(dump)
        codes = {w.code for w in profile.meta.warnings}
        assert set(outcome.codes) <= codes, codes
        assert_accounted(profile)
        outcome.check(profile, dump)


@pytest.mark.parametrize("name", sorted(SYNTH_CASES))
def test_odd_but_real_generator_options(name, tmp_path):
    import pandas as pd

    opts, codes = SYNTH_CASES[name]
    kw = dict(arch="AKS", cores=None, cmds_per_core=150, mode=2, seed=9) | opts
    res = write_dump(tmp_path, **kw)
    profile = load_dump(res.dump_dir)
    assert set(codes) <= {w.code for w in profile.meta.warnings}
    assert_accounted(profile)
    truth = pd.read_csv(tmp_path / "expected_commands.csv", low_memory=False)
    assert len(profile.commands) == len(truth)
    assert sorted(profile.commands["start_ns"]) == sorted(truth["start_ns"])


def _files(d: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in d.iterdir()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_case_changes_the_dump(name, base, dump):
    """A mutation that leaves the dump as it was (say a global.profile key that is not there)
    would test the valid dump under a wrong name; a Tolerate case then passes whatever the
    decoder does."""
    CASES[name][0](dump)
    assert _files(dump) != _files(base)


def test_sweep_of_random_mutations(base, tmp_path):
    """Seeded random damage (bit flips, cuts, block header edits) on unseen inputs: the decoder
    ends in a Profile or one InputError, never another exception."""
    rng = random.Random(2026)
    files = sorted(p.name for p in base.iterdir())
    outcomes = {"ok": 0, "rejected": 0}
    for i in range(60):
        d = tmp_path / f"m{i}"
        shutil.copytree(base, d)
        target = d / rng.choice(files)
        data = bytearray(target.read_bytes())
        kind = rng.choice(["flip", "cut", "header", "splice"])
        if not data:
            continue
        if kind == "flip":
            for _ in range(rng.randint(1, 20)):
                pos = rng.randrange(len(data))
                data[pos] ^= 1 << rng.randrange(8)
        elif kind == "cut":
            data = data[: rng.randrange(len(data))]
        elif kind == "header" and target.name != "global.profile":
            offs = [o for o, _, _ in blocks_of(target)] or [0]
            o = rng.choice(offs)
            data[o + rng.randrange(8)] = rng.randrange(256)
        else:
            a = rng.randrange(len(data))
            data[a:a] = rng.randbytes(rng.randint(1, 64))
        target.write_bytes(bytes(data))
        try:
            profile = load_dump(d)
        except InputError as exc:
            assert "\n" not in str(exc)
            outcomes["rejected"] += 1
        else:
            assert_accounted(profile)
            outcomes["ok"] += 1
    assert outcomes["ok"] and outcomes["rejected"]


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_block_reader_fuzz(tmp_path_factory, blob):
    """Arbitrary bytes: the TLV reader returns blocks that tile the file, or one InputError."""
    f = tmp_path_factory.mktemp("fuzz") / "cdmlib0_0.profile"
    f.write_bytes(blob)
    try:
        blocks = read_blocks(f)
    except InputError as exc:
        assert exc.offset is not None and 0 <= exc.offset <= len(blob)
        return
    assert sum(8 + len(b.payload) for b in blocks) == len(blob)


@pytest.mark.parametrize("name", sorted(n for n, (_, o) in CASES.items() if isinstance(o, Tolerate)))
def test_tolerated_dumps_report_end_to_end(name, dump, tmp_path):
    """Odd-but-real dumps go through the writers too: exit 0 and the warnings in summary.json."""
    import json

    from reportgen import cli

    CASES[name][0](dump)
    out = tmp_path / "out"
    assert cli.main([str(dump), str(out), "--quiet", "--disable_doc"]) == 0
    doc = json.loads((out / "summary.json").read_text())
    assert set(CASES[name][1].codes) <= {w["code"] for w in doc["warnings"]}
    assert (out / "PerfWeb" / "result.html").is_file() and (out / "perfetto.pftrace").is_file()


def test_sweep_through_the_cli(base, tmp_path, capsys):
    """Unseen damage through the whole CLI: exit 0 with every output present, or exit 1 with
    one line on stderr; never a traceback, never exit 0 with an output missing."""
    from reportgen import cli

    rng = random.Random(7)
    files = sorted(p.name for p in base.iterdir())
    expected = ["summary.txt", "summary.json", "PerfWeb/result.html", "perfetto.pftrace"]
    seen = set()
    for i in range(16):
        d = tmp_path / f"m{i}"
        shutil.copytree(base, d)
        target = d / rng.choice(files)
        data = bytearray(target.read_bytes())
        for _ in range(rng.randint(1, 8)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3 and data:
            data = data[: rng.randrange(len(data))]
        target.write_bytes(bytes(data))
        out = tmp_path / f"out{i}"
        code = cli.main([str(d), str(out), "--quiet", "--disable_doc"])
        err = capsys.readouterr().err
        assert "Traceback" not in err
        seen.add(code)
        if code == 0:
            assert all((out / rel).is_file() for rel in expected)
        else:
            assert code == 1 and len(err.strip().splitlines()) == 1 and not out.exists()
    assert seen == {0, 1}


def _load_with_threads(d: Path, threads: int, monkeypatch):
    import reportgen.parsers.pmu.dump as dump_module

    monkeypatch.setattr(dump_module, "THREADS", threads)
    return load_dump(d)


def test_threads_do_not_change_the_result(dump, monkeypatch):
    """Cores are decoded and bound by worker threads: with damage on five cores, the model,
    the registers, the warnings (in order) and the accounting equal a one-thread run's."""
    import pandas as pd

    for mutate in (_partial_records, _second_monitor, _zero_record_inside, _unsorted_tiu,
                   _garbage_descriptors):
        mutate(dump)
    one = _load_with_threads(dump, 1, monkeypatch)
    many = _load_with_threads(dump, 4, monkeypatch)
    pd.testing.assert_frame_equal(one.commands, many.commands)
    assert [(w.code, w.message, w.where) for w in one.meta.warnings] == \
        [(w.code, w.message, w.where) for w in many.meta.warnings]
    assert {"partial-record", "extra-monitor-block", "zero-record", "undecodable"} <= \
        {w.code for w in many.meta.warnings}
    assert one.meta.accounting == many.meta.accounting
    assert sorted(one.registers) == sorted(many.registers)
    for engine in one.registers:
        pd.testing.assert_frame_equal(one.registers[engine], many.registers[engine])


def test_threads_report_the_first_broken_core(dump, monkeypatch):
    """Two unreadable core files: every thread count names the lower-numbered one."""
    (dump / C.format(5)).write_bytes(random.Random(5).randbytes(5000))
    _garbage_core(dump)                                   # core 3
    for threads in (1, 4):
        with pytest.raises(InputError) as err:
            _load_with_threads(dump, threads, monkeypatch)
        assert C.format(3) in str(err.value) and C.format(5) not in str(err.value)
