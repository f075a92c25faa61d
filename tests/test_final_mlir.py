"""final.mlir read by searching the text for the tokens that matter (spec layer-info.md §3):
hand-written modules with every feature the reader looks at, the expected facts worked out by
hand (1-based line numbers)."""
from __future__ import annotations

import pytest

from reportgen.parsers.layers.final_mlir import read_final_mlir

MODULE = """\
#loc1 = loc("w_conv")
#loc9 = loc("not \\"a\\" weight")
module @"net-1.0" attributes {module.mode = "F16", module.FLOPs = 123 : i64, module.cores = 2 : i64} {
  func.func @subfunc_0(%arg0: tensor<1x8xf16>) -> tensor<1x8xf16> attributes {id = 0 : i64, mode = #tpu<run_mode TPU_STATIC>} {
    %0 = "top.Weight"() : () -> tensor<8x8xf16, 4096 : i64> loc(#loc1)
    %1 = "top.Weight"() : () -> tensor<8xf16, 8192 : i64> loc("w_bias")
    %2 = "tpu.Group"(%arg0, %0) ({
      %3 = "tpu.Load"(%arg0) : (tensor<1x8xf16>) -> tensor<1x8xf16> loc(#loc2)
      %4 = "tpu.If"(%3) ({
        "tpu.Yield"(%3) : (tensor<1x8xf16>) -> () loc(#loc)
      }) : (tensor<1x8xf16>) -> tensor<1x8xf16> loc(#loc3)
      "tpu.Yield"(%4) : (tensor<1x8xf16>) -> () loc(#loc)
    }) {nsecs = 1 : i64} : (tensor<1x8xf16>) -> tensor<1x8xf16> loc(#loc4)
    %5 = "tpu.GroupNorm"(%2) : (tensor<1x8xf16>) -> tensor<1x8xf16> loc(#loc5)
    return %5 : tensor<1x8xf16> loc(#loc)
  } loc(#loc)
  func.func @subfunc_1(%arg0: tensor<1x8xf16>) -> tensor<1x8xf16> attributes {id = 1 : i64} {
    %0 = "tpu.Group"(%arg0) ({
      "tpu.Yield"(%arg0) : (tensor<1x8xf16>) -> () loc(#loc)
    }) {nsecs = 1 : i64} : (tensor<1x8xf16>) -> tensor<1x8xf16> loc(#loc6)
    return %0 : tensor<1x8xf16> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc2 = loc("load")
"""


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_the_facts_of_a_module(tmp_path, newline):
    path = tmp_path / "final.mlir"
    path.write_bytes(MODULE.replace("\n", newline).encode())
    facts = read_final_mlir(path)
    assert (facts.network, facts.flops, facts.quant_mode, facts.cores) == ("net-1.0", 123, "F16", 2)
    # group on line 7: body 8-12 (the nested tpu.If region closes on line 11, not the group);
    # tpu.GroupNorm on line 14 is no group
    assert facts.groups == [(7, 8, 12), (18, 19, 19)]
    assert facts.subnets == [(4, 0), (17, 1)]
    assert facts.weight_names == {"w_conv", "w_bias"}


def test_an_anonymous_module_after_the_aliases_and_no_group(tmp_path):
    path = tmp_path / "final.mlir"
    path.write_text('#loc = loc(unknown)\n\n  module attributes {module.name = "x, y", module.FLOPs = 0 : i64} {\n}\n')
    facts = read_final_mlir(path)
    assert (facts.network, facts.flops, facts.quant_mode) == ("x, y", 0, None)
    assert facts.groups == [] and facts.subnets == [] and facts.weight_names == set()
