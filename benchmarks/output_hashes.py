"""Hashes of every output on every shared input: proof that a refactoring changed no byte.

    python benchmarks/output_hashes.py snap BEFORE.json     # on the old checkout
    python benchmarks/output_hashes.py snap AFTER.json      # on the new one
    python benchmarks/output_hashes.py diff BEFORE.json AFTER.json

`snap` runs `bigTpuProfile` (this checkout's code) on each golden dump of ../shared/data/pmu (and
with its `--trace_file`), each layer capture, every framework trace file and profiler folder of
../shared/data/framework, the sample dump and a folder of several dumps (links made under
benchmarks/_work), and records the exit
code and a sha1 per output file; a workbook is hashed per zip member, without
docProps/core.xml (its creation time). `diff` lists what differs. Outputs that print the input
path (the sample) differ between checkouts in different folders.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: profiler folders read as one input (besides every trace file)
FOLDERS = ("mindinsight/run_2/normal_run", "mindinsight/profiler",
           "kineto-tb-plugin/samples/resnet50_num_workers_0",
           "kineto-tb-plugin/samples/resnet50_num_workers_4", "hta/trace_filter",
           "ascend-msinsight/test_data/test_rank_0", "ascend-msinsight/test_data")


def cases() -> list[tuple[str, list[str]]]:
    found = []
    for d in sorted((DATA / "pmu").iterdir()):
        if (d / "input").is_dir():
            found.append((d.name, [str(d / "input")]))
            if (d / "trace.json").exists():
                found.append((d.name + "+trace", [str(d / "input"), "--trace_file", str(d / "trace.json")]))
    for d in sorted((DATA / "layers").iterdir()):
        if (d / "input").is_dir():
            found.append(("layers-" + d.name, [str(d / "input")]))
    fw = DATA / "framework"
    inputs = {p for p in fw.rglob("*") if p.is_file() and p.name.endswith((".json", ".gz", ".zip"))}
    inputs |= {p for p in fw.rglob("*") if p.is_dir() and p.name == "ASCEND_PROFILER_OUTPUT"}
    inputs |= {fw / f for f in FOLDERS if (fw / f).exists()}
    found += [("fw:" + str(p.relative_to(fw)), [str(p)]) for p in sorted(inputs)]
    found.append(("sample", [str(ROOT / "sample_data" / "cdm_profile_data_dev0-0")]))
    many = ROOT / "benchmarks" / "_work" / "several-dumps"   # a fixed path: outputs print it
    many.mkdir(parents=True, exist_ok=True)
    for i, case in enumerate(("aks-m2-c8", "aks-m1-c8", "aks-m0-c8")):
        link = many / f"cdm_profile_data_dev{i}-0"
        if not link.exists():
            link.symlink_to(DATA / "pmu" / case / "input")
    found.append(("many", [str(many)]))
    return found


def digest(out: Path) -> dict[str, str]:
    hashes = {}
    for f in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = str(f.relative_to(out))
        if f.suffix == ".xlsx":
            with zipfile.ZipFile(f) as z:
                hashes.update({f"{rel}!{n}": hashlib.sha1(z.read(n)).hexdigest()
                               for n in sorted(z.namelist()) if n != "docProps/core.xml"})
        else:
            hashes[rel] = hashlib.sha1(f.read_bytes()).hexdigest()
    return hashes


def snap(target: Path) -> None:
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        for name, args in cases():
            out = work / "out" / name.replace("/", "_").replace(":", "_")
            run = subprocess.run([sys.executable, "-m", "reportgen.cli", args[0], str(out), *args[1:],
                                  "--quiet"], capture_output=True, text=True, env=env, cwd=tmp)
            result[name] = {"rc": run.returncode, "stderr": run.stderr.strip()[-400:],
                            "files": digest(out) if out.exists() else {}}
            print(f"{name}: exit {run.returncode}, {len(result[name]['files'])} files", flush=True)
    target.write_text(json.dumps(result, indent=1, sort_keys=True))


def diff(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    differences = 0
    for case in sorted(set(a) | set(b)):
        if case not in a or case not in b:
            print(f"{case}: only in {'after' if case in b else 'before'}")
            continue
        if a[case]["rc"] != b[case]["rc"]:
            differences += 1
            print(f"{case}: exit {a[case]['rc']} -> {b[case]['rc']} {b[case]['stderr']}")
        fa, fb = a[case]["files"], b[case]["files"]
        for f in sorted(set(fa) | set(fb)):
            if fa.get(f) != fb.get(f):
                differences += 1
                print(f"{case}: {f}: {'gone' if f not in fb else 'new' if f not in fa else 'differs'}")
    print(f"{differences} differences over {len(set(a) & set(b))} cases")
    return 1 if differences else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "snap":
        snap(Path(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "diff":
        sys.exit(diff(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        sys.exit(__doc__)
