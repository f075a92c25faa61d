"""OUT can't be turned against its user (issue 18 items 1, 3, 4 and the OUT parts of 9).

Each test names the item it covers; every one of them failed before reportgen/outdir existed.
"""
from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from reportgen import cli, outdir
from reportgen.errors import OutputError
from reportgen.parallel import run_jobs

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "cdm_profile_data_dev0-0"
FRAMEWORK_TRACE = sorted((ROOT / "tests" / "data" / "framework").glob("*.json*"))[0]
FAST = ["--quiet", "--no_perfetto", "--disable_doc"]        # summary + web: a second or so


def run(*args) -> int:
    return cli.main([str(a) for a in args])


def tree(out: Path) -> dict[str, bytes | str]:
    """Everything under ``out`` as it is on disk: file bytes, link targets, folders."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(out):
        for name in dirs + files:
            p = Path(folder, name)
            rel = p.relative_to(out).as_posix()
            found[rel] = (f"-> {os.readlink(p)}" if p.is_symlink()
                          else "<dir>" if p.is_dir() else p.read_bytes())
    return found


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.fixture
def old_report(tmp_path) -> Path:
    out = tmp_path / "out"
    assert run(SAMPLE, out, *FAST) == 0
    return out


# -- item 1: never write through a link inside OUT ---------------------------------------------

@pytest.mark.parametrize("name", ["PerfWeb", "PerfDoc"])
def test_item1_linked_folder_inside_out_is_refused(tmp_path, old_report, capsys, name):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "result.html").write_text("victim's page")
    (victim / "PerfAI_output.xlsx").write_text("victim's book")
    shutil.rmtree(old_report / "PerfWeb")
    (old_report / name).symlink_to(victim, target_is_directory=True)
    before, victim_before = tree(old_report), tree(victim)
    capsys.readouterr()
    assert run(SAMPLE, old_report, "--quiet", "--no_perfetto") == 3
    line = one_error_line(capsys)
    assert f"{old_report / name} is a symbolic link" in line
    assert tree(victim) == victim_before and tree(old_report) == before


def test_item1_linked_file_name_is_refused(tmp_path, old_report, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("victim")
    (old_report / "summary.txt").unlink()
    (old_report / "summary.txt").symlink_to(victim)
    before = tree(old_report)
    capsys.readouterr()
    assert run(SAMPLE, old_report, *FAST) == 3
    assert f"{old_report / 'summary.txt'} is a symbolic link" in one_error_line(capsys)
    assert victim.read_text() == "victim" and tree(old_report) == before


def test_item1_out_itself_may_be_a_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    assert run(SAMPLE, tmp_path / "link", *FAST) == 0
    assert (real / "PerfWeb" / "result.html").is_file()


# -- item 3 and item 9: only our own files are removed, known from the manifest ---------------

def test_item3_user_files_matching_our_names_survive(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "design_RegInfo_notes.txt").write_text("mine")
    assert run(SAMPLE, out, "--quiet", "--no_perfetto", "--disable_web", "--reginfo", "on") == 0
    assert len(list(out.glob("*RegInfo_*.txt"))) == 19              # 18 of ours + the user's
    assert run(SAMPLE, out, "--quiet", "--no_perfetto", "--disable_web", "--reginfo", "off") == 0
    assert [p.name for p in out.glob("*RegInfo_*.txt")] == ["design_RegInfo_notes.txt"]
    assert (out / "design_RegInfo_notes.txt").read_text() == "mine"


def test_item3_out_of_an_older_version_keeps_files_the_new_run_does_not_write(tmp_path):
    """No manifest (an older version wrote OUT): names we write are replaced, nothing else
    is removed; from then on the manifest tracks our files."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "tiuRegInfo_9.txt").write_text("older version")
    (out / "summary.txt").write_text("older version")
    assert run(SAMPLE, out, *FAST) == 0
    assert (out / "tiuRegInfo_9.txt").read_text() == "older version"
    assert (out / "summary.txt").read_text() != "older version"


def test_item3_a_forged_manifest_cannot_remove_anything_outside(tmp_path, old_report):
    victim = tmp_path / "victim.txt"
    victim.write_text("victim")
    (old_report / ".reportgen-manifest.json").write_text(
        '{"format": 1, "files": ["../victim.txt", "summary.txt"]}')
    assert run(SAMPLE, old_report, *FAST) == 0
    assert victim.read_text() == "victim"


def test_item9_stale_tables_of_a_trace_run_go_with_a_pmu_report(tmp_path):
    out = tmp_path / "out"
    assert run(FRAMEWORK_TRACE, out, "--quiet", "--no_perfetto", "--disable_web") == 0
    assert list((out / "tables").glob("*.csv"))
    assert run(SAMPLE, out, *FAST) == 0
    assert not (out / "tables").exists() and not (out / "host_device.csv").exists()


