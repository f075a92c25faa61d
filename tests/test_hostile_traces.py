"""A catalogue of broken and odd framework traces, each with its exact outcome: rejected with one
line naming the file (and what it is instead), or read with the listed warnings and the exact
number of host events kept. Complements the hand-computed cases of test_chrome_trace.py."""
from __future__ import annotations

import gzip
import io
import json
import zipfile

import pytest

from reportgen.errors import InputError
from reportgen.parsers.detect import load_profile


def X(**k):
    return dict({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "cat": "cpu_op"}, **k)


def dump(events) -> bytes:
    return json.dumps(events).encode()


def _zip_without_json() -> bytes:
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr("readme.txt", "hi")
    return b.getvalue()


_gz = gzip.compress(dump([X(name=f"op{i}", ts=10 * i) for i in range(200)]))

#: name -> (bytes, outcome); outcome is ("reject", text in the message) or
#: ("read", warning codes, host events kept)
CASES = {
    "empty-file": (b"", ("reject", "an empty file")),
    "plain-text": (b"hello world", ("reject", "not JSON")),
    "sqlite-export": (b"SQLite format 3\x00" + bytes(100), ("reject", "SQLite database")),
    "object-without-traceEvents": (b'{"a": 1}', ("reject", "without 'traceEvents'")),
    "execution-trace": (b'{"nodes": [], "schema": "1.0.3"}', ("reject", "execution trace")),
    "memory-timeline-export": (b"[[1, 2], [3, 4]]", ("reject", "memory_timeline")),
    "traceEvents-not-a-list": (b'{"traceEvents": 5}', ("reject", "'traceEvents' is not a list")),
    "numbers-instead-of-events": (b'[1, "x", null]', ("reject", "does not hold trace event objects")),
    "nested-too-deeply": (b'[{"name":"x","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":'
                          + b"[" * 100_000 + b"]" * 100_000 + b"}]",
                          ("reject", "JSON nested 100002 levels deep")),
    "cut-off-array": (dump([X(), X(ts=20)])[:-1], ("read", {"unterminated-json"}, 2)),
    "cut-off-inside-event": (dump([X(), X(ts=20)])[:-15], ("read", {"unterminated-json"}, 1)),
    "cut-off-gzip": (_gz[: len(_gz) * 2 // 3], ("read", {"unterminated-json"}, None)),
    "zip-without-json": (_zip_without_json(), ("reject", "not JSON")),
    "byte-order-mark": (b"\xef\xbb\xbf" + dump([X()]), ("read", set(), 1)),
    "string-timestamps": (dump([X(ts="10.5"), X(ts="20")]), ("read", {"string-ts"}, 2)),
    "text-where-time-belongs": (dump([X(ts="abc"), X(ts=20)]), ("read", {"bad-ts"}, 1)),
    "NaN-timestamp": (b'[{"ph":"X","name":"op","pid":1,"tid":1,"ts":NaN,"dur":1},'
                      b'{"ph":"X","name":"op","pid":1,"tid":1,"ts":3,"dur":1}]', ("read", {"bad-ts"}, 1)),
    "timestamp-beyond-int64-ns": (dump([X(ts=1e18), X(ts=5)]), ("read", {"bad-ts"}, 1)),
    "negative-duration": (dump([X(dur=-5), X(ts=20)]), ("read", {"negative-dur"}, 2)),
    "string-duration": (dump([X(dur="7"), X(ts=20)]), ("read", set(), 2)),
    "string-pid-tid": (dump([X(pid="p1", tid="t1")]), ("read", set(), 1)),
    "negative-tid": (dump([X(tid=-3)]), ("read", {"negative-tid"}, 1)),
    "end-without-begin": (dump([{"ph": "E", "pid": 1, "tid": 1, "ts": 5, "name": "x"}, X()]),
                          ("read", {"unmatched-end"}, 1)),
    "begin-never-closed": (dump([{"ph": "B", "pid": 1, "tid": 1, "ts": 5, "name": "x"}, X(ts=6)]),
                           ("read", {"unclosed-begin"}, 2)),
    "improper-nesting": (dump([X(name="a", ts=0, dur=10), X(name="b", ts=5, dur=10)]),
                         ("read", {"improper-nesting"}, 2)),
    "html-and-js-in-names": (dump([X(name="<script>alert(1)</script>", cat="<b>x</b>")]), ("read", set(), 1)),
    "event-without-name": (dump([{"ph": "X", "pid": 1, "tid": 1, "ts": 3, "dur": 1}]), ("read", set(), 1)),
    "empty-array": (b"[]", ("read", {"empty-trace"}, 0)),
    "only-metadata": (dump([{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}}]),
                      ("read", {"empty-trace"}, 0)),
}


def test_catalogue_size():
    assert len(CASES) >= 20


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_trace(name, tmp_path):
    data, outcome = CASES[name]
    path = tmp_path / f"{name}.json"
    path.write_bytes(data)
    if outcome[0] == "reject":
        with pytest.raises(InputError) as err:
            load_profile(path)
        msg = str(err.value)
        assert "\n" not in msg and str(path) in msg and outcome[1] in msg, msg
        return
    profile = load_profile(path)
    codes = {w.code for w in profile.meta.warnings}
    assert outcome[1] <= codes, codes
    if outcome[2] is not None:
        assert len(profile.host) == outcome[2]
    else:
        assert 0 < len(profile.host) < 200          # the events before the cut, not more
    if name == "html-and-js-in-names":
        assert profile.host["name"].iloc[0] == "<script>alert(1)</script>"   # kept verbatim
