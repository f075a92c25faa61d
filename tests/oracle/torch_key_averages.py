"""Expected operator tables of a Kineto trace, computed by torch's own code.

Run in a test-only environment with torch (never a dependency of reportgen)::

    python3 -m venv .venv-torch && .venv-torch/bin/pip install torch==2.13.0
    .venv-torch/bin/python tests/oracle/torch_key_averages.py ../shared/data/framework \\
        tests/data/torch_oracle

For every Kineto trace under the input folder it rebuilds torch ``FunctionEvent``s from the
JSON the way ``torch.autograd.profiler.profile._parse_kineto_results`` builds them from the
profiler's in-memory results, then runs torch's ``EventList._build_tree()`` and
``key_averages()`` (by name, by name + input shapes, by name + top 5 stack frames) and writes
one ``<trace path with / as __>.json`` holding the three tables and the totals.  Nothing of
reportgen is imported: the JSON is read with the stdlib, numbers as decimals (exact ns).

How JSON events map onto torch's events (the profiler's KinetoEvents), read from torch's
source (``_parse_kineto_results``, ``profiler_util``) and libkineto's JSON writer:

* CPU events (device type CPU): categories cpu_op/Operator, user_annotation, python_function,
  cuda_runtime/Runtime, cuda_driver, overhead and the other ``*_runtime`` ones.  id = the
  event's ``External id`` (runtime: its ``correlation``), linked id = 0 for framework events,
  ``External id`` for runtime calls.  Names torch filters (``_filter_name``) are dropped.
* device events (device type CUDA): kernel, gpu_memcpy, gpu_memset, cuda_sync,
  cuda_profiler_range, gpu_user_annotation (and the 2021 names Kernel/Memcpy/Memset); linked
  id = ``External id`` (2021 traces: the runtime call's ``external id`` via ``correlation``);
  gpu_user_annotation links to nothing.  Their durations become kernels of the framework
  event whose id is the linked id, and they are rows of their own.
* ``[memory]`` instants: counted into every CPU event whose [start, end] holds them (bounds
  inclusive, any thread); the ones inside none become top-level ``[memory]`` events.
* stack: the ``Call stack`` arg (";"-separated, innermost first), filtered as torch filters;
  without one, the enclosing python frames in torch's tree (:func:`python_frame_stacks`, the
  one rule that is ours, not torch's).
* not in the JSON, so left at torch's defaults: ``scope`` (backward stack copying does not
  run), ``is_async`` (False), node id (-1).
"""
from __future__ import annotations

import gzip
import json
import sys
from decimal import Decimal
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.autograd.profiler_util import (EventList, FunctionEvent, MemRecordsAcc,
                                          _filter_name, _filter_stack_entry, _rewrite_name)

CPU_CATS = {"cpu_op", "operator", "user_annotation", "python_function", "cuda_runtime",
            "runtime", "cuda_driver", "overhead", "mtia_runtime", "xpu_runtime",
            "privateuse1_runtime", "hip_runtime"}
FRONTEND_CATS = {"cpu_op", "operator", "user_annotation", "python_function", "overhead"}
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "cuda_sync",
               "cuda_profiler_range", "gpu_user_annotation"}
CPU_MEM_TYPES = {0, 2, 5}           # CPU, MKLDNN, IDEEP
DEVICE_MEM_TYPES = {1, 20, 6, 12}   # CUDA, PrivateUse1, HIP, XPU
STACK_N = 5
#: folders of the shared set that hold PyTorch/Kineto traces (Ascend, MindSpore and catapult
#: traces are not torch profiles)
KINETO_SOURCES = ("hta", "kineto-tb-plugin", "tracelens")


def _ns(v) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return int((Decimal(str(v).strip()) * 1000).to_integral_value())
    except ArithmeticError:
        return None


def _id(args: dict, *keys) -> int:
    for k in keys:
        v = args.get(k)
        if isinstance(v, (int, Decimal)) and not isinstance(v, bool):
            return int(v)
        if isinstance(v, str) and v.strip().isdigit():
            return int(v)
    return 0