# -- item 3/4: checks before any change, one line, exit 3 --------------------------------------

@pytest.mark.parametrize("make, expect", [
    (lambda out: (shutil.rmtree(out / "PerfWeb"), (out / "PerfWeb").write_text("x")),
     "is a file where the report needs a folder"),
    (lambda out: ((out / "summary.json").unlink(), (out / "summary.json").mkdir()),
     "is a folder where the report writes a file"),
])
def test_item4_wrong_kind_of_entry_leaves_out_untouched(old_report, capsys, make, expect):
    make(old_report)
    before = tree(old_report)
    capsys.readouterr()
    assert run(SAMPLE, old_report, *FAST) == 3
    assert expect in one_error_line(capsys)
    assert tree(old_report) == before


def test_item4_cross_device_rename_is_one_line_and_rolls_back(old_report, capsys, monkeypatch):
    import errno

    before = tree(old_report)
    real = os.rename

    def exdev(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
        if src == "result.html":
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
        return real(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "rename", exdev)
    capsys.readouterr()
    assert run(SAMPLE, old_report, *FAST) == 3
    assert "another file system" in one_error_line(capsys)
    assert tree(old_report) == before


# -- item 4: all or nothing at every step of the commit ----------------------------------------

OLD = {"summary.txt": b"old", "PerfWeb/result.html": b"old page", "tiuRegInfo_0.txt": b"old 0",
       "tiuRegInfo_1.txt": b"old 1", "tables/Operators.csv": b"old table"}
NEW = {"summary.txt": b"new", "PerfWeb/result.html": b"new page", "tiuRegInfo_0.txt": b"new 0",
       "perfetto.pftrace": b"new trace"}
USER = {"design_RegInfo_notes.txt": b"the user's"}
MUTATORS = ("rename", "unlink", "mkdir", "rmdir")


def commit_files(out: Path, files: dict[str, bytes]) -> None:
    with outdir.staged(out) as stage:
        for rel, data in files.items():
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage / rel).write_bytes(data)


def ours(out: Path) -> dict[str, bytes]:
    got = {k: v for k, v in tree(out).items() if isinstance(v, bytes) and not k.startswith(".reportgen-")}
    assert {k: got.pop(k) for k in USER} == USER
    return got


def staging_left(out: Path) -> list[str]:
    return [p.name for p in out.iterdir() if p.name.startswith(".reportgen-") and p.is_dir()]


def stop_at(n: int, action, *more: int) -> None:
    """Patch every call that changes the file system so that the ``n``-th one (and those
    numbered ``more``) does ``action``."""
    count = [0]
    for name in MUTATORS:
        real = getattr(os, name)

        def patched(*a, _real=real, **k):
            count[0] += 1
            if count[0] == n or count[0] in more:
                action()
            return _real(*a, **k)
        setattr(os, name, patched)


