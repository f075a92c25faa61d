"""TIU ops model of BM1688 and CV84X6 (spec chips-bm1688-cv84x6.md §9): Alg Ops, uArch Ops and
Alg Cycle of decoded descriptors, vectorised per op.

The AKS model (tiu_ops.py) with each chip's lanes and per-precision EU / cube widths, and the
formula differences §9.2 lists: sMM2 aligns n to the cube width on BM1688; the SFU taylor factor
is 2·n − 1 at half the cycle throughput; sPorD / sSG / sSGL / sCW&sBC / sLIN / sVC as written
there; CV84X6's new ops (sCONV_DW, sPRNG, sREDUCE) count 0 as the reference reports them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reportgen.chip_compute import WIDTHS
from reportgen.parsers.pmu.tiu_ops import BYTES, A, D, _Int64Fields, arith, finish, requant


@dataclass(frozen=True)
class OpsConstants:
    lanes: int                     # NPU_NUM, P
    eu: np.ndarray                 # per precision code 0..7 (INT8 FP16 FP32 INT16 INT32 BF16 INT4 FP8)
    cube: np.ndarray
    mm2_n_align_cube: bool         # sMM2 uArch aligns n to CUBE (BM1688) or EU (CV84X6)
    taylor_eus: tuple[int, ...]    # sSFU eu codes of the taylor expansions


def _constants(chip: str, mm2_n_align_cube: bool, taylor_eus: tuple[int, ...]) -> OpsConstants:
    w = WIDTHS[chip]          # lanes, EU and CUBE per precision (§9.1): chip_compute.py
    return OpsConstants(w.lanes, np.array(w.eu, np.int64), np.array(w.cube, np.int64),
                        mm2_n_align_cube, taylor_eus)


CONSTANTS = {"BM1688": _constants("BM1688", True, (12, 13)), "CV84X6": _constants("CV84X6", False, (12,))}
ACT = 16 // BYTES
#: sMM2 eu codes whose operands are laid out as nt / tt (CV84X6 adds tf32, dq2 and bq variants)
MM2_NT = (5, 8, 11, 13)
MM2_TT = (6, 9, 12)
_ZERO_OPS = ("sCONV_DW", "sPRNG", "sREDUCE", "CONV_BW", "sCONV_BW", "LAR", "RAND")
_SYSTEM_OPS = ("SYS", "SYS_TR_ACC", "SYS_TR_WR")


def tiu_ops_chip(chip: str, op: str, fields: dict[str, np.ndarray]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(alg_ops, uarch_ops, alg_cycle) of a batch of one op's descriptors on ``chip``."""
    k = CONSTANTS[chip]
    P = k.lanes
    n = len(next(iter(fields.values())))
    if op in _SYSTEM_OPS:
        return np.ones(n), np.ones(n), np.zeros(n)
    z = np.zeros(n, np.int64)
    if op in _ZERO_OPS:
        return z.astype(float), z.astype(float), z.astype(float)
    g = _Int64Fields(fields, z)
    get = g.get
    N, C, H, W = get("res0_n"), get("res0_c"), get("res0_h"), get("res0_w")
    eu = get("tsk_eu_typ")
    p0 = get("opt_opd0_prec") & 7
    pr = get("opt_res0_prec") & 7
    EU, CUBE = k.eu, k.cube
    base = op.lstrip("s") if op.startswith("s") else op
    base = {"CW&sBC": "CW&BC", "RQ&sDQ": "RQ&DQ"}.get(base, base)

    if base == "CONV":
        ic, kh, kw = get("opd0_c"), get("opd1_h"), get("opd1_w")
        b = get("opt_opd2_const") & 1
        alg = N * C * H * W * (2 * ic * kh * kw - 1 + b)
        fp32 = p0 == 2
        uarch = np.where(fp32, N * A(C, P) * A(H * W, EU[p0]) * (2 * ic * kh * kw - 1 + b),
                         N * A(C, P) * A(H * W, 4) * (2 * A(ic, CUBE[p0]) * kh * kw - 1 + b))
        cyc = np.where(fp32, D(alg, P * EU[p0] * 2), D(alg, P * CUBE[p0] * 4 * 2))
    elif base == "MM2":
        c_, w1, c1 = C, get("opd1_w"), get("opd1_c")
        nt, tt = np.isin(eu, MM2_NT), np.isin(eu, MM2_TT)
        m = np.where(tt, w1, c_)
        kk = np.where(nt, c1, np.where(tt, c_, w1))
        nn = np.where(nt, w1, np.where(tt, w1, c1))
        alg = 2 * m * nn * kk
        x = CUBE[pr] if k.mm2_n_align_cube else EU[pr]
        uarch = 2 * A(m, P) * A(nn, x) * A(kk, 4)
        cyc = D(alg, CUBE[p0] * 4 * P * 2)
    elif base == "AR":
        alg, uarch, cyc = arith(N, C, H, W, eu, P, EU[p0])
    elif base == "PorD":
        kh, kw = get("opd1_h"), get("opd1_w")
        win = np.isin(eu, (0, 1, 4))
        K = np.where(win, 2 * kh * kw - 1, 6)
        cf = np.where(eu == 0, 2, np.where(win, 1, 7))
        alg = N * C * H * W * K
        uarch = N * A(C, P) * A(H * W, EU[p0]) * K
        cyc = D(alg, cf * EU[p0] * P)
    elif base == "CW&BC":
        one = np.ones(n, np.int64)
        if chip == "BM1688":      # broadcast shapes: eu 4 -> (1, C, 1, W), eu 5 -> (1, C, 1, 1)
            n_, h_ = np.where(eu >= 4, one, N), np.where(eu >= 4, one, H)
            w_ = np.where(eu == 5, one, W)
        else:
            n_, h_, w_ = N, H, W
        alg = n_ * C * h_ * w_
        uarch = np.where(eu <= 1, n_ * A(C, P) * h_ * A(w_, EU[pr]), n_ * A(C, P) * A(h_ * w_, EU[pr]))
        cyc = np.where((eu == 3) | (eu == 4), D(alg, ACT[pr] * P), D(alg, ACT[pr]))
    elif base == "RQ&DQ":
        alg, uarch, cyc = requant(N, C, H, W, P, EU[p0])
    elif base == "SFU":
        taylor = np.isin(eu, k.taylor_eus)
        f = np.where(taylor, 2 * get("opd1_n") - 1, np.where(eu == 17, 30, 1))
        alg = N * C * H * W * f
        uarch = N * A(C, P) * A(H * W, EU[p0]) * f
        cyc = D(alg, EU[p0] * P * np.where(taylor, 2, 1))
    elif base == "LIN":
        q = pr if chip == "BM1688" else p0
        alg = 2 * N * C * H * W
        uarch = 2 * N * A(C, P) * H * A(W, EU[q])
        cyc = D(alg, ACT[pr] * P * 2)
    elif base == "CMP":
        q = np.where(np.isin(eu, (23, 24, 26)), get("opt_opd2_prec") & 7, p0) if chip == "BM1688" else p0
        alg = 2 * N * C * H * W
        uarch = 2 * N * A(C, P) * A(H * W, EU[p0])
        cyc = D(alg, ACT[q] * P * 2)
    elif base in ("SG", "SGL"):
        p = pr if base == "SGL" else p0
        alg = N * C * H * W
        uarch = N * A(C, P) * H * A(W, EU[p])
        cyc = D(alg, P * P if base == "SGL" else P)
    elif base == "VC":
        b = np.maximum.reduce([BYTES[p0], BYTES[get("opt_opd1_prec") & 7], BYTES[pr]])
        alg = C * W
        uarch = A(C, P) * A(W, 16 // b)
        cyc = D(alg, (16 // b) * P)
    else:
        nan = np.full(n, np.nan)
        return nan, nan.copy(), nan.copy()
    return finish(alg, uarch, cyc)


# -- per-command extras of the two chips' TIU records (spec chips-bm1688-cv84x6.md §8.3) ----------

#: start-up cycles of an op before its first result (the reference's "initial cycles"), by op
#: base; a dict value is keyed by tsk_eu_typ (codes not listed: 0)
_INITIAL_CYCLES: dict[str, int | dict[int, int]] = {
    "CONV": 23, "MM": 32,
    "MM2": {4: 81, 7: 81, **dict.fromkeys(MM2_NT, 56), **dict.fromkeys(MM2_TT, 37)},
    "CMP": 9, "SFU": {17: 14}, "LIN": 12, "AR": 11, "PorD": 10, "RQ&DQ": 11, "SG": 11, "SGL": 24,
    "CW&BC": {0: 30, 2: 27, 3: 27, 4: 3, 5: 3},
    **dict.fromkeys(_SYSTEM_OPS, 0),
}
#: SYS tsk_eu_typ of send_msg / wait_msg: their imm carries the message id and the count of
#: cores that send / wait on it
_MESSAGE_EUS = (8, 9)
#: extra TIU columns of these chips and their value when unknown
CHIP_TIU_COLUMNS = {"init_cycles": np.nan, "msg_id": -1, "sd_wt_count": -1}


def tiu_extras_chip(chip: str, op: str, fields: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per-command extras of a batch of one op's descriptors on ``chip`` (spec §8.3):
    ``init_cycles`` (NaN for an op the table does not know), ``msg_id`` / ``sd_wt_count`` of
    send_msg / wait_msg (-1 on every other command), and on BM1688 ``bank_conflict_model``, the
    bank-conflict cycles its simulator predicts (sRQ&sDQ: 2 when the result overlays the
    operand at half its address, else 1; other ops 0)."""
    n = len(next(iter(fields.values())))
    g = _Int64Fields(fields, np.zeros(n, np.int64))
    eu = g.get("tsk_eu_typ")
    base = op.replace("&s", "&")
    base = base[1:] if base.startswith("s") else base
    init = _INITIAL_CYCLES.get(base)
    if isinstance(init, dict):
        cycles = np.zeros(n)
        for code, value in init.items():
            cycles[eu == code] = value
    else:
        cycles = np.full(n, np.nan if init is None else float(init))
    out = {"init_cycles": cycles}
    message = (op == "SYS") & np.isin(eu, _MESSAGE_EUS)
    imm = g.get("imm")
    out["msg_id"] = np.where(message, imm & 0x7F, -1)
    out["sd_wt_count"] = np.where(message, (imm >> 16) & 7, -1)
    if chip == "BM1688":
        conflict = np.zeros(n)
        if base == "RQ&DQ":
            conflict = np.where(g.get("res0_addr") * 2 == g.get("opd0_addr"), 2.0, 1.0)
        out["bank_conflict_model"] = conflict
    return out
