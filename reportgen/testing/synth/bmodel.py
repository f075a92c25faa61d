"""bmodel captures (spec §10): which kernels the runtime records as dynamic nodes, and the
descriptor blocks (BLOCK_DES_BDC / GDMA / SDMA) that hold every other kernel's commands.

A bmodel decoder pairs the descriptor blocks with the PMU id runs first and the DYN_DATA
commands with the runs still unbound afterwards (the second pairing pass). Pairing is by run
length, so a dynamic kernel whose run on some core and engine is as long as the nearest
descriptor-block kernel before or after it could take that block's place: the dynamic kernels
are chosen so that this never happens, and the truth stays exact.
"""
from __future__ import annotations

import numpy as np

from reportgen.testing import dumpformat as df
from reportgen.testing.synth.dyn import pack_rows
from reportgen.testing.synth.schedule import CoreProgram

ENGINES = ("TIU", "GDMA", "SDMA")
BLOCK_OF = {"TIU": df.BlockType.BLOCK_DES_BDC, "GDMA": df.BlockType.BLOCK_DES_GDMA,
            "SDMA": df.BlockType.BLOCK_DES_SDMA}


def run_lengths(programs: dict[int, CoreProgram]) -> np.ndarray:
    """(cores, kernels, engines) commands per kernel run: the length of its PMU id run."""
    return np.array([[[int((run.cmds.cols["engine"] == e).sum()) for e in ENGINES]
                      for run in prog.kernels] for prog in programs.values()], np.int64)


def unambiguous(lengths: np.ndarray, dynamic: set[int]) -> bool:
    """No dynamic run is as long as the block run next to its stretch of dynamic runs."""
    for per_core in lengths:
        for e in range(per_core.shape[1]):
            seq = [(k, int(n)) for k, n in enumerate(per_core[:, e]) if n]   # runs that exist
            static_at = [i for i, (k, _) in enumerate(seq) if k not in dynamic]
            for i, (k, n) in enumerate(seq):
                if k not in dynamic:
                    continue
                before = [seq[j][1] for j in static_at if j < i][-1:]
                after = [seq[j][1] for j in static_at if j > i][:1]
                if n in before + after:
                    return False
    return True


def pick_dynamic(programs: dict[int, CoreProgram], ratio: float, rng: np.random.Generator
                 ) -> list[int]:
    """Kernels recorded as DYN_DATA nodes: about ``ratio`` of them, drawn at random, keeping
    only choices under which every run pairs unambiguously."""
    lengths = run_lengths(programs)
    n_kernels = lengths.shape[1]
    want = min(max(1, int(round(ratio * n_kernels))), n_kernels)
    chosen: set[int] = set()
    for k in rng.permutation(n_kernels).tolist():
        if len(chosen) == want:
            break
        if unambiguous(lengths, chosen | {k}):
            chosen.add(k)
    if not chosen:
        raise ValueError("bmodel: no kernel can be dynamic without an ambiguous pairing; "
                         "use another seed")
    for prog in programs.values():
        for k, run in enumerate(prog.kernels):
            run.in_blocks = k not in chosen
    return sorted(chosen)


def descriptor_blocks(rows: dict[str, np.ndarray], prog: CoreProgram, layouts) -> list[bytes]:
    """The BLOCK_DES_* blocks of a core: per block kernel, its TIU, GDMA and SDMA descriptors
    in id order (empty engines have no block), kernels in program order."""
    out = []
    eng = rows["engine"]
    bounds = np.searchsorted(rows["kernel"], np.arange(len(prog.kernels) + 1), side="left")
    for k, run in enumerate(prog.kernels):
        if not run.in_blocks:
            continue
        here = np.arange(bounds[k], bounds[k + 1])
        for e in ENGINES:
            idx = here[eng[here] == e]
            if len(idx):
                buf, _, _ = pack_rows(rows, idx, layouts)
                out.append(df.block_bytes(BLOCK_OF[e], buf.tobytes()))
    return out
