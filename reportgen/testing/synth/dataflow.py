"""Dataflow timing (``SynthConfig.dataflow``): every command starts when its last predecessor
ends plus its own issue gap, and the simulation records which predecessor that was.

Predecessors, as docs/metrics.md "Dependency graph and critical path" defines them: the
previous command of the lane (engine of a core; CDMA: port), the descriptor dependency (first
compute of an iteration -> last load of it; first store -> last compute of its iteration;
closing send -> last GDMA command of the kernel), the launch (first command of each lane in a
kernel -> the previous kernel's last-ending TIU/GDMA/SDMA command on the core), and the closing
barrier (a wait ends 145 ns + jitter after the last core arrived: its wait started and its
kernel's commands ended, CDMA transfers it submitted included).  ``critical_path``
walks the recorded bindings back from the command that ends last: the ground truth for the
analysis' path shares.  Python loops here run per command: a test tool for small captures.
"""
from __future__ import annotations

import numpy as np

CLASSES = ("compute", "transfer", "dependency", "barrier", "gap")
NONE, LANE, DEP, LAUNCH = 0, 1, 2, 3


class Sim:
    def __init__(self):
        self.start: list[int] = []
        self.end: list[int] = []
        self.bind: list[int] = []
        self.kind: list[int] = []
        self.cls: list[int] = []          # own duration: 0 compute, 1 transfer, 4 gap (system)
        self.release: dict[int, tuple] = {}  # barrier wait -> (releasing uid, 1: its end, 0: start)
        self.lanes: dict[tuple, int] = {}
        self.launch: dict[int, int] = {}   # core -> the previous kernel's last-ending command
        self.kernel_cmds: dict[int, list[int]] = {}
        self.kernel_all: dict[int, list[int]] = {}

    def place(self, lane: tuple, core: int, dur: int, gap: int, cls: int, floor: int,
              dep: int = -1, first: bool = False) -> int:
        """Append a command to ``lane``; returns its uid."""
        cands = []                                   # (end, kind, uid); ties: dep, launch, lane
        if dep >= 0:
            cands.append((self.end[dep], 3, DEP, dep))
        if first and core in self.launch:
            u = self.launch[core]
            cands.append((self.end[u], 2, LAUNCH, u))
        if lane in self.lanes:
            u = self.lanes[lane]
            cands.append((self.end[u], 1, LANE, u))
        if cands:
            e, _, kind, u = max(cands)
            start = e + gap
        else:
            start, kind, u = floor + gap, NONE, -1
        uid = len(self.start)
        self.start.append(int(start))
        self.end.append(int(start + dur))
        self.bind.append(u)
        self.kind.append(kind)
        self.cls.append(cls)
        self.lanes[lane] = uid
        self.kernel_all.setdefault(core, []).append(uid)      # a barrier waits for all of them
        if lane[1] != "CDMA":                                  # the next launch for these
            self.kernel_cmds.setdefault(core, []).append(uid)
        return uid

    def end_kernel(self, core: int) -> None:
        self.kernel_all.pop(core, None)
        uids = self.kernel_cmds.pop(core, [])
        if uids:
            self.launch[core] = max(uids, key=lambda u: self.end[u])

    def barrier(self, waits: dict[int, int], jit: dict[int, int], latency: int = 145) -> None:
        """The waits (core -> uid) end ``latency`` + jitter after the last core arrived: a core
        arrives when its wait has started and its kernel's commands have ended."""
        arrivals = []
        for core, u in waits.items():
            done = [x for x in self.kernel_all.get(core, []) if x != u]
            last = max(done, key=lambda x: self.end[x]) if done else -1
            if last >= 0 and self.end[last] > self.start[u]:
                arrivals.append((self.end[last], last, 1))
            else:
                arrivals.append((self.start[u], u, 0))
        when, cmd, kind = max(arrivals)
        for core, u in waits.items():
            self.end[u] = when + latency + jit[core]
            self.release[u] = (cmd, kind)

    def critical_path(self, span_start: int) -> dict:
        """Per class ns and share of the span, walking the recorded bindings back."""
        start, end = np.array(self.start), np.array(self.end)
        v = int(np.argmax(end))
        t, span = int(end[v]), int(end[v]) - span_start
        ns = dict.fromkeys(CLASSES, 0)
        while True:
            if v in self.release:
                r, kind = self.release[v]
                a = min(end[r] if kind else start[r], t)
                ns["barrier"] += t - a
                v, t = r, a
                if kind:                      # the releasing command's own duration next
                    continue
            else:
                ns[CLASSES[self.cls[v]]] += t - min(start[v], t)
                t = min(start[v], t)
            p = self.bind[v]
            if p < 0:
                ns["gap"] += t - span_start
                break
            pe = min(end[p], t)
            ns["dependency" if self.kind[v] == DEP else "gap"] += t - pe
            v, t = p, pe
        ns = {k: int(x) for k, x in ns.items()}
        return {"span_ns": int(span), "ns": ns, "share": {k: x / span for k, x in ns.items()}}


def lane_chain(sim: Sim, core: int, lane: tuple, dur, gap, cls, floor: int, deps=None) -> np.ndarray:
    """Place commands back to back on one lane; returns their starts."""
    out = np.empty(len(dur), np.int64)
    for i in range(len(dur)):
        dep = -1 if deps is None else int(deps[i])
        u = sim.place(lane, core, int(dur[i]), int(gap[i]), int(cls[i]), floor, dep, first=i == 0)
        out[i] = sim.start[u]
    return out


def kernel_rows(sim: Sim, core: int, L, S, C, Ld, Sd, Cd, gapL, gapS, gapC, P, t0: int,
                is_load, is_sys) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Starts of the loads, stores and computes of a double-buffered loop (rows 0..R): per row
    the loads, the computes (first one after the row's last load), the stores of the previous
    iteration (first one after that iteration's last compute); returns also the kernel's last
    GDMA uid (the closing send depends on it)."""
    Ls, Ss, Cs = np.zeros(L.shape, np.int64), np.zeros(S.shape, np.int64), np.zeros(C.shape, np.int64)
    first = {"GDMA": True, "TIU": True}
    last_comp, last_gdma = -1, -1

    def put(eng, dur, gap, cls, dep=-1):
        nonlocal last_gdma
        u = sim.place((core, eng), core, int(dur), int(gap), cls, t0, dep, first=first[eng])
        first[eng] = False
        if eng == "GDMA":
            last_gdma = u
        return u

    for k in range(L.shape[0]):
        last_load = -1
        for j in np.flatnonzero(L[k] >= 0):
            g = gapL[k, j] + (P[k] if j == np.flatnonzero(L[k] >= 0)[0] else 0)
            u = put("GDMA", Ld[k, j], g, 4 if is_sys[L[k, j]] else 1)
            Ls[k, j] = sim.start[u]
            if is_load[L[k, j]]:
                last_load = u
        comp = -1
        for j in np.flatnonzero(C[k] >= 0):
            u = put("TIU", Cd[k, j], gapC[k, j], 0, last_load if j == 0 else -1)
            Cs[k, j] = sim.start[u]
            comp = u
        for j in np.flatnonzero(S[k] >= 0):
            u = put("GDMA", Sd[k, j], gapS[k, j], 4 if is_sys[S[k, j]] else 1,
                    last_comp if j == 0 else -1)
            Ss[k, j] = sim.start[u]
        last_comp = comp
    return Ls, Ss, Cs, last_gdma
