"""Time and memory of the whole pipeline and of each stage, on synthetic dumps.

    python benchmarks/bench_pipeline.py                       # 8 cores x 10k and 80k, mode 2
    python benchmarks/bench_pipeline.py --sizes 100000 --modes 1 2 --stages decode
    python benchmarks/bench_pipeline.py --sizes 80000 --modes 1 --stages all \
        --reference /path/to/venv030/bin/bigTpuProfile /path/to/venv037/bin/bigTpuProfile

Each measurement runs in a fresh child process so its peak RSS is its own. Stages: decode
(read_dump: the dump's bytes -> record, node and descriptor arrays; its rate is MB of dump per
second), model (build_profile: binding, alignment, description -> Profile.commands), load (the
two together, i.e. load_dump), analysis (engine_summary), summary (summary.txt/json), reginfo,
xlsx, html, perfetto, and "all" (the CLI with every output). The decode stage is run
``--repeat`` times (fresh processes): each of decode, model and load shows its fastest time (and
the rate from it) with its median beside it.

With --reference, each given vendor tool (installed in a separate virtualenv, never a
dependency) runs on the same dump and the ratios are printed. Its version is told from its
``--help``: 0.3.0 (``--perfetto``) is run with every output it has and compared with our full
run; 0.3.7 (``--enable_doc``) writes summary + perfetto by default and is compared with our run
of the same two outputs (``--disable_doc --disable_web``). Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
WORK = ROOT / "benchmarks" / "_work"

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
stage, dump, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
t0 = time.perf_counter()
from reportgen.parsers.pmu import build_profile, read_dump
from reportgen.analysis.metrics import engine_summary
times = {}
t = time.perf_counter(); raw = read_dump(dump); times["decode"] = time.perf_counter() - t
t = time.perf_counter(); p = build_profile(raw); times["model"] = time.perf_counter() - t
times["load"] = times["decode"] + times["model"]
del raw
t = time.perf_counter(); s = engine_summary(p); times["analysis"] = time.perf_counter() - t
if stage != "decode":
    from reportgen.writers import text
    t = time.perf_counter()
    if stage == "summary":
        text.write_summary(p, s, out)
    elif stage == "reginfo":
        text.write_reginfo(p, out)
    else:
        import importlib
        importlib.import_module(f"reportgen.writers.{stage}").write(p, s, out, quiet=True)
    times[stage] = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"times": times, "rss_mb": rss, "commands": len(p.commands)}))
"""