def load(path: Path) -> list[dict] | None:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        obj = json.loads(raw, parse_float=Decimal)
    except ValueError:
        return None
    events = obj.get("traceEvents") if isinstance(obj, dict) else obj
    if not isinstance(events, list):
        return None
    events = [e for e in events if isinstance(e, dict)]
    cats = {str(e.get("cat", "")).split(",")[0].strip().lower() for e in events}
    return events if cats & (CPU_CATS | DEVICE_CATS) - {"python_function"} else None


def function_events(events: list[dict]) -> tuple[list[FunctionEvent], bool]:
    """torch FunctionEvents (and whether the trace has device events, torch's use_device)."""
    xs = []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = str(e.get("cat", "")).split(",")[0].strip().lower()
        if cat not in CPU_CATS and cat not in DEVICE_CATS:
            continue
        ts, dur = _ns(e.get("ts")), _ns(e.get("dur", 0))
        if ts is None or dur is None:
            continue
        xs.append((cat, e, ts, max(dur, 0)))
    mems = [(e, _ns(e.get("ts"))) for e in events
            if e.get("ph") in ("i", "I") and e.get("name") == "[memory]"]
    mems = [(e, t) for e, t in mems if t is not None]
    if not xs:
        return [], False
    base = min([t for _, _, t, _ in xs] + [t for _, t in mems])
    use_device = "cuda" if any(c in DEVICE_CATS for c, *_ in xs) else None

    class _Mem:   # the two methods MemRecordsAcc and the usage rules read
        def __init__(self, e, t):
            a = e.get("args") or {}
            self._t, self.bytes, self.dtype = t, int(a.get("Bytes", 0)), int(a.get("Device Type", 0))
            self.tid = e.get("tid")

        def start_ns(self):
            return self._t

    mem_records = [[_Mem(e, t), False] for e, t in mems]
    acc = MemRecordsAcc(mem_records)
    ext_of_corr = {}
    for cat, e, _, _ in xs:
        if cat in ("cuda_runtime", "runtime", "cuda_driver", "hip_runtime"):
            a = e.get("args") or {}
            ext_of_corr[_id(a, "correlation")] = _id(a, "External id", "external id")
    all_fe, frontend, corr_map = [], [], {}
    for cat, e, ts, dur in xs:
        name = str(e.get("name", ""))
        if _filter_name(name):
            continue
        a = e.get("args") or {}
        is_dev = cat in DEVICE_CATS
        cpu_mem = dev_mem = 0
        if not is_dev:
            for rec in acc.in_interval(ts, ts + dur):
                cpu_mem += rec[0].bytes if rec[0].dtype in CPU_MEM_TYPES else 0
                dev_mem += rec[0].bytes if rec[0].dtype in DEVICE_MEM_TYPES else 0
                rec[1] = True
        if is_dev:
            fid = _id(a, "correlation")
            linked = 0 if cat == "gpu_user_annotation" else (
                _id(a, "External id", "external id") or ext_of_corr.get(_id(a, "correlation"), 0))
        elif cat in FRONTEND_CATS:
            fid, linked = _id(a, "External id", "external id"), 0
        else:
            fid, linked = _id(a, "correlation"), _id(a, "External id", "external id")
        shapes = a.get("Input Dims", a.get("Input dims"))
        stack = a.get("Call stack")
        stack = [s for s in stack.split(";") if s and _filter_stack_entry(s)] \
            if isinstance(stack, str) else []
        fe = FunctionEvent(
            id=fid, name=_rewrite_name(name, with_wildcard=True), trace_name=name,
            thread=e.get("tid"), start_us=(ts - base) / 1000, end_us=(ts + dur - base) / 1000,
            input_shapes=_plain(shapes) if isinstance(shapes, list) else [],
            stack=stack, use_device=use_device, cpu_memory_usage=cpu_mem,
            device_memory_usage=dev_mem,
            device_type=DeviceType.CUDA if is_dev else DeviceType.CPU,
            is_user_annotation=cat in ("user_annotation", "gpu_user_annotation"),
            is_python_function=cat == "python_function")
        all_fe.append(fe)
        if linked > 0:
            corr_map.setdefault(linked, []).append(fe)
        else:
            frontend.append(fe)
    for fe in frontend:
        if fe.device_type == DeviceType.CPU and fe.id in corr_map:
            for f in corr_map[fe.id]:
                if f.device_type == DeviceType.CUDA:
                    fe.append_kernel(f.name, f.device_index,
                                     f.time_range.end - f.time_range.start)
                else:
                    f.thread = fe.thread
    for rec, used in mem_records:
        if not used:
            t = (rec.start_ns() - base) / 1000
            all_fe.append(FunctionEvent(
                id=0, name="[memory]", thread=rec.tid, start_us=t, end_us=t, input_shapes=[],
                stack=[], use_device=use_device,
                cpu_memory_usage=rec.bytes if rec.dtype in CPU_MEM_TYPES else 0,
                device_memory_usage=rec.bytes if rec.dtype in DEVICE_MEM_TYPES else 0))
    all_fe.sort(key=lambda f: [f.time_range.start, -f.time_range.end])
    return all_fe, use_device is not None


