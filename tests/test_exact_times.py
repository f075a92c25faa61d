"""Trace times read exactly: 16-digit µs timestamps with 3 decimals (HTA's ns-resolution
traces) become the integer ns written, never a float64 of µs (which keeps steps of 0.25 µs
at that magnitude).  Expected values are the decimal digits themselves, by hand."""
from __future__ import annotations

import json
import random

import numpy as np

from reportgen.parsers import chrome as ct
from reportgen.parsers import times
from reportgen.parsers.chrome.exact_json import ExactFloat, loads


def _nested_trace(tmp_path):
    """Three slices on one thread nested by 1 ns margins: a float64 of µs merges the margins
    (1712195495520835.103 and .104 are one double), exact ns keep them nested."""
    base = 1712195495520835
    ev = [
        # parent [.103, .110], child [.104, .109], grandchild [.105, .108]
        {"ph": "X", "cat": "cpu_op", "name": "parent", "pid": 1, "tid": 1,
         "ts": f"@{base}.103@", "dur": 0.007},
        {"ph": "X", "cat": "cpu_op", "name": "child", "pid": 1, "tid": 1,
         "ts": f"@{base}.104@", "dur": 0.005},
        {"ph": "X", "cat": "cpu_op", "name": "grandchild", "pid": 1, "tid": 1,
         "ts": f"@{base}.105@", "dur": 0.003},
        # a sibling starting 1 ns after the parent ends
        {"ph": "X", "cat": "cpu_op", "name": "next", "pid": 1, "tid": 1,
         "ts": f"@{base}.111@", "dur": 1.5},
    ]
    text = json.dumps({"traceEvents": ev}).replace('"@', "").replace('@"', "")
    path = tmp_path / "ns_resolution.json"
    path.write_text(text)
    return path, base


def test_sixteen_digit_timestamps_are_exact_ns_and_nest(tmp_path):
    path, base = _nested_trace(tmp_path)
    assert float(f"{base}.103") == float(f"{base}.104")   # what a float decoder would see
    data = ct.read_trace(path)
    got = dict(zip(data.events["name"], zip(data.events["ts_ns"], data.events["dur_ns"])))
    assert got["parent"] == (base * 1000 + 103, 7)
    assert got["child"] == (base * 1000 + 104, 5)
    assert got["grandchild"] == (base * 1000 + 105, 3)
    assert got["next"] == (base * 1000 + 111, 1500)
    assert not [c for c, _ in data.warnings if c == "string-ts"]   # numbers, not strings
    prof = ct.build_profile([data])
    assert not [w for w in prof.meta.warnings if w.code == "improper-nesting"]
    row = dict(zip(prof.host["name"], prof.host.index))
    assert prof.host.loc[row["child"], "parent"] == row["parent"]
    assert prof.host.loc[row["grandchild"], "parent"] == row["child"]
    assert prof.host.loc[row["next"], "parent"] == -1


def test_long_literals_stay_floats_that_keep_their_text():
    obj = loads(b'{"a": 1712195495520835.103, "b": 1.5, "c": 12.345678901234567, "d": 7}')
    assert type(obj["a"]) is ExactFloat and obj["a"].text == "1712195495520835.103"
    assert obj["a"] == 1712195495520835.103 and obj["c"] + 1 == 13.345678901234567
    assert type(obj["b"]) is float and type(obj["d"]) is int


def test_byte_matrix_decimals_equal_the_general_reader():
    """The vectorised reader of plain decimals gives what the regex reader gives."""
    r = random.Random(7)
    vals = [("-" if r.random() < .3 else "") + str(r.randrange(10 ** r.randrange(1, 19)))
            + ("." + str(r.randrange(10 ** r.randrange(1, 7))) if r.random() < .8 else "")
            for _ in range(20000)]
    vals += ["1712195495520835.103", "0.0005", "0.00049", ".5", "5.", "+7.1234", "-", ".", "1.2.3",
             "12a.5", " 3.2", "1e5", "", "9999999999999999.9", "1.2\u00e9"]
    arr = np.array(vals, dtype=object)
    t = times.parse_us(arr)
    ns, status = times._from_strings_general(arr)
    assert (t.ns == ns).all() and (t.status == status).all()
    assert t.ns[20000] == 1712195495520835103 and t.ns[20001] == 1 and t.ns[20002] == 0
