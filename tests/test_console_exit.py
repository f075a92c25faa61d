"""The console script ends the process without the interpreter's teardown (cli.console): every
output is complete and committed, the exit codes are those of cli.main, a reader that leaves
(``| head``) is not an error, and the exit handlers registered during the run still run."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from reportgen.outdir.commit import MANIFEST

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "cdm_profile_data_dev0-0"
SCRIPT = Path(sys.executable).parent / "bigTpuProfile"
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def digest(out: Path) -> dict[str, str]:
    """Every file's sha1; a workbook's per zip member (zipfile checks each member's CRC), without
    its creation time (docProps/core.xml), as benchmarks/output_hashes.py does."""
    hashes = {}
    for f in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = str(f.relative_to(out))
        if f.suffix == ".xlsx":
            with zipfile.ZipFile(f) as z:
                assert z.testzip() is None, f
                hashes.update({f"{rel}!{n}": hashlib.sha1(z.read(n)).hexdigest()
                               for n in z.namelist() if n != "docProps/core.xml"})
        else:
            hashes[rel] = hashlib.sha1(f.read_bytes()).hexdigest()
    return hashes


def console(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          env=ENV, timeout=600, **kw)


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    """The sample's report made by cli.main() in this process (the usual teardown later)."""
    from reportgen import cli

    out = tmp_path_factory.mktemp("main") / "out"
    assert cli.main([str(SAMPLE), str(out), "--quiet"]) == 0
    return digest(out)


@pytest.fixture(scope="module", autouse=True)
def installed_script():
    if not SCRIPT.exists():
        pytest.skip(f"no console script at {SCRIPT}: install the project (pip install -e .)")
    assert "reportgen.cli import console" in SCRIPT.read_text(), \
        f"{SCRIPT} is an old install: reinstall (pip install -e .) for the console entry point"


def test_console_script_writes_the_same_complete_report_as_main(tmp_path, in_process):
    out = tmp_path / "out"
    res = console(SAMPLE, out, "--quiet")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    listed = [line.strip() for line in res.stdout.splitlines() if line.startswith("  /")]
    # the files listed are all there is, besides the run's manifest: no stage or temporary left
    assert sorted(listed) == sorted(str(p) for p in out.resolve().rglob("*")
                                    if p.is_file() and p.name != MANIFEST)
    assert [p.name for p in out.rglob(".*")] == [MANIFEST]
    got = digest(out)
    assert {"summary.json", "PerfWeb/result.html", "perfetto.pftrace"} <= set(got)
    assert got == in_process


def test_python_m_reportgen_exits_the_same_way(tmp_path, in_process):
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "reportgen", str(SAMPLE), str(out), "--quiet"],
                         capture_output=True, text=True, env=ENV, timeout=600)
    assert res.returncode == 0, res.stderr
    assert digest(out) == in_process


def test_bad_input_and_bad_usage_keep_their_exit_codes(tmp_path):
    bad = tmp_path / "cdm_profile_data_dev0-0"
    bad.mkdir()
    (bad / "global.profile").write_text("this is not a profile\n")
    res = console(bad, tmp_path / "out", "--quiet")
    assert res.returncode == 1
    assert res.stderr.startswith("bigTpuProfile: error: ") and res.stderr.count("\n") == 1, res.stderr
    assert not (tmp_path / "out").exists()
    res = console(SAMPLE, tmp_path / "out", "--registers", "sometimes")
    assert res.returncode == 2 and "invalid choice" in res.stderr
    assert not (tmp_path / "out").exists()


def test_a_reader_that_left_is_not_an_error(tmp_path, in_process):
    # the reader leaves before the first byte: every write to stdout fails (EPIPE)
    out = tmp_path / "closed"
    proc = subprocess.Popen([str(SCRIPT), str(SAMPLE), str(out), "--quiet"], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=600) == 0, err
    assert err == ""                                  # no "Exception ignored ... BrokenPipeError"
    assert digest(out) == in_process
    # and as a shell pipe: `head -n 1` keeps the first line of the summary and leaves
    out = tmp_path / "head"
    res = subprocess.run(["bash", "-c", f'"{SCRIPT}" "{SAMPLE}" "{out}" --quiet | head -n 1; '
                          'echo "status ${PIPESTATUS[0]}" >&2'],
                         capture_output=True, text=True, env=ENV, timeout=600)
    assert res.stdout.count("\n") == 1
    assert res.stderr == "status 0\n"
    assert digest(out) == in_process


SCRIPT_TEXT = """
import atexit, sys
from reportgen import cli

class Marker:
    def __del__(self):                 # runs when the interpreter tears the module down
        print("teardown", flush=True)

marker = Marker()

def fake_main(argv=None):
    atexit.register(lambda: print("handler", flush=True))
    if sys.argv[1] == "raise":
        raise RuntimeError("boom")
    print("main", end="")              # left in the buffer: flushed at the exit
    return 7

cli.main = fake_main
if sys.argv[2] == "console":
    cli.console()
sys.exit(cli.main())
"""


@pytest.mark.parametrize("how", ["console", "usual"])
def test_exit_handlers_run_and_the_teardown_is_skipped(how):
    res = subprocess.run([sys.executable, "-c", SCRIPT_TEXT, "return", how], capture_output=True,
                         text=True, env=ENV, timeout=60)
    assert res.returncode == 7
    # exit handlers registered during the run run in both cases; the teardown only without console
    assert res.stdout.split() == (["mainhandler"] if how == "console" else ["mainhandler", "teardown"])


def test_an_exception_leaving_main_gets_the_usual_exit():
    res = subprocess.run([sys.executable, "-c", SCRIPT_TEXT, "raise", "console"], capture_output=True,
                         text=True, env=ENV, timeout=60)
    assert res.returncode == 1
    assert "RuntimeError: boom" in res.stderr
    assert res.stdout.split() == ["handler", "teardown"]
