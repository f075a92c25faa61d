"""TLV block container of `cdmlib*.profile` / `cdma*.profile` files, and `global.profile`.

A core file is a concatenation of blocks ``u32 type, u32 length, payload`` (spec §4). The
reader checks every header against the bytes really present before slicing, so a corrupt
length can never cause a giant allocation, and names the file and byte offset of any problem.
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from reportgen.errors import InputError
from reportgen.model import Meta
from reportgen.parsers.pmu.chips import Chip, chip_for_arch
from reportgen.parsers.pmu.records import Block

KNOWN_BLOCKS = {int(b) for b in Block}
_HEADER = struct.Struct("<II")        # block type, payload length


@dataclass
class BlockRef:
    type: int
    offset: int           # offset of the block header in the file
    payload: memoryview


def read_blocks(path: Path, data: bytes | np.ndarray | None = None) -> list[BlockRef]:
    """All blocks of a core/CDMA file in file order (``data``: its bytes, when already read)."""
    if data is None:
        scan_blocks(path)            # a file its blocks cannot account for is refused unread
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    view = memoryview(data)
    return [BlockRef(btype, off, view[off + 8: off + 8 + length])
            for btype, off, length in _walk(path, len(data), lambda off: view[off:off + 8])]


def scan_blocks(path: Path) -> int:
    """Check a file's block headers on disk, reading 8 bytes per block and no payload, and
    return its size: a file whose blocks do not tile it (a corrupt header, bytes beyond the
    last block, a sparse file of gigabytes) is refused before it is read."""
    try:
        with path.open("rb") as fh:
            fd = fh.fileno()
            size = os.fstat(fd).st_size
            _walk(path, size, lambda off: os.pread(fd, 8, off))
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    return size


def _walk(path: Path, size: int, header_at: Callable[[int], bytes]) -> list[tuple[int, int, int]]:
    """(type, offset, payload length) of every block of a file of ``size`` bytes, each header
    checked against the bytes really present (``header_at(offset)``: the 8 bytes there)."""
    layout: list[tuple[int, int, int]] = []
    off = 0
    while off < size:
        if size - off < 8:
            raise InputError(path, f"truncated block header: {size - off} bytes left, expected 8",
                             offset=off)
        btype, length = _HEADER.unpack(header_at(off))
        if btype not in KNOWN_BLOCKS:
            raise InputError(path, f"unknown block type {btype} (expected one of the dump block "
                             f"types 1-17 or 100); the {size - off} bytes from here on are in no "
                             "block", offset=off)
        if length > size - off - 8:
            raise InputError(path, f"block type {Block(btype).name} claims {length} payload bytes "
                             f"but only {size - off - 8} remain (truncated file?)", offset=off)
        layout.append((btype, off, length))
        off += 8 + length
    return layout


@dataclass
class GlobalProfile:
    path: Path
    chip: Chip
    bmodel: bool = False
    tpu_freq: float | None = None
    core_num: int | None = None
    max_record_num: int | None = None
    tail_offset_ns: int | None = None
    #: `core{N}_tiu_record` etc. -> (value, line number)
    records: dict[str, tuple[int, int]] = field(default_factory=dict)


#: global.profile is a few hundred bytes (a line per engine and core); far more is not one
GLOBAL_PROFILE_MAX = 1 << 20
_INT_KEYS = ("core_num", "max_record_num", "tail_offset_ns")


def read_global_profile(path: Path, meta: Meta) -> GlobalProfile:
    """Parse `global.profile` (spec §3). Blank lines and junk lines are tolerated with a warning."""
    try:
        if path.stat().st_size > GLOBAL_PROFILE_MAX:
            raise InputError(path, f"is {path.stat().st_size} bytes: global.profile holds a few lines "
                             f"of key=value, at most {GLOBAL_PROFILE_MAX} bytes")
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from None
    values: dict[str, tuple[str, int]] = {}
    bmodel = False
    junk = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if "bmodel" in line:
            bmodel = True
            if "=" not in line:
                continue
        if "=" not in line:
            junk.append(lineno)
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = (value.strip(), lineno)
    if junk:
        meta.warn("global-junk", f"ignored {len(junk)} line(s) without '=' (first: line {junk[0]})",
                  str(path))
    if "arch" not in values:
        raise InputError(path, "does not declare the chip: expected a line 'arch=<5|8800|AKS|6|140814|AKSV|4|BM1688|7|CV84X6>'")
    arch, arch_line = values["arch"]
    chip = chip_for_arch(arch)
    if chip is None:
        raise InputError(path, f"unsupported chip arch={arch!r}: expected AKS (5, 8800, AKS, SG2260), "
                         "AKSV (6, 140814, AKSV, SG2260E), BM1688 (4, BM1688, CV186X) or CV84X6 "
                         "(7, CV84X6, BM1684X2)", line=arch_line)
    gp = GlobalProfile(path=path, chip=chip, bmodel=bmodel)
    for key in _INT_KEYS:
        if key in values:
            setattr(gp, key, _int_value(path, key, *values[key]))
    if "tpu_freq" in values:
        freq = _float_value(path, "tpu_freq", *values["tpu_freq"])
        if freq <= 0:
            raise InputError(path, f"tpu_freq must be > 0 MHz, found {freq}", line=values["tpu_freq"][1])
        gp.tpu_freq = freq
    for key, (value, lineno) in values.items():
        if key.endswith("_record"):
            n = _int_value(path, key, value, lineno)
            if n < 0:
                raise InputError(path, f"{key}={n}: a record count cannot be negative", line=lineno)
            if gp.max_record_num is not None and n > gp.max_record_num:
                raise InputError(path, f"{key}={n} exceeds max_record_num={gp.max_record_num}",
                                 line=lineno)
            gp.records[key] = (n, lineno)
    return gp


def _int_value(path: Path, key: str, value: str, lineno: int) -> int:
    try:
        return int(value, 0)
    except ValueError:
        raise InputError(path, f"{key}={value!r}: expected an integer", line=lineno) from None


def _float_value(path: Path, key: str, value: str, lineno: int) -> float:
    try:
        return float(value)
    except ValueError:
        raise InputError(path, f"{key}={value!r}: expected a number", line=lineno) from None


_NUMBERS = re.compile(r"\d+")
_CDMA_NAME = re.compile(r"cdma\d*_(\d+)\.profile$")


def core_files(directory: Path) -> list[Path]:
    """Core files in core order: sorted numerically by the numbers in the name (spec §2)."""
    files = [p for p in directory.glob("cdmlib*.profile") if p.is_file()]
    return sorted(files, key=lambda p: [int(n) for n in _NUMBERS.findall(p.name)])


def core_number(path: Path) -> int | None:
    """The core a core file names (the last number in ``cdmlib<N>.profile``), None without one.
    The decoder numbers cores by position in :func:`core_files`; this is the number the runtime
    (and the compiler's ``core_id``) gave the core."""
    numbers = _NUMBERS.findall(path.name)
    return int(numbers[-1]) if numbers else None


def cdma_files(directory: Path, chip: Chip) -> dict[int, Path]:
    ports: dict[int, Path] = {}
    for p in sorted(directory.glob("cdma*.profile")):
        m = _CDMA_NAME.search(p.name)
        if not m:
            raise InputError(p, "CDMA file name should be cdma_<port>.profile or cdma<N>_<port>.profile")
        port = int(m.group(1))
        if port >= chip.cdma_ports:
            raise InputError(p, f"CDMA port {port} does not exist on {chip.name} " + (
                f"(ports 0..{chip.cdma_ports - 1})" if chip.cdma_ports else "(it has no CDMA engine)"))
        ports[port] = p
    return dict(sorted(ports.items()))