def fresh_old(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    commit_files(out, OLD)
    for rel, data in USER.items():
        (out / rel).write_bytes(data)


def test_item4_killed_at_every_step_of_the_commit_recovers_all_old_or_all_new(tmp_path):
    """SIGKILL-like death (os._exit) before each file-system change of a commit, in a forked
    child; the next run's recovery must give all-old or all-new files and no staging."""
    out = tmp_path / "out"
    outcomes = []
    for n in range(1, 200):
        fresh_old(out)
        pid = os.fork()
        if pid == 0:
            stop_at(n, lambda: os._exit(9))
            try:
                commit_files(out, NEW)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        outdir.recover(out)
        state = ours(out)
        assert state in (OLD, NEW), (n, sorted(state))
        assert staging_left(out) == [], n
        outcomes.append("new" if state == NEW else "old")
        if os.waitstatus_to_exitcode(status) == 0:           # no step left to die at
            break
    assert outcomes[-1] == "new" and outcomes.count("old") > 3 and outcomes.count("new") > 3


@pytest.mark.parametrize("again", [None, 2, 5], ids=["once", "again-2-later", "again-5-later"])
def test_item4_error_at_every_step_of_the_commit_keeps_all_old_or_all_new(tmp_path, monkeypatch,
                                                                          again):
    """An error or a signal in the run at each step (and, for ``again``, a second one a few
    steps later, i.e. during the roll-back): all-old or all-new at once or after recovery."""
    out = tmp_path / "out"
    for n in range(1, 200):
        fresh_old(out)
        with monkeypatch.context() as m:
            for name in MUTATORS:
                m.setattr(os, name, getattr(os, name))      # undone after each step
            stop_at(n, lambda: (_ for _ in ()).throw(KeyboardInterrupt()),
                    *([n + again] if again else []))
            try:
                commit_files(out, NEW)
                finished = True
            except KeyboardInterrupt:
                finished = False
        if again is None:
            assert ours(out) in (OLD, NEW), n
        outdir.recover(out)
        assert staging_left(out) == [] and ours(out) in (OLD, NEW), n
        if finished:
            break
    assert finished


# -- item 4: signals, and writers that die with the run ---------------------------------------

def test_item9_a_killed_writer_is_named_by_its_signal():
    def dies():
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(OutputError) as err:
        run_jobs([("fine", lambda: []), ("web report", dies)], 2)
    assert "web report: writer process died (killed by SIGKILL)" in str(err.value)


def _cli(*args, tmpdir: Path | None = None, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **({"TMPDIR": str(tmpdir)} if tmpdir else {}))
    return subprocess.Popen([sys.executable, "-m", "reportgen", *map(str, args)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)


def _processes_writing(out: Path) -> list[int]:
    """Live processes whose command line names ``out`` (forked writers share their parent's)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(out).encode() in (proc / "cmdline").read_bytes():
                if (proc / "stat").read_text().split(") ")[1][0] != "Z":
                    found.append(int(proc.name))
        except OSError:
            continue
    return found


def _wait_for_writers(out: Path, start: float, limit: float = 60) -> None:
    """Until the run has forked its writers (the stage has a file in it)."""
    while time.monotonic() - start < limit:
        if any(p.is_file() for s in out.glob(".reportgen-stage-*") for p in s.rglob("*")):
            return
        time.sleep(0.02)
    raise AssertionError("the run never reached its writers")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_item4_stop_signals_stop_cleanly(big_dump, old_big_report, signum):
    out = old_big_report
    before = tree(out)
    proc = _cli(big_dump, out, "--quiet", "--reginfo", "off")
    _wait_for_writers(out, time.monotonic())
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert err.strip() == f"bigTpuProfile: interrupted ({signal.Signals(signum).name})"
    assert tree(out) == before and staging_left(out) == []
    assert _processes_writing(out) == []


def test_item4_writers_die_with_a_killed_main_process(big_dump, old_big_report):
    out = old_big_report
    proc = _cli(big_dump, out, "--quiet", "--reginfo", "off")
    _wait_for_writers(out, time.monotonic())
    assert len(_processes_writing(out)) >= 2                 # the main process and its writers
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while _processes_writing(out) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_writing(out) == []


# -- item 9: OUT checks -------------------------------------------------------------------------

def test_item9_empty_out_is_a_usage_error(tmp_path):
    res = subprocess.run([sys.executable, "-m", "reportgen", str(SAMPLE), ""], capture_output=True,
                         text=True, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert res.returncode == 2 and "the output folder must not be empty" in res.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def two_dumps(tmp_path) -> Path:
    runs = tmp_path / "run"
    runs.mkdir()
    for i in (0, 1):
        shutil.copytree(SAMPLE, runs / f"cdm_profile_data_dev{i}-0")
    return runs


def test_item9_several_dumps_into_a_regular_file(tmp_path, two_dumps, capsys):
    out = tmp_path / "out"
    out.write_text("a file")
    assert run(two_dumps, out, *FAST) == 3
    assert "exists and is not a folder" in one_error_line(capsys)
    assert out.read_text() == "a file"


def test_item9_a_dump_folder_named_index_html(tmp_path, two_dumps, capsys):
    (two_dumps / "cdm_profile_data_dev1-0").rename(two_dumps / "index.html")
    out = tmp_path / "out"
    assert run(two_dumps, out, *FAST) == 3
    assert "a dump folder named index.html" in one_error_line(capsys)
    assert not out.exists()


# -- the kill harness ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def big_dump(tmp_path_factory) -> Path:
    """A synthetic 8-core dump of 160k commands, made once per session."""
    from reportgen.testing.synth import write_dump

    root = tmp_path_factory.mktemp("big")
    write_dump(root, arch="AKS", cores=8, cmds_per_core=20000, mode=2, seed=1)
    return root / "cdm_profile_data_dev0-0"


@pytest.fixture(scope="module")
def old_reference(tmp_path_factory) -> Path:
    """A complete older report of another dump (with RegInfo files the new run does not write)."""
    out = tmp_path_factory.mktemp("ref") / "old"
    assert subprocess.run([sys.executable, "-m", "reportgen", str(SAMPLE), str(out), "--quiet",
                           "--reginfo", "on"], env=dict(os.environ, PYTHONPATH=str(ROOT))).returncode == 0
    return out


@pytest.fixture
def old_big_report(tmp_path, old_reference) -> Path:
    out = tmp_path / "out"
    shutil.copytree(old_reference, out, symlinks=True)
    return out


def fingerprint(out: Path) -> dict[str, str]:
    """Our files by hash (the workbook by its parts' CRCs, without its creation time)."""
    found = {}
    for rel, data in tree(out).items():
        if not isinstance(data, bytes) or rel.startswith(".reportgen-"):
            continue
        if rel.endswith(".xlsx"):
            with zipfile.ZipFile(out / rel) as z:
                data = repr([(i.filename, i.CRC) for i in z.infolist()
                             if i.filename != "docProps/core.xml"]).encode()
        found[rel] = hashlib.sha256(data).hexdigest()
    return found


#: the two kinds of new run: every output but RegInfo, and a quicker one without the workbook
KINDS = {"full": ["--quiet", "--reginfo", "off"], "no-doc": ["--quiet", "--disable_doc"]}
INSTANTS = 52


def test_kill_harness(tmp_path, big_dump, old_reference):
    """Issue 18 acceptance: >= 50 kill instants (SIGKILL and SIGTERM, from 0 to the measured
    run time, a third of them close to the end where the commit is) during a 160k-command run
    into an OUT holding an older complete report: after recovery our files are exactly all-old
    or all-new, and no staging or backup folder remains after the next successful run (nor
    anything in the runs' temporary folder)."""
    t_start = time.monotonic()
    old = fingerprint(old_reference)
    new, seconds = {}, {}
    for kind, args in KINDS.items():
        ref = tmp_path / f"new-{kind}"
        shutil.copytree(old_reference, ref)         # the references are made the way runs are
        t0 = time.monotonic()
        proc = _cli(big_dump, ref, *args)
        assert proc.wait() == 0, proc.stderr.read()
        seconds[kind] = time.monotonic() - t0
        new[kind] = fingerprint(ref)
        assert set(new[kind]) != set(old)
    out, tmpdir = tmp_path / "out", tmp_path / "tmp"
    tmpdir.mkdir()
    rng = random.Random(18)
    seen = {"old": 0, "new": 0}
    for i in range(INSTANTS):
        kind = "full" if i % 13 == 0 else "no-doc"
        if not out.exists() or fingerprint(out) != old:
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(old_reference, out)
        # near the end: around the commit, which is close to the process' exit (cli.console
        # skips the interpreter's teardown), so the window reaches past the measured run time
        near_end = i % 3 == 2
        delay = rng.uniform(0.85, 1.2) * seconds[kind] if near_end else rng.uniform(0, seconds[kind])
        signum = signal.SIGKILL if i % 2 else signal.SIGTERM
        proc = _cli(big_dump, out, *KINDS[kind], tmpdir=tmpdir)
        time.sleep(delay)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
        if signum == signal.SIGTERM and proc.returncode == 128 + signum:
            # a stop signal the run saw: consistent at once, nothing left behind
            assert staging_left(out) == [] and fingerprint(out) in (old, new[kind]), (i, err)
        outdir.recover(out)
        state = fingerprint(out)
        assert state in (old, new[kind]), (i, kind, delay, signum, proc.returncode, err)
        assert staging_left(out) == [], i
        seen["old" if state == old else "new"] += 1
    proc = _cli(big_dump, out, *KINDS["no-doc"])
    assert proc.wait() == 0
    assert fingerprint(out) == new["no-doc"] and staging_left(out) == []
    assert list(tmpdir.iterdir()) == []             # nothing of a killed run outside OUT either
    assert seen["old"] >= 10 and seen["new"] >= 5, seen
    print(f"kill harness: {INSTANTS} instants, {seen}, run {seconds}, "
          f"{time.monotonic() - t_start:.0f} s")


@pytest.fixture
def full_disk(tmp_path):
    """A 200 kB tmpfs: too small for the sample's workbook (needs root and mount rights)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
    if res.returncode:
        pytest.skip(f"cannot mount a small tmpfs to fill a disk: {res.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


def test_full_disk_is_one_line_without_zipfile_noise(full_disk):
    """Item 9: a full disk used to add an 'Exception ignored in ZipFile.__del__' traceback, and
    the line named the private staging folder instead of OUT."""
    out = full_disk / "out"
    res = subprocess.run([sys.executable, "-m", "reportgen", str(SAMPLE), str(out), "--quiet",
                          "--disable_web", "--no_perfetto", "--disable_summary", "--reginfo", "off"],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert res.returncode == 3
    # the workbook and the Instr World CSV (PerfDoc) are written side by side: either fills
    # the disk first, and its one line names the file under OUT
    (line,) = res.stderr.splitlines()
    assert line in (f"bigTpuProfile: error: cannot write {out}/PerfDoc/PerfAI_output.xlsx: "
                    "[Errno 28] No space left on device",
                    f"bigTpuProfile: error: {out}/PerfDoc/instr_world.csv: cannot write the Instr World "
                    "CSV (No space left on device)")
    assert [p.name for p in out.iterdir()] == []
