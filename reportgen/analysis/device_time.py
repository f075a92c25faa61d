"""Where a framework trace's device time goes (docs/metrics.md "Device time of framework traces").

Per device, every instant of its span (first to last device slice, waits included) is counted
once: **compute** (a compute slice runs), else **communication** (a collective runs that no
compute overlaps: exposed), else **memory** (a copy or set runs), else **idle** split by cause:

* **sync**: a device wait slice (``cuda_sync``, Ascend WAIT tasks) or a host synchronising call
  (``*Synchronize``, a blocking ``cudaMemcpy``) of the device's host is open;
* **launch**: the next device slice's launch call had started and was still running when the
  device ran dry (kernels queued back to back, each shorter than its launch);
* **host**: before the next device slice's launch call started (the host had not issued it);
* **other**: the rest (next slice queued long before: a dependency; no launch known; the tail).

The same pieces measured inside each step's window give the per-step rows. Ascend / MindSpore
ranks whose vendor wrote ``step_trace_time`` take their figures from it (its Computing,
Communication(Not Overlapped), Free: the vendor's own rule, idle not split by cause).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.analysis import piece_sets as ps
from reportgen.analysis.steps import COMM_PATTERN, MEMORY_PATTERN
from reportgen.model import Profile

#: the exclusive parts of a device's span, in counting priority (they add up to the span)
PARTS = ("compute_ns", "comm_ns", "memory_ns", "idle_host_ns", "idle_launch_ns", "idle_sync_ns",
         "idle_other_ns")
#: summary.json ``device_time`` keys per device (issue 24): the parts, then the overlap figures
KEYS = PARTS + ("exposed_comm_ns", "comm_total_ns")
IDLE_PARTS = PARTS[3:]
#: host runtime calls that block until the device is done
SYNC_CALL_PATTERN = r"(?i)synchroni[sz]e|^(?:cuda|hip|aclrt)Memcpy$|^aclrtSynchronize"
#: device slice classes (func_type / name / Ascend core type)
COMM_TYPES = r"(?i)hccl|nccl|rccl|comm"


@dataclass
class DeviceTime:
    """``devices``: one row per device: device, source, start_ns, end_ns, span_ns, then KEYS.
    ``steps``: the same parts per (device, step) window (step None: the device has no steps)."""

    devices: pd.DataFrame
    steps: pd.DataFrame


def matches(values: pd.Series, pattern: str) -> np.ndarray:
    """Whether each value (as text) matches ``pattern``, the regex run once per distinct value
    (names repeat: a trace of 200k slices has a few hundred)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes, uniques = values.cat.codes.to_numpy(), values.cat.categories
    else:
        codes, uniques = pd.factorize(values.astype(object), use_na_sentinel=True)
    hit = pd.Series(pd.Index(uniques).astype(str)).str.contains(pattern).to_numpy(bool)
    return np.append(hit, False)[codes]          # code -1 (missing) -> the appended False


def slice_classes(cmds: pd.DataFrame) -> dict[str, np.ndarray]:
    """Boolean masks over the commands: work (not a wait or marker), comm, memory, compute, wait."""
    work = ~cmds["is_sys"].to_numpy(bool)
    names, ftype = cmds["func_name"], cmds["func_type"]
    comm = matches(names, COMM_PATTERN) | matches(ftype, COMM_TYPES)
    if "core_type" in cmds.columns:
        comm |= matches(cmds["core_type"], r"(?i)^hccl$")
    memory = (matches(names, MEMORY_PATTERN) | matches(ftype, MEMORY_PATTERN)) & ~comm
    wait = cmds["is_sys"].to_numpy(bool) & cmds["sys_wait"].to_numpy(bool)
    return {"work": work, "comm": comm & work, "memory": memory & work,
            "compute": work & ~comm & ~memory, "wait": wait}