def _plain(v):
    """Shapes as torch holds them: lists of ints (decimals from the JSON become ints)."""
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


def python_frame_stacks(evs: EventList) -> None:
    """The one rule not from torch: a CPU event without a ``Call stack`` arg (traces of torch
    >= 1.10 record python frames as python_function events instead) gets as its stack the
    python frames enclosing it in torch's tree, innermost first, filtered as torch filters
    stacks: what ``with_stack=True`` recorded at the op's start."""
    for e in evs:
        if e.stack or e.is_python_function or e.device_type != DeviceType.CPU:
            continue
        frames, p = [], e.cpu_parent
        while p is not None:
            if p.is_python_function and _filter_stack_entry(p.name):
                frames.append(p.name)
            p = p.cpu_parent
        e.stack = frames


def table(evs: EventList, **group) -> list[list]:
    rows = []
    for a in evs.key_averages(**group):
        rows.append([a.key, "cpu" if a.device_type == DeviceType.CPU else "device",
                     int(bool(a.is_user_annotation)),
                     str(a.input_shapes) if group.get("group_by_input_shapes") else "",
                     " | ".join(a.stack) if group.get("group_by_stack_n") else "",
                     a.count, round(a.self_cpu_time_total, 3), round(a.cpu_time_total, 3),
                     round(a.self_device_time_total, 3), round(a.device_time_total, 3),
                     a.cpu_memory_usage, a.self_cpu_memory_usage, a.device_memory_usage,
                     a.self_device_memory_usage])
    rows.sort(key=lambda r: (r[0], r[1], r[2], r[3], r[4]))
    return rows


COLUMNS = ["name", "device_type", "is_user_annotation", "input_shapes", "stack", "calls",
           "self_cpu_us", "cpu_total_us", "self_device_us", "device_total_us", "cpu_mem",
           "self_cpu_mem", "device_mem", "self_device_mem"]


def oracle(path: Path) -> dict | None:
    events = load(path)
    if events is None:
        return None
    fes, has_device = function_events(events)
    if not fes:
        return None
    evs = EventList(fes, use_device="cuda" if has_device else None, profile_memory=True)
    evs._build_tree()
    python_frame_stacks(evs)
    return {
        "columns": COLUMNS,
        "by_name": table(evs),
        "by_shapes": table(evs, group_by_input_shapes=True),
        "by_stack": table(evs, group_by_stack_n=STACK_N),
        "self_cpu_time_total_us": round(sum(e.self_cpu_time_total for e in evs), 3),
        "self_device_time_total_us": round(sum(e.self_device_time_total for e in evs), 3),
        "events": len(evs),
    }


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for path in sorted(p for p in src.rglob("*") if p.is_file() and
                       (p.name.endswith(".json") or p.name.endswith(".json.gz"))):
        if src.name == "framework" and path.relative_to(src).parts[0] not in KINETO_SOURCES:
            continue
        result = oracle(path)
        if result is None:
            continue
        rel = path.relative_to(src).as_posix()
        result["trace"] = rel
        result["torch"] = torch.__version__
        name = rel.replace("/", "__").removesuffix(".gz").removesuffix(".json") + ".json.gz"
        text = json.dumps(result, separators=(",", ":")).encode()
        (out / name).write_bytes(gzip.compress(text, mtime=0))
        made.append((rel, len(result["by_name"])))
        print(f"{rel}: {len(result['by_name'])} rows", flush=True)
    print(f"{len(made)} traces")


if __name__ == "__main__":
    main()
