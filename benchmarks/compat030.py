"""Make a synthetic dump readable by the vendor tool 0.3.0 (for side-by-side benchmarks only).

0.3.0 predates kernel-name nodes: FUNC / FUNC_END / BATCH_IDX words in DYN_DATA make it abort
("116 is not a valid DynRecordType"). This rewrites every core file's DYN_DATA without them,
and puts DYN_EXTRA blocks before DYN_DATA (0.3.0 reads blocks in file order). Kernel names are
lost for both tools, which keeps the comparison fair.

    python benchmarks/compat030.py DUMP_DIR
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.parsers.pmu.nodes import _strings_and_des  # noqa: E402
from reportgen.parsers.pmu.records import Block, Node  # noqa: E402


def strip_kernel_nodes(words: np.ndarray) -> np.ndarray:
    types = (words & 0x7F).astype(np.int32)
    payload, names, _ = _strings_and_des(words, types, "<dyn>", 0)
    drop = payload.copy()
    drop[list(names)] = True                                  # FUNC words themselves
    live = ~payload
    drop |= live & np.isin(types, (Node.FUNC_END, Node.BATCH_IDX))
    return words[~drop]


def rewrite(path: Path) -> None:
    data = path.read_bytes()
    blocks, off = [], 0
    while off < len(data):
        t, n = struct.unpack_from("<II", data, off)
        blocks.append((t, data[off + 8: off + 8 + n]))
        off += 8 + n
    out = []
    for t, p in blocks:
        if t == Block.DYN_DATA:
            p = strip_kernel_nodes(np.frombuffer(p, "<u4")).tobytes()
        out.append((t, p))
    out.sort(key=lambda b: 1 if b[0] == Block.DYN_DATA else 0)   # DYN_DATA last
    path.write_bytes(b"".join(struct.pack("<II", t, len(p)) + p for t, p in out))


def main() -> None:
    for f in sorted(Path(sys.argv[1]).glob("cdmlib*.profile")):
        rewrite(f)


if __name__ == "__main__":
    main()
