"""Expected HTA figures for tests/test_device_time_hta.py, computed ONCE with HTA itself in a
separate, test-only environment (HTA is never a dependency of reportgen or its tests):

    python3 -m venv /tmp/htavenv && /tmp/htavenv/bin/pip install HolisticTraceAnalysis==0.5.0
    /tmp/htavenv/bin/python tests/data/hta/make_expected.py ../shared/data/framework \
        > tests/data/hta/temporal_breakdown.json

For each trace (alone in a folder, as HTA reads folders): HTA's temporal breakdown per rank
(idle / compute / non-compute / kernel time, µs) and its idle-time breakdown per stream
(host_wait / kernel_wait / other, µs, consecutive_kernel_delay 30)."""
import json
import os
import shutil
import sys
import tempfile

from hta.trace_analysis import TraceAnalysis

TRACES = [
    "hta/nccl_parser_config/nccl_data.json.gz",
    "hta/trace_diff/control/control.json.gz",
    "hta/trace_diff/test/test.json.gz",
    "hta/trace_filter/sampled_rank-0.json.gz",
    "hta/trace_filter/sampled_rank-1.json.gz",
    "hta/negative_queue_length_values_check/rank0.json.gz",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
]


def main(root: str) -> None:
    import hta
    out = {"hta_version": getattr(hta, "__version__", "0.5.0"), "traces": {}}
    for rel in TRACES:
        d = tempfile.mkdtemp()
        shutil.copy(os.path.join(root, rel), d)
        ta = TraceAnalysis(trace_dir=d)
        tb = ta.get_temporal_breakdown(visualize=False)
        idle, _ = ta.get_idle_time_breakdown(ranks=[int(r) for r in tb["rank"]], visualize=False)
        out["traces"][rel] = {
            "temporal": [{k: float(r[k]) for k in ("rank", "idle_time(us)", "compute_time(us)",
                                                    "non_compute_time(us)", "kernel_time(us)")}
                         for r in tb.to_dict("records")],
            "idle": [{"rank": int(r["rank"]), "stream": int(r["stream"]),
                      "category": str(r["idle_category"]), "idle_time": float(r["idle_time"])}
                     for r in idle.to_dict("records")],
        }
        shutil.rmtree(d)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
