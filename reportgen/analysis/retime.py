"""The compiled passes over the dependency graph: topological order, re-timing, path walk.

Re-timing a graph is a max-plus pass in topological order (each command starts when its last
predecessor ends, plus its own issue gap), a loop that carries a value from one command to the
next across lanes; numpy cannot express it without one pass per cross-lane hop (thousands on a
pipelined kernel).  numba compiles these three loops (wheels for CPython 3.10-3.13, no compiler
needed; ``cache=True`` keeps the machine code next to this file or in numba's user cache, so
only the first run on a machine pays the compile, measured in benchmarks/bench_critical_path.py).

Node numbering: commands are 0..n-1 (rows of ``Profile.commands``); barrier ``g`` is node
``n + g``; ``retime_spans`` reads them renumbered in topological order.  A barrier node's value
is its release (the latest arrival of its waits); a barrier wait ends at its barrier's release
plus its own release latency.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def topological_order(n, n_groups, indptr, preds, barrier, arrive_group, seed):
    """Kahn's order of the n + n_groups nodes: a command after every predecessor's end (for a
    barrier wait: after its barrier), a barrier after all its waits' starts and its arrival
    commands' ends.  Ties are taken in ``seed`` order (the commands stably sorted by start;
    numpy's timsort does it faster than a compiled merge sort: each queue is already in
    order).  Nodes left on a cycle (inconsistent input) are appended in that order."""
    total = n + n_groups
    indeg = np.zeros(total, np.int64)
    # successors in CSR: count first
    cnt = np.zeros(total + 1, np.int64)
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            p = preds[k]
            src = p if barrier[p] < 0 else n + barrier[p]
            cnt[src + 1] += 1
            indeg[i] += 1
        if barrier[i] >= 0:
            cnt[i + 1] += 1
            indeg[n + barrier[i]] += 1
        if arrive_group[i] >= 0:
            cnt[i + 1] += 1
            indeg[n + arrive_group[i]] += 1
    for i in range(total):
        cnt[i + 1] += cnt[i]
    succ = np.empty(cnt[total], np.int64)
    fill = cnt[:-1].copy()
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            p = preds[k]
            src = p if barrier[p] < 0 else n + barrier[p]
            succ[fill[src]] = i
            fill[src] += 1
        if barrier[i] >= 0:
            succ[fill[i]] = n + barrier[i]
            fill[i] += 1
        if arrive_group[i] >= 0:
            succ[fill[i]] = n + arrive_group[i]
            fill[i] += 1
    # a heap would give exact start order among ready nodes; a FIFO seeded in start order
    # is a valid topological order, which is all the pass needs
    order = np.empty(total, np.int64)
    queue = np.empty(total, np.int64)
    head, tail = 0, 0
    for j in range(n):
        i = seed[j]
        if indeg[i] == 0:
            queue[tail] = i
            tail += 1
    for g in range(n_groups):
        if indeg[n + g] == 0:
            queue[tail] = n + g
            tail += 1
    done = np.zeros(total, np.bool_)
    out = 0
    while head < tail:
        v = queue[head]
        head += 1
        order[out] = v
        out += 1
        done[v] = True
        for k in range(cnt[v], cnt[v + 1]):
            s = succ[k]
            indeg[s] -= 1
            if indeg[s] == 0:
                queue[tail] = s
                tail += 1
    if out < total:
        for j in range(n):
            i = seed[j]
            if not done[i]:
                order[out] = i
                out += 1
        for g in range(n_groups):
            if not done[n + g]:
                order[out] = n + g
                out += 1
    return order


@njit(cache=True)
def retime_spans(is_release, indptr, preds, start0, gap, dur, group, tables, release_of, arrive_at,
                 lat, waits, free_barriers, end):
    """The spans after re-timing, one per row of ``tables``, over nodes numbered in topological
    order (commands and barriers; :class:`~reportgen.analysis.whatif.Retimer` lays the arrays
    out once, so each pass reads memory in order, and several scenarios share one pass).  A
    command with predecessors starts at the latest of their re-timed ends plus its own gap; one
    without keeps its start.  Its duration is ``dur`` divided by ``tables[k, group]`` (``group``
    -1: unchanged; system commands are never in a group).  A barrier is released by the latest
    of its waits' starts and its arrival commands' ends (``arrive_at``: the barrier node a
    command's end arrives at); a barrier wait (``release_of`` >= 0) ends at that release +
    ``lat``, or with ``free_barriers`` at its own start + max(lat, 0).  ``waits``: the nodes of
    the barrier waits.  ``end``: a (nodes, >= scenarios) int64 buffer, overwritten (commands:
    their end; barriers: their release).  Returns (earliest start, latest end) per scenario."""
    K = tables.shape[0]
    low = -(1 << 62)
    for r in range(is_release.shape[0]):          # releases are raised from the lowest value
        if is_release[r]:
            for j in range(K):
                end[r, j] = low
    smin = np.full(K, 1 << 62, np.int64)
    emax = np.full(K, low, np.int64)
    best = np.empty(K, np.int64)
    for v in range(is_release.shape[0]):
        if is_release[v]:
            continue
        lo, hi = indptr[v], indptr[v + 1]
        if hi > lo:
            best[:] = low
            for k in range(lo, hi):
                q = preds[k]
                r = release_of[q]
                if r >= 0 and not free_barriers:
                    for j in range(K):
                        e = end[r, j] + lat[q]
                        if e > best[j]:
                            best[j] = e
                else:
                    for j in range(K):
                        if end[q, j] > best[j]:
                            best[j] = end[q, j]
            for j in range(K):
                best[j] += gap[v]
        else:
            best[:] = start0[v]
        g, r, a, d0 = group[v], release_of[v], arrive_at[v], dur[v]
        for j in range(K):
            d = d0
            if g >= 0:
                f = tables[j, g]
                if f != 1.0:
                    d = np.int64(np.rint(d0 / f))
            s = best[j]
            if s < smin[j]:
                smin[j] = s
            if r >= 0 and not free_barriers:
                if s > end[r, j]:
                    end[r, j] = s
            else:
                if r >= 0:
                    d = max(lat[v], 0)
                end[v, j] = s + d
                if s + d > emax[j]:
                    emax[j] = s + d
            if a >= 0 and not free_barriers and s + d > end[a, j]:
                end[a, j] = s + d
    if not free_barriers:
        for w in waits:
            for j in range(K):
                e = end[release_of[w], j] + lat[w]
                if e > emax[j]:
                    emax[j] = e
    return smin, emax


@njit(cache=True)
def walk(last, span_start, start, end, bind, bind_kind, barrier, release_cmd, release_kind, fallback,
         max_steps):
    """The critical path from command ``last`` back to ``span_start``.  Returns, per stretch
    of non-zero length (latest first; a walk through a pipelined capture meets many more empty
    ones, and only the pages of the buffers it writes take memory): node, kind (0 own duration,
    1 edge gap, 2 barrier release), edge kind (``bind_kind`` code for kind 1, else -1), from,
    to (ns), and the other node (the releasing command for kind 2, the predecessor for kind 1,
    else -1).  A barrier wait's end leads to the command that released it: its end (a core's
    last work) or its start (a wait)."""
    cap = 3 * max_steps + 3
    node_o = np.empty(cap, np.int64)
    kind_o = np.empty(cap, np.int8)
    ek_o = np.empty(cap, np.int8)
    t0_o = np.empty(cap, np.int64)
    t1_o = np.empty(cap, np.int64)
    other_o = np.empty(cap, np.int64)
    m = 0
    v = last
    t = end[v]
    steps = 0
    while v >= 0 and steps < max_steps:
        steps += 1
        g = barrier[v]
        if g >= 0:
            r = release_cmd[g]
            a = min(end[r] if release_kind[g] == 1 else start[r], t)
            node_o[m], kind_o[m], ek_o[m], t0_o[m], t1_o[m], other_o[m] = v, 2, -1, a, t, r
            m += a < t
            t = a
            if release_kind[g] == 1:           # continue with the releasing command's duration
                v = r
                continue
            v = r
        else:
            a = min(start[v], t)
            node_o[m], kind_o[m], ek_o[m], t0_o[m], t1_o[m], other_o[m] = v, 0, -1, a, t, -1
            m += a < t
            t = a
        p, k = bind[v], bind_kind[v]
        if p < 0:
            p, k = fallback[v], 4
        if p < 0:
            if t > span_start:
                node_o[m], kind_o[m], ek_o[m], t0_o[m], t1_o[m], other_o[m] = v, 1, 0, span_start, t, -1
                m += 1
            break
        pe = min(end[p], t)
        node_o[m], kind_o[m], ek_o[m], t0_o[m], t1_o[m], other_o[m] = v, 1, k, pe, t, p
        m += pe < t
        v, t = p, pe
    return node_o[:m], kind_o[:m], ek_o[:m], t0_o[:m], t1_o[:m], other_o[:m]


def node_index_dtype(largest: int):
    """int32 for node and edge indexes up to ``largest`` (every capture so far: the compiled
    passes then read half the bytes), int64 beyond 2^31 - 1 (compiled on first use)."""
    return np.int32 if largest < np.iinfo(np.int32).max else np.int64


def contiguous(*arrays):
    """The arrays C-contiguous and writable (copies where needed): pandas hands out read-only
    views, and each layout / flag would compile a machine-code signature of its own."""
    return tuple(np.require(a, requirements=("C", "W")) for a in arrays)


def compile_all() -> None:
    """Compile (or load from cache) every pass on a tiny graph."""
    z = np.zeros(1, np.int64)
    neg = np.full(1, -1, np.int64)
    ip = np.zeros(2, np.int64)
    topological_order(1, 0, ip, np.zeros(0, np.int64), neg, neg, z)
    neg32, ip32, z32 = neg.astype(np.int32), ip.astype(np.int32), z.astype(np.int32)
    # whatif.Retimer's layout: int32 nodes and times (int64 times, compiled on first use, for
    # captures whose times do not fit)
    retime_spans(np.zeros(1, np.bool_), ip32, np.zeros(0, np.int32), z32, z32, z32, neg32, np.ones((1, 1)),
                 neg32, neg32, z32, np.zeros(0, np.int64), False, np.zeros((1, 1), np.int64))
    walk(0, 0, z, z, neg, np.zeros(1, np.int8), neg, neg, neg, neg, 1)
