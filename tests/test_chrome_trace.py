"""Chrome trace reading and Profile building: hand-made traces with hand-computed values,
the vectorised call tree against a reference stack walk, and the shared real traces (counts
and durations checked against a plain ``json`` read of the same file)."""
from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import reportgen
from reportgen.errors import InputError
from reportgen import intervals
from reportgen.parsers import chrome as ct
from reportgen.testing.profiles import derived
from shared_data import FRAMEWORK, needs

DATA = Path(__file__).parent / "data" / "framework"
SHARED = FRAMEWORK
needs_shared = needs(FRAMEWORK)


def raw_events(path: Path) -> list[dict]:
    """Independent reader for cross-checks: stdlib json, no reportgen code."""
    b = path.read_bytes()
    if b[:2] == b"\x1f\x8b":
        b = gzip.decompress(b)
    obj = json.loads(b)
    return obj["traceEvents"] if isinstance(obj, dict) else obj


# -------------------------------------------------------------------------------------------
# time conversion
# -------------------------------------------------------------------------------------------
def test_to_ns_exact_for_ints_and_decimal_strings():
    vals = np.array([1704161511420306, "1704161511420306.491", " 12.5\t", 3.25, None, "x", -2,
                     "-1.5", "4.2e-01"], dtype=object)
    ns, ok, nstr = ct.to_ns(vals)
    assert ns[8] == 420 and ok[8]
    assert ns[0] == 1704161511420306000          # int * 1000, no float rounding
    assert ns[1] == 1704161511420306491          # string keeps the ns digits
    assert ns[2] == 12500                        # tab-suffixed string (Ascend CSV quirk)
    assert ns[3] == 3250
    assert ns[6] == -2000 and ns[7] == -1500
    assert list(ok[:8]) == [True, True, True, True, False, False, True, True]
    assert nstr == 5


# -------------------------------------------------------------------------------------------
# containers
# -------------------------------------------------------------------------------------------
def _tiny() -> bytes:
    return json.dumps([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]).encode()


@pytest.mark.parametrize("wrap", ["plain", "gzip", "zip", "object"])
def test_containers_sniffed_by_content(tmp_path, wrap):
    data = _tiny()
    p = tmp_path / "trace.bin"  # the name says nothing
    if wrap == "gzip":
        p.write_bytes(gzip.compress(data))
    elif wrap == "zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("inner/trace.json", data)
        p.write_bytes(buf.getvalue())
    elif wrap == "object":
        p.write_bytes(b'{"traceEvents": ' + data + b', "displayTimeUnit": "ns"}')
    else:
        p.write_bytes(data)
    ev = ct.read_trace_events(p)
    assert list(ev["name"]) == ["a"]
    assert ev["ts_ns"].iloc[0] == 1000 and ev["dur_ns"].iloc[0] == 2000  # displayTimeUnit ignored


def test_not_a_trace_messages(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"nodes": [], "schema": "1.0.3"}')
    with pytest.raises(InputError, match="execution trace"):
        ct.read_trace(p)
    p.write_text('{"a": 1}')
    with pytest.raises(InputError, match="without 'traceEvents'"):
        ct.read_trace(p)
    p.write_text("hello")
    with pytest.raises(InputError, match=r"x\.json: not a Chrome trace"):
        ct.read_trace(p)
    p.write_text("[[1, 2], [3, 4]]")
    with pytest.raises(InputError, match="memory_timeline"):
        ct.read_trace(p)


# -------------------------------------------------------------------------------------------
# oddities: B/E, string ts, negative tids, improper nesting, unterminated array
# -------------------------------------------------------------------------------------------
def test_oddities_hand_computed():
    data = ct.read_trace(DATA / "handmade_oddities.json")
    codes = {c for c, _ in data.warnings}
    assert {"unterminated-json", "string-ts", "negative-tid", "unmatched-end", "unclosed-begin"} <= codes
    assert any("7 events have negative thread ids" in m for _, m in data.warnings)
    prof = ct.build_profile([data])
    h = prof.host.set_index("name")
    # B "0.5" .. E 10 -> [500, 10000]; inner [1000, 3000] carries the E's args
    assert (h.loc["outer", "start_ns"], h.loc["outer", "end_ns"]) == (500, 10000)
    assert (h.loc["inner", "start_ns"], h.loc["inner", "end_ns"]) == (1000, 3000)
    assert h.loc["inner", "args"] == {"result": "ok"}
    assert h.loc["inner", "depth"] == 2 and h.loc["outer", "depth"] == 1
    # unclosed B closed at the thread's last timestamp (end of "last": 13 + 2 us)
    assert (h.loc["open", "start_ns"], h.loc["open", "end_ns"]) == (12000, 15000)
    assert h.loc["last", "depth"] == 2
    # b starts inside a and ends after it: drawn nested under a, reported once; in the call
    # tree torch pops a, so b is no child of it (issue 16); c is inside b
    assert h.loc["b", "depth"] == 2 and h.loc["c", "depth"] == 3
    row = dict(zip(prof.host["name"], prof.host.index))
    assert prof.host.loc[row["b"], "parent"] == -1
    assert prof.host.loc[row["c"], "parent"] == row["b"]
    assert h.loc["c", "start_ns"] == 26002  # "26.0015" us, half-up to the ns
    assert h.loc["c", "end_ns"] == 27502
    assert any(w.code == "improper-nesting" and w.message.startswith("1 host slices")
               for w in prof.meta.warnings)


