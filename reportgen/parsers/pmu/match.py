"""PMU stream normalisation and pairing of PMU records with commands (spec §9).

A PMU stream is a structured array of records of one engine of one core (or one CDMA port).
Normalisation (ring rotation, 16-bit id unwrap, u32 time unwrap, SDMA order repairs) works on
whole arrays. Pairing cuts both the PMU ids and the command ids into runs ("sections") and
aligns the runs by an edit distance over their spans; records then bind to commands by their
offset inside the paired section.
"""
from __future__ import annotations

import heapq

import numpy as np

U32 = 1 << 32
ID_WRAP_LOW, ID_WRAP_HIGH = 65001, 65535


def rotate_ring(start: np.ndarray, end: np.ndarray) -> int | None:
    """Rotation that makes a lapped ring buffer monotone, or None if not a clean lap."""
    if len(start) < 2:
        return None
    running = np.maximum.accumulate(end.astype(np.int64, copy=False))
    if not (start[1:] < running[:-1]).any():
        return None
    k = int(np.argmin(start))
    s = np.roll(start.astype(np.int64), -k)
    e = np.roll(end.astype(np.int64), -k)
    if (s[1:] >= np.maximum.accumulate(e)[:-1]).all():
        return k
    return None


def unwrap_ids16(raw: np.ndarray) -> np.ndarray:
    """Add 65536 after every raw id in 65001..65535 followed by an id < 1000."""
    ids = raw.astype(np.int64, copy=False)
    if len(ids) < 2:
        return ids
    wrap = (ids[:-1] >= ID_WRAP_LOW) & (ids[:-1] <= ID_WRAP_HIGH) & (ids[1:] < 1000)
    if not wrap.any():
        return ids                              # the common case: no copy
    return ids + np.concatenate([[0], np.cumsum(wrap) * 65536])


def unwrap_time(start: np.ndarray, end: np.ndarray, cdma: bool = False):
    """Undo u32 counter wraps (spec §9.1 step 4), vectorised.

    Sequentially: a record (and every later one) gets +2^32 when its start is below the
    previous record's (already corrected) end and that end is above 2^31; a record whose end
    is then below its start gets +2^32 on the end (it straddles the wrap). CDMA: +2^32 only
    when both start and end regress.
    """
    s = start.astype(np.int64, copy=False)
    e = end.astype(np.int64, copy=False)
    straddle = e < s
    if len(s) < 2:
        return s, np.where(straddle, e + U32, e)
    if cdma:
        wrap = (s[1:] < s[:-1]) & (e[1:] < e[:-1])
    else:
        prev_end = (e + straddle * U32)[:-1]          # previous end after its own fix, lift aside
        below = s[1:] < prev_end
        high = prev_end > (1 << 31)
        # once one wrap has lifted the stream, every later previous end is above 2^31
        first = np.flatnonzero(below & high)
        wrap = below & high
        if len(first):
            wrap |= below & (np.arange(len(below)) > first[0])
    if not wrap.any() and not straddle.any():
        return s, e                             # the common case: no copy
    lift = np.concatenate([[0], np.cumsum(wrap)]) * U32
    return s + lift, e + lift + straddle * U32


def _retire_swap(s, e, i) -> bool:
    """Whether record i and i+1 swap (gaps measured from the end of record i-1)."""
    g_cur = s[i] - e[i - 1]
    g_next = s[i + 1] - e[i - 1]
    return bool((g_cur > 0 and g_next > 0 and g_next < g_cur) or
                (g_cur < 0 and g_next > 0 and s[i + 1] > e[i + 1]))


