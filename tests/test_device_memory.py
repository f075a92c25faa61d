"""A Kineto trace's ``deviceProperties`` state each device's memory (``totalGlobalMem``): the
chrome parser records it in ``meta.arch["device_memory_bytes"]`` and the framework rule
``fw_memory_capacity`` compares the memory peak with it (issue 24)."""
from __future__ import annotations

import gzip
import json

import pytest

import reportgen
from reportgen.parsers.chrome import device_props
from shared_data import FRAMEWORK, needs

GIB = 2**30


def _trace(tmp_path, props, reserved, allocated=None):
    """One launch and kernel on device 0 and one allocation of ``allocated`` bytes whose
    allocator then holds ``reserved`` bytes on device 0."""
    allocated = allocated or reserved // 2
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 0, "dur": 50,
           "args": {"External id": 1}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10,
           "dur": 5, "args": {"External id": 1, "correlation": 1}},
          {"ph": "X", "cat": "kernel", "name": "fill", "pid": 0, "tid": 7, "ts": 20, "dur": 10,
           "args": {"External id": 1, "correlation": 1, "device": 0, "stream": 7}},
          {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
           "ts": 5, "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": allocated,
                             "Total Allocated": allocated, "Total Reserved": reserved}}]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"deviceProperties": props, "traceEvents": ev}))
    return reportgen.load(path)


def _memory_finding(profile):
    f = profile.framework_diagnosis.findings
    return f[f["rule"] == "fw_memory_capacity"]


def test_capacity_from_device_properties_fires_the_rule(tmp_path):
    # 15 GiB reserved of 16 GiB: 93.75 % >= 85 % (medium; high from 95 %)
    props = [{"id": 0, "name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16 * GIB},
             {"id": 1, "name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16 * GIB}]
    p = _trace(tmp_path, props, reserved=15 * GIB)
    assert p.meta.arch["device_memory_bytes"] == {0: 16 * GIB, 1: 16 * GIB}
    f = _memory_finding(p)
    assert len(f) == 1
    r = f.iloc[0]
    assert r["core"] == 0 and r["severity"] == "medium" and r["value"] == pytest.approx(15 / 16)
    assert "15.00 GiB is 93.8 % of its 16.00 GiB" in r["text"]


def test_memory_far_below_capacity_or_unstated_is_silent(tmp_path):
    props = [{"id": 0, "totalGlobalMem": 80 * GIB}]
    assert _memory_finding(_trace(tmp_path, props, reserved=15 * GIB)).empty
    # no deviceProperties, or entries without a usable size: nothing recorded, nothing fires
    for bad in ([], [{"id": 0}], [{"id": "0", "totalGlobalMem": GIB}], [{"id": 0, "totalGlobalMem": -1}], "x"):
        p = _trace(tmp_path, bad, reserved=15 * GIB)
        assert "device_memory_bytes" not in p.meta.arch and _memory_finding(p).empty


def test_a_rank_placed_trace_takes_the_size_its_devices_share():
    class T:
        def __init__(self, props):
            self.metadata = {"deviceProperties": props}
    same = T([{"id": i, "totalGlobalMem": 80 * GIB} for i in range(8)])
    mixed = T([{"id": 0, "totalGlobalMem": 80 * GIB}, {"id": 1, "totalGlobalMem": 40 * GIB}])
    assert device_props.capacities([same, mixed], [3, 4]) == {3: 80 * GIB}
    assert device_props.capacities([mixed], [None]) == {0: 80 * GIB, 1: 40 * GIB}


@needs(FRAMEWORK / "tracelens" / "h100")
def test_shared_h100_trace_states_its_memory():
    """The H100 sample lists one device of 85018279936 B (79.18 GiB); its memory peak is far
    below, so the rule stays silent."""
    path = FRAMEWORK / "tracelens" / "h100" / "Falconsai_nsfw_image_detection__1016002.json.gz"
    raw = json.loads(gzip.decompress(path.read_bytes()))
    want = {d["id"]: d["totalGlobalMem"] for d in raw["deviceProperties"]}
    assert want == {0: 85018279936}
    p = reportgen.load(path)
    assert p.meta.arch["device_memory_bytes"] == want
    peak = p.tables["Memory Peak"]
    assert len(peak) and _memory_finding(p).empty
