"""Time and memory of the whole pipeline and of each stage, on synthetic dumps.

    python benchmarks/bench_pipeline.py                       # 8 cores x 10k and 80k, mode 2
    python benchmarks/bench_pipeline.py --sizes 100000 --modes 1 2 --stages decode
    python benchmarks/bench_pipeline.py --sizes 80000 --modes 1 --stages all \
        --reference /path/to/venv030/bin/bigTpuProfile /path/to/venv037/bin/bigTpuProfile
    python benchmarks/bench_pipeline.py --size max                 # the 3.3M-command capture
    # issue 28's figures in one command (quiet machine), before/after alternating:
    python benchmarks/bench_pipeline.py --sizes 80000 --modes 1 --stages all --size max --runs 3 \
        --reference /path/to/venv030/bin/bigTpuProfile --before /path/to/older/checkout

Each measurement runs in a fresh child process so its peak RSS is its own. Stages: decode
(read_dump: the dump's bytes -> record, node and descriptor arrays; its rate is MB of dump per
second), model (build_profile: binding, alignment, description -> Profile.commands), load (the
two together, i.e. load_dump), analysis (engine_summary), summary (summary.txt/json), reginfo,
xlsx, html, perfetto, and "all" (the CLI with every output, measured as a whole process tree by
treemem.py: wall and CPU time, peak memory = the largest sum of the PSS of the CLI and its forked
writers sampled every 20 ms; beside it the time of each of its stages as its own stderr lines
tell them, and the outputs' sizes). ``--size max`` adds the largest capture: mode 2, 8 cores x
390,000 commands per core of the synthetic program = 3,273,244 commands (a full record buffer:
the issue's 3,310,278-command capture within 1.1 %),
made once by ``reportgen-synth`` (about 400 MB); only "all" runs on it. ``--runs N``: N runs of
"all" (with ``--before DIR``, an older checkout's CLI on the same dump in alternation: a load
that comes and goes hits both). The decode stage is run
``--repeat`` times (fresh processes): each of decode, model and load shows its fastest time (and
the rate from it) with its median beside it.

With --reference, each given vendor tool (installed in a separate virtualenv, never a
dependency) runs on the same dump and the ratios are printed. Its version is told from its
``--help``: 0.3.0 (``--perfetto``) is run with every output it has and compared with our full
run; 0.3.7 (``--enable_doc``) writes summary + perfetto by default and is compared with our run
of the same two outputs (``--disable_doc --disable_web``). The ratios (ours is N x faster, N x
less CPU, N x less memory) use the same measure for both tools, in the same benchmark run; the
largest capture is not given to a vendor tool (0.3.0 needs ~8.7 GB at 680k commands).
Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
WORK = ROOT / "benchmarks" / "_work"
#: --size max: mode 2, 8 cores x this many commands per core -> 3,273,244 commands
MAX_PER_CORE = 390_000

import treemem  # noqa: E402

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


_STAGE = re.compile(r"bigTpuProfile: (input read|analysed|.+? written)\b.* in ([\d.]+) (ms|s)$")


def stage_times(stderr: str) -> dict[str, float]:
    """A CLI run's stage durations from its stderr lines (``input read (...) in 2.4 s``,
    ``analysed in 2.6 s``, ``workbook written in 20.8 s``)."""
    times = {}
    for line in stderr.splitlines():
        m = _STAGE.match(line)
        if m:
            name = {"input read": "read", "analysed": "analyse"}.get(m[1], m[1].removesuffix(" written"))
            times[name] = float(m[2]) / (1000 if m[3] == "ms" else 1)
    return times


def run_cli(cmd: list[str], out: Path, root: Path = ROOT) -> treemem.Measured:
    """A command measured as a process tree (treemem.run), run from ``root`` (a checkout)."""
    shutil.rmtree(out, ignore_errors=True)
    # run from the checkout: "python -m" puts the working folder first on sys.path
    res = treemem.run(cmd, env=dict(os.environ, PYTHONPATH=str(root)), cwd=str(root))
    if res.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return res


def output_sizes(out: Path, commands: int, times: dict) -> dict:
    """The big outputs' sizes and what the issue's targets read from them."""
    def size(rel):
        f = out / rel
        return f.stat().st_size if f.is_file() else 0
    sizes = {"perfetto_MB": size("perfetto.pftrace") / 1e6,
             "perfetto_B_per_cmd": size("perfetto.pftrace") / max(commands, 1),
             "workbook_MB": size("PerfDoc/PerfAI_output.xlsx") / 1e6,
             "instr_world_MB": size("PerfDoc/instr_world.csv") / 1e6,
             "result_html_MB": size("PerfWeb/result.html") / 1e6}
    if times.get("Instr World"):
        sizes["instr_world_rows_per_s"] = commands / times["Instr World"]
    return sizes


def ours_all(dump: Path, out: Path, root: Path = ROOT, extra: tuple = ()) -> dict:
    """Our CLI with every output (stage lines on: not --quiet) as one measured row."""
    cmd = [sys.executable, "-m", "reportgen", str(dump), str(out), *extra]
    r = run_cli(cmd, out, root)
    times = stage_times(r.stderr)
    m = re.search(r"input read \(.*?\): ([\d,]+) commands", r.stderr)
    commands = int(m[1].replace(",", "")) if m else 0
    return {"wall": r.wall_s, "cpu": r.cpu_s, "pss": r.peak_pss_mb, "procs": r.peak_processes,
            "parts": r.peak_parts_mb, "stages": times, "commands": commands, "bytes": dir_size(out),
            "sizes": output_sizes(out, commands, times) if not extra else {}}


def print_all(label: str, row: dict) -> None:
    stages = "  ".join(f"{k} {v:.1f}" for k, v in row["stages"].items())
    sizes = "  ".join(f"{k} {v:,.1f}" for k, v in row["sizes"].items())
    print(f"  {label}: {row['commands']:,} commands: wall {row['wall']:.1f} s, CPU {row['cpu']:.1f} s, "
          f"tree peak PSS {row['pss']:,.0f} MB ({row['procs']} processes: "
          f"{' + '.join(f'{mb:,.0f}' for mb in row['parts'])} MB, the CLI first)"
          f"\n    stages (s): {stages}"
          f"\n    outputs: {sizes}", flush=True)


def reference_version(exe: str) -> str:
    """"0.3.0" or "0.3.7", told from the options the vendor tool's --help lists."""
    text = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    return "0.3.0" if "--perfetto" in text else "0.3.7"


