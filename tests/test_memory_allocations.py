"""Per-allocation memory table and what is live at the peak, on a hand-made trace whose
allocations, releases and peak are known by construction."""
from __future__ import annotations

import json


from reportgen import pipeline
from reportgen.options import Options


def _mem(ts, addr, nbytes, total):
    return {"ph": "i", "s": "t", "name": "[memory]", "cat": "cpu_instant_event", "pid": 1, "tid": 1,
            "ts": ts, "args": {"Device Type": 1, "Device Id": 0, "Addr": addr, "Bytes": nbytes,
                               "Total Allocated": total, "Total Reserved": 1024}}


def test_allocations_releases_and_live_at_peak(tmp_path):
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 0, "dur": 1.5},
          _mem(1, 1000, 100, 100),          # A, inside aten::empty
          _mem(2, 2000, 50, 150),           # B: the peak (150 at t = 2 us)
          _mem(4, 1000, -100, 50),          # A freed after 3 us
          _mem(5, 3000, 30, 80)]            # C, never freed
    src = tmp_path / "mem.json"
    src.write_text(json.dumps({"traceEvents": ev}))
    opts = Options(input=str(src))
    profile = pipeline.load(opts)
    pipeline.analyse(profile, opts)
    a = profile.tables["Memory Allocations"]
    assert a["Size (B)"].tolist() == [100, 50, 30]
    assert a["Operator"].tolist() == ["aten::empty", "(no operator)", "(no operator)"]
    assert a["Device"].tolist() == ["device 0"] * 3
    assert a["Allocation Time (ns)"].tolist() == [1000, 2000, 5000]
    assert a["Release Time (ns)"].iloc[0] == 4000 and a["Release Time (ns)"].iloc[1:].isna().all()
    assert a["Duration (us)"].iloc[0] == 3.0
    assert a["Released"].tolist() == ["released", "not released", "not released"]
    peak = profile.tables["Memory at Peak"]
    assert peak["Size (B)"].tolist() == [100, 50]
    assert set(peak["Peak Allocated (B)"]) == {150} and set(peak["Peak Time (ns)"]) == {2000}
