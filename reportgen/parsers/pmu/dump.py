"""Decode a `cdm_profile_data_devX-Y/` directory into a Profile (spec §9, 0.3.7 behaviour).

Two stages, timed apart by the benchmarks:

* :func:`read_dump` turns the bytes into arrays. Per core: read blocks, normalise the PMU
  streams, cut the profile-init preamble (its TIU record #1 end is the core's sync point),
  parse the dynamic nodes and index the DYN_EXTRA descriptors.
* :func:`build_profile` binds records to commands, anchors the CDMA ports on the anchor core,
  aligns the cores on their sync points, shifts the earliest record to 0 ns, prunes system
  commands at stream edges and describes every record (names, bytes, direction, ops, register
  fields) as one row of ``Profile.commands``.
"""
from __future__ import annotations

import os
import struct
import threading
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np

from reportgen import progress as progress_bars
from reportgen.errors import InputError
from reportgen.heap import release_free_memory
from reportgen.model import Meta, Profile
from reportgen.options import MAX_INPUT_MB
from reportgen.parsers import limits
from reportgen.parsers.pmu import bind, container, describe
from reportgen.parsers.pmu.chips import Chip
from reportgen.parsers.pmu import descriptors as D
from reportgen.parsers.pmu.nodes import CommandList, parse_dyn_data
from reportgen.parsers.pmu.records import DES_KV_HEADER, Block
from reportgen.parsers.pmu.clocks import TiuClock
from reportgen.parsers.pmu.streams import Stream, from_records, normalise, trim_edge_strays

T = TypeVar("T")
R = TypeVar("R")
INIT_RECORDS = 2          # profile-init commands per engine (AKS/AKSV)
CORE_ENGINES = ("TIU", "GDMA", "SDMA")
_MONITOR = {Block.MONITOR_BD: "TIU", Block.MONITOR_GDMA: "GDMA", Block.MONITOR_SDMA: "SDMA"}
_BMODEL_DES = {Block.BLOCK_DES_BDC: "TIU", Block.BLOCK_DES_GDMA: "GDMA", Block.BLOCK_DES_SDMA: "SDMA"}


@dataclass
class CoreData:
    index: int
    path: Path
    streams: dict[str, Stream] = field(default_factory=dict)
    commands: dict[str, CommandList] = field(default_factory=dict)
    #: the whole file; descriptors are referred to by (offset, length) into it, never copied
    file: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    extra_off: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))   # DYN_EXTRA
    extra_len: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    extra_entries: int = 0        # len(extra_off), also once the arrays are freed
    kv: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)       # DES chains
    bmodel_des: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    sync_ns: int | None = None
    has_nodes: bool = False
    scopes: int = 0               # FUNC nodes of the core's DYN_DATA


@dataclass
class RawDump:
    """A dump's contents as arrays, before binding: what :func:`read_dump` returns."""

    meta: Meta
    chip: Chip
    bmodel: bool
    cores: list[CoreData]
    ports: dict[int, Stream]


def load_dump(path: str | Path, *, tiu_freq: float | None = None, quiet: bool = True,
              max_input_mb: int = MAX_INPUT_MB) -> Profile:
    """Decode a PMU dump directory. ``tiu_freq`` (MHz) overrides `tpu_freq` and the chip default;
    core and port files of more than ``max_input_mb`` MB in total are refused unread."""
    return build_profile(read_dump(path, tiu_freq=tiu_freq, quiet=quiet, max_input_mb=max_input_mb))