def compare_with_reference(exe: str, dump: Path, full: dict, mode: int, size: int) -> list[tuple]:
    """Run a vendor tool on ``dump`` and our CLI with the same outputs; rows for the table."""
    version = reference_version(exe)
    ref_out = WORK / "out" / f"reference-{version}"
    if version == "0.3.0":            # web + doc (+ RegInfo) + perfetto: our full run compares
        ref = run_cli([exe, str(dump), str(ref_out), "--perfetto"], ref_out)
        ours, label = full, "all"
    else:                              # 0.3.7 default: summary + perfetto
        ref = run_cli([exe, str(dump), str(ref_out)], ref_out)
        same = WORK / "out" / "summary+perfetto"
        ours = ours_all(dump, same, extra=("--disable_doc", "--disable_web"))
        label = "summary+perfetto"
    print(f"  vs {version} ({label}, same dump, this run): {ref.wall_s / ours['wall']:.1f}x faster "
          f"({ref.wall_s:.1f} s vs {ours['wall']:.1f} s), {ref.cpu_s / ours['cpu']:.1f}x less CPU, "
          f"{ref.peak_pss_mb / ours['pss']:.1f}x less memory ({ref.peak_pss_mb:,.0f} MB vs "
          f"{ours['pss']:,.0f} MB tree peak PSS)", flush=True)
    rows = [(mode, size, f"ref {version}", ref.wall_s, ref.peak_pss_mb, dir_size(ref_out), None, None)]
    if version != "0.3.0":
        rows.append((mode, size, "ours s+p", ours["wall"], ours["pss"], ours["bytes"], None, None))
    return rows


