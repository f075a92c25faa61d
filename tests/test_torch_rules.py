"""Issue 16 on the real Kineto traces of ../shared/data/framework: Self CPU per operator equals
torch's rules (``torch/autograd/profiler_util.py``) as re-implemented HERE, independently of
reportgen (plain json, a stack walk per thread), and the numbers built on the same tree."""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pytest

from reportgen.analysis.operators import key_averages
from reportgen.parsers.chrome import load_chrome_trace
from tests.shared_data import FRAMEWORK, needs

KINETO = [
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/call_stack/backward_thread.json",
    "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
    "hta/distributed_info_unavailable/distributed_info_not_found.json.gz",
    "hta/execution_trace/benchmark_simple_add_trace.json.gz",
    "hta/nccl_parser_config/nccl_data.json.gz",
    "hta/negative_queue_length_values_check/rank0.json.gz",
    "hta/trace_diff/control/control.json.gz",
    "hta/trace_diff/test/test.json.gz",
    "hta/trace_file_list/inference_rank_1.json.gz",
    "hta/trace_filter/sampled_rank-0.json.gz",
    "hta/trace_filter/sampled_rank-1.json.gz",
    "hta/triton_example/triton_example.json.gz",
    "kineto-tb-plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "kineto-tb-plugin/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz",
    "kineto-tb-plugin/test/gpu_metrics_input.json",
    "tracelens/b200/eager_trace.json.gz",
    "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
    "tracelens/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz",
    "tracelens/mi210/gpu_only_trace/gpu_only_trace.json.gz",
    "tracelens/mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "tracelens/perf_model/normalization/normalization_layer_test.json.gz",
    "tracelens/torch_compile_triton/trace.json.gz",
]

#: torch's CPU FunctionEvents by category (issue 16): ops, user ranges, runtime/driver calls
FUNCTION_CATS = {"cpu_op", "operator", "user_annotation", "cuda_runtime", "cuda_driver",
                 "runtime", "hip_runtime", "mtia_runtime", "xpu_runtime", "privateuse1_runtime"}


def _events(path: Path) -> list[dict]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw, parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _ns(v) -> int:
    return int((Decimal(str(v)) * 1000).to_integral_value(ROUND_HALF_UP))


def torch_self_cpu(path: Path) -> tuple[dict[str, int], int]:
    """(Self CPU ns per key, summed durations of the roots): profiler_util's
    _populate_cpu_children (per thread, sorted by (start, -end), pop while the next event starts
    at or after the top's end or ends after it) and self = duration - children's durations;
    ProfilerStep#N keyed ProfilerStep* (_rewrite_name with the wildcard)."""
    threads = defaultdict(list)
    for i, e in enumerate(_events(path)):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        if str(e.get("cat", "")).split(",")[0].strip().lower() not in FUNCTION_CATS:
            continue
        s = _ns(e["ts"])
        threads[(str(e.get("pid")), str(e.get("tid")))].append((s, s + _ns(e.get("dur", 0)), i, e["name"]))
    self_by_key: dict[str, int] = defaultdict(int)
    roots = 0
    for evs in threads.values():
        evs.sort(key=lambda x: (x[0], -x[1], x[2]))
        stack: list[int] = []
        selfs = [b - a for a, b, _, _ in evs]
        for k, (s, t, _, _) in enumerate(evs):
            while stack:
                ps, pt = evs[stack[-1]][:2]
                if s >= pt or t > pt:
                    stack.pop()
                else:
                    selfs[stack[-1]] -= t - s
                    break
            if not stack:
                roots += t - s
            stack.append(k)
        for (_, _, _, name), v in zip(evs, selfs):
            key = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
            self_by_key[key] += v
    return dict(self_by_key), roots


@pytest.mark.parametrize("rel", KINETO)
def test_self_cpu_equals_torch_rules(rel):
    path = FRAMEWORK / rel
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    want, roots = torch_self_cpu(path)
    table = key_averages(load_chrome_trace(path))
    got = dict(zip(table["Name"], table["Self CPU (us)"] * 1e3))
    assert set(got) == set(want)
    top = sorted(want, key=lambda k: -abs(want[k]))[:20]
    for k in top:
        assert got[k] == pytest.approx(want[k], rel=1e-6, abs=1e-3), k
    # total Self CPU = CPU wall time of the roots, and the percentages use that denominator
    assert table["Self CPU (us)"].sum() * 1e3 == pytest.approx(roots, rel=1e-9)
    if roots:
        assert table["Self CPU %"].sum() == pytest.approx(100.0)


