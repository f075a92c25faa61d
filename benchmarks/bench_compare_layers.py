"""Cost of the per-layer part of ``--baseline`` on a large layer capture.

    python benchmarks/bench_compare_layers.py                 # 8 cores x 40k commands, 10k layers
    python benchmarks/bench_compare_layers.py --layers 20000 --cmds-per-core 80000

Times (best of --repeat) the run digest with and without its layer rows (taken from
``Profile.layer_view``), the layer rows read back from a report's summary.json ``layers`` records
(an old report as baseline), and the comparison of the run with itself. Figures are
printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from reportgen import pipeline
from reportgen.analysis import compare, digest
from reportgen.options import Options
from reportgen.testing.synth import SynthConfig, write_dump
from reportgen.writers.layers_text import layers_document


def best_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=10_000)
    ap.add_argument("--cmds-per-core", type=int, default=40_000)
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dump = write_dump(Path(tmp) / "dump", SynthConfig(cores=a.cores, cmds_per_core=a.cmds_per_core,
                                                          layers=a.layers, seed=3, write_truth=False)).dump_dir
        options = Options(input=str(dump), output=str(Path(tmp) / "out"), quiet=True)
        t = time.perf_counter()
        profile = pipeline.load(options)
        pipeline.analyse(profile, options)
        print(f"capture: {len(profile.commands):,} commands, {len(profile.layer_view.layers):,} layers; "
              f"load + analyse {time.perf_counter() - t:.2f} s")
        view = profile.layer_view
        full = digest.run_digest(profile, profile.summary)
        doc = json.loads(json.dumps({"summary": [], "layers": layers_document(view)["layers"]}))

        def digest_without_layers():
            profile.layer_view = None
            try:
                return digest.run_digest(profile, profile.summary)
            finally:
                profile.layer_view = view
        figures = {
            "run digest with layers": lambda: digest.run_digest(profile, profile.summary),
            "run digest without layers": digest_without_layers,
            "layer rows read back from summary.json records": lambda: digest.digest_from_document(doc, "old"),
            "comparison of the run with itself (all tables)": lambda: compare.compare(full, full),
        }
        for name, fn in figures.items():
            print(f"{name}: {best_ms(fn, a.repeat):.1f} ms")


if __name__ == "__main__":
    main()