def measure_all(dump: Path, mode: int, size: int, a) -> list[tuple]:
    """``--runs`` runs of our full CLI (alternating with ``--before``'s), then the references."""
    rows, ours, before = [], [], []
    for i in range(max(1, a.runs)):
        if a.before:
            before.append(ours_all(dump, WORK / "out" / "all-before", Path(a.before)))
            print_all(f"before, run {i + 1}", before[-1])
        ours.append(ours_all(dump, WORK / "out" / "all"))
        print_all(f"this checkout, run {i + 1}", ours[-1])
    for label, runs in (("all (CLI)", ours), ("all before", before)):
        if runs:
            best = min(runs, key=lambda r: r["wall"])
            rows.append((mode, size, label, best["wall"], max(r["pss"] for r in runs), best["bytes"],
                         None, statistics.median(r["wall"] for r in runs)))
            rows.append((mode, size, label.replace("all", "CPU"), best["cpu"], 0, 0, None,
                         statistics.median(r["cpu"] for r in runs)))
    if before:
        med = {k: statistics.median(r[k] for r in ours) for k in ("wall", "cpu", "pss")}
        old = {k: statistics.median(r[k] for r in before) for k in ("wall", "cpu", "pss")}
        print(f"  this checkout vs before (medians): wall {old['wall']:.1f} -> {med['wall']:.1f} s, "
              f"CPU {old['cpu']:.1f} -> {med['cpu']:.1f} s, tree peak PSS {old['pss']:,.0f} -> "
              f"{med['pss']:,.0f} MB", flush=True)
    if size != MAX_PER_CORE:
        for ref in a.reference:
            rows += compare_with_reference(ref, dump, min(ours, key=lambda r: r["wall"]), mode, size)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 80_000])
    ap.add_argument("--modes", type=int, nargs="+", default=[2])
    ap.add_argument("--stages", nargs="+",
                    default=["decode", "summary", "reginfo", "xlsx", "html", "perfetto", "all"])
    ap.add_argument("--repeat", type=int, default=3, help="fresh-process runs of the decode stage")
    ap.add_argument("--size", choices=("max",), help="max: also the 3.3M-command mode-2 capture "
                    "(8 cores; stage 'all' only)")
    ap.add_argument("--runs", type=int, default=1, help="runs of stage 'all' (best and median)")
    ap.add_argument("--before", metavar="CHECKOUT", help="an older checkout whose CLI runs the "
                    "stage 'all' too, alternating with this one")
    ap.add_argument("--reference", nargs="+", default=[],
                    help="vendor bigTpuProfile executables (0.3.0 and/or 0.3.7) to compare with; "
                    "every tool then reads a 0.3.0-compatible dump")
    a = ap.parse_args()
    rows = []
    cases = [(mode, size, a.cores, a.stages) for mode in a.modes for size in a.sizes]
    if a.size == "max":
        cases.append((2, MAX_PER_CORE, 8, ["all"]))
    for mode, size, cores, stages in cases:
        big = size == MAX_PER_CORE
        dump = dump_for(cores, size, mode, compat030=bool(a.reference) and not big)
        nbytes = dir_size(dump)
        print(f"mode {mode}, {cores} cores x {size:,} ({nbytes / 1e6:.0f} MB): {dump}", flush=True)
        for stage in stages:
            out = WORK / "out" / stage
            shutil.rmtree(out, ignore_errors=True)
            if stage == "all":
                rows += measure_all(dump, mode, size, a)
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


def print_table(rows, cores):
    print(f"\n{'mode':>4} {'cmds/core':>9} {'stage':<12} {'seconds':>8} {'median':>7} {'peak MB':>8} "
          f"{'output MB':>10} {'MB/s':>7}")
    for mode, size, stage, secs, rss, nbytes, rate, median in rows:
        print(f"{mode:>4} {size:>9} {stage:<12} {secs:>8.2f} {'' if median is None else f'{median:.2f}':>7} "
              f"{rss:>8.0f} {nbytes / 1e6:>10.1f} {'' if rate is None else f'{rate:7.0f}':>7}")
    print(f"({cores} cores, max: 8; decode/model/load rows: 'output MB' is the dump's size, MB/s is "
          "dump bytes per second, peak MB is the whole child's; 'all' rows: peak MB is the largest "
          "tree PSS (CLI + forked writers, sampled every 20 ms), 'CPU' rows: CPU seconds of the tree)")


if __name__ == "__main__":
    main()
