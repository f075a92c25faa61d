"""TIU op model: Alg Ops, uArch Ops, Alg Cycle of decoded descriptors (op-metrics.md §2).

Vectorised per op over the descriptor fields. Deviations from the reference (documented in
docs/metrics.md, "Reference bugs we fix"): MM2 tt uses M=res0_c, K=opd1_w, N=opd1_c (bug 1);
minpooling is modelled like max pooling (bug 2); VC is modelled instead of aborting (bug 3);
ops the reference does not model (CONV_BW, LAR, RAND) are NaN ("n/a"), not 0 % (bug 14);
negative counts from empty kernels are NaN and flagged (bug 12).
"""
from __future__ import annotations

import numpy as np

from reportgen.chip_compute import WIDTHS

# per precision code (0 INT8, 1 FP16, 2 FP32, 3 INT16, 4 INT32, 5 BF16, 6 INT4, 7 FP8)
EU_NUM = np.array(WIDTHS["AKS"].eu, np.int64)
CUBE_NUM = np.array(WIDTHS["AKS"].cube, np.int64)
BYTES = np.array([1, 2, 4, 2, 4, 2, 1, 1], np.int64)
ACT = 16 // BYTES
NPU = WIDTHS["AKS"].lanes


def A(x, a):
    """x rounded up to a multiple of a."""
    return -(-x // a) * a


def D(x, a):
    """Exact integer ceiling of x / a (also for negative x)."""
    return -(-x // a)


def _prec(fields: "_Int64Fields", name: str) -> np.ndarray:
    return fields.get(name) & 7


class _Int64Fields(dict):
    """Register fields as int64, converted on first use (missing fields read as ``zero``)."""

    def __init__(self, fields: dict[str, np.ndarray], zero: np.ndarray):
        super().__init__()
        self._fields, self._zero = fields, zero

    def get(self, name):
        if name not in self:
            raw = self._fields.get(name)
            self[name] = self._zero if raw is None else np.asarray(raw).astype(np.int64)
        return dict.__getitem__(self, name)


def tiu_ops(op: str, fields: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(alg_ops, uarch_ops, alg_cycle) as float arrays; NaN where the op is not modelled."""
    n = len(next(iter(fields.values())))
    z = np.zeros(n, np.int64)
    g = _Int64Fields(fields, z)     # fields are narrow unsigned: widen only those an op uses
    get = g.get
    N, C, H, W = get("res0_n"), get("res0_c"), get("res0_h"), get("res0_w")
    eu = get("tsk_eu_typ")
    p0 = _prec(g, "opt_opd0_prec")
    pr = _prec(g, "opt_res0_prec")
    base = op[1:] if op.startswith("s") and op not in ("sDMA_sys",) else op
    base = {"CW&sBC": "CW&BC", "RQ&sDQ": "RQ&DQ"}.get(base, base)
    nan = np.full(n, np.nan)

    if base == "CONV":
        ic, kh, kw = get("opd0_c"), get("opd1_h"), get("opd1_w")
        b = get("opt_opd2_const") & 1
        alg = N * C * H * W * (2 * ic * kh * kw - 1 + b)
        fp32 = p0 == 2
        ic_a = np.where(fp32, ic, A(ic, CUBE_NUM[p0]))
        s_a = np.where(fp32, A(H * W, 16), A(H * W, 4))
        uarch = N * A(C, NPU) * s_a * (2 * ic_a * kh * kw - 1 + b)
        cyc = np.where(fp32, D(alg, 2048), D(alg, NPU * CUBE_NUM[p0] * 8))
    elif base == "MM":
        m, k = get("opd0_n"), get("opd0_c") * get("opd0_w")
        alg = m * C * W * 2 * k
        uarch = m * A(C, NPU) * A(W, EU_NUM[p0]) * 2 * k
        cyc = D(alg, EU_NUM[p0] * NPU * 2)
    elif base == "MM2":
        o1c, o1w = get("opd1_c"), get("opd1_w")
        nt = eu == 5
        tt = eu == 6
        m = C
        k = np.where(nt, o1c, np.where(tt, o1c, o1w))      # aligned to 4 (output width)
        nn = np.where(nt, o1w, np.where(tt, o1w, o1c))     # aligned to EU(res0) (depth)
        alg = 2 * m * nn * k
        uarch = 2 * A(m, NPU) * A(nn, EU_NUM[pr]) * A(k, 4)
        cyc = D(alg, CUBE_NUM[p0] * 4 * NPU * 2)
    elif base == "AR":
        alg, uarch, cyc = arith(N, C, H, W, eu, NPU, EU_NUM[p0])
    elif base == "PorD":
        kh, kw = get("opd1_h"), get("opd1_w")
        roi = (eu >= 5) & (eu <= 8)
        K = np.where(roi, 6, 2 * kh * kw - 1)
        cf = np.where(eu == 0, 2, np.where(roi, 7, 1))
        alg = N * C * H * W * K
        uarch = N * A(C, NPU) * A(H * W, EU_NUM[p0]) * K
        cyc = D(alg, cf * EU_NUM[p0] * NPU)
    elif base == "RQ&DQ":
        alg, uarch, cyc = requant(N, C, H, W, NPU, EU_NUM[p0])
    elif base == "CW&BC":
        one = np.ones(n, np.int64)
        n_, h_ = np.where(eu >= 4, one, N), np.where(eu >= 4, one, H)
        w_ = np.where(eu == 5, one, W)
        alg = n_ * C * h_ * w_
        uarch = np.where(eu <= 1, n_ * A(C, NPU) * h_ * A(w_, EU_NUM[pr]),
                         n_ * A(C, NPU) * A(h_ * w_, EU_NUM[pr]))
        cyc = np.where((eu == 3) | (eu == 4), D(alg, ACT[pr] * NPU), D(alg, ACT[pr]))
    elif base in ("SG", "SGL"):
        line = (eu == 17) | (eu == 18)
        p = np.where(line, pr, p0)
        alg = N * C * H * W
        uarch = N * A(C, NPU) * H * A(W, EU_NUM[p])
        cyc = np.where(line, D(alg, 4096), D(alg, NPU))
    elif base == "SFU":
        fct = np.where((eu == 12) | (eu == 13), get("opd1_n"), np.where(eu == 17, 30, 1))
        alg = N * C * H * W * fct
        uarch = N * A(C, NPU) * A(H * W, EU_NUM[p0]) * fct
        cyc = D(alg, EU_NUM[p0] * NPU)
    elif base == "LIN":
        alg = 2 * N * C * H * W
        uarch = 2 * N * A(C, NPU) * H * A(W, EU_NUM[pr])
        cyc = D(alg, ACT[pr] * NPU * 2)
    elif base == "CMP":
        q = np.where(np.isin(eu, (23, 24, 26)), _prec(g, "opt_opd2_prec"), p0)
        alg = 2 * N * C * H * W
        uarch = 2 * N * A(C, NPU) * A(H * W, EU_NUM[p0])
        cyc = D(alg, ACT[q] * NPU * 2)
    elif base == "VC":
        nv = (get("opd0_c") - 1) * get("opd0_w") + get("opd1_w")
        maxb = np.maximum.reduce([BYTES[p0], BYTES[_prec(g, "opt_opd1_prec")], BYTES[pr]])
        act = 16 // maxb
        alg = nv * C * W
        uarch = nv * A(C, NPU) * A(W, act)
        cyc = D(alg, act * NPU)
    elif base in ("SYS", "SYS_TR_ACC"):
        return np.ones(n), np.ones(n), np.zeros(n)
    else:   # CONV_BW, LAR, RAND and anything unknown: not modelled
        return nan, nan.copy(), nan.copy()
    return finish(alg, uarch, cyc)


def arith(N, C, H, W, eu, lanes, eu_num):
    """sAR: N·C·H·W (×5 for division, eu 12); the same on every chip with its lanes and EUs."""
    fct = np.where(eu == 12, 5, 1)
    alg = N * C * H * W * fct
    return alg, N * A(C, lanes) * A(H * W, eu_num) * fct, D(alg, eu_num * fct * lanes)


def requant(N, C, H, W, lanes, eu_num):
    """sRQ&sDQ: 3 ops per element, on every chip."""
    alg = 3 * N * C * H * W
    return alg, 3 * N * A(C, lanes) * A(H * W, eu_num), D(alg, 3 * eu_num * lanes)


def finish(alg, uarch, cyc) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three counts as float arrays, NaN where a count came out negative (bug 12)."""
    alg, uarch, cyc = (np.asarray(a, np.float64) for a in (alg, uarch, cyc))
    bad = (alg < 0) | (uarch < 0)
    for a in (alg, uarch, cyc):
        a[bad] = np.nan
    return alg, uarch, cyc
