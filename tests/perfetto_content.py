"""The decoded content of a .pftrace, independent of its encoding: what a trace processor would
load (tracks by path, slices with their typed args and depth, counter points, flows), as plain
sorted lists that compare with ``==`` and store as JSON. Built on test_perfetto.decode."""
from __future__ import annotations

from test_perfetto import decode, track_path


def _typed(value):
    """An arg value with its type (int / double / string / bool), as a JSON-safe pair."""
    return [type(value).__name__, value]


def _description(d) -> str:
    return "\n".join(x for x in d.description.splitlines() if not x.startswith("debug."))


def content(path) -> dict:
    dec = decode(path)
    tracks = dec["tracks"]
    paths = {u: track_path(tracks, u) for u in tracks}
    # a track's "debug.<arg> = <value>" lines are its slices' args (decode folds them in)
    desc = sorted([paths[u], d.sibling_order_rank, _description(d), d.counter.unit_name if d.HasField("counter") else None,
                   d.thread.pid if d.HasField("thread") else None, d.thread.tid if d.HasField("thread") else None,
                   d.process.pid if d.HasField("process") else None] for u, d in tracks.items())
    key = {s["id"]: [paths[s["track"]], s["ts"], s["name"]] for s in dec["slices"]}
    slices = sorted([paths[s["track"]], s["ts"], s["dur"], s["name"], s["cat"], s["depth"],
                     sorted([k, *_typed(v)] for k, v in s["args"].items())] for s in dec["slices"])
    counters = sorted([paths[u], ts, v] for u, ts, v in dec["counters"])
    # a flow: its source slices, then the slice it terminates on (None: open)
    flows = sorted([key[src] for src in srcs] + [key[dec["flows_in"][fid]] if fid in dec["flows_in"] else None]
                   for fid, srcs in dec["flows_out"].items())
    return {"tracks": desc, "slices": slices, "counters": counters, "flows": flows}
