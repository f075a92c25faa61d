"""A large PMU dump made by repeating a golden case's workload (benchmarks only).

Every core file's kernels are repeated ``copies`` times, each copy ``gap_ns`` later than the
one before: PMU records with their counters moved on (each engine in its own clock), dynamic
nodes and DYN_EXTRA descriptors repeated (kernels start with an id reset, so ids stay valid).
What happens once per capture stays once: the AKS profile-init preamble (its first 2 records
per engine, the nodes before the first FUNC and their descriptors) and CV84X6's two TIU edge
strays. CDMA port files are left out (their launches would need new sync pairs), so CDMA nodes
stay unbound. The result decodes like the case, ``copies`` times longer: the decoder's speed
per command can be compared across chips on the same workload shape.
"""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np

from reportgen.model import Meta
from reportgen.parsers.pmu import container
from reportgen.parsers.pmu.dump import _dyn_extra_entries
from reportgen.parsers.pmu.records import RECORD_LAYOUTS, Block, node_fields

_ENGINES = {Block.MONITOR_BD: "TIU", Block.MONITOR_GDMA: "GDMA", Block.MONITOR_SDMA: "SDMA"}


def replicate(case: Path, out: Path, copies: int, gap_ns: int = 5_000_000) -> Path:
    src = case / "input" if (case / "input").is_dir() else case
    gp = container.read_global_profile(src / "global.profile", Meta())
    chip = gp.chip
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    lines = [ln for ln in (src / "global.profile").read_text().splitlines() if "_record=" not in ln]
    (out / "global.profile").write_text("\n".join(lines) + "\n")
    tiu_mhz = gp.tpu_freq or chip.tiu_mhz
    for f in container.core_files(src):
        blocks = container.read_blocks(f)
        parts = []
        for b in blocks:
            payload = bytes(b.payload)
            if b.type in _ENGINES:
                engine = _ENGINES[b.type]
                mhz = tiu_mhz if engine == "TIU" else chip.dma_mhz
                payload = _records(payload, RECORD_LAYOUTS[chip.records][engine], copies,
                                   round(gap_ns * mhz / 1000), chip.init_records,
                                   strays=engine == "TIU" and chip.tiu_edge_strays)
            elif b.type == Block.DYN_DATA:
                payload, pre_tdi = _nodes(payload, copies)
            elif b.type == Block.DYN_EXTRA:
                continue                      # written after DYN_DATA told how many are preamble
            parts.append((b.type, payload))
        extra = [bytes(b.payload) for b in blocks if b.type == Block.DYN_EXTRA]
        if extra:
            parts.insert(0, (Block.DYN_EXTRA, _extra(extra[0], copies, pre_tdi)))
        with (out / f.name).open("wb") as fh:
            for btype, payload in parts:
                fh.write(struct.pack("<II", int(btype), len(payload)))
                fh.write(payload)
    return out


def _records(payload: bytes, dtype: np.dtype, copies: int, gap: int, pre: int, strays: bool) -> bytes:
    rec = np.frombuffer(payload, dtype, len(payload) // dtype.itemsize)
    head, body, tail = rec[:pre], rec[pre:], rec[:0]
    if strays and len(body) >= 2:
        head, body, tail = np.concatenate([head, body[:1]]), body[1:-1], body[-1:]
    reps = np.tile(body, copies)
    shift = np.repeat(np.arange(copies, dtype=np.uint64) * np.uint64(gap), len(body))
    for k in ("inst_start_time", "inst_end_time"):
        reps[k] = ((reps[k].astype(np.uint64) + shift) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    tail = tail.copy()
    for k in ("inst_start_time", "inst_end_time"):
        tail[k] = ((tail[k].astype(np.uint64) + np.uint64(gap * (copies - 1))) & np.uint64(0xFFFFFFFF))
    return np.concatenate([head, reps, tail]).tobytes()


def _nodes(payload: bytes, copies: int) -> tuple[bytes, int]:
    words = np.frombuffer(payload, "<u4")
    f = node_fields(words)
    first = int(np.argmax(f["type"] == 0)) if (f["type"] == 0).any() else 0
    pre_tdi = int((f["type"][:first] == 1).sum())
    return words[:first].tobytes() + np.tile(words[first:], copies).tobytes(), pre_tdi


def _extra(payload: bytes, copies: int, pre: int) -> bytes:
    offs, lens = _dyn_extra_entries(memoryview(payload), Path("DYN_EXTRA"), 0, lambda *a: None)
    cut = int(offs[pre] - 12) if pre < len(offs) else len(payload)
    return payload[:cut] + payload[cut:] * copies
