"""The dependency graph of a PMU capture: one node per command, the edges that explain its start
(docs/metrics.md "Dependency graph and critical path").

Edges (into a command's start):

* **lane** -- every engine of a core runs its queue in order (CDMA: each port): the previous
  command of the same lane;
* **dependency** -- a TIU descriptor's ``cmd_id_dep`` names a GDMA command and a GDMA
  descriptor's a TIU command (:func:`descriptor_dependencies`, the one rule every output uses);
* **launch** -- kernel calls on a core run one after another: the first command of each lane in
  a call waits for the previous call on the core (its last-ending TIU/GDMA/SDMA command);
* **barrier** -- a TIU system wait ends when the last core arrives (:func:`barrier_groups`).

The *binding* predecessor of a command is the in-edge whose predecessor ended last (ties: a
dependency before a launch before the lane); the command's *gap* is its start minus that end.
A barrier wait's end is bound by its barrier's last arrival.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from reportgen.model import ENGINES

#: waits on different cores whose ends lie within this of each other form one barrier
BARRIER_TOLERANCE_NS = 1000
#: edge kinds (``bind_kind`` codes); 4 is the path walk's fallback (nothing in the graph)
EDGE_KINDS = ("none", "lane", "dependency", "launch", "unexplained")
LANE, DEP, LAUNCH = 1, 2, 3


@dataclass
class DepGraph:
    """Per command (rows of ``Profile.commands``, positional) arrays and the barriers."""

    start: np.ndarray
    end: np.ndarray
    core: np.ndarray          # int64
    engine: np.ndarray        # int64 index into ENGINES (-1 other)
    port: np.ndarray          # int64, -1 when none
    is_sys: np.ndarray
    sys_wait: np.ndarray
    lane_pred: np.ndarray     # -1: first of its lane
    dep_src: np.ndarray       # -1: no resolved descriptor dependency
    launch_pred: np.ndarray   # -1: no launch edge
    barrier: np.ndarray       # barrier index of a barrier wait, else -1
    release_row: np.ndarray   # per barrier: the wait of the core that arrived last
    release_cmd: np.ndarray   # per barrier: the command whose end (or wait whose start) released it
    release_kind: np.ndarray  # per barrier: 1 release_cmd's end released it, 0 its start (a wait)
    release_ns: np.ndarray    # per barrier: the release (the last arrival)
    arrive_group: np.ndarray  # per command: the barrier whose arrival its end sets (-1 none)
    bind: np.ndarray          # binding predecessor, -1 none
    bind_kind: np.ndarray     # int8: EDGE_KINDS code
    gap: np.ndarray           # start - binding predecessor's end (0 without one)
    lat: np.ndarray           # barrier waits: end - release; others 0
    fallback: np.ndarray      # latest-ending command of the core before the start (path walk)
    has_dependency_ids: bool  # mode 2 / bmodel descriptors resolved at least one dependency
    has_launch: bool          # kernel scopes known (launch edges present)
    by_core_end: tuple | None = None   # core_end_order (prev_on_core's sort, shared)

    @property
    def n(self) -> int:
        return len(self.start)

    def for_outputs(self) -> "DepGraph":
        """This graph with only what the outputs read (dependency sources, barriers, their
        releases, the flags; start / end / system flags are views of ``Profile.commands``): the
        other per-command arrays are working state of the analysis, dropped before the writers
        fork (analysis/diagnosis.py)."""
        return replace(self, **dict.fromkeys(_WORKING, None))

    def for_retiming(self) -> "DepGraph":
        """This graph without what only the path walk and the waits read (binding edges,
        fallbacks, the sorted core ends) nor the CDMA ports: what the re-timing layout
        (whatif.Retimer) and the scenarios read."""
        return replace(self, **dict.fromkeys(_WALKED, None))

    def in_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of every command's predecessors (lane, dependency, launch): (indptr, preds)."""
        rows = np.concatenate([np.flatnonzero(a >= 0) for a in (self.lane_pred, self.dep_src,
                                                               self.launch_pred)])
        preds = np.concatenate([a[a >= 0] for a in (self.lane_pred, self.dep_src, self.launch_pred)])
        o = np.argsort(rows, kind="stable")
        indptr = np.zeros(self.n + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=self.n), out=indptr[1:])
        return indptr, preds[o].astype(np.int64)


