"""What a Kineto trace states about its devices: the top-level ``deviceProperties`` list (one
object per device: ``id``, ``name``, ``totalGlobalMem`` in bytes, ...).  The memory each device
holds goes to ``meta.arch["device_memory_bytes"]`` (device -> bytes), which the framework
diagnosis compares with the memory peak (rule ``fw_memory_capacity``)."""
from __future__ import annotations

from reportgen.parsers.chrome.events import TraceData


def device_memory(data: TraceData) -> dict[int, int]:
    """The trace's device id -> totalGlobalMem (bytes), for entries with a whole id >= 0 and a
    positive whole size; anything else in the list is left out."""
    props = data.metadata.get("deviceProperties")
    out: dict[int, int] = {}
    for p in props if isinstance(props, list) else []:
        if not isinstance(p, dict):
            continue
        dev, mem = p.get("id"), p.get("totalGlobalMem")
        if type(dev) is int and dev >= 0 and type(mem) is int and mem > 0:
            out[dev] = mem
    return out


def capacities(traces: list[TraceData], cores: list[int | None]) -> dict[int, int]:
    """Device memory per report device (``commands.core``).  A trace read for its own device
    ids (core None) keeps them; a trace placed on one core (a rank) gives it the size its
    devices share (a node of one kind of device; with mixed sizes the rank's device is unknown
    here, so none)."""
    out: dict[int, int] = {}
    for data, core in zip(traces, cores):
        mem = device_memory(data)
        if core is None:
            out.update(mem)
        elif len(set(mem.values())) == 1:
            out[int(core)] = next(iter(mem.values()))
    return out
