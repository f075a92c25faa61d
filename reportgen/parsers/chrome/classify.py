"""What each trace event is: its role (framework op, runtime call, device work, ...) from its
category (era-aware, case-insensitive, framework-traces.md §2.3) or, where categories say
nothing, from its process (Ascend "Ascend Hardware", a "GPU n" label); and a trace's rank."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.parsers.chrome.events import TraceData

# -- category roles (framework-traces.md §2.3); matched lower-case --------------------------
OP_CATS = {"cpu_op", "operator"}
ANNOTATION_CATS = {"user_annotation"}
PYTHON_CATS = {"python_function"}
RUNTIME_CATS = {"cuda_runtime", "runtime", "cuda_driver", "mtia_runtime", "xpu_runtime",
                "privateuse1_runtime", "hip_runtime"}
QUEUE_CATS = {"enqueue", "dequeue"}
DEVICE_CATS = {"kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "cuda_sync",
               "cuda_profiler_range"}
DEVICE_ANNOTATION_CATS = {"gpu_user_annotation"}
#: device categories that are waits rather than work (model: is_sys / sys_wait)
DEVICE_WAIT_CATS = {"cuda_sync"}
#: device categories that mark a range without timing work: CUPTI range-profiler replays
#: ("cuda_profiler_range", named after the kernel, its length a placeholder); no work (is_sys)
DEVICE_MARKER_CATS = {"cuda_profiler_range"}
#: Ascend task types that only synchronise streams
ASCEND_SYNC_TASKS = {"EVENT_RECORD", "EVENT_WAIT", "NOTIFY_RECORD", "NOTIFY_WAIT",
                     "STREAM_WAIT", "WRITE_VALUE", "CAPTURE_RECORD", "CAPTURE_WAIT"}
#: process names (Ascend/CANN/MindSpore timelines) whose X events are device work
DEVICE_PROCESSES = {"ascend hardware", "hccl"}
#: process names whose events are derived summaries, neither host work nor device work
DERIVED_PROCESSES = {"overlap analysis", "step trace", "ai core freq", "hbm", "llc", "npu mem",
                     "qos", "acc_pmu", "stars soc info", "stars chip trans", "sio", "ddr"}
HOST_ROLES = ("op", "annotation", "python", "runtime", "queue", "host")

PID_DEVICE_LABEL = re.compile(r"^\s*(?:GPU|NPU|TPU|XPU|MTIA|Device)\s*(\d+)?", re.I)
#: a process *named* like a device ("TPU 0", "gpu1"): tpudnn/DeepLink-style traces
_DEVICE_PROCESS_NAME = re.compile(r"^\s*(?:gpu|npu|tpu|xpu|mtia|device)\s*\d*\s*$", re.I)
DEVICE_PROCESS_NAME_NUM = re.compile(r"^\s*(?:gpu|npu|tpu|xpu|mtia|device)\s*(\d+)\s*$", re.I)

def per_unique(values: pd.Series | np.ndarray, fn) -> np.ndarray:
    """Apply a scalar function once per distinct value (categories, names, pids repeat a lot)."""
    codes, uniq = pd.factorize(pd.Series(values, dtype=object).astype(str), sort=False)
    mapped = np.array([fn(u) for u in uniq], dtype=object)
    return mapped[codes] if len(codes) else np.empty(0, object)


def role_category(cat: str) -> str:
    """First entry of a comma-separated category list, lower case (the role key)."""
    return cat.split(",")[0].strip().lower()


def event_role(ph: str, cat: str, pname: str, dev_label: bool, tname: str, name: str) -> str:
    """Role of one kind of event (see :func:`classify`); ``cat`` is the lower-case first category."""
    if ph in ("s", "t", "f"):
        return "flow"
    if ph == "C":
        return "counter"
    if ph in ("i", "I", "n"):
        return "memory" if name == "[memory]" or cat == "cpu_instant_event" else "instant"
    if ph != "X":
        return "other"
    if pname == "ascend hardware":
        # the process says device whatever the category (msinsight writes cpu_op there too);
        # Ascend Hardware also carries "Step Trace" lanes; only "Stream n" lanes are tasks
        return "device" if tname.startswith("stream") or tname == "" else "derived"
    if cat in OP_CATS:
        return "op"
    if cat in ANNOTATION_CATS:
        return "annotation"
    if cat in PYTHON_CATS:
        return "python"
    if cat in RUNTIME_CATS:
        return "runtime"
    if cat in QUEUE_CATS:
        return "queue"
    if cat in DEVICE_CATS:
        return "device"
    if cat in DEVICE_ANNOTATION_CATS:
        return "device_annotation"
    if cat == "trace":  # the Kineto window span
        return "derived"
    if pname in DERIVED_PROCESSES:
        return "derived"
    if pname in DEVICE_PROCESSES or dev_label or _DEVICE_PROCESS_NAME.match(pname):
        return "device"
    if pname == "cann":
        return "runtime"
    return "host"


def classify(data: TraceData) -> pd.Series:
    """Role of each event: op, annotation, python, runtime, queue, host, device,
    device_annotation, derived, memory, flow, counter, instant, other.

    Categories decide first (era-aware, case-insensitive, framework-traces.md §2.3); where they
    say nothing, the process does (Ascend/CANN process names, a "GPU n"/"NPU" label).  The
    decision is made once per distinct (phase, category, process, thread, name) combination.
    """
    ev = data.events
    tnames = {f"{p}\x1f{t}": v.lower() for (p, t), v in data.thread_names.items()}
    parts = {
        "ph": ev["ph"].astype(object).to_numpy(),
        "cat": per_unique(ev["cat"], role_category),
        "pname": per_unique(ev["pid"], lambda p: data.process_names.get(p, "").lower().strip()),
        "dev": per_unique(ev["pid"], lambda p: bool(PID_DEVICE_LABEL.match(
            data.process_labels.get(p, "")))),
        "tname": per_unique(ev["pid"].astype(str) + "\x1f" + ev["tid"].astype(str),
                            lambda k: tnames.get(k, "")),
        # only "[memory]" matters among names; keep the key small
        "name": np.where(ev["name"].astype(object).to_numpy() == "[memory]", "[memory]", ""),
    }
    key = np.zeros(len(ev), np.int64)
    for v in parts.values():
        codes, uniq = pd.factorize(pd.Series(v, dtype=object), sort=False)
        key = key * (len(uniq) + 1) + codes
    ukey, first, inv = np.unique(key, return_index=True, return_inverse=True)
    roles = np.array([event_role(*(parts[c][i] for c in ("ph", "cat", "pname", "dev", "tname", "name")))
                      for i in first], dtype=object)
    return pd.Series(roles[inv] if len(ev) else np.empty(0, object), index=ev.index)


def rank_of(data: TraceData) -> int | None:
    """Rank from distributedInfo, else from the file name (rank-N, rank_N, rankN)."""
    info = data.metadata.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), (int, float)):
        return int(info["rank"])
    m = re.search(r"rank[-_]?(\d+)", Path(data.path).name, re.I)
    return int(m.group(1)) if m else None
