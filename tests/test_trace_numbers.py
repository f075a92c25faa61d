"""Issue 18 item 7: odd numbers in traces.  Every case below failed on the issue's main (a
traceback, a perfetto writer failure with no report, a negative busy time, or a huge time read as
0); each now gives a complete report with one counted warning naming the first bad event.  A
property-based test then throws every kind of value at the time and key fields."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import reportgen
from reportgen import cli
from reportgen.errors import InputError
from reportgen.parsers.times import TIME_LIMIT_NS, parse_us

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data" / "cdm_profile_data_dev0-0"
LIMIT_US = TIME_LIMIT_NS // 1000


def op(**k):
    return {"ph": "X", "name": "op", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 10, "dur": 5, **k}


def kernel(**k):
    return {"ph": "X", "name": "kern", "cat": "kernel", "pid": 0, "tid": 7, "ts": 12, "dur": 2, **k}


def run(input_path: Path, out: Path, *extra: str) -> dict:
    """The CLI on ``input_path``: exit 0 and a complete report; its summary.json."""
    assert cli.main([str(input_path), str(out), "--quiet", *extra]) == 0
    for f in ("summary.txt", "perfetto.pftrace", "PerfWeb/result.html", "PerfDoc/PerfAI_output.xlsx"):
        assert (out / f).is_file(), f
    return json.loads((out / "summary.json").read_text())


def report(tmp_path: Path, events: list) -> tuple[dict, list[dict]]:
    """A report of a trace of ``events``: summary.json and the Device lanes table (checked: no
    negative busy time or utilisation)."""
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(events))
    summary = run(trace, tmp_path / "OUT")
    with open(tmp_path / "OUT" / "tables" / "Device_lanes.csv", newline="") as fh:
        lanes = list(csv.DictReader(fh))
    for row in lanes:
        assert float(row["busy_ns"]) >= 0 and float(row["util"]) >= 0, row
    return summary, lanes


def warning(summary: dict, code: str) -> str:
    found = [w["message"] for w in summary["warnings"] if w["code"] == code]
    assert len(found) == 1, summary["warnings"]
    return found[0]


# ---------------------------------------------------------------------------------------------
# the cases of the issue, each failed before
# ---------------------------------------------------------------------------------------------
def test_ts_beyond_int64_is_dropped_and_counted(tmp_path):
    # was: OverflowError traceback
    summary, lanes = report(tmp_path, [op(), kernel(), op(ts=10**20), kernel(ts=-10**20)])
    assert warning(summary, "bad-ts").startswith("2 events have no usable 'ts' (2 not finite or "
                                                 "beyond ±2^62 ns); dropped (first: event 2)")
    assert lanes[-1]["commands"] == "1"


def test_pid_list_is_keyed_by_its_text(tmp_path):
    # was: TypeError: unhashable type: 'list'
    summary, lanes = report(tmp_path, [op(), kernel(), op(pid=[1]), kernel(tid={"a": 1}),
                                       kernel(tid=True)])
    assert warning(summary, "odd-pid-tid").startswith("3 events have a 'pid' or 'tid'")
    assert "(first: event 2)" in warning(summary, "odd-pid-tid")
    assert {r["engine"] for r in lanes} >= {"tid 7", "tid {'a': 1}", "tid True"}


def test_dur_inf_is_dropped_and_counted(tmp_path):
    # was: IntCastingNaNError traceback
    summary, lanes = report(tmp_path, [op(), kernel(), op(dur="inf"), kernel(dur=float("inf"))])
    assert "2 events have an unusable 'dur' (2 not finite" in warning(summary, "bad-dur")
    assert lanes[-1]["commands"] == "1"


def test_kernels_at_plus_minus_9e15_us_still_give_a_report(tmp_path):
    # was: the perfetto writer failed ("Value out of range") and no report was written
    summary, lanes = report(tmp_path, [op(), kernel(), kernel(ts=9e15), kernel(ts=-9e15)])
    assert warning(summary, "bad-ts").startswith("2 events have no usable 'ts'")
    assert lanes[-1]["commands"] == "1"


def test_extreme_but_valid_times_give_a_report(tmp_path):
    """Both edges of the window on several lanes: perfetto, busy and util still right."""
    lo, hi = -(LIMIT_US - 1), LIMIT_US - 2
    events = [op(), op(ts=lo, dur=1), op(ts=hi, dur=1, tid=3), kernel(ts=lo, dur=1),
              kernel(ts=hi, dur=1)]
    events += [kernel(tid=t, ts=start, dur=LIMIT_US - 10) for t in (8, 9) for start in (lo, 0)]
    summary, lanes = report(tmp_path, events)
    assert not [w for w in summary["warnings"] if w["code"].startswith("bad-")]
    busy = {r["engine"]: int(r["busy_ns"]) for r in lanes}
    assert busy["tid 7"] == 2000                  # negative times: the union is still right
    assert busy["tid 8"] == 2 * (LIMIT_US - 10) * 1000


def test_ts_plus_dur_past_the_window_is_dropped_and_counted(tmp_path):
    # was: busy -9e15 us and utilisation -100 % with no warning
    summary, lanes = report(tmp_path, [op(), kernel(), kernel(ts=4 * 10**15, dur=10**15)])
    assert warning(summary, "bad-end").startswith("1 events would end ('ts' + 'dur') at or beyond "
                                                  "2^62 ns; dropped (first: event 2)")
    assert lanes[-1]["commands"] == "1"


def test_huge_numeric_string_ts_is_not_read_as_0(tmp_path):
    # was: silently 0
    summary, lanes = report(tmp_path, [op(), kernel(), op(ts="9" * 30), kernel(ts="9" * 25)])
    assert warning(summary, "bad-ts").startswith("2 events have no usable 'ts'")
    assert int(lanes[-1]["span_ns"]) == 2000      # the one good kernel only


def test_odd_device_and_link_ids(tmp_path):
    """args 'device' is the core of a kernel and 'correlation' links it: ids beyond int64 or
    not finite neither crash the perfetto writer nor wrap onto another id."""
    summary, lanes = report(tmp_path, [op(args={"correlation": 5}), kernel(args={"device": 1}),
                                       kernel(args={"device": "inf", "correlation": 2**64 + 5}),
                                       kernel(args={"device": -5, "correlation": 1e30})])
    assert warning(summary, "bad-device-id").startswith("2 device events give an args 'device'")
    assert {r["core"] for r in lanes} == {"0", "1", "Overall"}


def test_host_trace_with_odd_numbers(tmp_path):
    """The --trace_file reader applies the same rules (bools are no numbers there either)."""
    host = tmp_path / "host.json"
    host.write_text(json.dumps([op(ts=1_000), op(ts=10**20), op(ts=True), op(dur="inf"),
                                op(ts=4 * 10**15, dur=10**15), op(pid=[1], ts=1_100)]))
    summary = run(SAMPLE, tmp_path / "OUT", "--trace_file", str(host))
    messages = {w["code"]: w["message"] for w in summary["warnings"]}
    assert messages["bad-ts"].startswith("2 complete events have no usable 'ts' (1 not a number, "
                                         "1 not finite or beyond ±2^62 ns)")
    assert messages["bad-dur"].startswith("1 complete events have an unusable 'dur'")
    assert messages["bad-end"].startswith("1 complete events would end")


def test_ascend_csv_times(tmp_path):
    """kernel_details.csv / memory_record.csv times go through the same validation."""
    (tmp_path / "kernel_details.csv").write_text(
        "Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us)\n"
        "1,a1,MatMul,AI_CORE,0,10,0\n1,a2,MatMul,AI_CORE,20,inf,inf\n"
        f"1,a3,MatMul,AI_CORE,{'9' * 30},5,0\n1,a4,MatMul,AI_CORE,40,-5,0\n"
        "1,a5,MatMul,AI_CORE,4000000000000000,1000000000000000,0\n")
    (tmp_path / "memory_record.csv").write_text(
        "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Device Type\n"
        "PTA,10,1,2,NPU:0\nPTA,inf,1,2,NPU:0\nPTA,20,inf,2,NPU:0\n")
    summary = run(tmp_path, tmp_path / "OUT")
    got = sorted((w["code"], w["message"].split(";")[0], Path(w["where"]).name)
                 for w in summary["warnings"])
    assert got == [
        ("bad-dur", "1 rows have an unusable 'Duration(us)' (1 not finite or beyond ±2^62 ns)",
         "kernel_details.csv"),
        ("bad-end", "1 rows would end ('Start Time(us)' + 'Duration(us)') at or beyond 2^62 ns",
         "kernel_details.csv"),
        ("bad-ts", "1 rows have no usable 'Start Time(us)' (1 not finite or beyond ±2^62 ns)",
         "kernel_details.csv"),
        ("bad-ts", "1 rows have no usable 'Timestamp(us)' (1 not finite or beyond ±2^62 ns)",
         "memory_record.csv"),
        ("negative-dur", "1 rows have a negative 'Duration(us)'", "kernel_details.csv")]


def test_parse_us_window_edges():
    t = parse_us([LIMIT_US, -LIMIT_US, LIMIT_US + 1, "4611686018427387.903", "4611686018427387.904",
                  4.6e15, 4.7e15, True, [1], {"a": 1}, None, float("nan"), "nan", "1e400", 10**400])
    assert t.ns[:2].tolist() == [LIMIT_US * 1000, -LIMIT_US * 1000]
    assert t.ns[3] == TIME_LIMIT_NS - 1 and t.ns[5] == 4_600_000_000_000_000_000
    assert t.status.tolist() == [0, 0, 3, 0, 3, 0, 3, 2, 2, 2, 1, 1, 2, 3, 3]


# ---------------------------------------------------------------------------------------------
# property: any value in any field
# ---------------------------------------------------------------------------------------------
_values = st.one_of(
    st.integers(-10**6, 10**6), st.integers(-10**30, 10**30),
    st.sampled_from([LIMIT_US - 1, -LIMIT_US + 1, LIMIT_US, 2**63, -2**63 - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["10", "-3.5", " 12.5\t", "4.2e-01", "9" * 30, "9" * 16, "4611686018427387.904",
                     "inf", "nan", "", "abc", "1e400", "+-5"]),
    st.text(max_size=5), st.booleans(), st.none(), st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=2))
_event = st.fixed_dictionaries({"ph": st.sampled_from(["X", "X", "B", "E", "i"]),
                                "cat": st.sampled_from(["cpu_op", "kernel", "gpu_memcpy"]),
                                "ts": _values, "dur": _values, "pid": _values, "tid": _values,
                                "name": _values,
                                "args": st.fixed_dictionaries({"device": _values,
                                                               "correlation": _values})})


def _json(events: list) -> str:
    # JSON as Python writes it, NaN and Infinity included (Python's reader accepts them)
    return json.dumps(events, allow_nan=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(events=st.lists(_event, min_size=1, max_size=12))
def test_any_field_values_load_cleanly(tmp_path, events):
    path = tmp_path / "trace.json"
    path.write_text(_json(events))
    try:
        profile = reportgen.load(str(path))
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    for frame, start, end in ((profile.commands, "start_ns", "end_ns"), (profile.host, "start_ns", "end_ns")):
        if len(frame):
            s, e = frame[start].astype("int64"), frame[end].astype("int64")
            assert (s.abs() < TIME_LIMIT_NS).all() and (e.abs() < TIME_LIMIT_NS).all()
            assert (e >= s).all()
    summary = profile.summary
    for c in summary.columns:
        if c.endswith(("_busy_ns", "_util")):
            vals = [v for v in summary[c] if v is not None and not (isinstance(v, float) and math.isnan(v))]
            assert all(v >= 0 for v in vals), (c, vals)
    lanes = profile.tables.get("Device lanes")
    if lanes is not None and len(lanes):
        assert (lanes["busy_ns"].astype(float) >= 0).all() and (lanes["util"].astype(float).fillna(0) >= 0).all()