def sdma_send_retire_reorder(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Permutation of the SDMA send/retire repair (spec §9.1 step 3): one left-to-right pass.

    Swaps are rare, so the pass visits only the positions where the test holds on the input
    (found vectorised) and the neighbours of each swap it makes, in increasing order.
    """
    n = len(start)
    perm = np.arange(n)
    if n < 3:
        return perm
    s = start.astype(np.int64).copy()
    e = end.astype(np.int64).copy()
    g_cur = s[1:-1] - e[:-2]
    g_next = s[2:] - e[:-2]
    hit = (((g_cur > 0) & (g_next > 0) & (g_next < g_cur)) |
           ((g_cur < 0) & (g_next > 0) & (s[2:] > e[2:])))
    todo = [int(i) + 1 for i in np.flatnonzero(hit)]
    heapq.heapify(todo)
    last = 0
    while todo:
        i = heapq.heappop(todo)
        if i <= last:
            continue
        last = i
        if i < n - 1 and _retire_swap(s, e, i):
            for a in (s, e, perm):
                a[i], a[i + 1] = a[i + 1], a[i]
            heapq.heappush(todo, i + 1)       # the moved records meet new neighbours
            heapq.heappush(todo, i + 2)
    return perm


def sdma_order_fix(ids: np.ndarray) -> np.ndarray:
    """Permutation swapping neighbours when ids go (15, 17, 16) or (18, 0, 19)."""
    perm = np.arange(len(ids))
    if len(ids) < 3:
        return perm
    a, b, c = ids[:-2], ids[1:-1], ids[2:]
    hit = np.flatnonzero(((b == a + 2) & (c == a + 1)) | ((c == a + 1) & (b < a) & (b + 1 < a)))
    for i in hit:
        perm[i + 1], perm[i + 2] = perm[i + 2], perm[i + 1]
    return perm


# -- sections --------------------------------------------------------------------------------

def id_runs(ids: np.ndarray, cuts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Start index of each run of strictly increasing ids, and each run's span; a run also
    starts at every position in ``cuts``."""
    if len(ids) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    brk = np.flatnonzero(ids[1:] <= ids[:-1]) + 1
    if cuts is not None and len(cuts):
        brk = np.union1d(brk, cuts[(cuts > 0) & (cuts < len(ids))])
    starts = np.concatenate([[0], brk])
    ends = np.concatenate([brk, [len(ids)]]) - 1
    span = ids[ends] - ids[starts] + 1
    return starts.astype(np.int64), span.astype(np.int64)


MAX_DP_CELLS = 30_000_000


def align_sections(mon: np.ndarray, cmd: np.ndarray) -> list[tuple[int, int]]:
    """Pairs (monitor section, command section) with equal spans, by minimum edit distance.

    Costs: 0 equal keys, 1 delete a monitor section or skip a command section, 2 substitute;
    ties prefer deleting the monitor section. Only equal spans are ever paired.
    """
    m, n = len(mon), len(cmd)
    if m == n and np.array_equal(mon, cmd):
        return [(i, i) for i in range(m)]
    if m == 0 or n == 0:
        return []
    if m * n > MAX_DP_CELLS:
        return _greedy_pairs(mon, cmd)
    # D[i][j]: cost of monitor[:i] vs commands[:j]; computed a row at a time with numpy
    D = np.empty((m + 1, n + 1), np.int32)
    D[0] = np.arange(n + 1)
    jj = np.arange(n + 1)
    for i in range(1, m + 1):
        prev = D[i - 1]
        sub = prev[:-1] + np.where(cmd == mon[i - 1], 0, 2)
        base = np.empty(n + 1, np.int64)
        base[0] = prev[0] + 1
        base[1:] = np.minimum(prev[1:] + 1, sub)
        # row[j] = min_k<=j base[k] + (j - k): the skip-command chain within the row
        D[i] = jj + np.minimum.accumulate(base - jj)
    pairs = []
    i, j = m, n
    while i > 0 and j > 0:
        if D[i, j] == D[i - 1, j] + 1:
            i -= 1
        elif mon[i - 1] == cmd[j - 1] and D[i, j] == D[i - 1, j - 1]:
            pairs.append((i - 1, j - 1))
            i -= 1
            j -= 1
        elif D[i, j] == D[i, j - 1] + 1:
            j -= 1
        else:
            i -= 1
            j -= 1
    pairs.reverse()
    return pairs


def _greedy_pairs(mon: np.ndarray, cmd: np.ndarray) -> list[tuple[int, int]]:
    """Fallback for huge section lists: pair equal spans in order (a common-subsequence walk)."""
    pairs, j = [], 0
    for i, key in enumerate(mon):
        k = j
        while k < len(cmd) and k < j + 64 and cmd[k] != key:
            k += 1
        if k < len(cmd) and cmd[k] == key:
            pairs.append((i, k))
            j = k + 1
    return pairs


def label_system(is_sys_like: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
    """Send/wait labels of unbound system-looking records: 1 = send, 2 = wait, 0 = not system.

    Alternating parity; the parity group with the larger total duration is the wait; anything
    longer than 1000 ns is a wait regardless.
    """
    out = np.zeros(len(is_sys_like), np.int8)
    idx = np.flatnonzero(is_sys_like)
    if len(idx) == 0:
        return out
    parity = np.arange(len(idx)) % 2
    d = dur_ns[idx]
    wait_parity = 0 if d[parity == 0].sum() > d[parity == 1].sum() else 1
    lab = np.where(parity == wait_parity, 2, 1)
    lab[d > 1000] = 2
    out[idx] = lab
    return out
