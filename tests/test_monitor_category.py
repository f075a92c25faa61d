"""profile_parser_main -mc on a trace that lacks that category: one warning line naming the
categories the trace has (hand-made trace: its categories are known)."""
from __future__ import annotations

import json

from reportgen import profile_parser


def test_missing_monitor_category_names_the_present_ones(tmp_path, capsys):
    ev = [{"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
          {"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 5}]
    src = tmp_path / "t.json"
    src.write_text(json.dumps({"traceEvents": ev}))
    assert profile_parser.main(["-s", str(src), "-d", str(tmp_path / "out.csv"), "-mc", "cpu_op"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "no host event of category 'cpu_op'" in err[0]
    assert err[0].endswith("the trace has: python_function, user_annotation")
    assert profile_parser.main(["-s", str(src), "-d", str(tmp_path / "out2.csv"), "-mc", "USER_ANNOTATION"]) == 0
    assert capsys.readouterr().err == ""
