"""The local-memory sweep of one core: live pieces and occupancy from accesses in time order, on
whole address intervals (docs/metrics.md "Local memory", "Local memory: the interval sweep").

The lane ``[0, 256 KiB)`` is kept as an *interval map*: a tiling of the lane by entries
``[lo, hi)``, each holding the value that lives there (or none) and the state of its occupancy
run. An entry is found by its first offset through a two-level bit set of entry starts (4,096 + 64
words: a predecessor query scans a handful of words). Accesses are taken one by one in time order:

* a **read** visits the entries it covers: bytes holding no value get a value "written before
  the capture" (made by this read); every value met counts the read once (readers, running
  maximum of the read ends, a short list for the race rule); entries are not split.
* a **write** splits the entries at its ends, ends every older value part it covers (a *part*:
  value, range, the command that overwrote it, its end = the latest of its writer's end and of
  the reads of the whole value so far, readers, race overlap) and puts the new value there.
* the **occupancy run** of an entry (union of the pieces on its bytes over time): a part that
  ends extends the run when it starts no later than the run's end, else the run is emitted as a
  rectangle ``[lo, hi) x [run start, run end)`` and a new one begins; a run whose end lies before
  the new value's start is emitted at once (every later piece starts later), which keeps entries
  of one value mergeable.

Work is linear in the entries each access visits (a write leaves at most two more entries than
before); memory is a few arrays of 256 Ki entries per core plus one row per part and per run.
The result equals the exact per-address-segment sweep it replaced (tests/lmem_oracle.py).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from reportgen.analysis.lmem_access import LANE_BYTES

NONE = np.iinfo(np.int64).min
#: the race rule steps back over at most this many reads of the overwriting command itself
OWN_READS = 8


@njit(cache=True, inline="always")
def _top_bit(x):
    """Index of the highest set bit of a non-zero int64 (bit 63 when negative)."""
    if x < 0:
        return 63
    b = 0
    for s in (32, 16, 8, 4, 2, 1):
        if x >> s:
            x >>= s
            b += s
    return b


@njit(cache=True, inline="always")
def _upto(k):
    """Mask of bits 0..k (k in 0..63)."""
    return np.int64(-1) if k == 63 else (np.int64(1) << (k + 1)) - 1


@njit(cache=True)
def _pred(w0, w1, x):
    """Largest entry start <= x (offset 0 is always one)."""
    wi = x >> 6
    m = w0[wi] & _upto(x & 63)
    if m != 0:
        return (wi << 6) + _top_bit(m)
    j = wi >> 6
    r = wi & 63
    m = w1[j] & _upto(r - 1) if r > 0 else np.int64(0)
    while m == 0:
        j -= 1
        m = w1[j]
    wj = (j << 6) + _top_bit(m)
    return (wj << 6) + _top_bit(w0[wj])


@njit(cache=True, inline="always")
def _set(w0, w1, x):
    wi = x >> 6
    w0[wi] |= np.int64(1) << (x & 63)
    w1[wi >> 6] |= np.int64(1) << (wi & 63)


@njit(cache=True, inline="always")
def _clear(w0, w1, x):
    wi = x >> 6
    w0[wi] &= ~(np.int64(1) << (x & 63))
    if w0[wi] == 0:
        w1[wi >> 6] &= ~(np.int64(1) << (wi & 63))


@njit(cache=True, inline="always")
def _is_start(w0, x):
    return (w0[x >> 6] >> (x & 63)) & 1 != 0


@njit(cache=True)
def _split(w0, w1, e_hi, e_val, e_rs, e_re, x, lane):
    """Make ``x`` an entry start (the entry holding it is cut in two)."""
    if x >= lane or _is_start(w0, x):
        return
    a = _pred(w0, w1, x)
    e_hi[x] = e_hi[a]
    e_hi[a] = x
    e_val[x], e_rs[x], e_re[x] = e_val[a], e_rs[a], e_re[a]
    _set(w0, w1, x)


@njit(cache=True)
def _grown(arr):
    out = np.empty(max(2 * len(arr), 1024), arr.dtype)
    out[:len(arr)] = arr
    return out


@njit(cache=True)
def sweep(lo, hi, start, end, row, write, lane=LANE_BYTES):
    """One core's accesses in time order (ranges already clipped to the lane) -> (parts, runs).

    parts: value (index of the access that made it), lo, hi, overwriting row (-1: none),
    end, readers, overlap; runs: lo, hi, start, end of each occupancy rectangle."""
    n = len(lo)
    nw = (lane + 63) >> 6
    w0 = np.zeros(nw, np.int64)
    w1 = np.zeros((nw + 63) >> 6, np.int64)
    e_hi = np.zeros(lane, np.int64)
    e_val = np.full(lane, -1, np.int64)
    e_rs = np.full(lane, NONE, np.int64)
    e_re = np.full(lane, NONE, np.int64)
    e_hi[0] = lane
    _set(w0, w1, 0)
    first_start = start[0] if n else 0
    # per value (= access index): start, writer end, reads so far
    v_start = np.empty(n, np.int64)
    v_wend = np.empty(n, np.int64)
    v_last = np.full(n, -1, np.int64)           # its latest read record
    v_readers = np.zeros(n, np.int64)
    v_reader = np.full(n, -1, np.int64)         # the access that read it last (count once)
    # read records: row of the reader, running max of read ends, previous record of the value
    r_row = np.empty(1024, np.int64)
    r_max = np.empty(1024, np.int64)
    r_prev = np.empty(1024, np.int64)
    nr = 0
    p_val = np.empty(1024, np.int64)
    p_lo = np.empty(1024, np.int64)
    p_hi = np.empty(1024, np.int64)
    p_ow = np.empty(1024, np.int64)
    p_end = np.empty(1024, np.int64)
    p_readers = np.empty(1024, np.int64)
    p_overlap = np.empty(1024, np.int64)
    np_ = 0
    q_lo = np.empty(1024, np.int64)
    q_hi = np.empty(1024, np.int64)
    q_t0 = np.empty(1024, np.int64)
    q_t1 = np.empty(1024, np.int64)
    nq = 0
    for i in range(n + 1):
        final = i == n                          # the end: every remaining value becomes a part
        if final:
            a, b, s = 0, lane, NONE
            ow_row, ow_start = np.int64(-1), np.int64(0)
        else:
            a, b = lo[i], hi[i]
            if b <= a:
                continue
            s = start[i]
            ow_row, ow_start = row[i], start[i]
        if not final and not write[i]:
            cur = _pred(w0, w1, a)
            while cur < b:
                v = e_val[cur]
                if v < 0:                       # bytes holding nothing: a value before the capture
                    if cur < a:
                        _split(w0, w1, e_hi, e_val, e_rs, e_re, a, lane)
                        cur = a
                    if e_hi[cur] > b:
                        _split(w0, w1, e_hi, e_val, e_rs, e_re, b, lane)
                    e_val[cur] = i
                    v = i
                    v_start[i] = first_start
                    v_wend[i] = NONE
                if v_reader[v] != i:
                    if nr == len(r_row):
                        r_row, r_max, r_prev = _grown(r_row), _grown(r_max), _grown(r_prev)
                    prev = v_last[v]
                    e = end[i]
                    r_row[nr] = row[i]
                    r_max[nr] = e if prev < 0 or r_max[prev] < e else r_max[prev]
                    r_prev[nr] = prev
                    v_last[v] = nr
                    v_readers[v] += 1
                    v_reader[v] = i
                    nr += 1
                cur = e_hi[cur]
            continue
        if not final:
            _split(w0, w1, e_hi, e_val, e_rs, e_re, a, lane)
            _split(w0, w1, e_hi, e_val, e_rs, e_re, b, lane)
            v_start[i] = s
            v_wend[i] = end[i]
        cur = a
        while cur < b:
            nxt = e_hi[cur]
            v = e_val[cur]
            rs, re = e_rs[cur], e_re[cur]
            if v >= 0:
                k = v_last[v]
                last_read = r_max[k] if k >= 0 else NONE
                pend = max(v_wend[v], last_read)
                overlap = np.int64(0)
                if not final:
                    steps = 0
                    while k >= 0 and r_row[k] == ow_row and steps < OWN_READS:
                        k = r_prev[k]
                        steps += 1
                    busy = r_max[k] if k >= 0 else NONE
                    if row[v] != ow_row and v_wend[v] > busy:
                        busy = v_wend[v]
                    overlap = max(busy, ow_start) - ow_start
                if np_ == len(p_val):
                    p_val, p_lo, p_hi, p_ow = _grown(p_val), _grown(p_lo), _grown(p_hi), _grown(p_ow)
                    p_end, p_readers, p_overlap = _grown(p_end), _grown(p_readers), _grown(p_overlap)
                p_val[np_], p_lo[np_], p_hi[np_], p_ow[np_] = v, cur, nxt, ow_row
                p_end[np_], p_readers[np_], p_overlap[np_] = pend, v_readers[v], overlap
                np_ += 1
                vs = v_start[v]
                if pend > vs:                   # a piece of zero length never joins a run
                    if rs != NONE and vs <= re:
                        if pend > re:
                            re = pend
                    else:
                        if rs != NONE:
                            if nq == len(q_lo):
                                q_lo, q_hi, q_t0, q_t1 = _grown(q_lo), _grown(q_hi), _grown(q_t0), _grown(q_t1)
                            q_lo[nq], q_hi[nq], q_t0[nq], q_t1[nq] = cur, nxt, rs, re
                            nq += 1
                        rs, re = vs, pend
            if rs != NONE and (final or s > re):  # the run ends before the new value starts
                if nq == len(q_lo):
                    q_lo, q_hi, q_t0, q_t1 = _grown(q_lo), _grown(q_hi), _grown(q_t0), _grown(q_t1)
                q_lo[nq], q_hi[nq], q_t0[nq], q_t1[nq] = cur, nxt, rs, re
                nq += 1
                rs, re = NONE, NONE
            if not final:
                e_val[cur], e_rs[cur], e_re[cur] = i, rs, re
            cur = nxt
        if not final:                           # entries of the new value with one run state: one
            cur = a
            while True:
                nxt = e_hi[cur]
                if nxt >= b:
                    break
                if e_rs[nxt] == e_rs[cur] and e_re[nxt] == e_re[cur]:
                    e_hi[cur] = e_hi[nxt]
                    _clear(w0, w1, nxt)
                else:
                    cur = nxt
    return ((p_val[:np_], p_lo[:np_], p_hi[:np_], p_ow[:np_], p_end[:np_], p_readers[:np_], p_overlap[:np_]),
            (q_lo[:nq], q_hi[:nq], q_t0[:nq], q_t1[:nq]))
