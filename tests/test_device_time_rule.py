"""The device-time rule (docs/metrics.md "Device time of framework traces") re-implemented
instant by instant, in plain Python, on random small timelines, against the interval algebra of
analysis/device_time.py; and the piece-set operations against sets of integers."""
from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis import piece_sets as ps
from reportgen.analysis.device_time import device_time
from reportgen.model import Meta, Profile, finalize_commands

KINDS = ("compute", "comm", "memory", "wait")
NAMES = {"compute": "gemm", "comm": "ncclKernel_AllReduce", "memory": "Memcpy HtoD", "wait": "Stream Wait Event"}


def random_timeline(rng: random.Random):
    slices = []
    for _ in range(rng.randint(1, 12)):
        s = rng.randrange(0, 200)
        kind = rng.choice(KINDS)
        launch = None
        if kind != "wait" and rng.random() < 0.8:
            ls = rng.randrange(max(0, s - 60), s + 1)
            launch = (ls, ls + rng.randint(0, 30))
        slices.append((kind, s, s + rng.randint(0, 40), launch))
    if not any(k != "wait" for k, *_ in slices):
        slices.append(("compute", 10, 20, None))
    syncs = [(s, s + rng.randint(1, 40)) for s in (rng.randrange(0, 220) for _ in range(rng.randint(0, 2)))]
    return slices, syncs


def as_profile(slices, syncs) -> Profile:
    host_rows, launch_row = [], []
    for kind, s, e, launch in slices:
        if launch is None:
            launch_row.append(-1)
        else:
            launch_row.append(len(host_rows))
            host_rows.append({"name": "cudaLaunchKernel", "start_ns": launch[0], "end_ns": launch[1]})
    host_rows += [{"name": "cudaStreamSynchronize", "start_ns": a, "end_ns": b} for a, b in syncs]
    host = pd.DataFrame(host_rows, columns=["name", "start_ns", "end_ns"]).assign(role="runtime", rank=0)
    cmds = finalize_commands({
        "core": np.zeros(len(slices), np.int16), "engine": np.array(["stream 7"] * len(slices), object),
        "port": pd.array([None] * len(slices), dtype="Int16"), "global_idx": np.arange(len(slices)),
        "cmd_id": np.arange(len(slices)) + 1,
        "start_ns": np.array([s for _, s, _, _ in slices], np.int64),
        "end_ns": np.array([e for _, _, e, _ in slices], np.int64),
        "cycles": np.zeros(len(slices), np.int64),
        "func_type": np.array(["cuda_sync" if k == "wait" else "kernel" for k, *_ in slices], object),
        "func_name": np.array([NAMES[k] for k, *_ in slices], object),
        "is_sys": np.array([k == "wait" for k, *_ in slices]),
        "sys_wait": np.array([k == "wait" for k, *_ in slices])})
    cmds["launch_row"] = np.array(launch_row, np.int64)
    return Profile(commands=cmds, host=host, meta=Meta(source="chrome"))


def brute_force(slices, syncs) -> dict:
    """Each instant t (1 ns) of the span classified by the rule as the docs state it."""
    lo = min(s for _, s, _, _ in slices)
    hi = max(e for _, _, e, _ in slices)
    on = lambda kind, t: any(k == kind and s <= t < e for k, s, e, _ in slices)  # noqa: E731
    work = [(s, e, launch) for k, s, e, launch in slices if k != "wait" and e > s]
    busy = lambda t: any(s <= t < e for s, e, _ in work)  # noqa: E731
    out = dict.fromkeys(("compute", "comm", "memory", "sync", "launch", "host", "other", "comm_total"), 0)
    for t in range(lo, hi):
        out["comm_total"] += on("comm", t)
        kind = next((k for k in ("compute", "comm", "memory") if on(k, t)), None)
        if kind:
            out[kind] += 1
            continue
        if on("wait", t) or any(a <= t < b for a, b in syncs):
            out["sync"] += 1
            continue
        a = t
        while a > lo and not busy(a - 1):
            a -= 1                                  # the gap's start
        later = [s for s, e, _ in work if s > t]
        if not later:
            out["other"] += 1
            continue
        b = min(later)
        launches = [launch for s, e, launch in work if s == b]
        known = sorted(x for x in launches if x is not None)
        if len(known) < len(launches) and not known:
            out["other"] += 1
            continue
        ls, le = (sorted(launches, key=lambda x: (x is None, x[0] if x else 0))[0] or (None, None))
        if ls is None:
            out["other"] += 1
        elif t < ls:
            out["host"] += 1
        elif le >= a:
            out["launch"] += 1
        else:
            out["other"] += 1
    return out


@pytest.mark.parametrize("seed", range(60))
def test_interval_algebra_equals_the_instant_by_instant_rule(seed):
    slices, syncs = random_timeline(random.Random(seed))
    d = device_time(as_profile(slices, syncs)).devices.iloc[0]
    want = brute_force(slices, syncs)
    got = {"compute": d["compute_ns"], "comm": d["comm_ns"], "memory": d["memory_ns"],
           "sync": d["idle_sync_ns"], "launch": d["idle_launch_ns"], "host": d["idle_host_ns"],
           "other": d["idle_other_ns"], "comm_total": d["comm_total_ns"]}
    assert got == want, (slices, syncs)
    assert sum(want[k] for k in ("compute", "comm", "memory", "sync", "launch", "host", "other")) == d["span_ns"]


@pytest.mark.parametrize("seed", range(30))
def test_piece_set_operations_against_integer_sets(seed):
    rng = random.Random(seed)

    def rand():
        iv = [(s, s + rng.randint(0, 15)) for s in (rng.randrange(0, 100) for _ in range(rng.randint(0, 6)))]
        return iv, {t for s, e in iv for t in range(s, e)}

    (a, sa), (b, sb) = rand(), rand()
    pa, pb = ps.pieces([s for s, _ in a], [e for _, e in a]), ps.pieces([s for s, _ in b], [e for _, e in b])
    assert ps.length(ps.intersect(pa, pb)) == len(sa & sb)
    assert ps.length(ps.subtract(pa, pb)) == len(sa - sb)
    assert ps.length(ps.union(pa, pb)) == len(sa | sb)
    assert ps.length(ps.complement(pa, 10, 90)) == len(set(range(10, 90)) - sa)
    lo, hi = sorted(rng.sample(range(0, 120), 2))
    assert ps.length_in(pa, np.array([lo]), np.array([hi]))[0] == len({t for t in sa if lo <= t < hi})
