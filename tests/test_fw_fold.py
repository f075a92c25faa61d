"""Framework findings fold like PMU findings (findings.fold): a rule firing on FOLD_MIN (3)
devices or more becomes one finding naming them; below that each device keeps its own.

Hand-made trace: ``n`` devices, each running the host-bound loop of tests/test_device_time.py
(kernel i launched at 1000 i + 900 + 20 d by a 10 µs call, runs 100 µs from 12 µs after the
call started): per device span 3100 µs, idle 2700 µs (87.1 %), of it host 3 x 888 = 2664 µs
(85.9 %) and launch 3 x 12 = 36 µs (1.2 %, under the 3 % rule)."""
from __future__ import annotations

import json

import pytest

import reportgen
from reportgen.analysis.findings import FOLD_MIN


def _load(tmp_path, n):
    ev, corr = [], 0
    for d in range(n):
        for i in range(4):
            corr += 1
            ls = 1000 * i + 900 + 20 * d
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": ls, "dur": 10, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7 + d, "ts": ls + 12,
                       "dur": 100, "args": {"device": d, "stream": 7 + d, "correlation": corr}})
    path = tmp_path / f"trace{n}.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    return reportgen.load(path).framework_diagnosis.findings


def test_four_devices_fold_into_one_finding_per_rule(tmp_path):
    assert FOLD_MIN == 3
    f = _load(tmp_path, 4).set_index("rule")
    assert sorted(f.index) == ["fw_device_idle", "fw_host_bound"]      # one row each
    host = f.loc["fw_host_bound"]
    assert host["core"] is None and host["subject"] == "devices 0, 1, 2, 3"
    assert host["severity"] == "high" and host["value"] == pytest.approx(2664 / 3100)
    assert host["text"] == ("4 of 4 devices are host-bound: idle 5 % of their span or more before the "
                            "host launched the next kernel: device 0 85.9 %, device 1 85.9 %, "
                            "device 2 85.9 %, device 3 85.9 %")
    assert host["gain_ns"] == 4 * 2664_000            # the members' gains added
    assert host["gain_share"] == pytest.approx(2664 / 3100)   # over the 4 devices' summed span
    idle = f.loc["fw_device_idle"]
    assert idle["text"].startswith("4 of 4 devices are idle 20 % of their span or more: device 0 87.1 %")
    assert idle["value"] == pytest.approx(2700 / 3100) and idle["subject"] == "devices 0, 1, 2, 3"


def test_two_devices_keep_their_own_findings(tmp_path):
    f = _load(tmp_path, 2)
    assert sorted(zip(f["rule"], f["core"])) == [("fw_device_idle", 0), ("fw_device_idle", 1),
                                                 ("fw_host_bound", 0), ("fw_host_bound", 1)]
    host = f[f["rule"] == "fw_host_bound"]
    assert host["gain_ns"].tolist() == [2664_000, 2664_000]
    assert host["text"].iloc[0].startswith("device 0: idle 85.9 % of its span (2.664 ms)")
