"""A core's commands in program order with what the records need: per-kernel ids, dependency
ids and raw counter values."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.testing.synth.catalogue import OP_DST, OP_SRC, OP_TYP, engine_order
from reportgen.testing.synth.schedule import Cmds, CoreProgram, KernelRun

PMU_ID_MASK = 0xFFFF          # PMU inst_id counters are 16 bit (the decoder unwraps)


def _order_kernel(run: KernelRun) -> np.ndarray:
    """Program (dispatch) order of a kernel: by start time, TIU first on ties."""
    c = run.cmds.cols
    eng = engine_order(c["engine"])
    return np.lexsort((eng, c["start"]))


def _group_rank(keys: np.ndarray) -> np.ndarray:
    """0-based rank of each element within its key group, in array order (vectorised)."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    first = np.r_[True, sk[1:] != sk[:-1]]
    grp_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - grp_start
    return rank


def core_rows(prog: CoreProgram, base: int, tiu_freq: int, id_resets: bool = True
              ) -> dict[str, np.ndarray]:
    """All commands of a core in program order (column arrays), with ids, dependency ids and raw
    counters; ``base`` is the core's counter value at t = 0 ns. Ids restart at every kernel,
    or (``id_resets`` False: one compiled subnet) count on from the profile-init commands."""
    f = tiu_freq
    n_init = len(prog.init)
    parts = [prog.init]                     # already in dispatch order
    kernel_of = [np.full(n_init, -1)]
    for ki, run in enumerate(prog.kernels):
        o = _order_kernel(run)
        parts.append(Cmds({k: v[o] for k, v in run.cmds.cols.items()}))
        kernel_of.append(np.full(len(o), ki))
    allc = Cmds.concat(parts).cols
    allc["kernel"] = np.concatenate(kernel_of)
    eng = allc["engine"]
    port = allc["port"]
    # id counters: per (kernel, engine[, port]); SDMA init+VSDMA share the init group
    ekey = engine_order(eng)
    key = ((allc["kernel"] + 1) * 64 if id_resets else 0) + ekey * 16 + np.where(
        eng == "CDMA", port + 1, 0)
    ids = _group_rank(key)
    allc["id"] = ids
    # dependency ids: first compute of an iteration waits for the last load of it, first
    # store for the last compute; vectorised via per-(kernel, iter) maxima
    dep = np.zeros(len(ids), np.int64)
    for dk, src_eng in ((1, "GDMA"), (2, "TIU")):
        srcm = (eng == src_eng) & (allc["kernel"] >= 0)
        if src_eng == "GDMA":   # loads only
            srcm &= np.isin(OP_DST[allc["op"]], ["LMEM"]) & (OP_SRC[allc["op"]] != "LMEM")
        else:
            srcm &= OP_TYP[allc["op"]] != 15
        k2 = allc["kernel"] * 1_000_000 + allc["iter"]
        tbl = pd.Series(ids[srcm] + 1, index=k2[srcm]).groupby(level=0).max()
        want = (allc["dep_kind"] == dk)
        dep[want] = pd.Series(k2[want]).map(tbl).fillna(0).astype(np.int64).to_numpy()
    # dataflow timing: a closing send (dep_kind 3) waits for the kernel's last GDMA command
    want = allc["dep_kind"] == 3
    if want.any():
        g = (eng == "GDMA") & (allc["kernel"] >= 0)
        tbl = pd.Series(ids[g] + 1, index=allc["kernel"][g]).groupby(level=0).max()
        dep[want] = pd.Series(allc["kernel"][want]).map(tbl).fillna(0).astype(np.int64).to_numpy()
    allc["dep"] = dep
    # raw counters: DMA at 1 GHz = base + ns; TIU at f MHz
    ctr_start = base + allc["start"]
    ctr_end = base + allc["end"]
    is_tiu = eng == "TIU"
    allc["start_raw"] = np.where(is_tiu, np.round(ctr_start * (f / 1000.0)).astype(np.int64),
                                 ctr_start)
    allc["end_raw"] = np.where(is_tiu, np.round(ctr_end * (f / 1000.0)).astype(np.int64),
                               ctr_end)
    allc["pmu_id"] = ids & PMU_ID_MASK
    return allc