def dump_for(cores: int, per_core: int, mode: int, compat030: bool = False) -> Path:
    """A synthetic dump (cached under benchmarks/_work); ``compat030``: also readable by the
    vendor tool 0.3.0 (kernel-name nodes stripped, see compat030.py)."""
    base = WORK / f"aks-m{mode}-{cores}x{per_core}{'-030' if compat030 else ''}"
    ddir = base / "cdm_profile_data_dev0-0"
    if not (ddir / "global.profile").exists():
        from reportgen.testing.synth import write_dump
        shutil.rmtree(base, ignore_errors=True)
        write_dump(base, arch="AKS", cores=cores, cmds_per_core=per_core, mode=mode, seed=7,
                   write_truth=False)
        if compat030:
            from compat030 import main as strip
            sys.argv[1:] = [str(ddir)]
            strip()
    return ddir


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def run_child(stage: str, dump: Path, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", CHILD, stage, str(dump), str(out)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_cli(cmd: list[str], out: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of a command and its children, measured by a fresh
    watcher process (RUSAGE_CHILDREN of this process would keep earlier runs' peaks)."""
    shutil.rmtree(out, ignore_errors=True)
    watcher = ("import json, resource, subprocess, sys, time; t = time.perf_counter(); "
               "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, "
               "stderr=subprocess.DEVNULL); print(json.dumps([time.perf_counter() - t, "
               "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024]))")
    res = subprocess.run([sys.executable, "-c", watcher, *cmd], check=True, capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    wall, peak = json.loads(res.stdout.strip().splitlines()[-1])
    return wall, peak


def reference_version(exe: str) -> str:
    """"0.3.0" or "0.3.7", told from the options the vendor tool's --help lists."""
    text = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    return "0.3.0" if "--perfetto" in text else "0.3.7"


def compare_with_reference(exe: str, dump: Path, ours: list[str], full: tuple[float, float],
                           mode: int, size: int) -> list[tuple]:
    """Run a vendor tool on ``dump`` and our CLI with the same outputs; rows for the table."""
    version = reference_version(exe)
    ref_out = WORK / "out" / f"reference-{version}"
    if version == "0.3.0":            # web + doc (+ RegInfo) + perfetto: our full run compares
        rwall, rrss = run_cli([exe, str(dump), str(ref_out), "--perfetto"], ref_out)
        wall, rss, label = *full, "all"
    else:                              # 0.3.7 default: summary + perfetto
        rwall, rrss = run_cli([exe, str(dump), str(ref_out)], ref_out)
        same = WORK / "out" / "summary+perfetto"
        wall, rss = run_cli(ours[:4] + [str(same), "--quiet", "--disable_doc", "--disable_web"], same)
        label = "summary+perfetto"
    print(f"  vs {version} ({label}): {rwall / wall:.1f}x faster, {rrss / rss:.1f}x less memory")
    rows = [(mode, size, f"ref {version}", rwall, rrss, dir_size(ref_out), None, None)]
    if version != "0.3.0":
        rows.append((mode, size, "ours s+p", wall, rss, dir_size(same), None, None))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 80_000])
    ap.add_argument("--modes", type=int, nargs="+", default=[2])
    ap.add_argument("--stages", nargs="+",
                    default=["decode", "summary", "reginfo", "xlsx", "html", "perfetto", "all"])
    ap.add_argument("--repeat", type=int, default=3, help="fresh-process runs of the decode stage")
    ap.add_argument("--reference", nargs="+", default=[],
                    help="vendor bigTpuProfile executables (0.3.0 and/or 0.3.7) to compare with; "
                    "every tool then reads a 0.3.0-compatible dump")
    a = ap.parse_args()
    rows = []
    for mode in a.modes:
        for size in a.sizes:
            dump = dump_for(a.cores, size, mode, compat030=bool(a.reference))
            nbytes = dir_size(dump)
            for stage in a.stages:
                out = WORK / "out" / stage
                shutil.rmtree(out, ignore_errors=True)
                if stage == "all":
                    ours = [sys.executable, "-m", "reportgen", str(dump), str(out), "--quiet"]
                    wall, rss = run_cli(ours, out)
                    rows.append((mode, size, "all (CLI)", wall, rss, dir_size(out), None, None))
                    for ref in a.reference:
                        rows += compare_with_reference(ref, dump, ours, (wall, rss), mode, size)
                    continue
                if stage == "decode":
                    runs = [run_child(stage, dump, out) for _ in range(max(1, a.repeat))]
                    r = min(runs, key=lambda r: r["times"]["load"])
                    for part in ("decode", "model", "load"):
                        times = sorted(x["times"][part] for x in runs)   # best and median of each
                        rows.append((mode, size, part, times[0], r["rss_mb"], nbytes,
                                     nbytes / 1e6 / times[0], times[len(times) // 2]))
                    rows.append((mode, size, "analysis", r["times"]["analysis"], r["rss_mb"], 0, None, None))
                    print(f"  {r['commands']:,} commands in {nbytes / 1e6:.1f} MB")
                    continue
                r = run_child(stage, dump, out)
                rows.append((mode, size, stage, r["times"][stage], r["rss_mb"], dir_size(out), None, None))
            print_table(rows, a.cores)
    print_table(rows, a.cores, final=True)


def print_table(rows, cores, final=False):
    if not final:
        return
    print(f"\n{'mode':>4} {'cmds/core':>9} {'stage':<12} {'seconds':>8} {'median':>7} {'peak MB':>8} "
          f"{'output MB':>10} {'MB/s':>7}")
    for mode, size, stage, secs, rss, nbytes, rate, median in rows:
        print(f"{mode:>4} {size:>9} {stage:<12} {secs:>8.2f} {'' if median is None else f'{median:.2f}':>7} "
              f"{rss:>8.0f} {nbytes / 1e6:>10.1f} {'' if rate is None else f'{rate:7.0f}':>7}")
    print(f"({cores} cores; decode/model/load rows: 'output MB' is the dump's size, MB/s is dump "
          "bytes per second, peak MB is the whole child's)")


if __name__ == "__main__":
    main()
