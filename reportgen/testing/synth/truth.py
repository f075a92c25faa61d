"""expected_commands.csv: the decoder's documented time transform (§9.1-§9.5) applied to the raw
records the writer produced."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.testing.synth.catalogue import (ENGINE_ORDER, OP_DST, OP_EU, OP_LAYOUT, OP_NAMES, OP_SRC,
                                               OP_TYP)
from reportgen.testing.synth.config import SynthConfig
from reportgen.testing.synth.schedule import CoreProgram

TRUTH_COLUMNS = ["core", "engine", "port", "cmd_id", "start_ns", "end_ns", "register_layout",
                 "op", "tsk_or_cmd_type", "eu_or_special", "bytes", "src", "dst", "kernel",
                 "dep_cmd_id"]


def truth_table(cfg: SynthConfig, core_rows: dict[int, dict], programs: dict[int, CoreProgram],
                port_rows: dict[int, dict], sync_ns: dict[int, int | None], anchor: int,
                ring: dict | None) -> pd.DataFrame:
    """Every command a decoder should report (TRUTH_COLUMNS): the raw counters of the kept
    records through the decoder's documented time transform (§9.1-§9.5)."""
    f = cfg.tiu_freq
    ref_core = min(c for c, s in sync_ns.items() if s is not None)
    ref = sync_ns[ref_core]
    parts = []
    for core, rows in core_rows.items():
        eng = rows["engine"]
        keep = (rows["kernel"] >= 0) & (eng != "CDMA")   # CDMA rows come from the ports
        if ring and core == ring["core"]:
            g = np.flatnonzero(eng == "GDMA")
            g = g[np.argsort(rows["start_raw"][g], kind="stable")]
            lost = g[: ring["keep_from"] + 2]        # overwritten + the 2 dropped as init
            keep[lost] = False
        is_tiu = eng == "TIU"
        fr = np.where(is_tiu, f, 1000).astype(float)
        s_ns = np.round(rows["start_raw"] / fr * 1000).astype(np.int64)
        e_ns = np.round(rows["end_raw"] / fr * 1000).astype(np.int64)
        delta = sync_ns[core] - ref
        idx = np.flatnonzero(keep)
        # a bmodel decoder learns a kernel's name from DYN_DATA only
        kern_names = np.array([("" if r.in_blocks else r.func) if cfg.bmodel
                               else r.func if cfg.mode else r.kind
                               for r in programs[core].kernels] + [""], object)
        op = rows["op"][idx]
        parts.append(pd.DataFrame({
            "core": core, "engine": eng[idx], "port": pd.array([pd.NA] * len(idx), "Int64"),
            "cmd_id": rows["id"][idx] + 1,
            "start_ns": s_ns[idx] - delta, "end_ns": e_ns[idx] - delta,
            "register_layout": OP_LAYOUT[op], "op": np.array(OP_NAMES, object)[op],
            "tsk_or_cmd_type": OP_TYP[op], "eu_or_special": OP_EU[op],
            "bytes": rows["bytes"][idx],
            "src": OP_SRC[op], "dst": OP_DST[op],
            "kernel": kern_names[rows["kernel"][idx]],
            "dep_cmd_id": rows["dep"][idx],
        }))
    if port_rows:
        a = core_rows[anchor]
        vs = np.flatnonzero((a["kernel"] < 0) & (a["engine"] == "SDMA") & (a["id"] >= 2))
        vs = vs[np.argsort(a["start_raw"][vs])]
        a_delta = sync_ns[anchor] - ref
        for i, (p, pr) in enumerate(port_rows.items()):
            offset = int(pr["end_raw"][0]) - int(a["end_raw"][vs[i]])
            n = len(pr["start_raw"]) - 2
            op = pr["op"][2:]
            sub = _port_submitter(p, programs, anchor)
            kern = []
            for run in programs[sub].kernels:
                c = run.cmds.cols
                k = int(((c["engine"] == "CDMA") & (c["port"] == p)).sum())
                kern += [run.func if cfg.mode else run.kind] * k
            parts.append(pd.DataFrame({
                "core": sub, "engine": "CDMA", "port": pd.array([p] * n, "Int64"),
                "cmd_id": pr["pmu_id"][2:],
                "start_ns": pr["start_raw"][2:] - offset - a_delta,
                "end_ns": pr["end_raw"][2:] - offset - a_delta,
                "register_layout": OP_LAYOUT[op], "op": np.array(OP_NAMES, object)[op],
                "tsk_or_cmd_type": OP_TYP[op], "eu_or_special": OP_EU[op],
                "bytes": pr["bytes"][2:], "src": "DDR", "dst": "DDR",
                "kernel": np.array(kern, object), "dep_cmd_id": 0,
            }))
    t = pd.concat(parts, ignore_index=True)
    zero = t["start_ns"].min() if len(t) else 0
    t["start_ns"] -= zero
    t["end_ns"] -= zero
    t["_e"] = t["engine"].map(ENGINE_ORDER)
    t = t.sort_values(["_e", "core", "port", "start_ns", "cmd_id"], kind="stable",
                      na_position="first").drop(columns="_e").reset_index(drop=True)
    for col in ("src", "dst"):
        t[col] = t[col].replace("", np.nan)
    return t[TRUTH_COLUMNS]


def _port_submitter(port: int, programs: dict[int, CoreProgram], anchor: int) -> int:
    """The core whose kernels drive ``port`` (the anchor core when none does)."""
    for core, p in programs.items():
        for run in p.kernels:
            if port in run.ports:
                return core
    return anchor