# -------------------------------------------------------------------------------------------
# call tree: vectorised forest == reference stack walk (framework-traces.md §6.2)
# -------------------------------------------------------------------------------------------
def _stack_walk(s, e):
    e = e.copy()
    parent = np.full(len(s), -1)
    depth = np.zeros(len(s), int)
    stack: list[int] = []
    for i in range(len(s)):
        while stack and e[stack[-1]] <= s[i]:
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        depth[i] = len(stack) + 1
        if stack and e[i] > e[stack[-1]]:
            e[i] = e[stack[-1]]
        stack.append(i)
    return depth, parent


def test_forest_matches_stack_walk_on_random_slices():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 80))
        s = rng.integers(0, 60, n)
        d = rng.integers(0, 40, n) * (rng.random(n) < 0.9)
        order = np.lexsort((np.arange(n), -d, s))
        s, e = s[order].astype(np.int64), (s[order] + d[order]).astype(np.int64)
        order, depth, parent, _ = intervals.call_forest(np.zeros(n, np.int64), s, e)
        assert (order == np.arange(n)).all()
        d2, p2 = _stack_walk(s, e)
        assert (depth == d2).all() and (parent == p2).all()


def test_forest_ties_and_zero_length():
    # same start: longer first is the parent; a zero-length slice at a parent's end is not inside
    track = np.zeros(4, np.int64)
    start = np.array([0, 0, 10, 5], np.int64)
    end = np.array([5, 10, 10, 5], np.int64)
    order, depth, parent, clipped = intervals.call_forest(track, start, end)
    assert list(order) == [1, 0, 3, 2]          # (0,10), (0,5), (5,5), (10,10)
    assert list(depth) == [1, 2, 2, 1]           # (5,5) is inside (0,10) but not (0,5)
    assert list(parent) == [-1, 0, 0, -1]
    assert clipped == 0


# -------------------------------------------------------------------------------------------
# linking on the hand-made Kineto trace
# -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kineto():
    return reportgen.load(DATA / "handmade_kineto.json")


def test_kineto_model_mapping(kineto):
    c = kineto.commands
    assert kineto.meta.source == "chrome"
    assert kineto.meta.rank == 3
    assert len(c) == 5 and set(c["engine"]) == {"stream 7"} and set(c["core"]) == {0}
    k = c.set_index("func_name")
    # baseTimeNanoseconds + ts * 1000
    assert k.loc["gemm", "start_ns"] == 1_000_000_000 + 40_000
    assert k.loc["gemm", "end_ns"] == 1_000_000_000 + 50_000
    assert k.loc["gemm", "func_type"] == "kernel" and k.loc["gemm", "grid"] == "[1, 1, 1]"
    assert k.loc["Memcpy HtoD (Pageable -> Device)", "bytes"] == 1024
    h = kineto.host
    names = h["name"].to_numpy()
    # launch_row: the runtime call with the same correlation; op_row: the op owning it
    assert names[k.loc["gemm", "launch_row"]] == "cudaLaunchKernel"
    assert h.loc[k.loc["gemm", "launch_row"], "correlation"] == 11
    assert names[k.loc["gemm", "op_row"]] == "aten::addmm"
    assert names[k.loc["relu_k", "op_row"]] == "aten::relu"
    assert k.loc["gemm", "kernel"] == "aten::addmm"
    # memcpy: runtime without External id -> enclosing op on its own thread (tid 2)
    assert names[k.loc["Memcpy HtoD (Pageable -> Device)", "op_row"]] == "aten::copy_"
    # the orphan kernel has no launch and is reported
    assert k.loc["x", "launch_row"] == -1 and k.loc["x", "op_row"] == -1
    assert any(w.code == "unattributed-device" and w.message.startswith("1 of 5")
               for w in kineto.meta.warnings)
    # host: python frame is the root on thread 1; Trace span is not a host op
    assert "PyTorch Profiler (0)" not in set(names)
    row = h.index[h["name"] == "aten::addmm"][0]
    assert h.loc[row, "depth"] == 3 and names[h.loc[row, "parent"]] == "aten::linear"


