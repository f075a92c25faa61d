"""TIU op model against the hand-worked examples of shared/spec/op-metrics.md §2.6 (values the
reference printed), plus the reference bugs we fix, and the vendor's uArch Rate text."""
from __future__ import annotations

import numpy as np
import pytest

from reportgen.parsers.pmu.tiu_ops import tiu_ops
from reportgen.writers.text import rate_text


def ops(op, **fields):
    a, u, c = tiu_ops(op, {k: np.array([v]) for k, v in fields.items()})
    return a[0], u[0], c[0]


def rate(a, u):
    return rate_text(np.array([a], float), np.array([u], float))[0]


def test_mm2_nn_example_a():
    a, u, c = ops("sMM2", tsk_eu_typ=4, res0_c=100, res0_w=300, opd1_c=200, opd1_w=300,
                  opt_opd0_prec=1, opt_res0_prec=1)
    assert (a, u, c) == (12_000_000, 17_203_200, 733)
    assert rate(a, u) == "69.8%"
    _, u32, _ = ops("sMM2", tsk_eu_typ=4, res0_c=100, res0_w=300, opd1_c=200, opd1_w=300,
                    opt_opd0_prec=1, opt_res0_prec=2)
    assert u32 == 15_974_400


def test_mm2_nt_example_a():
    a, u, c = ops("sMM2", tsk_eu_typ=5, res0_c=100, opd1_c=300, opd1_w=200, opt_opd0_prec=1,
                  opt_res0_prec=1)
    assert (a, u, c) == (12_000_000, 17_203_200, 733)


def test_mm2_tt_bug_fixed():
    # reference: 2*K*M*K = 8 000 000; the true GEMM M=res0_c=100, K=opd1_w=200, N=opd1_c=300
    a, _, _ = ops("sMM2", tsk_eu_typ=6, res0_c=100, opd1_c=300, opd1_w=200, opt_opd0_prec=1,
                  opt_res0_prec=1)
    assert a == 2 * 100 * 200 * 300


def test_conv_example_b():
    f = dict(tsk_eu_typ=0, res0_n=1, res0_c=100, res0_h=28, res0_w=28, opd0_c=30, opd1_h=3,
             opd1_w=3, opt_opd0_prec=1, opt_opd2_const=0)
    a, u, c = ops("sCONV", **f)
    assert (a, u, c) == (42_257_600, 57_702_400, 2580)
    assert rate(a, u) == "73.2%"
    a, u, c = ops("sCONV", **dict(f, opt_opd0_prec=0, opt_opd2_const=1))
    assert (a, u, c) == (42_336_000, 115_605_504, 1292)
    assert rate(a, u) == "36.6%"
    a, u, c = ops("sCONV", **dict(f, opt_opd0_prec=2, res0_h=7, res0_w=7))
    assert (a, u, c) == (2_641_100, 4_415_488, 1290)
    assert rate(a, u) == "59.8%"


def test_ar_example_c():
    f = dict(tsk_eu_typ=2, res0_n=2, res0_c=70, res0_h=5, res0_w=50, opt_opd0_prec=1, tsk_opd_num=2)
    assert ops("sAR", **f) == (35_000, 65_536, 18)
    assert ops("sAR", **dict(f, tsk_eu_typ=12)) == (175_000, 327_680, 18)


@pytest.mark.parametrize("eu,expected", [(0, (108_800, 139_264, 27)), (1, (108_800, 139_264, 54)),
                                         (4, (108_800, 139_264, 54)), (6, (38_400, 49_152, 3))])
def test_pord(eu, expected):
    assert ops("sPorD", tsk_eu_typ=eu, res0_n=1, res0_c=64, res0_h=10, res0_w=10, opd1_h=3,
               opd1_w=3, opt_opd0_prec=1) == expected


def test_minpooling_bug_fixed():
    # the reference treats eu 3 as ROI (38 400 / 49 152 / 3); we model it as max pooling
    assert ops("sPorD", tsk_eu_typ=3, res0_n=1, res0_c=64, res0_h=10, res0_w=10, opd1_h=3,
               opd1_w=3, opt_opd0_prec=1) == (108_800, 139_264, 54)


def test_mm_sfu_cwbc_verified_rows():
    assert ops("sMM", tsk_eu_typ=1, opd0_n=10, opd0_c=3, opd0_w=32, res0_c=3, res0_w=40,
               opt_opd0_prec=1) == (230_400, 7_864_320, 57)
    sfu = dict(res0_n=1, res0_c=70, res0_h=1, res0_w=100, opt_opd0_prec=2)
    assert ops("sSFU", tsk_eu_typ=12, opd1_n=8, **sfu) == (56_000, 114_688, 55)
    assert ops("sSFU", tsk_eu_typ=17, **sfu) == (210_000, 430_080, 206)
    cw = dict(res0_n=2, res0_c=70, res0_h=3, res0_w=50, opt_res0_prec=1)
    assert ops("sCW&sBC", tsk_eu_typ=0, **cw) == (21_000, 49_152, 2625)
    assert ops("sCW&sBC", tsk_eu_typ=3, **cw) == (21_000, 40_960, 42)
    a, u, c = ops("sCW&sBC", tsk_eu_typ=5, **cw)
    assert (a, u, c) == (70, 4096, 9) and rate(a, u) == "1.7%"


def test_unmodelled_and_negative_are_na():
    assert all(np.isnan(ops("sCONV_BW", tsk_eu_typ=1, res0_c=4)))
    # maxpooling with an empty kernel: the reference prints -6400 / -8192; we say n/a
    assert all(np.isnan(ops("sPorD", tsk_eu_typ=4, res0_n=1, res0_c=64, res0_h=10, res0_w=10,
                            opd1_h=0, opd1_w=3, opt_opd0_prec=1)))


def test_system_ops_count_one():
    assert ops("SYS", tsk_eu_typ=9) == (1, 1, 0)


@pytest.mark.parametrize("a,u,text", [(1, 16, "6.2%"), (3, 80, "3.8%"), (49, 400, "12.2%"),
                                      (2, 3, "66.7%"), (1, 1, "100.0%"), (5, 0, "0.0%")])
def test_rate_text_rounds_like_python(a, u, text):
    assert rate(a, u) == text