#: DepGraph fields only the path walk and the waits read (None after :meth:`DepGraph.for_retiming`)
_WALKED = ("port", "bind", "bind_kind", "fallback", "by_core_end")
#: DepGraph fields only the analysis reads (None after :meth:`DepGraph.for_outputs`)
_WORKING = ("core", "engine", "port", "lane_pred", "launch_pred", "arrive_group", "bind", "bind_kind",
            "gap", "lat", "fallback", "by_core_end")


def label_codes(col: pd.Series) -> tuple[np.ndarray, list[str]]:
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(np.int64), [str(x) for x in col.cat.categories]
    codes, uniq = pd.factorize(col.astype(object))
    return codes.astype(np.int64), [str(x) for x in uniq]


def labels_of(c: pd.DataFrame, col: str, rows: np.ndarray, missing=None) -> np.ndarray:
    """A label column's values at ``rows`` as an object array (unknown -> ``missing``), looked up
    through its codes (no per-command Python)."""
    if col not in c:
        return np.full(len(rows), missing, object)
    s = c[col]
    if isinstance(s.dtype, pd.CategoricalDtype):        # the codes of these rows only
        k = s.cat.codes.to_numpy()[rows].astype(np.int64)
        names = [str(x) for x in s.cat.categories]
    else:
        codes, names = label_codes(s)
        k = codes[rows]
    table = np.array(list(names) + [missing], object)
    return table[np.where(k >= 0, k, len(names))]


def engine_index(col: pd.Series) -> np.ndarray:
    """Per row: index of the engine in ENGINES, -1 for anything else."""
    codes, names = label_codes(col)
    table = np.array([ENGINES.index(x) if x in ENGINES else -1 for x in names] + [-1], np.int64)
    return table[codes]