def test_flow_links_without_correlation(tmp_path):
    """Old traces: the runtime has no correlation arg; the ac2g flow still links it."""
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 20},
        {"ph": "X", "cat": "cuda_runtime", "name": "launch", "pid": 1, "tid": 1, "ts": 5, "dur": 1},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 1, "tid": 1, "ts": 5},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 2},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 0, "tid": 7, "ts": 10, "bp": "e"},
    ]
    p = tmp_path / "t.json"
    p.write_text(json.dumps(ev))
    prof = reportgen.load(p)
    names = prof.host["name"].to_numpy()
    c = prof.commands.iloc[0]
    assert names[c["launch_row"]] == "launch" and names[c["op_row"]] == "op"


# -------------------------------------------------------------------------------------------
# real traces (shared set)
# -------------------------------------------------------------------------------------------
@needs_shared
@pytest.mark.parametrize("rel", [
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "kineto-tb-plugin/test/gpu_metrics_input.json",
    "hta/trace_file_list/inference_rank_1.json.gz",
    "hta/call_stack/backward_thread.json",
])
def test_real_device_counts_and_durations_match_plain_json(rel):
    path = SHARED / rel
    ev = raw_events(path)
    dev_cats = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "cuda_sync"}
    dev = [e for e in ev if e.get("ph") == "X" and str(e.get("cat", "")).lower() in dev_cats]
    prof = reportgen.load(path)
    c = prof.commands
    assert len(c) == len(dev)
    # total device time: sum of rounded ns durations
    want = sum(round(float(e.get("dur", 0)) * 1000) for e in dev)
    assert int((c["end_ns"] - c["start_ns"]).sum()) == want
    ops = [e for e in ev if e.get("ph") == "X" and str(e.get("cat", "")).lower() in ("cpu_op", "operator")]
    assert int((prof.host["role"] == "op").sum()) == len(ops)


@needs_shared
def test_real_amd_trace_known_kernel_and_links():
    path = SHARED / "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    prof = reportgen.load(path)
    c = prof.commands
    # ROCm: kernels on stream/tid 0 of device pid 2 -> core 2 (not "host thread 0")
    assert set(c["core"]) == {2}
    memcpy = c[c["func_name"] == "Memcpy HtoD (Host -> Device)"]
    assert len(memcpy) >= 1
    first = memcpy.sort_values("start_ns").iloc[0]
    assert first["end_ns"] - first["start_ns"] == 22441        # dur 22.441 us
    names = prof.host["name"].to_numpy()
    assert names[first["launch_row"]] == "hipMemcpyWithStream"  # correlation 117
    linked = (c["launch_row"] >= 0).mean()
    assert linked == 1.0


@needs_shared
def test_real_ascend_trace_view_string_ts_and_async_npu_flows():
    path = SHARED / "ascend-msprof-analyze/ut/advisor/timeline_advice/trace_view.json"
    prof = reportgen.load(path)
    assert prof.meta.source == "ascend"
    ev = raw_events(path)
    hw_pids = {e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"
               and e["args"]["name"] == "Ascend Hardware"}
    hw = [e for e in ev if e.get("ph") == "X" and e["pid"] in hw_pids]
    assert len(prof.commands) == len(hw) == 276
    # ts strings read to the ns: the first task starts exactly at its string's digits
    first = min(hw, key=lambda e: float(e["ts"]))
    ip, frac = first["ts"].split(".")
    assert prof.commands["start_ns"].min() == int(ip) * 1000 + int(frac.ljust(3, "0")[:3])
    # async_npu flows link 274 of 276 tasks to the framework op that issued them
    ops = prof.commands["op_row"].to_numpy()
    assert (ops >= 0).sum() == 274
    assert set(prof.host["role"].to_numpy()[ops[ops >= 0]]) == {"op"}


def test_generic_trace_device_process_by_name(tmp_path):
    """tpudnn-style: no framework categories; a process named "TPU 1" holds device work."""
    ev = [
        {"ph": "M", "name": "process_name", "pid": 5, "args": {"name": "TPU 1"}},
        {"ph": "M", "name": "thread_name", "pid": 5, "tid": 0, "args": {"name": "TIU"}},
        {"ph": "M", "name": "process_name", "pid": 9, "args": {"name": "DeviceManager"}},
        {"ph": "X", "name": "matmul", "cat": "tpu", "pid": 5, "tid": 0, "ts": 1, "dur": 3},
        {"ph": "X", "name": "host_call", "cat": "api", "pid": 9, "tid": 1, "ts": 0, "dur": 5},
    ]
    p = tmp_path / "tpudnn.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    prof = reportgen.load(p)
    assert list(prof.commands["func_name"]) == ["matmul"]
    assert list(prof.commands["engine"]) == ["TIU"]
    assert list(prof.commands["core"]) == [1]
    assert list(prof.host["name"]) == ["host_call"]


