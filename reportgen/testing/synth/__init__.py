"""Synthetic TPU PMU dumps (AKS / AKSV, capture modes 0, 1, 2) with their ground truth.

``write_dump(outdir, SynthConfig(...))`` writes a dump directory that follows the writer checklist
of shared/spec/pmu-dump-format.md §15 and, next to it, the generator truth:

    OUTDIR/cdm_profile_data_dev0-0/   global.profile, cdmlib0_<core>.profile, cdma_<port>.profile
    OUTDIR/expected_commands.csv      every command a decoder should report, in its time frame
    OUTDIR/generator_meta.json        how the dump was made

CLI: ``python -m reportgen.testing.synth --arch AKS --cores 8 --cmds-per-core 1000 --mode 2
--seed 1 OUTDIR`` (console script ``reportgen-synth``).

How a dump is made (everything is whole numpy arrays; Python loops run per kernel, never per
command):

1. A *physical* timeline in ns, shared by all cores: every core runs the same sequence of
   multi-core kernels (conv, matmul, layernorm, requant, all-reduce with CDMA traffic), each a
   double-buffered loop (GDMA loads, TIU compute, GDMA stores, SDMA copies) closed by a TIU
   send/wait barrier. Before the first kernel the profile-init preamble runs: 2 records per
   TIU/GDMA/SDMA stream, TIU record #1 ending at the same physical instant (t = 0) on all cores.
2. Each core has its own free-running u32 counter (random offset, optionally near 2^32); the
   TIU counter runs at ``tiu_freq`` MHz, DMA at 1000 MHz. CDMA ports have their own counter,
   tied to the anchor core by the tx_wait record that ends with the anchor's VSDMA send.
3. Ids: per kernel and engine, in program order (ID_RESET at every kernel); PMU ids are the low
   16 bits (the decoder unwraps 16-bit wraps), CDMA ids are 1-based per launch.
4. Descriptors (mode 2) are packed bit by bit from the register tables
   reportgen/parsers/pmu/data/<arch>.csv by one generic vectorised packer.
5. The truth is obtained by the documented decoder transform (§9, §11) of the raw records the
   writer produced: cycles -> ns per engine clock, core alignment on TIU record #1, CDMA ports
   anchored on the VSDMA sends, earliest kept record at 0 ns.

Options (SynthConfig fields / CLI flags): ``tiu_freq``; ``cdma_ports`` (default 0,1 when the
anchor core CORE_NUM-1 is in the dump; a port is driven by one core); ``idle_cores`` (init
records only); ``time_wrap`` (core 0's faster counter wraps u32 in its first kernel);
``id_wrap`` (core 0 ends with a kernel of > 65536 TIU commands: 16-bit PMU id wrap);
``ring_core`` (that core's GDMA ring is lapped: rotated records, no ``*_record`` lines, the
decoder drops the 2 oldest survivors as "init", Q12); ``rvt_ratio`` (AKSV RVT_NODE_SET kernels,
no descriptors); ``des_ratio`` (kernels dispatched as DES chains in BLOCK_DES_KV);
``batch_idx`` (BATCH_IDX nodes); ``bmodel`` (a bmodel capture, spec §10: `bmodel` line, arch
5/6, each kernel's commands as BLOCK_DES_BDC/GDMA/SDMA descriptor blocks) with ``dyn_ratio``
(that share of kernels recorded as DYN_DATA nodes instead, for the second pairing pass; truth
kernel names only for those); ``slow_kernel``/``slow_factor`` (that kernel kind's TIU commands
take slow_factor times longer, every random draw unchanged) and ``extra_kernel`` (one more
kernel of that kind at the end of every busy core, drawn after all others): pairs of runs with
known differences; ``dataflow`` (``--dataflow``: every command starts when its last predecessor
ends plus an issue gap, the simulation records which one, ``generator_meta.json``
``critical_path`` holds its own path shares; module ``dataflow``) with ``speedup_engine`` /
``speedup`` (``--speedup GDMA=2``: that engine's work durations divided, every draw kept). Same
seed and options -> byte-identical files.

Modules: ``catalogue`` (operations and kernels), ``config`` (SynthConfig), ``schedule`` (step 1:
physical timeline), ``rows`` (step 3: program order, ids, raw counters), ``records`` (PMU
records), ``descriptors`` (step 4: register tables and packer), ``dyn`` (DYN_DATA / DYN_EXTRA /
BLOCK_DES_KV), ``bmodel`` (dynamic kernels, descriptor blocks), ``truth`` (step 5), ``writer`` (step 2 and the files), ``cli`` (``main``).
"""
from reportgen.testing.synth.cli import main
from reportgen.testing.synth.config import SynthConfig
from reportgen.testing.synth.descriptors import (Layout, pack_descriptors, register_layouts,
                                                 unpack_descriptors)
from reportgen.testing.synth.writer import DumpWriter, SynthResult, write_dump

__all__ = ["DumpWriter", "Layout", "SynthConfig", "SynthResult", "main", "pack_descriptors",
           "register_layouts", "unpack_descriptors", "write_dump"]