def descriptor_dependencies(c: pd.DataFrame, eng: np.ndarray | None = None,
                            core: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(source row, dependent row) of every resolvable ``cmd_id_dep`` between TIU and GDMA.

    Ids restart with every kernel launch, so the source is the *latest* command of the other
    engine on the same core with ``cmd_id == dep_cmd_id`` that started no later than the
    dependent (``dep_cmd_id`` 0 means none); of two candidates starting together, the later
    row (in sheet order) wins.  On the golden dumps this resolves every dependency.
    ``eng`` / ``core``: :func:`engine_index` and the cores as int64, when already at hand.
    """
    none = np.zeros(0, np.int64), np.zeros(0, np.int64)
    if "dep_cmd_id" not in c or not c["dep_cmd_id"].notna().any():
        return none
    eng = engine_index(c["engine"]) if eng is None else eng
    core = c["core"].to_numpy(np.int64) if core is None else core
    start = c["start_ns"].to_numpy(np.int64)
    cmd_id = c["cmd_id"].to_numpy(np.int64)
    dep = _int_column(c, "dep_cmd_id", 0)
    src_rows, dst_rows = [], []
    for target, source in ((0, 1), (1, 0)):               # TIU waits for GDMA and back
        dst = np.flatnonzero((eng == target) & (dep > 0))
        dst = dst[np.argsort(start[dst], kind="stable")]
        src = np.flatnonzero(eng == source)
        if not len(dst) or not len(src):
            continue
        s, d = latest_match(core[src], cmd_id[src], start[src], core[dst], dep[dst], start[dst])
        src_rows.append(src[s])
        dst_rows.append(dst[d])
    if not src_rows:
        return none
    return np.concatenate(src_rows), np.concatenate(dst_rows)


def latest_match(s_core, s_id, s_time, q_core, q_id, q_time) -> tuple[np.ndarray, np.ndarray]:
    """(source index, query index) of every query with a source of the same (core, id) at or
    before its time: the latest such source, of equal times the last one (the rule of
    ``pandas.merge_asof(direction="backward")`` on sources in time order); queries in order.

    One sorted key per source, (core, id) pair then time, and one binary search per query."""
    core, ids = np.concatenate([s_core, q_core]), np.concatenate([s_id, q_id])
    width = int(ids.max()) + 1
    npairs = (int(core.max()) + 1) * width
    if ids.min() >= 0 and core.min() >= 0 and npairs < 1 << 32:
        pair = core * width + ids
    else:                                              # odd ids: dense codes of the pairs
        _, pair = np.unique(np.stack([core, ids]), axis=1, return_inverse=True)
        pair, npairs = pair.reshape(-1), len(core)
    s_pair, q_pair = pair[:len(s_core)], pair[len(s_core):]
    lo = min(int(s_time.min()), int(q_time.min()))
    stride = max(int(s_time.max()), int(q_time.max())) - lo + 1
    if npairs * stride < 1 << 62:
        s_t, q_t = s_time - lo, q_time - lo
    else:      # times as ranks among the source times (at or before: rank at most the query's)
        times = np.sort(s_time)
        stride = len(times)
        s_t = np.searchsorted(times, s_time, side="left")
        q_t = np.searchsorted(times, q_time, side="right") - 1
    # sources stably by pair (a radix sort on small codes): in time order inside each pair
    # when every queue is, otherwise sorted again by the whole key (stable: equal keys by index)
    order = np.argsort(s_pair.astype(np.uint16) if npairs <= 1 << 16 else s_pair, kind="stable")
    key = s_pair[order] * stride + s_t[order]
    if (key[1:] < key[:-1]).any():
        again = np.argsort(key, kind="stable")
        order, key = order[again], key[again]
    q_key = q_pair * stride + q_t
    by_key = np.argsort(q_key, kind="stable")        # searches in key order read memory in order
    pos = np.empty(len(q_key), np.int64)
    pos[by_key] = np.searchsorted(key, q_key[by_key], side="right") - 1
    hit = order[np.maximum(pos, 0)]
    ok = (q_t >= 0) & (pos >= 0) & (s_pair[hit] == q_pair)
    return hit[ok], np.flatnonzero(ok)


def _lane_pred(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per row: the previous row of its lane in (start, end, row) order, -1 for the first."""
    # a queue's rows come in time order: a stable sort by lane (timsort on long runs) is then
    # already the (lane, start, end) order, and the three-key sort is only needed when it is not
    o = np.argsort(lane, kind="stable")
    s, e = start[o], end[o]
    same = lane[o][1:] == lane[o][:-1]
    if (same & ((s[1:] < s[:-1]) | ((s[1:] == s[:-1]) & (e[1:] < e[:-1])))).any():
        o = np.lexsort((end, start, lane))
        same = lane[o][1:] == lane[o][:-1]
    pred = np.full(len(lane), -1, np.int64)
    pred[o[1:][same]] = o[:-1][same]
    return pred


def _launch_pred(core, engine, scope, lane_pred, start, end) -> np.ndarray:
    """First command of each lane in a kernel call -> the previous call's last-ending
    TIU/GDMA/SDMA command on the same core."""
    n = len(core)
    out = np.full(n, -1, np.int64)
    known = scope >= 0
    if not known.any():
        return out
    rows = np.flatnonzero(known)
    low = np.iinfo(np.int64).min
    # the calls: (core, scope) groups, their rows together in row order
    key = core[rows] * (1 << 32) + scope[rows]
    o = np.argsort(key, kind="stable")
    new_call = np.concatenate([[True], key[o][1:] != key[o][:-1]])
    bounds = np.flatnonzero(new_call)
    call_at = np.cumsum(new_call) - 1                     # call of each position of o
    call_core = core[rows][o[bounds]]
    call_start = np.minimum.reduceat(start[rows][o], bounds)
    e = np.where(engine[rows] <= 2, end[rows], low)[o]
    call_end = np.maximum.reduceat(e, bounds)
    reach = np.flatnonzero(e == call_end[call_at])        # the first row reaching the call's end
    reach = reach[np.concatenate([[True], call_at[reach][1:] != call_at[reach][:-1]])]
    call_last = rows[o[reach]]
    # calls of a core in start order (ties: first seen first); each one's previous call
    t = np.lexsort((o[bounds], call_start, call_core))
    ok = (call_core[t][1:] == call_core[t][:-1]) & (call_end[t][:-1] > low)
    prev_call = np.full(len(bounds), -1, np.int64)
    prev_call[t[1:][ok]] = call_last[t[:-1][ok]]
    call_of = np.full(n, -1, np.int64)
    call_of[rows[o]] = call_at
    lp = lane_pred
    is_first = known & ((lp < 0) | (scope[np.maximum(lp, 0)] != scope))
    cand = np.flatnonzero(is_first)
    out[cand] = prev_call[call_of[cand]]
    # an edge must point back in time (a previous call ending after this start is no launch)
    bad = (out >= 0) & (end[np.maximum(out, 0)] > start)
    out[bad] = -1
    return out


def barrier_groups(core, engine, sys_wait, start, end, tol: int = BARRIER_TOLERANCE_NS, order=None):
    """Barrier index per command (-1: not a barrier wait) and, per barrier, how it was released.

    The rule: TIU system waits sorted by end; a wait joins the previous one's group when it ends
    within ``tol`` ns of it.  A group is a barrier when it spans two cores or more.  A core
    *arrives* when its wait has started and its last command (TIU/GDMA/SDMA, and CDMA it
    submitted) before the barrier's first end has ended (the TIU queue reaches the wait before
    the core's stores finish); the last core to arrive released the barrier.  Returns
    (barrier, release_row, release_cmd, release_kind, release_ns, arrive_group); see
    :class:`DepGraph`.  ``order``: :func:`core_end_order` (computed when not given).
    """
    n = len(core)
    barrier = np.full(n, -1, np.int64)
    arrive_group = np.full(n, -1, np.int64)
    none = (barrier, *(np.zeros(0, np.int64) for _ in range(4)), arrive_group)
    rows = np.flatnonzero(sys_wait & (engine == 0))
    if len(rows) < 2:
        return none
    rows = rows[np.argsort(end[rows], kind="stable")]
    grp = np.concatenate([[0], np.cumsum(np.diff(end[rows]) > tol)])
    t = pd.DataFrame({"grp": grp, "core": core[rows], "start": start[rows], "row": rows})
    ncores = t.groupby("grp")["core"].nunique()
    t = t[t["grp"].map(ncores).to_numpy() >= 2]
    if t.empty:
        return none
    gid, _ = pd.factorize(t["grp"])
    w = t["row"].to_numpy(np.int64)
    barrier[w] = gid
    first_end = np.full(gid.max() + 1, np.iinfo(np.int64).max)
    np.minimum.at(first_end, gid, end[w])
    # the core's last command before the barrier's first end, CDMA transfers it submitted
    # included (an all-reduce's barrier waits for them); waits of barriers left out
    cand_engine = np.where(barrier >= 0, 9, np.where(engine == 3, 2, engine))
    last = prev_on_core(core, cand_engine, start, end, w, at=first_end[gid], order=order)
    by_work = (last >= 0) & (end[np.maximum(last, 0)] > start[w])
    arrival = np.where(by_work, end[np.maximum(last, 0)], start[w])
    t = pd.DataFrame({"gid": gid, "arrival": arrival, "k": np.arange(len(w))})
    top = t.loc[t.groupby("gid")["arrival"].idxmax()].sort_values("gid")["k"].to_numpy()
    release_row = w[top]
    release_kind = by_work[top].astype(np.int64)
    release_cmd = np.where(by_work[top], last[top], w[top])
    arrive_group[last[by_work]] = gid[by_work]
    return barrier, release_row, release_cmd, release_kind, arrival[top].astype(np.int64), arrive_group


def core_end_order(core: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every row stably sorted by (core, end), and that key in this order: the one sort
    :func:`prev_on_core` needs, shared by its calls (``DepGraph.by_core_end``)."""
    key = core * (1 << 40) + end
    order = np.argsort(key, kind="stable")
    return order, key[order]


def prev_on_core(core, engine, start, end, query=None, at=None, order=None) -> np.ndarray:
    """Per query row (default: every row): the latest-ending TIU/GDMA/SDMA command (``engine``
    0..2; pass another code to leave a command out) of the same core that ended by its start
    (or by ``at``, one time per query row); -1 when none.  ``order``: :func:`core_end_order`
    of these arrays (computed when not given)."""
    n = len(core)
    q = np.arange(n) if query is None else np.asarray(query, np.int64)
    out = np.full(len(q), -1, np.int64)
    order, key = core_end_order(core, end) if order is None else order
    cand = engine[order] <= 2                     # the candidates, in (core, end, row) order
    sorted_rows, sorted_key = order[cand], key[cand]
    if not len(sorted_rows) or not len(q):
        return out
    when = start[q] if at is None else np.asarray(at, np.int64)
    pos = np.searchsorted(sorted_key, core[q] * (1 << 40) + when, side="right") - 1
    hit = sorted_rows[np.maximum(pos, 0)]
    ok = (pos >= 0) & (core[hit] == core[q]) & (hit != q)
    out[ok] = hit[ok]
    return out


def last_work_engine(g: "DepGraph", rows: np.ndarray) -> np.ndarray:
    """Per row: the engine of its core's last *work* command that ended by its start (which
    engine finished last before it); its own engine when none did."""
    prev = prev_on_core(g.core, np.where(g.is_sys, 9, g.engine), g.start, g.end, rows,
                        order=g.by_core_end)
    return np.where(prev >= 0, g.engine[np.maximum(prev, 0)], g.engine[rows])


def _int_column(c: pd.DataFrame, col: str, missing: int) -> np.ndarray:
    """A nullable integer column as int64, ``missing`` for <NA> (other dtypes through Float64,
    as before: one temporary instead of three for the model's own Int dtypes)."""
    s = c[col]
    if pd.api.types.is_integer_dtype(s.dtype):
        return s.to_numpy(np.int64, na_value=missing)
    return s.astype("Float64").fillna(missing).astype("int64").to_numpy()


def build_graph(c: pd.DataFrame) -> DepGraph:
    """The graph of ``Profile.commands`` (PMU captures); whole-array work only.  Temporaries
    are released as soon as they are used: the graph is built beside the other half of the
    diagnosis (parallel.Beside), at the analysis' peak of memory."""
    # contiguous arrays: one machine-code signature for the compiled passes (analysis/retime.py)
    start = np.ascontiguousarray(c["start_ns"].to_numpy(np.int64))
    end = np.ascontiguousarray(c["end_ns"].to_numpy(np.int64))
    core = np.ascontiguousarray(c["core"].to_numpy(np.int64))
    engine = np.ascontiguousarray(engine_index(c["engine"]))
    port = _int_column(c, "port", -1)
    is_sys = c["is_sys"].to_numpy(bool)
    sys_wait = c["sys_wait"].to_numpy(bool)
    lane = np.where(engine == 3, (1 << 20) + port, core) * 8 + np.maximum(engine, 0)
    lane_pred = _lane_pred(lane, start, end)
    del lane
    n = len(c)
    dep_src = np.full(n, -1, np.int64)
    src, dst = descriptor_dependencies(c, engine, core)
    dep_src[dst] = src
    has_dependency_ids = bool(len(src))
    del src, dst
    scope = _int_column(c, "func_scope", -1) if "func_scope" in c else np.full(n, -1, np.int64)
    launch_pred = _launch_pred(core, engine, scope, lane_pred, start, end)
    del scope
    by_core_end = core_end_order(core, end)
    barrier, release_row, release_cmd, release_kind, release_ns, arrive_group = barrier_groups(
        core, engine, sys_wait, start, end, order=by_core_end)
    # binding predecessor: the latest-ending in-edge (ties: dependency, launch, lane)
    lo = np.iinfo(np.int64).min

    def end_of(p):                                  # its predecessor's end, lo without one
        e = end[np.maximum(p, 0)]
        e[p < 0] = lo
        return e

    e_dep, e_launch = end_of(dep_src), end_of(launch_pred)
    best = np.maximum(e_dep, e_launch)
    np.maximum(best, end_of(lane_pred), out=best)
    is_dep = e_dep == best                                   # the first of equal ends wins
    del e_dep
    is_launch = e_launch == best
    del e_launch
    bind = lane_pred.copy()
    bind[is_launch] = launch_pred[is_launch]
    bind[is_dep] = dep_src[is_dep]
    bind[best == lo] = -1
    bind_kind = np.full(n, LANE, np.int8)
    bind_kind[is_launch] = LAUNCH
    bind_kind[is_dep] = DEP
    del is_dep, is_launch
    unbound = bind < 0
    bind_kind[unbound] = 0
    gap = np.subtract(start, best, out=best)
    gap[unbound] = 0
    del unbound
    lat = np.zeros(n, np.int64)
    w = barrier >= 0
    lat[w] = end[w] - release_ns[barrier[w]]
    return DepGraph(start=start, end=end, core=core, engine=engine, port=port, is_sys=is_sys,
                    sys_wait=sys_wait, lane_pred=lane_pred, dep_src=dep_src, launch_pred=launch_pred,
                    barrier=barrier, release_row=release_row, release_cmd=release_cmd,
                    release_kind=release_kind, release_ns=release_ns, arrive_group=arrive_group, bind=bind, bind_kind=bind_kind, gap=gap,
                    lat=lat, fallback=prev_on_core(core, engine, start, end, order=by_core_end),
                    has_dependency_ids=has_dependency_ids, has_launch=bool((launch_pred >= 0).any()),
                    by_core_end=by_core_end)