def test_truncated_gzip_yields_complete_events(tmp_path):
    ev = [{"ph": "X", "name": f"e{i}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5} for i in range(2000)]
    blob = gzip.compress(json.dumps(ev).encode())
    p = tmp_path / "cut.json.gz"
    p.write_bytes(blob[: len(blob) * 3 // 4])   # capture stopped mid-write
    data = ct.read_trace(p)
    assert 0 < len(data.events) < 2000
    assert list(data.events["name"][:3]) == ["e0", "e1", "e2"]
    assert any(c == "unterminated-json" for c, _ in data.warnings)


def test_generic_host_slices_own_device_work_via_flows(tmp_path):
    """No framework categories: a flow from a plain host slice to a device task makes that
    slice the task's operator (MindSpore 2.x / tpudnn style)."""
    ev = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "MindSpore"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "Ascend Hardware"}},
        {"ph": "M", "name": "thread_name", "pid": 2, "tid": 3, "args": {"name": "Stream 3"}},
        {"ph": "X", "name": "Default/MatMul-op1", "pid": 1, "tid": 1, "ts": "10.0", "dur": 5},
        {"ph": "s", "cat": "async_npu", "name": "x", "id": 42, "pid": 1, "tid": 1, "ts": "11.0", "bp": "e"},
        {"ph": "X", "name": "MatMul", "pid": 2, "tid": 3, "ts": "20.0", "dur": 7},
        {"ph": "f", "cat": "async_npu", "name": "x", "id": 42, "pid": 2, "tid": 3, "ts": "20.0", "bp": "e"},
    ]
    p = tmp_path / "ms.json"
    p.write_text(json.dumps(ev))
    prof = reportgen.load(p)
    c = prof.commands.iloc[0]
    assert prof.host["name"].to_numpy()[c["op_row"]] == "Default/MatMul-op1"
    ka = prof.tables["Operators"].set_index("Name")
    assert ka.loc["Default/MatMul-op1", "Self Device (us)"] == 7


def test_window_files_of_one_process_are_one_rank(tmp_path):
    for i, t0 in enumerate((0, 1000)):
        ev = [{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 42, "tid": 1, "ts": t0, "dur": 5},
              {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t0 + 1, "dur": 2,
               "args": {"device": 0}}]
        (tmp_path / f"worker0.{i}.pt.trace.json").write_text(json.dumps(ev))
    prof = derived(ct.load_chrome_traces(sorted(tmp_path.glob("*.json")), str(tmp_path)))
    assert set(prof.commands["core"]) == {0} and len(prof.commands) == 2
    assert list(prof.commands["global_idx"]) == [0, 1]
    assert any("same process" in w.message for w in prof.meta.warnings)
    assert "Ranks" not in prof.tables


# -------------------------------------------------------------------------------------------
# robustness: arbitrary (well-typed JSON) events never crash the reader
# -------------------------------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_scalar = st.one_of(st.none(), st.integers(-5, 200), st.floats(-5, 200, allow_nan=False),
                    st.sampled_from(["", "7", "12.5", "x", "stream 7"]))
_event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "B", "E", "i", "s", "f", "t", "C", "M", "b", "e", "?"])},
    optional={"name": st.sampled_from(["a", "b", "[memory]", "process_name", "thread_name"]),
              "cat": st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "ac2g", "python_function",
                                      "gpu_memcpy", "user_annotation", "", "Kernel,foo"]),
              "pid": _scalar, "tid": _scalar, "ts": _scalar, "dur": _scalar, "id": _scalar,
              "bp": st.sampled_from(["e", "s"]),
              "args": st.one_of(st.none(), st.dictionaries(
                  st.sampled_from(["correlation", "External id", "device", "stream", "name", "labels",
                                   "Bytes", "Addr", "grid"]), _scalar, max_size=4))})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, max_size=40))
def test_random_events_never_crash(tmp_path_factory, events):
    p = tmp_path_factory.mktemp("fuzz") / "t.json"
    p.write_text(json.dumps(events))
    try:
        prof = reportgen.load(p)
    except InputError:
        return
    h = prof.host
    assert (h["end_ns"] >= h["start_ns"]).all()
    assert (h["parent"] < h.index).all()          # parents come first in tree order
    c = prof.commands
    assert (c["end_ns"] >= c["start_ns"]).all()


def test_accounting_every_event(kineto):
    acc = kineto.meta.accounting["handmade_kineto.json"]
    # 21 non-metadata events: 10 host slices + 5 device + 2 flow points + 3 memory + 1 span
    assert acc["read"] == 21 and acc["shown"] == 15
    assert acc["dropped: flow points (used as links)"] == 2
    assert acc["dropped: memory events (memory tables)"] == 3
    assert acc["dropped: derived/summary lanes"] == 1
    assert acc["read"] == acc["shown"] + sum(v for k, v in acc.items() if k.startswith("dropped: "))