def read_dump(path: str | Path, *, tiu_freq: float | None = None, quiet: bool = True,
              max_input_mb: int = MAX_INPUT_MB) -> RawDump:
    """Read every file of a dump directory into arrays (records, nodes, descriptor index).
    Every core and port file is first checked header to header on disk, and their total size
    against ``max_input_mb``, so a file its blocks cannot account for is refused unread."""
    directory = Path(path)
    if not directory.is_dir():
        raise InputError(directory, "not a directory: expected a PMU dump directory "
                         "(cdm_profile_data_devX-Y/ with global.profile)")
    gpath = directory / "global.profile"
    if not gpath.is_file():
        raise InputError(directory, "no global.profile: this is not a TPU PMU dump directory")
    meta = Meta(source="pmu", input_path=str(directory))
    gp = container.read_global_profile(gpath, meta)
    chip = gp.chip
    if tiu_freq is not None and not tiu_freq > 0:
        raise InputError(directory, f"TIU clock must be above 0 MHz, not {tiu_freq}")
    # the clock the TIU counters ran at, as the capture declares it; a --tiu_freq override of
    # it is applied relative to each core's sync instant (clocks.TiuClock), never to the
    # counters' absolute values
    counter_mhz = float(gp.tpu_freq or chip.tiu_mhz)
    tiu_mhz = float(tiu_freq or counter_mhz)
    dma_mhz = chip.dma_mhz
    files = container.core_files(directory)
    ports = container.cdma_files(directory, chip)
    if not files:
        raise InputError(directory, "no cdmlib*.profile core files: nothing to decode")
    num_cores = max(len(files), gp.core_num or 0)
    meta.chip, meta.chip_alias, meta.num_cores = chip.name, chip.alias, num_cores
    meta.tiu_freq_mhz, meta.dma_freq_mhz = tiu_mhz, dma_mhz
    meta.tail_offset_ns = gp.tail_offset_ns
    meta.arch = dict(chip.arch, **{"TIU Frequency(MHz)": _num(tiu_mhz), "Core Num": chip.cores})
    _check_names(files, meta)

    sizes = [container.scan_blocks(f) for f in files + list(ports.values())]
    limits.check_size(directory, sum(sizes), max_input_mb, what="its core and port files hold")
    clocks = TiuClock(counter_mhz, tiu_mhz)
    cores = _in_threads(lambda i, m: _read_core(i, files[i], sizes[i], chip, clocks, dma_mhz, m,
                                                gp.bmodel), list(range(len(files))), meta, "decode cores", quiet)
    port_streams = {p: _read_port(p, f, dma_mhz, meta) for p, f in ports.items()}
    _check_record_counts(gp, cores, port_streams, meta, chip.init_records)

    modes = {c.index: ("bmodel" if gp.bmodel else "2" if len(c.extra_off) else "1" if c.has_nodes else "0")
             for c in cores if any(len(s) for s in c.streams.values())}
    meta.mode = next(iter(set(modes.values()))) if len(set(modes.values())) == 1 else (
        "mixed" if modes else "0")
    return RawDump(meta, chip, gp.bmodel, cores, port_streams)


def build_profile(raw: RawDump) -> Profile:
    """Bind, align and describe the records of a read dump: the command model. ``raw`` is
    used up: each core's file, streams and command lists are freed once bound."""
    meta, chip, cores = raw.meta, raw.chip, raw.cores
    lanes = [(core, engine) for core in cores for engine in CORE_ENGINES]
    unbound = {core.index: len(CORE_ENGINES) for core in cores}
    lock = threading.Lock()

    def bind_lane(lane: tuple[CoreData, str], m: Meta) -> bind.Binding:
        core, engine = lane
        binding = bind.bind_engine(core, engine, chip, m, raw.bmodel)
        core.streams.pop(engine, None)
        core.commands.pop(engine, None)
        with lock:
            unbound[core.index] -= 1
            if not unbound[core.index]:
                _free_bound_core(core)
        return binding

    bound = dict(zip([(core.index, engine) for core, engine in lanes], _in_threads(bind_lane, lanes, meta)))

    anchor = next((c for c in cores if c.index == chip.anchor_core), None)
    port_bound = bind.bind_cdma(raw.ports, cores, anchor, chip, meta, bound)

    _align_cores(cores, bound, port_bound, anchor, meta)
    bindings = [b for b in list(bound.values()) + list(port_bound.values()) if len(b)]
    _number_scopes_across_cores(cores, bindings)
    if not bindings:
        meta.warn("empty", "the dump contains no PMU records after the profile-init preamble")
    commands, registers = describe.assemble(bindings, meta)
    meta.cdma_ports = sorted(int(p) for p in commands.loc[commands["engine"] == "CDMA", "port"].dropna().unique())
    return Profile(commands=commands, registers=registers, meta=meta)


def _free_bound_core(core: CoreData) -> None:
    """Free what a core's records were bound with (at 3.3M commands, the decode's largest
    arrays); the CDMA ports' command lists stay, and the file while DES chains (walked when a
    port is bound) live in it."""
    if not core.kv:
        core.file = np.zeros(0, np.uint8)
    core.extra_off, core.extra_len = np.zeros(0, np.int64), np.zeros(0, np.int64)
    release_free_memory()         # the streams and node lists freed lane by lane, likewise


