"""perfetto.pftrace's compact encoding (incremental clocks, counter values riding on slice
events ...) changes bytes, never content: the decoded content of a synthetic mode-2 capture
equals the one the plain encoding (absolute timestamps, a packet per counter point) produced,
stored once in tests/data/perfetto/ (made by the writer of commit 36c55036, before this encoding)."""
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
