"""Operator tables equal torch's own ``key_averages()`` on every Kineto trace of the shared
set: the expected tables in tests/data/torch_oracle/ were made by torch's code
(tests/oracle/torch_key_averages.py, see its README); all rows, calls exact, times within
1e-3 relative + 1 µs, memory bytes exact.  The opt-in test re-runs the oracle live."""
from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from reportgen import pipeline
from reportgen.analysis import torch_tables
from reportgen.options import Options
from shared_data import FRAMEWORK

ORACLE = Path(__file__).parent / "data" / "torch_oracle"
CASES = sorted(ORACLE.glob("*.json.gz"))
TABLES = {"by_name": "name", "by_shapes": "shapes", "by_stack": "stack"}


def _expected(case: Path) -> dict:
    return json.loads(gzip.decompress(case.read_bytes()))


def _ours(trace: Path) -> pd.DataFrame:
    profile = pipeline.load(Options(input=str(trace)))
    return torch_tables.function_events(profile)


def _compare(exp: dict, events: pd.DataFrame) -> list[str]:
    bad = []
    for table, by in TABLES.items():
        got = torch_tables.key_averages(events, by)
        key_cols = ["Name", "Device Type", "Annotation"] + \
            {"name": [], "shapes": ["Input Shapes"], "stack": ["Source Location"]}[by]
        mine = {tuple(r[:len(key_cols)]): r[len(key_cols):] for r in
                got[key_cols + ["# of Calls", "Self CPU (us)", "CPU total (us)", "Self Device (us)",
                                "Device total (us)", "CPU Mem (B)", "Self CPU Mem (B)",
                                "Device Mem (B)", "Self Device Mem (B)"]].itertuples(index=False)}
        want = {}
        for r in exp[table]:
            extra = {"name": [], "shapes": [r[3]], "stack": [r[4]]}[by]
            want[(r[0], "CPU" if r[1] == "cpu" else "Device", bool(r[2]), *extra)] = r[5:]
        for k in sorted(set(want) | set(mine), key=str):
            if k not in mine or k not in want:
                bad.append(f"{table} {k}: {'missing' if k not in mine else 'extra'}")
                continue
            w, m = want[k], mine[k]
            if int(m[0]) != w[0]:
                bad.append(f"{table} {k}: calls {m[0]} != {w[0]}")
            for i, label in ((1, "self cpu"), (2, "cpu"), (3, "self dev"), (4, "dev")):
                if abs(m[i] - w[i]) > 1e-3 * abs(w[i]) + 1:
                    bad.append(f"{table} {k}: {label} {m[i]:.3f} != {w[i]}")
            if [int(x) for x in m[5:9]] != list(w[5:9]):
                bad.append(f"{table} {k}: memory {list(m[5:9])} != {w[5:9]}")
    return bad


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_tables_equal_torch(case):
    exp = _expected(case)
    trace = FRAMEWORK / exp["trace"]
    if not trace.exists():
        pytest.skip(f"shared trace {exp['trace']} not present ({FRAMEWORK})")
    events = _ours(trace)
    bad = _compare(exp, events)
    assert not bad, f"{len(bad)} differences, first: " + "; ".join(bad[:8])
    tot = torch_tables.totals(events)
    assert abs(tot["self_cpu_us"] - exp["self_cpu_time_total_us"]) <= \
        1e-3 * abs(exp["self_cpu_time_total_us"]) + 1
    assert abs(tot["self_device_us"] - exp["self_device_time_total_us"]) <= \
        1e-3 * abs(exp["self_device_time_total_us"]) + 1


def test_every_stored_table_names_its_torch():
    assert CASES, "no stored oracle tables"
    for case in CASES:
        exp = _expected(case)
        assert exp["torch"].startswith("2.13.0") and exp["by_name"]


TORCH_PYTHON = Path(__file__).parents[1] / ".venv-torch" / "bin" / "python"


@pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="no test-only torch venv (.venv-torch: "
                    "python3 -m venv .venv-torch && .venv-torch/bin/pip install torch==2.13.0)")
def test_oracle_live_matches_stored(tmp_path):
    """Re-run torch's code on the small traces and compare with the stored tables."""
    if not FRAMEWORK.exists():
        pytest.skip(f"shared data not present ({FRAMEWORK})")
    small = FRAMEWORK / "hta" / "amd_trace"
    subprocess.run([str(TORCH_PYTHON), str(Path(__file__).parent / "oracle" / "torch_key_averages.py"),
                    str(small), str(tmp_path)], check=True, capture_output=True)
    made = list(tmp_path.glob("*.json.gz"))
    assert made
    for m in made:
        live = json.loads(gzip.decompress(m.read_bytes()))
        stored = _expected(ORACLE / ("hta__amd_trace__" + m.name))
        assert live["by_name"] == stored["by_name"]


def test_summary_table_like_torch_within_120_columns():
    """summary.txt's top-operators table: at most 120 columns, sorted by device total, and the
    totals torch prints (its own format: 3 decimals in us/ms/s) from the stored oracle."""
    from reportgen.writers.text import top_operators_text
    from reportgen.writers.torch_table_text import _time

    case = ORACLE / "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    exp = _expected(case)
    trace = FRAMEWORK / exp["trace"]
    if not trace.exists():
        pytest.skip(f"shared trace {exp['trace']} not present ({FRAMEWORK})")
    ops = torch_tables.key_averages(_ours(trace), "name")
    text = top_operators_text(ops)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert f"Self CPU time total: {_time(exp['self_cpu_time_total_us'])}" in lines
    assert f"Self Device time total: {_time(exp['self_device_time_total_us'])}" in lines
    top = max(exp["by_name"], key=lambda r: r[9])            # the largest device total first
    assert lines[4].startswith(top[0][:20])
