"""perfetto.pftrace's compact encoding (incremental clocks, counter values riding on slice
events ...) changes bytes, never content: the decoded content of a synthetic mode-2 capture
equals the one the plain encoding (absolute timestamps, a packet per counter point) produced,
stored once in tests/data/perfetto/ (made by the writer of commit 36c55036, before this encoding;
its 7 core-1 "Func Scope Id" values since renumbered across cores, as the reference numbers
FUNC scopes: spec pmu-dump-format Q21, issue 25)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from perfetto_content import content
from reportgen.analysis.derive import derive
from reportgen.parsers.detect import load_profile
from reportgen.testing.synth import write_dump
from reportgen.writers import perfetto

GOLDEN = Path(__file__).parent / "data" / "perfetto" / "synth-m2-2x3000.content.json.gz"


def test_synth_capture_content_unchanged(tmp_path):
    write_dump(tmp_path / "d", arch="AKS", cores=2, cmds_per_core=3000, mode=2, seed=11, write_truth=False)
    prof = load_profile(str(tmp_path / "d" / "cdm_profile_data_dev0-0"), quiet=True)
    summary = derive(prof, categories={"monitor": None, "launch": None, "device": None})
    out = perfetto.write(prof, summary, tmp_path, quiet=True)
    got = json.loads(json.dumps(content(out)))             # tuples -> lists, as stored
    want = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    assert len(prof.commands) == 6100
    for part in ("tracks", "slices", "counters", "flows"):
        assert len(got[part]) == len(want[part]), part
        assert got[part] == want[part], part


def test_counter_points_ride_unless_they_share_their_time(tmp_path):
    """Hand-made: two modelled TIU commands start at the same ns (two lanes), so the TIU counter
    has two points at t=100; those keep counter packets of their own (in order), every other
    point rides on a command event, and the decoded counters are the hand-computed ones."""
    from test_perfetto import decode, small_profile
    from reportgen.model import finalize_commands
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    import pandas as pd

    prof = small_profile()
    c = prof.commands
    extra = c[c["engine"].astype(str) == "TIU"].iloc[[0]].copy()
    extra[["global_idx", "cmd_id", "end_ns", "uarch_rate", "cycles"]] = [3, 4, 150, 0.25, 51]
    prof.commands = finalize_commands(pd.concat([c, extra], ignore_index=True))
    out = perfetto.write(prof, None, tmp_path, quiet=True)
    dec = decode(out)
    tracks = dec["tracks"]
    tiu = [(ts, v) for u, ts, v in dec["counters"] if tracks[u].name == "TIU uArch Rate (%)"]
    # rates at the starts (sorted by start, end: the 100-150 one first), 0 when TIU goes idle
    assert tiu == [(100, 25.0), (100, 50.0), (200, 0.0)]
    gdma = [(ts, v) for u, ts, v in dec["counters"] if tracks[u].name == "GDMA Bandwidth (GB/s)"]
    assert gdma == [(0, 10.0), (50, 15.0), (100, 5.0), (150, 20.0), (250, 0.0)]
    trace = pb.Trace.FromString(out.read_bytes())
    own = [p.track_event.double_counter_value for p in trace.packet
           if p.HasField("track_event") and p.track_event.type == 4]
    riding = sum(len(p.track_event.extra_counter_values) + len(p.track_event.extra_double_counter_values)
                 for p in trace.packet if p.HasField("track_event"))
    assert own == [25.0, 50.0] and riding == 6


def test_flow_ids_taken_in_turn(monkeypatch):
    """Hand-computed with a cycle of 2 ids: flows (source begin -> dependent begin) 0->5, 0->30,
    10->15, 20->25 and a backward 40->40.  In source order the forward ones take ids 1, 2, 1, ...
    unless the flow 2 sources later begins no later than their dependent: 0->30 is still open
    when 20->25 begins, so it gets an id of its own (3), as does the backward flow (4)."""
    from reportgen.writers.perfetto import commands

    monkeypatch.setattr(commands, "FLOW_ID_CYCLE", 2)
    ids = commands.reused_flow_ids([20, 0, 10, 0, 40], [25, 5, 15, 30, 40])
    assert ids.tolist() == [1, 1, 2, 3, 4]


def test_reused_flow_ids_never_overlap(tmp_path):
    """Synthetic capture: every flow id on the wire is one byte, and the flows sharing an id are
    strictly apart in time (each begins after the previous one's dependent), so a trace
    processor, reading in time order, pairs them exactly as the decoder does."""
    from test_perfetto import decode
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    write_dump(tmp_path / "d", arch="AKS", cores=2, cmds_per_core=3000, mode=2, seed=11, write_truth=False)
    prof = load_profile(str(tmp_path / "d" / "cdm_profile_data_dev0-0"), quiet=True)
    out = perfetto.write(prof, None, tmp_path, quiet=True)
    trace = pb.Trace.FromString(out.read_bytes())
    wire_ids = [f for p in trace.packet for f in p.track_event.flow_ids_old]
    assert wire_ids and max(wire_ids) < 128 and len(wire_ids) > 10 * len(set(wire_ids))
    dec = decode(out)
    ts = {s["id"]: s["ts"] for s in dec["slices"]}
    spans = {}
    for key, (src,) in dec["flows_out"].items():
        spans.setdefault(key[0], []).append((ts[src], ts[dec["flows_in"][key]]))
    for fid, span in spans.items():
        span.sort()
        if len(span) > 1:
            assert all(s < d for s, d in span), fid
            assert all(b[0] > a[1] for a, b in zip(span, span[1:])), fid


def test_track_constant_args_on_the_track(tmp_path):
    """Hand-made: Sheet is written once, as the command track's description, when every slice
    of the track has it; a track whose slices differ keeps it on each slice."""
    from test_perfetto import B, decode, small_profile, track_path
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    prof = small_profile()
    out = perfetto.write(prof, None, tmp_path, quiet=True)
    trace = pb.Trace.FromString(out.read_bytes())
    desc = {p.track_descriptor.uuid: p.track_descriptor for p in trace.packet if p.HasField("track_descriptor")}
    by_name = {d.name: d.description for d in desc.values()}
    assert by_name["TIU"] == "debug.Sheet = TIU_0"
    assert by_name["GDMA"] == by_name["GDMA #2"] == "debug.Sheet = GDMA_0"
    interned = {}
    for p in trace.packet:
        interned.update({(p.trusted_packet_sequence_id, x.iid): x.name for x in p.interned_data.debug_annotation_names})
    keys = [interned[(p.trusted_packet_sequence_id, a.name_iid)] for p in trace.packet
            if p.HasField("track_event") and p.track_event.type == B for a in p.track_event.debug_annotations]
    assert "Sheet" not in keys and "Global Idx" in keys
    # GDMA 0 and GDMA 2 share the first GDMA lane: give them different sheets
    c = prof.commands
    c["sheet"] = c["sheet"].astype(str).where(~((c["engine"] == "GDMA") & (c["global_idx"] == 2)), "GDMA_X")
    dec = decode(perfetto.write(prof, None, tmp_path, quiet=True))
    assert [d.description for d in dec["tracks"].values() if d.name == "GDMA"] == [""]
    sheets = sorted((track_path(dec["tracks"], s["track"]).split("/")[-1], s["args"]["Sheet"])
                    for s in dec["slices"] if "Sheet" in s["args"])
    assert sheets == [("GDMA", "GDMA_0"), ("GDMA", "GDMA_X"), ("GDMA #2", "GDMA_0"),
                      ("TIU", "TIU_0"), ("TIU", "TIU_0"), ("TIU", "TIU_0")]


def test_command_lanes_are_first_fit():
    """The lane shortcut (lane 0 for groups without overlap) gives what first fit gives, on
    random interval sets with and without overlaps, equal starts and zero-length commands."""
    import numpy as np
    from reportgen.intervals import first_fit_lanes
    from reportgen.writers.perfetto.commands import command_lanes

    rng = np.random.default_rng(3)
    for trial in range(300):
        n = int(rng.integers(1, 60))
        group = rng.integers(0, 4, n)
        if trial % 3:
            start = rng.integers(0, 100, n)
            end = start + rng.integers(0, 12, n) * rng.integers(0, 2, n)
        else:                                       # back to back or touching: all lane 0
            start = np.arange(n) * 20
            end = start + rng.integers(0, 21, n)
        assert (command_lanes(group, start, end) == first_fit_lanes(group, start, end)).all(), trial