def _number_scopes_across_cores(cores, bindings) -> None:
    """Func scope ids count FUNC nodes over all cores in core order, as the reference numbers
    them (spec pmu-dump-format.md §14 Q21): a core's ids follow the previous cores' scopes."""
    top = max([c.index for c in cores] + [int(b.cols["core"].max()) for b in bindings if len(b)], default=0)
    counts = np.zeros(top + 1, np.int64)
    for c in cores:
        counts[c.index] = c.scopes
    first = np.cumsum(counts) - counts              # scopes of the cores before each core
    if not first.any():
        return
    for b in bindings:
        scope = b.cols["func_scope"]
        b.cols["func_scope"] = np.where(scope >= 0, scope + first[b.cols["core"].astype(np.int64)], scope)


def _num(x: float):
    return int(x) if float(x).is_integer() else x


def _check_names(files: list[Path], meta: Meta) -> None:
    numbers = [container.core_number(f) for f in files]
    if numbers != list(range(len(files))) and None not in numbers:
        meta.warn("core-numbering", f"core files are numbered {numbers}: cores are taken in that "
                  "order as 0..N-1 (a missing file renumbers the following cores)", str(files[0].parent))


#: threads that decode cores (and bind their streams) at once: numpy releases the GIL in the
#: array work, which is most of it, so two threads on two CPUs take about 0.6 of the time
THREADS = min(4, os.cpu_count() or 1)


def _in_threads(work: Callable[[T, Meta], R], items: list[T], meta: Meta, progress: str = "",
                quiet: bool = True) -> list[R]:
    """``work(item, meta)`` for every item, a few at a time. Each call gets its own
    :meth:`Meta.worker`; their warnings and accounting are merged in item order, so the
    report does not depend on which thread finished first."""
    local = [meta.worker() for _ in items]
    with ThreadPoolExecutor(THREADS) as pool:
        jobs = range(len(items))
        call = lambda i: work(items[i], local[i])  # noqa: E731
        done = pool.map(call, jobs) if THREADS > 1 else map(call, jobs)
        out = []
        with progress_bars.bar(len(items), progress, "core", quiet or not progress) as bar:
            for result in done:
                out.append(result)
                bar.update()
    for m in local:
        meta.merge(m)
    return out


def _read_core(index: int, path: Path, size: int, chip: Chip, clock: TiuClock, dma_mhz: float,
               meta: Meta, bmodel: bool) -> CoreData:
    core = CoreData(index, path)
    core.file = data = _read_file(path, size)
    if not len(data):
        meta.warn("empty-core", "zero-length core file: the core has no records", str(path))
    blocks = container.read_blocks(path, data)
    extra_blocks = []
    warn = lambda code, msg: meta.warn(code, msg, str(path))  # noqa: E731
    dyn: list[tuple[int, np.ndarray]] = []
    seen: set[str] = set()
    for b in blocks:
        if b.type in _MONITOR:
            engine = _MONITOR[b.type]
            if engine in seen:
                warn("extra-monitor-block", f"second {engine} monitor block ignored (offset {b.offset})")
                continue
            seen.add(engine)
            core.streams[engine] = from_records(engine, b.payload, warn, _counter(meta, engine, index),
                                                chip.records)
        elif b.type == Block.DYN_DATA:
            nwords = len(b.payload) // 4
            if nwords * 4 != len(b.payload):
                warn("partial-record", "DYN_DATA length is not a multiple of 4: tail ignored")
            dyn.append((b.offset + 8, np.frombuffer(b.payload, "<u4", nwords)))
        elif b.type == Block.DYN_EXTRA:
            extra_blocks.append(b)
        elif b.type == Block.BLOCK_DES_KV:
            if len(b.payload) < DES_KV_HEADER.itemsize:
                raise InputError(path, "BLOCK_DES_KV shorter than its 12-byte header", offset=b.offset)
            key, num, _ = np.frombuffer(b.payload, DES_KV_HEADER, 1)[0]
            core.kv[(int(key), int(num))] = (b.offset + 8 + 12, len(b.payload) - 12)
        elif b.type in _BMODEL_DES:
            core.bmodel_des.setdefault(_BMODEL_DES[b.type], []).append((b.offset + 8, len(b.payload)))
    if len(dyn) > 1:
        warn("multiple-dyn-data", f"{len(dyn)} DYN_DATA blocks: they are read as one stream")
    nodes = None
    if dyn:
        words = dyn[0][1] if len(dyn) == 1 else np.concatenate([w for _, w in dyn])
        nodes = parse_dyn_data(words, chip, path, dyn[0][0])
        core.commands = nodes.lists
        core.has_nodes = True
        core.scopes = nodes.scopes
    if extra_blocks:
        # entry lengths follow from the nodes' ops: predict them, check them, walk only if wrong
        predicted = (_predicted_extra_lengths(chip, nodes.tdi)
                     if nodes is not None and len(extra_blocks) == 1 else None)
        parts = [_dyn_extra_entries(b.payload, path, b.offset + 8, warn, predicted)
                 for b in extra_blocks]
        core.extra_off, core.extra_len = parts[0] if len(parts) == 1 else (
            np.concatenate([o for o, _ in parts]), np.concatenate([n for _, n in parts]))
        core.extra_entries = len(core.extra_off)
    for engine in CORE_ENGINES:
        s = core.streams.get(engine)
        if s is None:
            s = from_records(engine, memoryview(b""), warn, layout=chip.records)
        s = normalise(s, clock.counter_mhz if engine == "TIU" else dma_mhz, warn)
        core.streams[engine] = s
    init = chip.init_records
    if chip.tiu_edge_strays:
        core.streams["TIU"] = trim_edge_strays(core.streams["TIU"], core.streams["GDMA"], meta, index, warn)
    # the sync instant: a TIU record's end (AKS: the preamble's record #1; spec §9.5 and
    # chips-bm1688-cv84x6.md §7.2), counted after the preamble
    tiu = core.streams["TIU"]
    at = chip.sync_record
    if -len(tiu) <= at < len(tiu):
        at %= len(tiu)
        clock.rescale(tiu, at)
        core.sync_ns = int(tiu["end_ns"][at])
    else:
        clock.rescale(tiu, None)
        warn("no-sync", "TIU stream has too few records to hold its sync record: the core cannot "
             "be aligned")
    for engine in CORE_ENGINES:
        s = core.streams[engine]
        if init:
            core.streams[engine] = s.take(slice(min(init, len(s)), None))
            meta.count(f"{engine}_{index}", "dropped: profile-init preamble", min(init, len(s)))
            if engine in core.commands:
                core.commands[engine] = core.commands[engine].take(slice(init, None))
    return core


