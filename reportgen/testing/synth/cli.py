"""``reportgen-synth`` / ``python -m reportgen.testing.synth``: write one dump from the command
line."""
from __future__ import annotations

import argparse
import sys
import time

from reportgen.testing import dumpformat as df
from reportgen.testing.synth.config import SynthConfig
from reportgen.testing.synth.writer import write_dump


def _parse_ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip()) if text else ()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="reportgen-synth",
        description="Write a synthetic TPU PMU dump (AKS/AKSV, modes 0/1/2) and its truth.")
    ap.add_argument("outdir", help="output folder: <outdir>/<dump-name>/ + expected_commands.csv"
                                   " + generator_meta.json")
    ap.add_argument("--arch", default="AKS", choices=sorted(df.CHIPS))
    ap.add_argument("--cores", type=int, default=None)
    ap.add_argument("--cmds-per-core", type=int, default=1000)
    ap.add_argument("--mode", type=int, default=None, choices=(0, 1, 2),
                    help="capture mode (default 2; a bmodel capture's DYN_DATA is mode 1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tiu-freq", type=int, default=1000)
    ap.add_argument("--ports", default=None, help="CDMA ports, e.g. 0,1 ('' for none)")
    ap.add_argument("--idle-cores", default="", help="e.g. 3,5")
    ap.add_argument("--id-wrap", action="store_true", help="core 0 ends with > 65536 TIU cmds")
    ap.add_argument("--time-wrap", action="store_true", help="core 0 counter starts near 2^32")
    ap.add_argument("--ring-core", type=int, default=None, help="lap this core's GDMA ring")
    ap.add_argument("--rvt-ratio", type=float, default=0.0, help="AKSV: share of RVT kernels")
    ap.add_argument("--des-ratio", type=float, default=0.0,
                    help="share of kernels dispatched as DES chains (BLOCK_DES_KV)")
    ap.add_argument("--batch-idx", action="store_true", help="BATCH_IDX node in every kernel")
    ap.add_argument("--slow-kernel", default=None, help="this kernel kind's TIU commands take "
                    "--slow-factor times longer (e.g. conv, matmul, norm, quant)")
    ap.add_argument("--slow-factor", type=int, default=2)
    ap.add_argument("--extra-kernel", default=None, help="one more kernel of this kind at the end")
    ap.add_argument("--bmodel", action="store_true",
                    help="bmodel capture: kernels as BLOCK_DES_BDC/GDMA/SDMA descriptor blocks")
    ap.add_argument("--dyn-ratio", type=float, default=0.0,
                    help="bmodel: share of kernels recorded in DYN_DATA instead of blocks")
    ap.add_argument("--layers", type=int, default=0,
                    help="a compiled model of N ops: tensor_location.json + final.mlir in the "
                         "dump, expected_layers.csv beside it")
    ap.add_argument("--layer-format", default="new", choices=("new", "old"))
    ap.add_argument("--layer-tail", type=int, default=3,
                    help="TIU and GDMA commands per core owned by no layer")
    ap.add_argument("--dataflow", action="store_true",
                    help="every start from its predecessors; generator_meta.json gets the critical path")
    ap.add_argument("--speedup", default=None, metavar="ENGINE=F",
                    help="with --dataflow: ENGINE's work durations divided by F, every draw kept")
    ap.add_argument("--dump-name", default="cdm_profile_data_dev0-0")
    ap.add_argument("--no-truth", action="store_true",
                    help="skip expected_commands.csv (faster for big benchmark dumps)")
    a = ap.parse_args(argv)
    cfg = SynthConfig(arch=a.arch, cores=a.cores, cmds_per_core=a.cmds_per_core,
                      mode=a.mode if a.mode is not None else 1 if a.bmodel else 2,
                      seed=a.seed, tiu_freq=a.tiu_freq,
                      cdma_ports=None if a.ports is None else _parse_ints(a.ports),
                      idle_cores=_parse_ints(a.idle_cores), id_wrap=a.id_wrap,
                      time_wrap=a.time_wrap, ring_core=a.ring_core, rvt_ratio=a.rvt_ratio,
                      des_ratio=a.des_ratio, batch_idx=a.batch_idx,
                      bmodel=a.bmodel, dyn_ratio=a.dyn_ratio, layers=a.layers,
                      layer_format=a.layer_format, layer_tail=a.layer_tail,
                      slow_kernel=a.slow_kernel, slow_factor=a.slow_factor, extra_kernel=a.extra_kernel,
                      dump_name=a.dump_name, write_truth=not a.no_truth, dataflow=a.dataflow,
                      **_speedup(a.speedup))
    t0 = time.perf_counter()
    try:
        res = write_dump(a.outdir, cfg)
    except (ValueError, OSError) as exc:
        print(f"reportgen-synth: {exc}", file=sys.stderr)
        return 2
    dt = time.perf_counter() - t0
    size = sum(res.files.values())
    print(f"wrote {res.dump_dir} ({len(res.files)} files, {size / 1e6:.2f} MB, "
          f"{len(res.truth)} commands) in {dt:.2f} s")
    return 0


def _speedup(text: str | None) -> dict:
    if not text:
        return {}
    engine, _, factor = text.partition("=")
    try:
        return {"speedup_engine": engine.strip().upper(), "speedup": float(factor)}
    except ValueError:
        raise SystemExit(f"reportgen-synth: --speedup expects ENGINE=FACTOR (e.g. GDMA=2), not {text!r}")