def launch_times(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """Per command: start and end of the host slice that launched it (-1 when unknown)."""
    cmds, host = profile.commands, profile.host
    ls = np.full(len(cmds), -1, np.int64)
    le = ls.copy()
    if "launch_row" in cmds.columns and len(host):
        lr = cmds["launch_row"].to_numpy(np.int64)
        ok = (lr >= 0) & (lr < len(host))
        ls[ok] = host["start_ns"].to_numpy(np.int64)[lr[ok]]
        le[ok] = host["end_ns"].to_numpy(np.int64)[lr[ok]]
    return ls, le


def host_rank_of_devices(profile: Profile) -> dict[int, int | None]:
    """Which host rank drives each device: the rank of most of its launches; a trace of one
    host rank drives all its devices; None when unknown."""
    cmds, host = profile.commands, profile.host
    devices = sorted(set(cmds["core"].astype(int))) if len(cmds) else []
    ranks = host["rank"].astype(int) if "rank" in host.columns and len(host) else pd.Series(dtype=int)
    out: dict[int, int | None] = {d: None for d in devices}
    if len(ranks.unique()) == 1:
        return {d: int(ranks.iloc[0]) for d in devices}
    if "launch_row" in cmds.columns and len(host):
        lr = cmds["launch_row"].to_numpy(np.int64)
        ok = lr >= 0
        pairs = pd.DataFrame({"d": cmds["core"].to_numpy()[ok], "r": ranks.to_numpy()[lr[ok]]})
        for d, r in pairs.groupby("d")["r"].agg(lambda v: v.mode().iloc[0]).items():
            out[int(d)] = int(r)
    return out


def _gap_causes(work: ps.Pieces, idle: ps.Pieces, first_ls: np.ndarray, first_le: np.ndarray
                ) -> tuple[ps.Pieces, ps.Pieces]:
    """(host, launch) pieces inside the idle gaps, from the launch call of the slice that ends
    each gap (``first_ls/le`` per work piece: its first slice's launch, -1 unknown)."""
    a, b = idle
    if len(work[0]) == 0:
        return ps.EMPTY, ps.EMPTY
    j = np.minimum(np.searchsorted(work[0], b), len(work[0]) - 1)
    has = work[0][j] == b                    # a work piece starts where the gap ends
    ls, le = np.where(has, first_ls[j], -1), np.where(has, first_le[j], -1)
    known = ls >= 0
    cut = np.clip(ls, a, b)
    host = ps.pieces(a[known], cut[known])
    running = known & (le >= a)            # the launch call had not returned when the device ran dry
    launch = ps.pieces(cut[running], b[running])
    return host, launch


def _device_pieces(s, e, cls, ls, le, sync_calls: ps.Pieces) -> tuple[int, int, dict]:
    """The exclusive piece sets of one device (PARTS) plus comm_total and the span."""
    span_rows = cls["work"] | cls["wait"]
    lo, hi = int(s[span_rows].min()), int(e[span_rows].max())
    compute = ps.pieces(s[cls["compute"]], e[cls["compute"]])
    comm_all = ps.pieces(s[cls["comm"]], e[cls["comm"]])
    memory = ps.pieces(s[cls["memory"]], e[cls["memory"]])
    exposed = ps.subtract(comm_all, compute)
    memory_only = ps.subtract(memory, ps.union(compute, comm_all))
    w = cls["work"]
    work = ps.pieces(s[w], e[w])
    idle = ps.complement(work, lo, hi)
    # each work piece's first slice (earliest start, then earliest launch) names the launch
    ws, wls, wle = s[w], ls[w], le[w]
    order = np.lexsort((np.where(wls >= 0, wls, np.iinfo(np.int64).max), ws))
    ws, wls, wle = ws[order], wls[order], wle[order]
    at = np.searchsorted(ws, work[0], side="left")
    host, launch = _gap_causes(work, idle, wls[at], wle[at])
    waits = ps.union(ps.pieces(s[cls["wait"]], e[cls["wait"]]), sync_calls)
    sync = ps.intersect(idle, waits)
    rest = ps.subtract(idle, waits)
    idle_host = ps.intersect(rest, host)
    idle_launch = ps.intersect(rest, launch)
    other = ps.subtract(ps.subtract(rest, host), launch)
    parts = {"compute_ns": compute, "comm_ns": exposed, "memory_ns": memory_only,
             "idle_host_ns": idle_host, "idle_launch_ns": idle_launch, "idle_sync_ns": sync,
             "idle_other_ns": other, "comm_total_ns": comm_all}
    return lo, hi, parts


def _sync_calls(profile: Profile, rank: int | None) -> ps.Pieces:
    host = profile.host
    if host.empty or rank is None or "role" not in host.columns:
        return ps.EMPTY
    m = host["role"].to_numpy(object) == "runtime"
    m[m] = matches(host["name"][m], SYNC_CALL_PATTERN)
    if "rank" in host.columns:
        m &= host["rank"].astype(int).to_numpy() == rank
    return ps.pieces(host["start_ns"].to_numpy(np.int64)[m], host["end_ns"].to_numpy(np.int64)[m])


def _step_windows(profile: Profile, rank: int | None, lo: int, hi: int) -> pd.DataFrame:
    """The device windows of a rank's steps: from the first device start of step i to that of
    step i+1 (the last to its device end), so the idle between steps counts for the step that
    ends with it; clipped to the device span."""
    steps = profile.tables.get("Steps")          # analysis.steps.step_table, attached before
    if steps is None or "Device start (ns)" not in steps.columns or rank is None:
        return pd.DataFrame(columns=["step", "lo", "hi"])
    st = steps[(steps["Rank"].astype(int) == rank) & steps["Device start (ns)"].notna()]
    if st.empty:                        # steps that launched nothing on the device
        return pd.DataFrame(columns=["step", "lo", "hi"])
    st = st.sort_values("Device start (ns)", kind="stable")
    start = st["Device start (ns)"].to_numpy(np.int64)
    end = start + np.rint(st["Device duration (us)"].to_numpy(float) * 1e3).astype(np.int64)
    nxt = np.append(start[1:], end[-1])
    return pd.DataFrame({"step": st["Step"].to_numpy(np.int64), "lo": np.clip(start, lo, hi),
                         "hi": np.clip(np.maximum(nxt, end), lo, hi)})


def device_time(profile: Profile) -> DeviceTime:
    """The device-time breakdown of every device (trace slices) and of vendor step tables."""
    cmds = profile.commands
    dev_rows, step_rows = [], []
    if len(cmds):
        cls = slice_classes(cmds)
        ls, le = launch_times(profile)
        core = cmds["core"].astype(np.int64).to_numpy()
        s, e = cmds["start_ns"].to_numpy(np.int64), cmds["end_ns"].to_numpy(np.int64)
        ranks = host_rank_of_devices(profile)
        for d in sorted(set(core.tolist())):
            on = core == d
            sub = {k: v[on] for k, v in cls.items()}
            if not (sub["work"] | sub["wait"]).any():
                continue
            lo, hi, parts = _device_pieces(s[on], e[on], sub, ls[on], le[on],
                                           _sync_calls(profile, ranks.get(d)))
            row = {"device": d, "source": "trace", "start_ns": lo, "end_ns": hi, "span_ns": hi - lo}
            row.update({k: ps.length(p) for k, p in parts.items()})
            row["exposed_comm_ns"] = row["comm_ns"]
            dev_rows.append(row)
            win = _step_windows(profile, ranks.get(d), lo, hi)
            if win.empty:
                win = pd.DataFrame({"step": [None], "lo": [lo], "hi": [hi]})
            wlo, whi = win["lo"].to_numpy(np.int64), win["hi"].to_numpy(np.int64)
            figures = {k: ps.length_in(p, wlo, whi) for k, p in parts.items()}
            for i, step in enumerate(win["step"].tolist()):
                r = {"device": d, "step": step, "start_ns": int(wlo[i]), "span_ns": int(whi[i] - wlo[i])}
                r.update({k: int(v[i]) for k, v in figures.items()})
                r["exposed_comm_ns"] = r["comm_ns"]
                step_rows.append(r)
    vendor_dev, vendor_steps = _vendor_step_rows(profile)
    if vendor_dev:
        covered_devices = {r["device"] for r in vendor_dev}
        dev_rows = [r for r in dev_rows if r["device"] not in covered_devices] + vendor_dev
        step_rows = [r for r in step_rows if r["device"] not in covered_devices] + vendor_steps
    cols = ["device", "source", "start_ns", "end_ns", "span_ns", *KEYS]
    devices = pd.DataFrame(dev_rows, columns=cols).sort_values("device", kind="stable")
    steps = pd.DataFrame(step_rows, columns=["device", "step", "start_ns", "span_ns", *KEYS])
    return DeviceTime(devices.reset_index(drop=True), steps)


#: step_trace_time.csv columns (µs) -> our parts (the vendor's idle is "Free", cause unknown)
VENDOR_COLUMNS = {"compute_ns": "Computing", "comm_ns": "Communication(Not Overlapped)",
                  "idle_other_ns": "Free", "comm_total_ns": "Communication"}


def _vendor_step_rows(profile: Profile) -> tuple[list[dict], list[dict]]:
    """Per device and step from each rank's step_trace_time table (Ascend / MindSpore)."""
    devs, steps = [], []
    for rank, vendor in sorted(profile.vendor_outputs.items()):
        t = vendor.tables.get("Steps")
        if t is None or t.empty or not all(c in t.columns for c in VENDOR_COLUMNS.values()):
            continue
        t = t[t["Type"].astype(str).str.lower() == "rank"] if "Type" in t.columns else t
        device = (pd.to_numeric(t["Device_id"], errors="coerce").fillna(rank).astype(int)
                  if "Device_id" in t.columns else pd.Series(rank, index=t.index))
        for d, rows in t.groupby(device.to_numpy(), sort=True):
            per = pd.DataFrame({k: np.rint(pd.to_numeric(rows[c], errors="coerce").fillna(0)
                                           .to_numpy(float) * 1e3).astype(np.int64)
                                for k, c in VENDOR_COLUMNS.items()})
            for k in PARTS:
                if k not in per.columns:
                    per[k] = 0
            per["exposed_comm_ns"] = per["comm_ns"]
            per["span_ns"] = per[list(PARTS)].sum(axis=1)
            per["step"] = rows["Step"].to_numpy() if "Step" in rows.columns else None
            for r in per.to_dict("records"):
                steps.append({"device": int(d), "start_ns": None, **r})
            total = {k: int(per[k].sum()) for k in (*KEYS, "span_ns")}
            devs.append({"device": int(d), "source": "step_trace_time", "start_ns": None,
                         "end_ns": None, **total})
    return devs, steps