def _read_file(path: Path, size: int) -> np.ndarray:
    """The file's bytes (as many as it held when it was sized), in a buffer of its own: freed
    once the core is bound. numpy asks the kernel for huge pages for buffers of 4 MB and more,
    so reading a file costs a few page faults instead of one per 4 kB (in a fresh process,
    faults were the main cost of decoding)."""
    buffer = np.empty(size, np.uint8)
    try:
        with path.open("rb") as fh:
            got = fh.readinto(memoryview(buffer))
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    return buffer[:got]


def _predicted_extra_lengths(chip: Chip, nodes: dict[str, np.ndarray]) -> np.ndarray:
    """Descriptor bytes each TDI node's DYN_EXTRA entry should hold (-1: cannot tell)."""
    lay = D.layouts(chip.name)
    codes = lambda *names: [c for c, e in chip.node_engines.items() if e in names]  # noqa: E731
    engine = nodes["engine"]
    typ, eu = nodes["des_tsk_typ"].astype(np.int64), nodes["des_tsk_eu_typ"].astype(np.int64)
    out = np.full(len(typ), -1, np.int64)
    sel = np.isin(engine, codes("TIU"))
    out[sel] = D.tiu_length_lookup(chip.name)[512 + (typ[sel] & 15) * 32 + (eu[sel] & 31)]  # short
    dma = np.isin(engine, codes("GDMA", "SDMA", "VSDMA"))
    out[dma] = np.where(typ[dma] == 6, lay["sDMA_sys"].nbytes, lay["DMA_tensor"].nbytes)
    cdma_len = np.array([lay[D.CDMA_OPS[t]].nbytes if D.CDMA_OPS.get(t) in lay else -1
                         for t in range(32)], np.int64)
    sel = np.isin(engine, codes("CDMA"))
    out[sel] = cdma_len[typ[sel] & 31]
    return out