@needs(FRAMEWORK / "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
def test_profiler_steps_are_one_key_with_device_work():
    """Seen on this trace: ProfilerStep#N rows per step; Steps with 0 device slices."""
    from reportgen.analysis.steps import step_table

    prof = load_chrome_trace(FRAMEWORK / "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    names = set(key_averages(prof)["Name"])
    assert "ProfilerStep*" in names or not any(n.startswith("ProfilerStep") for n in prof.host["name"])
    assert not any(str(n).startswith("ProfilerStep#") for n in names)
    steps = step_table(prof)
    if len(steps):
        assert (steps["Device slices"] > 0).all()


# -------------------------------------------------------------------------------------------
# device busy per device = union of its streams (issue 16 item 2); seed CSV rows (item 3)
# -------------------------------------------------------------------------------------------
def _union(s, e) -> int:
    """Covered length, merged by a plain loop (independent of reportgen.analysis.metrics)."""
    total, cur_s, cur_e = 0, None, None
    for a, b in sorted(zip(s.tolist(), e.tolist())):
        if cur_e is None or a > cur_e:
            total += 0 if cur_e is None else cur_e - cur_s
            cur_s, cur_e = a, b
        else:
            cur_e = max(cur_e, b)
    return total + (0 if cur_e is None else cur_e - cur_s)


@pytest.mark.parametrize("rel", [r for r in KINETO if "xdit" not in r])
def test_device_busy_is_the_union_of_its_streams_and_host_device_has_rows(rel, tmp_path):
    from reportgen.analysis.metrics import lane_summary
    from reportgen.writers.csv_tables import seed_frame

    path = FRAMEWORK / rel
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    prof = load_chrome_trace(path)
    if len(prof.host):
        assert len(seed_frame(prof)) > 0          # header-only before issue 16 on 28 traces
    if prof.commands.empty:
        return
    t = lane_summary(prof)
    c = prof.commands[~prof.commands["is_sys"]]
    for core, rows in t[t["engine"].astype(str).str.startswith("device:")].groupby("core"):
        mine = c[c["core"] == core]
        want = _union(mine["start_ns"].to_numpy(), mine["end_ns"].to_numpy())
        assert int(rows["busy_ns"].iloc[0]) == want
        assert want <= int(rows["span_ns"].iloc[0])
    overall = t.iloc[-1]
    assert overall["util"] <= 1.0


@needs(FRAMEWORK / "hta/trace_diff/test/test.json.gz")
def test_multi_stream_busy_was_the_sum():
    """Seen on this single-device multi-stream trace: the sum of streams exceeds the union."""
    from reportgen.analysis.metrics import lane_summary

    t = lane_summary(load_chrome_trace(FRAMEWORK / "hta/trace_diff/test/test.json.gz"))
    lanes = t[(t["core"] != "Overall") & ~t["engine"].astype(str).str.startswith("device:")]
    device = t[t["engine"].astype(str).str.startswith("device:")]
    assert len(lanes) > 1 and len(device) == 1
    assert lanes["busy_ns"].sum() > device["busy_ns"].iloc[0]
    assert t.iloc[-1]["busy_ns"] == device["busy_ns"].iloc[0] <= device["span_ns"].iloc[0]


@needs(FRAMEWORK / "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz")
def test_cuda_profiler_ranges_are_no_work():
    """Seen here: 77 back-to-back cuda_profiler_range placeholders reported as 100 % busy."""
    from reportgen.analysis.kernels import kernel_table
    from reportgen.analysis.metrics import lane_summary

    prof = load_chrome_trace(FRAMEWORK / "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz")
    assert len(prof.commands) == 77 and prof.commands["is_sys"].all()
    assert lane_summary(prof).iloc[-1]["busy_ns"] == 0
    assert kernel_table(prof).empty
    assert any(w.code == "non-work-device" and "cuda_profiler_range: 77" in w.message
               for w in prof.meta.warnings)
