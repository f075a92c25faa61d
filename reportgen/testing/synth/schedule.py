"""The physical schedule: every core's profile-init preamble and kernel runs as command arrays
with times in ns (t = 0 is the sync point, TIU record #1), drawn from one random generator."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reportgen.testing import dumpformat as df
from reportgen.testing.synth.catalogue import (CUBE_OPS_PER_CYCLE, DTYPE_SIZE, KINDS, LANE_OPS_PER_CYCLE,
                                               OP_COST, OP_CUBE, OP_DST, OP_INDEX, OP_SRC,
                                               REGULAR_KINDS, Kind)
from reportgen.testing.synth.config import SynthConfig
from reportgen.testing.synth.dataflow import Sim, kernel_rows, lane_chain

OP_INDEX_SYS = np.array([n in ("dma_wait", "dma_send", "tiu_wait", "tiu_send") for n in OP_INDEX])  # noqa: E501


@dataclass
class Cmds:
    """Column arrays of commands (one row per command, any order)."""

    cols: dict[str, np.ndarray] = field(default_factory=dict)

    @staticmethod
    def concat(parts: list["Cmds"]) -> "Cmds":
        parts = [p for p in parts if p.cols and len(next(iter(p.cols.values())))]
        if not parts:
            return Cmds({})
        keys = parts[0].cols.keys()
        return Cmds({k: np.concatenate([p.cols[k] for p in parts]) for k in keys})

    def __len__(self) -> int:
        return len(next(iter(self.cols.values()))) if self.cols else 0


def _pick_slots(rng, slots, rows: int) -> np.ndarray:
    """(rows, len(slots)) op indices, -1 where the slot is skipped."""
    out = np.full((rows, len(slots)), -1, np.int64)
    for j, alts in enumerate(slots):
        names = [a[0] for a in alts]
        w = np.array([a[1] for a in alts], float)
        choice = rng.choice(len(alts), size=rows, p=w / w.sum())
        idx = np.array([OP_INDEX[n] if n else -1 for n in names])
        out[:, j] = idx[choice]
    return out


def _dma_cycles(rng, nbytes: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """DMA duration: latency + bytes / bandwidth (DDR < L2M < LMEM->LMEM), with noise."""
    bw = np.full(nbytes.shape, 36.0)                       # DDR ~36 B/cycle
    bw[(src == "L2M") | (dst == "L2M")] = 64.0
    bw[(src == "LMEM") & (dst == "LMEM")] = 96.0
    noise = rng.uniform(0.85, 1.25, nbytes.shape)
    return (180 + nbytes / bw * noise).astype(np.int64)


class KernelBuilder:
    """Builds one kernel instance on one core: command arrays with physical ns times."""

    def __init__(self, rng: np.random.Generator, kind: Kind, mode: int, tiu_scale: int = 1,
                 sim: Sim | None = None, core: int = 0, speedup: dict | None = None,
                 launch_gap: int = 0):
        self.rng, self.kind, self.mode = rng, kind, mode
        self.tiu_scale = tiu_scale      # TIU durations multiplied (a kernel made slower)
        # dataflow timing (SynthConfig.dataflow): the simulation placing this core's commands
        self.sim, self.core, self.launch_gap = sim, core, launch_gap
        self.speedup = speedup or {}    # engine -> work durations divided by this

    def _fast(self, engine: str, d: np.ndarray, sys_: np.ndarray | bool = False) -> np.ndarray:
        f = self.speedup.get(engine)
        return d if not f else np.where(sys_, d, np.rint(d / f).astype(np.int64))

    def shape(self):
        rng = self.rng
        c = int(rng.choice([64, 128, 256]))      # a tile: at most 256 x 28 x 28 (~400 KB BF16)
        h = int(rng.choice([7, 14, 28]))
        w = h
        return c, h, w

    def build(self, t0: int, iterations: int, ports: tuple[int, ...] = ()) -> tuple[Cmds, int]:
        """Returns the commands (without the closing send/wait) and the time the work ends."""
        rng, kind = self.rng, self.kind
        R = max(2, int(iterations))
        c, h, w = self.shape()
        dsize = DTYPE_SIZE[kind.dtype]
        tile_bytes = c * h * w * dsize
        loads = _pick_slots(rng, kind.loads, R)
        comps = _pick_slots(rng, kind.computes, R)
        stores = _pick_slots(rng, kind.stores, R)
        if self.mode == 0:   # LMEM->LMEM moves look like system records without descriptors
            stores[stores == OP_INDEX["mv"]] = -1
        # rows 0..R: loads/computes of iteration k in row k, stores of iteration k-1 in row k
        L = np.vstack([loads, np.full((1, loads.shape[1]), -1)])
        C = np.vstack([comps, np.full((1, comps.shape[1]), -1)])
        S = np.vstack([np.full((1, stores.shape[1]), -1), stores])

        def dma_dur(idx):
            valid = idx >= 0
            sys_ = idx == OP_INDEX["dma_wait"]      # waits for a peer's message: no data
            b = np.where(valid & ~sys_, tile_bytes, 0)
            bcast = idx == OP_INDEX["ld_bcast"]
            b = np.where(bcast, c * dsize * 64, b)
            d = _dma_cycles(rng, b.astype(float), OP_SRC[np.maximum(idx, 0)],
                            OP_DST[np.maximum(idx, 0)])
            d = np.where(sys_, rng.integers(150, 3000, idx.shape), d)
            return self._fast("GDMA", np.where(valid, d, 0), sys_), b

        Ld, Lb = dma_dur(L)
        Sd, Sb = dma_dur(S)
        elems = c * h * w
        ci = np.maximum(C, 0)
        # cycles = issue overhead + ops / throughput: cube ops scale with the input channels
        ops = elems * OP_COST[ci] * np.where(OP_CUBE[ci], c, 1)
        rate = np.where(OP_CUBE[ci], CUBE_OPS_PER_CYCLE, LANE_OPS_PER_CYCLE)
        Cd = np.where(C >= 0, (60 + ops / rate * rng.uniform(0.9, 1.15, C.shape))
                      .astype(np.int64), 0) * self.tiu_scale
        Cd = self._fast("TIU", Cd)
        gapL = np.where(L >= 0, rng.integers(3, 40, L.shape), 0)
        gapS = np.where(S >= 0, rng.integers(3, 40, S.shape), 0)
        gapC = np.where(C >= 0, rng.integers(0, 40, C.shape), 0)
        Lsum = (Ld + gapL).sum(1)
        Ssum = (Sd + gapS).sum(1)
        Csum = (Cd + gapC).sum(1)
        Lnext = np.append(Lsum[1:], 0)
        P = np.maximum(Lsum + Ssum, Lsum + Csum - Lnext) + rng.integers(5, 60, R + 1)
        T = t0 + np.concatenate([[0], np.cumsum(P)[:-1]])
        Lstart = T[:, None] + np.cumsum(Ld + gapL, 1) - (Ld + gapL) + gapL
        Sstart = (T + Lsum)[:, None] + np.cumsum(Sd + gapS, 1) - (Sd + gapS) + gapS
        Cstart = (T + Lsum)[:, None] + np.cumsum(Cd + gapC, 1) - (Cd + gapC) + gapC
        work_end = int(T[-1] + Lsum[-1] + Ssum[-1])
        if self.sim is not None:
            P = P - np.maximum(Lsum + Ssum, Lsum + Csum - Lnext)   # the row's jitter only
            P[0] += self.launch_gap
            Lstart, Sstart, Cstart, self.last_gdma = kernel_rows(
                self.sim, self.core, L, S, C, Ld, Sd, Cd, gapL, gapS, gapC, P, t0,
                np.isin(OP_DST, ["LMEM"]) & (OP_SRC != "LMEM"), OP_INDEX_SYS)
        parts = []
        # GDMA in time order: per row, loads then stores
        g_idx = np.hstack([L, S]); g_st = np.hstack([Lstart, Sstart]); g_d = np.hstack([Ld, Sd])
        g_b = np.hstack([Lb, Sb])
        g_dep = np.hstack([np.zeros_like(L), np.where(np.arange(S.shape[1]) == 0, 1, 0)
                           * np.ones_like(S)])
        g_it = np.hstack([np.repeat(np.arange(R + 1)[:, None], L.shape[1], 1),
                          np.repeat(np.arange(-1, R)[:, None], S.shape[1], 1)])
        m = g_idx >= 0
        parts.append(self._cmds("GDMA", g_idx[m], g_st[m], g_st[m] + g_d[m], g_b[m],
                                g_it[m], dep_kind=np.where(g_dep[m] == 1, 2, 0), c=c, h=h, w=w))
        m = C >= 0
        first_comp = np.zeros_like(C)
        first_comp[:, 0] = 1
        it = np.repeat(np.arange(R + 1)[:, None], C.shape[1], 1)
        parts.append(self._cmds("TIU", C[m], Cstart[m], Cstart[m] + Cd[m],
                                np.zeros(m.sum(), np.int64), it[m],
                                dep_kind=np.where(first_comp[m] == 1, 1, 0), c=c, h=h, w=w))
        if kind.sdma:
            n = len(kind.sdma) + int(rng.integers(0, 3))
            idx = np.array([OP_INDEX[kind.sdma[i % len(kind.sdma)]] for i in range(n)])
            b = np.full(n, tile_bytes * int(rng.choice([1, 2, 4])), np.int64)
            d = self._fast("SDMA", _dma_cycles(rng, b.astype(float), OP_SRC[idx], OP_DST[idx]))
            gap = rng.integers(10, 200, n)
            st = t0 + 100 + np.cumsum(d + gap) - d
            if self.sim is not None:
                g = gap.copy()
                g[0] += 100 + self.launch_gap
                st = lane_chain(self.sim, self.core, (self.core, "SDMA"), d, g, np.ones(n), t0)
            parts.append(self._cmds("SDMA", idx, st, st + d, b, np.zeros(n, np.int64),
                                    dep_kind=np.zeros(n, np.int64), c=c, h=h, w=w))
            work_end = max(work_end, int(st[-1] + d[-1]))
        for port in ports if kind.cdma else ():
            # one launch per port: > 10 records with ids 1.. (the decoder splits launches on
            # id drops > 10), send/receive alternating back to back on the port's queue
            n = max(12, 2 * (R // 2))
            idx = np.where(np.arange(n) % 2 == 0, OP_INDEX["cd_send"], OP_INDEX["cd_recv"])
            b = np.full(n, int(rng.choice([1, 2, 4])) * 131072 * dsize, np.int64)
            d = self._fast("CDMA", (500 + b / 15.0 * rng.uniform(0.85, 1.2, n)).astype(np.int64))
            st = t0 + 10 + np.concatenate([[0], np.cumsum(d)[:-1]])
            if self.sim is not None:
                g = np.zeros(n, np.int64)
                g[0] = 10 + self.launch_gap
                st = lane_chain(self.sim, self.core, (port, "CDMA"), d, g, np.ones(n), t0)
            cm = self._cmds("CDMA", idx, st, st + d, b, np.zeros(n, np.int64),
                            dep_kind=np.zeros(n, np.int64), c=c, h=h, w=w)
            cm.cols["port"][:] = port
            parts.append(cm)
            work_end = max(work_end, int(st[-1] + d[-1]))
        return Cmds.concat(parts), work_end

    def _cmds(self, engine, idx, start, end, nbytes, it, dep_kind, c, h, w) -> Cmds:
        n = len(idx)
        kind = self.kind
        return Cmds({
            "engine": np.full(n, engine, object),
            "op": idx.astype(np.int64),
            "start": start.astype(np.int64), "end": end.astype(np.int64),
            "bytes": nbytes.astype(np.int64), "iter": it.astype(np.int64),
            "dep_kind": dep_kind.astype(np.int64),   # 1: wait for GDMA load, 2: wait for TIU
            "port": np.full(n, -1, np.int64),
            "c": np.full(n, c, np.int64), "h": np.full(n, h, np.int64),
            "w": np.full(n, w, np.int64),
            "dtype": np.full(n, kind.dtype, np.int64),
            "prec": np.full(n, kind.tiu_prec, np.int64),
        })


def _sys_cmds(engine: str, op: str, start, end) -> Cmds:
    start = np.atleast_1d(np.asarray(start, np.int64))
    n = len(start)
    return Cmds({
        "engine": np.full(n, engine, object), "op": np.full(n, OP_INDEX[op], np.int64),
        "start": start, "end": np.atleast_1d(np.asarray(end, np.int64)),
        "bytes": np.zeros(n, np.int64), "iter": np.zeros(n, np.int64),
        "dep_kind": np.zeros(n, np.int64), "port": np.full(n, -1, np.int64),
        "c": np.zeros(n, np.int64), "h": np.zeros(n, np.int64), "w": np.zeros(n, np.int64),
        "dtype": np.zeros(n, np.int64), "prec": np.zeros(n, np.int64),
    })


@dataclass
class KernelRun:
    kind: str
    func: str
    rvt: bool
    cmds: Cmds          # program order is computed later (sorted by start)
    ports: tuple[int, ...]
    des: bool = False   # dispatched as DES chains: no NODE_SETs, descriptors in BLOCK_DES_KV
    batch: int | None = None  # BATCH_IDX value written after the FUNC record
    in_blocks: bool = False   # bmodel: in BLOCK_DES_* descriptor blocks, not in DYN_DATA


@dataclass
class CoreProgram:
    core: int
    init: Cmds                        # profile-init commands (+ anchor VSDMA sends)
    kernels: list[KernelRun] = field(default_factory=list)
    sim: Sim | None = None            # dataflow timing: the simulation (on the first busy core)


def plan(cfg: SynthConfig, rng: np.random.Generator):
    """The physical schedule of every core: init preamble and kernel runs (ns, t=0 = sync)."""
    chip = df.CHIPS[cfg.arch]
    busy = cfg.busy_cores
    anchor = chip["core_num"] - 1
    ports = cfg.cdma_ports
    submitter = {p: busy[i % len(busy)] for i, p in enumerate(ports)}
    programs = {}
    for core in range(cfg.cores):
        j = rng.integers(-60, 60, 5)
        # enable_profile, in dispatch order: "GDMA send -> TIU wait" twice, then the SDMA pair
        init = Cmds.concat([
            _sys_cmds("GDMA", "dma_send", [-5122 + j[0]], [-5110 + j[0]]),
            _sys_cmds("TIU", "tiu_wait", [-5062 + j[2]], [-4482 + j[2]]),
            _sys_cmds("GDMA", "dma_send", [-4422 + j[1]], [-4408 + j[1]]),
            _sys_cmds("TIU", "tiu_wait", [-40], [0]),          # the sync point: t = 0
            _sys_cmds("SDMA", "dma_send", [-5022 + j[3]], [-5010 + j[3]]),
            _sys_cmds("SDMA", "dma_wait", [-4822 + j[4]], [-200]),
        ])
        if core == anchor and ports:
            # one VSDMA send per active port, then the CDMA init pair (tx_wait, nop) per port
            st = 400 + 150 * np.arange(len(ports))
            cd = _sys_cmds("CDMA", "cd_tx_wait", np.zeros(2 * len(ports)),
                           np.ones(2 * len(ports)))
            cd.cols["op"][1::2] = OP_INDEX["cd_nop"]
            cd.cols["port"][:] = np.repeat(ports, 2)
            init = Cmds.concat([init, _sys_cmds("SDMA", "dma_send", st, st + 11), cd])
        programs[core] = CoreProgram(core, init)

    kinds = [k for k in REGULAR_KINDS if k != "collective" or ports]
    n_kernels = int(np.clip(round(cfg.cmds_per_core / 1000) + 4, len(kinds), 400))
    order = list(rng.permutation(kinds))
    if order[0] == "collective":
        order.append(order.pop(0))
    seq = [order[i % len(order)] for i in range(n_kernels)]
    rvt_kernels = set()
    if cfg.rvt_ratio > 0:
        cand = [i for i, k in enumerate(seq) if k != "collective"]
        n_rvt = max(1, int(round(cfg.rvt_ratio * len(cand))))
        rvt_kernels = set(int(x) for x in rng.choice(cand, size=min(n_rvt, len(cand)),
                                                     replace=False))
    des_kernels = set()
    if cfg.des_ratio > 0:     # DES resets every id counter: never a kernel with CDMA traffic
        cand = [i for i, k in enumerate(seq) if k != "collective" and i not in rvt_kernels]
        n_des = min(max(1, int(round(cfg.des_ratio * len(cand)))), len(cand))
        des_kernels = set(int(x) for x in rng.choice(cand, size=n_des, replace=False))
    per_kernel = cfg.cmds_per_core / n_kernels
    first = 1200 + 150 * len(ports)       # after the anchor's VSDMA sends (400 + 150 i)
    t_start = {c: first + int(rng.integers(0, 400)) for c in busy}
    if cfg.ring_core is not None:   # GDMA work that the lapped ring will overwrite
        t_start[cfg.ring_core] = _solo_kernel(programs[cfg.ring_core], rng, "prefetch", cfg.mode,
                                              t_start[cfg.ring_core],
                                              # 2 GDMA per iteration: a span no kernel reaches
                                              int(per_kernel) + 40 + int(rng.integers(0, 9)))
    sim = Sim() if cfg.dataflow else None
    speedup = {cfg.speedup_engine: cfg.speedup} if cfg.speedup_engine else {}
    launch_gap = dict.fromkeys(busy, 0)
    last_gdma = {}
    for ki, kname in enumerate(seq):
        kind = KINDS[kname]
        ends = {}
        runs = {}
        for core in busy:
            kb = KernelBuilder(rng, kind, cfg.mode,
                               cfg.slow_factor if kname == cfg.slow_kernel else 1,
                               sim=sim, core=core, speedup=speedup, launch_gap=launch_gap[core])
            n_slots = len(kind.loads) + len(kind.computes) + len(kind.stores)
            iters = max(2, int(round(per_kernel * rng.uniform(0.75, 1.25) / (0.8 * n_slots))))
            ports_here = tuple(p for p, s in submitter.items() if s == core) \
                if kind.cdma else ()
            cmds, end = kb.build(t_start[core], iters, ports_here)
            runs[core] = (cmds, ports_here)
            ends[core] = end
            if sim is not None:
                last_gdma[core] = kb.last_gdma
        if sim is not None:
            _dataflow_close(sim, rng, programs, runs, busy, last_gdma, launch_gap, t_start, kname,
                            kind, ki, rvt_kernels, des_kernels, cfg)
            continue
        # closing barrier: TIU send, then a wait that ends when the slowest core arrived
        send_end = {c: ends[c] + 20 + 40 for c in busy}
        barrier = max(send_end.values()) + 150
        for core in busy:
            cmds, used_ports = runs[core]
            jit = int(rng.integers(0, 30))
            closing = Cmds.concat([
                _sys_cmds("TIU", "tiu_send", [ends[core] + 20], [send_end[core]]),
                _sys_cmds("TIU", "tiu_wait", [send_end[core] + 5], [barrier + jit])])
            programs[core].kernels.append(KernelRun(
                kname, kind.func, ki in rvt_kernels, Cmds.concat([cmds, closing]), used_ports,
                des=ki in des_kernels, batch=ki % 4 if cfg.batch_idx else None))
            t_start[core] = barrier + jit + int(rng.integers(300, 3000))
    if cfg.extra_kernel:   # drawn after every other kernel: those stay as they were
        n_slots = sum(len(s) for s in (KINDS[cfg.extra_kernel].loads,
                                        KINDS[cfg.extra_kernel].computes, KINDS[cfg.extra_kernel].stores))
        for core in busy:
            t_start[core] = _solo_kernel(programs[core], rng, cfg.extra_kernel, cfg.mode,
                                         t_start[core], max(2, int(per_kernel / (0.8 * n_slots))))
    if cfg.id_wrap:   # last kernel of core 0 (nothing after a wrapped run: §15.4, Q8)
        kind = KINDS["eltwise_long"]
        t_start[0] = _solo_kernel(programs[0], rng, "eltwise_long", cfg.mode, t_start[0],
                                  66000 // len(kind.computes) + 300)
    if cfg.ring_core is not None:
        # the kept GDMA ring (2 prefetch records + every later kernel) must be longer than any
        # other stream of the dump: the ring core gets GDMA-heavy tail kernels until it is
        rc = programs[cfg.ring_core]
        while True:
            count = {(c, e): sum(int((r.cmds.cols["engine"] == e).sum()) for r in p.kernels)
                     for c, p in programs.items() for e in ("TIU", "GDMA", "SDMA")}
            longest = max(v for k, v in count.items() if k != (cfg.ring_core, "GDMA")) + 2
            kept = count[(cfg.ring_core, "GDMA")] - int(
                (rc.kernels[0].cmds.cols["engine"] == "GDMA").sum()) + 2
            if kept > longest + 10:
                break
            iters = (longest - kept) // 2 + 40
            n_pre = int((rc.kernels[0].cmds.cols["engine"] == "GDMA").sum())
            if 2 * iters == n_pre:      # keep the prefetch span unique (2 GDMA per iteration)
                iters += 1
            t_start[cfg.ring_core] = _solo_kernel(rc, rng, "kv_copy", cfg.mode,
                                                  t_start[cfg.ring_core], iters)
    return programs, seq, sorted(rvt_kernels), sorted(des_kernels), submitter


def _dataflow_close(sim, rng, programs, runs, busy, last_gdma, launch_gap, t_start, kname, kind,
                    ki, rvt_kernels, des_kernels, cfg) -> None:
    """Closing barrier of a kernel in dataflow timing: TIU send after the TIU queue and the
    kernel's last GDMA command (descriptor dependency, dep_kind 3), then a wait that ends when
    the last core's wait started (+ latency)."""
    waits, sends, jit = {}, {}, {}
    for core in busy:
        sends[core] = sim.place((core, "TIU"), core, 40, 20, 4, t_start[core], last_gdma[core])
        waits[core] = sim.place((core, "TIU"), core, 0, 5, 4, t_start[core])
        jit[core] = int(rng.integers(0, 30))
    sim.barrier(waits, jit)
    for core in busy:
        cmds, used_ports = runs[core]
        send = _sys_cmds("TIU", "tiu_send", [sim.start[sends[core]]], [sim.end[sends[core]]])
        send.cols["dep_kind"][:] = 3
        closing = Cmds.concat([send, _sys_cmds("TIU", "tiu_wait", [sim.start[waits[core]]],
                                                [sim.end[waits[core]]])])
        programs[core].kernels.append(KernelRun(
            kname, kind.func, ki in rvt_kernels, Cmds.concat([cmds, closing]), used_ports,
            des=ki in des_kernels, batch=ki % 4 if cfg.batch_idx else None))
        sim.end_kernel(core)
        launch_gap[core] = int(rng.integers(300, 3000))
        t_start[core] = sim.end[waits[core]] + launch_gap[core]
    programs[busy[0]].sim = sim


def _solo_kernel(prog: "CoreProgram", rng, kind_name: str, mode: int, t0: int,
                 iterations: int) -> int:
    """Append a kernel that only this core runs (closing send/wait without a cross-core
    barrier); returns the time the next kernel may start."""
    kind = KINDS[kind_name]
    cmds, end = KernelBuilder(rng, kind, mode).build(t0, iterations)
    closing = Cmds.concat([_sys_cmds("TIU", "tiu_send", [end + 20], [end + 60]),
                           _sys_cmds("TIU", "tiu_wait", [end + 65], [end + 260])])
    prog.kernels.append(KernelRun(kind_name, kind.func, False, Cmds.concat([cmds, closing]), ()))
    return end + 260 + int(rng.integers(300, 3000))