def _dyn_extra_entries(payload: memoryview, path: Path, base: int, warn, predicted=None):
    """(file offset, length) of every descriptor in a DYN_EXTRA block.

    Entries have variable lengths; with ``predicted`` lengths (from the nodes) the offsets are
    computed at once and checked against every header. Otherwise, or when the check fails, the
    block is walked header to header (two integers read per entry).
    """
    n = len(payload)
    if predicted is not None and len(predicted) and (predicted >= 0).all():
        offs = np.concatenate([[0], np.cumsum(12 + predicted)[:-1]])
        if offs[-1] + 12 + predicted[-1] <= n and not (offs % 4).any():
            words = np.frombuffer(payload, "<u4", n // 4)
            heads = words[(offs // 4)[:, None] + np.array([1, 2])]
            if (heads[:, 1] == predicted).all() and np.isin(heads[:, 0], (0, 1, 100)).all():
                tail = int(offs[-1] + 12 + predicted[-1])
                if tail == n or tail + 12 > n:      # nothing but a cut-off entry may follow
                    if tail != n:
                        warn("partial-record", "truncated trailing DYN_EXTRA entry dropped")
                    return base + offs + 12, predicted.copy()
    unpack = struct.Struct("<II").unpack_from
    offs_a, lens = array("q"), array("q")
    off = 0
    while off + 12 <= n:
        etype, length = unpack(payload, off + 4)
        if etype not in (0, 1, 100):
            raise InputError(path, f"DYN_EXTRA entry of unknown type {etype} (expected 0, 1 or 100)",
                             offset=base + off)
        if off + 12 + length > n:
            warn("partial-record", "truncated trailing DYN_EXTRA entry dropped")
            break
        offs_a.append(base + off + 12)
        lens.append(length)
        off += 12 + length
    return np.frombuffer(offs_a, np.int64), np.frombuffer(lens, np.int64)


def _counter(meta: Meta, engine: str, n: int):
    return lambda key, k: meta.count(f"{engine}_{n}", key, k)


def _read_port(port: int, path: Path, dma_mhz: float, meta: Meta) -> Stream:
    warn = lambda code, msg: meta.warn(code, msg, str(path))  # noqa: E731
    blocks = container.read_blocks(path)
    payloads = [b.payload for b in blocks if b.type == Block.MONITOR_CDMA]
    if not payloads:
        warn("empty-port", "CDMA file without a MONITOR_CDMA block")
        payloads = [memoryview(b"")]
    s = from_records("CDMA", payloads[0], warn, _counter(meta, "CDMA", port))
    s = normalise(s, dma_mhz, warn)
    s["port"] = np.full(len(s), port, np.int64)
    return s


def _check_record_counts(gp, cores, ports, meta: Meta, init: int = INIT_RECORDS) -> None:
    for key, (value, line) in gp.records.items():
        parts = key.split("_")
        try:
            if key.startswith("core"):
                idx, engine = int(parts[0][4:]), parts[1].upper()
                if idx >= len(cores):
                    continue
                have = len(cores[idx].streams[engine]) + init
            elif key.startswith("cdma_port"):
                p = int(parts[1][4:])
                if p not in ports:
                    continue
                have = len(ports[p])
            else:
                continue
        except (ValueError, KeyError, IndexError):
            continue
        if value == 0:
            meta.warn("idle-engine", f"{key}=0: engine idle or PMU data missing", str(gp.path))
        elif have != value:
            meta.warn("record-count", f"{key}={value} (line {line}) but the file holds {have} records",
                      str(gp.path))


def _align_cores(cores, bound, port_bound, anchor, meta: Meta) -> None:
    """Sync points coincide, then the earliest first record starts at 0 (spec §9.5)."""
    ref = next((c.sync_ns for c in cores if c.sync_ns is not None), None)
    for c in cores:
        delta = (c.sync_ns - ref) if (c.sync_ns is not None and ref is not None) else 0
        streams = [bound[(c.index, engine)] for engine in CORE_ENGINES]
        if anchor is not None and c.index == anchor.index:
            streams += [b for b in port_bound.values() if b.anchored]
        for b in streams:
            if len(b) and delta:
                b.cols["start_ns"] = b.cols["start_ns"] - delta
                b.cols["end_ns"] = b.cols["end_ns"] - delta
    live = [b for b in list(bound.values()) + list(port_bound.values()) if len(b)]
    if not live:
        return
    # the vendor subtracts the earliest *first* record and fails on an unsorted stream (it then
    # has negative times); the earliest start of all is the same for sorted streams and keeps
    # every time >= 0 otherwise
    first = min(int(b.cols["start_ns"][0]) for b in live)
    zero = min(int(b.cols["start_ns"].min()) for b in live)
    if zero < first:
        meta.warn("unsorted", "a PMU stream is not in time order: times are counted from its "
                  "earliest record")
    for b in live:
        b.cols["start_ns"] = b.cols["start_ns"] - zero
        b.cols["end_ns"] = b.cols["end_ns"] - zero
    meta.pmu_tail_ns = max(int(b.cols["end_ns"][-1]) for b in live)
