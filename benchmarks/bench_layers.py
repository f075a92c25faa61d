"""What the layer view adds on a big layer capture (issue 14 acceptance: at most 1 s for
10,000 layers over a 1M-command capture).

    python benchmarks/bench_layers.py                     # 8 cores x 125k commands, 10k layers
    python benchmarks/bench_layers.py --cmds-per-core 12500 --layers 1000

Writes the capture with the project's dump writer (reportgen.testing.synth, --layers) once into
benchmarks/_work/, then times, in this process, the two steps the layer view adds to a run:
reading the layer files (parsers.layers.read_layer_files: tensor_location.json + final.mlir)
and mapping every command onto its layer with the per-layer tables (analysis.layers
build_layer_view). The decode of the dump and the rest of the analysis are timed beside them
for scale. Each step runs --repeat times; the fastest and the median wall times are printed, and
the fastest CPU time of this process (on a shared machine the wall time also counts the waits for
a core; the CPU time does not), never asserted.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
WORK = ROOT / "benchmarks" / "_work"

from timing import measure  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--cmds-per-core", type=int, default=125_000)
    ap.add_argument("--layers", type=int, default=10_000)
    ap.add_argument("--mode", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)

    from reportgen.analysis.derive import derive
    from reportgen.analysis.layers import build_layer_view
    from reportgen.model import Meta
    from reportgen.options import MAX_INPUT_MB
    from reportgen.parsers.layers import read_layer_files
    from reportgen.parsers.pmu import load_dump
    from reportgen.testing.synth import SynthConfig, write_dump

    out = WORK / f"layers-c{a.cores}-n{a.cmds_per_core}-l{a.layers}-m{a.mode}-s{a.seed}"
    dump = out / "cdm_profile_data_dev0-0"
    if not (dump / "tensor_location.json").is_file():
        t = time.perf_counter()
        write_dump(out, SynthConfig(cores=a.cores, cmds_per_core=a.cmds_per_core, mode=a.mode,
                                    seed=a.seed, layers=a.layers, write_truth=False))
        print(f"wrote {dump} in {time.perf_counter() - t:.1f} s")
    sizes = {p.name: p.stat().st_size for p in dump.iterdir()}
    print(f"tensor_location.json {sizes['tensor_location.json'] / 1e6:.1f} MB, final.mlir "
          f"{sizes['final.mlir'] / 1e6:.2f} MB")

    t_load, _, _, profile = measure(lambda: load_dump(dump), 1)
    print(f"commands: {len(profile.commands):,}   decode (load_dump): {t_load:.2f} s")
    derive(profile)                      # the rest of the analysis; layer_view None: no files
    t_read, m_read, c_read, files = measure(
        lambda: read_layer_files(dump, Meta(source="pmu"), MAX_INPUT_MB), a.repeat)
    profile.layers = files
    t_map, m_map, c_map, view = measure(lambda: build_layer_view(profile), a.repeat)
    print(f"records: {len(files.records):,}   layers: {len(view.layers):,}   unattributed "
          f"commands: {int((view.command_record < 0).sum()):,} (SDMA included)")
    print(f"read layer files:  fastest {t_read:.3f} s   median {m_read:.3f} s   CPU {c_read:.3f} s")
    print(f"build layer view:  fastest {t_map:.3f} s   median {m_map:.3f} s   CPU {c_map:.3f} s")
    print(f"layer view adds:   fastest {t_read + t_map:.3f} s   median {m_read + m_map:.3f} s   "
          f"CPU {c_read + c_map:.3f} s (budget 1 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
