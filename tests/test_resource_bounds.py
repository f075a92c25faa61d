"""Issue 18 item 5, resource bounds: an input beyond ``--max_input_mb`` (a decompression bomb, a
sparse core file of gigabytes, JSON text of gigabytes) is refused with one line naming the file
and exit 1, quickly and within bounded memory, never read whole first; input at the bound loads.

Every hostile file is made here and is small on disk: bombs are a few hundred repeated deflate
segments, large files are sparse (``os.truncate``).  Before this item the bombs and sparse files
were read whole (8.9 GB of memory for a 1 GB gzip bomb, 22 s for a 12 GB sparse core file) and
ended in a traceback; ``--max_input_mb`` did not exist.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from reportgen import cli
from reportgen.errors import InputError
from reportgen.options import MAX_INPUT_MB, OptionError, Options
from reportgen.parsers.pmu.records import Block
from reportgen.testing.synth import write_dump

ROOT = Path(__file__).resolve().parents[1]
MB = 1 << 20
GB = 1 << 30
EVENT = {"name": "k", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}
STRING_HEAD = b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "name": "'
STRING_TAIL = b'"}]}'


def _deflate(data: bytes) -> bytes:
    """Raw deflate blocks of ``data`` ending on a byte boundary with no history: such pieces
    can be concatenated (and repeated) into one deflate stream."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush(zlib.Z_FULL_FLUSH)


def gzip_bomb(path: Path, filler_mb: int) -> Path:
    """A gzip trace whose one event name is ``filler_mb`` MB of spaces (about 1 KB on disk per
    MB of text)."""
    filler = b" " * MB
    crc = zlib.crc32(STRING_HEAD)
    for _ in range(filler_mb):
        crc = zlib.crc32(filler, crc)
    crc = zlib.crc32(STRING_TAIL, crc)
    size = len(STRING_HEAD) + filler_mb * MB + len(STRING_TAIL)
    with open(path, "wb") as fh:
        fh.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
        fh.write(_deflate(STRING_HEAD))
        fh.write(_deflate(filler) * filler_mb)
        fh.write(_deflate(STRING_TAIL) + zlib.compressobj(9, zlib.DEFLATED, -15).flush())
        fh.write(struct.pack("<II", crc, size & 0xFFFFFFFF))
    return path


def refused(capsys, args, needle: str, name: str) -> str:
    """Run the CLI in-process: exit 1 and one line on stderr naming the file."""
    assert cli.main([*map(str, args), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert name in err and needle in err, err
    return err


# the peak is VmHWM, the high-water mark of the child's own address space: ru_maxrss carries
# over the parent's across fork + exec, so a large pytest process inflated it (897 MB vs 585 MB)
CHILD = """
import re, resource, sys, time
from pathlib import Path
from reportgen import cli
t = time.perf_counter()
rc = cli.main(sys.argv[1:])
status = Path("/proc/self/status")
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", status.read_text()) if status.exists() else None
kb = int(hwm.group(1)) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"RESULT {rc} {time.perf_counter() - t:.3f} {kb // 1024}", flush=True)
"""


def run_child(*args) -> tuple[int, float, int, str]:
    """The CLI in a fresh process: (exit code, seconds, peak RSS in MB, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", CHILD, *map(str, args), "--quiet"],
                         capture_output=True, text=True, env=env, timeout=300)
    _, rc, seconds, peak = res.stdout.split()
    return int(rc), float(seconds), int(peak), res.stderr


# -- compressed traces --------------------------------------------------------------------------

def test_gzip_bomb_is_refused_once_its_limit_is_crossed(tmp_path, capsys):
    bomb = gzip_bomb(tmp_path / "bomb.json.gz", 8)
    assert bomb.stat().st_size < 20_000
    err = refused(capsys, [bomb, tmp_path / "out", "--max_input_mb", "1"], "expands beyond", "bomb.json.gz")
    assert "--max_input_mb raises it" in err
    assert not (tmp_path / "out").exists()


def test_gzip_bomb_of_1gb_at_the_default_bound_stays_small():
    """The issue's bomb (1 GB of text in about 1 MB of gzip) with no option: refused in a few
    seconds within a few hundred MB (it cost 8.9 GB before)."""
    from tempfile import TemporaryDirectory

    with TemporaryDirectory() as tmp:
        bomb = gzip_bomb(Path(tmp) / "bomb1g.json.gz", 1024)
        rc, seconds, peak_mb, err = run_child(bomb, Path(tmp) / "out")
    assert rc == 1 and err.count("\n") == 1 and "bomb1g.json.gz" in err and "expands beyond" in err, err
    assert peak_mb < 800 and seconds < 20, (peak_mb, seconds)


def test_zip_bomb_is_refused(tmp_path, capsys):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("trace.json", "w") as member:
            member.write(STRING_HEAD)
            for _ in range(8):
                member.write(b" " * MB)
            member.write(STRING_TAIL)
    assert bomb.stat().st_size < 50_000
    refused(capsys, [bomb, tmp_path / "out", "--max_input_mb", "1"], "expands beyond", "bomb.zip")


def test_a_bomb_in_a_folder_of_ranks_fails_its_rank_not_skipped(tmp_path, capsys):
    """A folder of rank traces is a batch (issue 17): the bomb's rank is listed with its one-line
    error, the other rank reports, the exit code says one failed."""
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    (ranks / "rank0.json").write_text(json.dumps({"traceEvents": [EVENT]}))
    gzip_bomb(ranks / "rank1.json.gz", 8)
    assert cli.main([str(ranks), str(tmp_path / "out"), "--max_input_mb", "1", "--quiet"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"rank1.json.gz: error: {ranks / 'rank1.json.gz'}") and "expands beyond" in out[0]
    assert (tmp_path / "out" / "rank0.json" / "summary.json").is_file()


def test_host_trace_is_bounded_too(tmp_path, capsys):
    dump = write_dump(tmp_path, arch="AKS", cores=1, cmds_per_core=30, mode=2, seed=1).dump_dir
    bomb = gzip_bomb(tmp_path / "host.json.gz", 8)
    refused(capsys, [dump, tmp_path / "out", "--trace_file", bomb, "--max_input_mb", "1"],
            "expands beyond", "host.json.gz")


# -- JSON text -----------------------------------------------------------------------------------

def test_json_text_beyond_the_bound_is_refused_unread(tmp_path, capsys):
    """A single-string JSON of a sparse GB (as large as the issue's) with the bound lowered."""
    big = tmp_path / "string.json"
    big.write_bytes(STRING_HEAD)
    os.truncate(big, GB)
    err = refused(capsys, [big, tmp_path / "out", "--max_input_mb", "64"], "beyond the input limit",
                  "string.json")
    assert "1024 MB" in err and "64 MB" in err


READ_PEAK = """
import resource, sys
from reportgen.parsers.chrome.reader import read_events
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
read_events(sys.argv[1])
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_single_string_json_is_read_within_a_small_multiple_of_its_text(tmp_path):
    """Below the bound, reading a 64 MB string costs at most 4x its text (docs/formats.md: the
    text, its decoded copy and the string); the bracket-depth scan alone cost 16x before."""
    text = tmp_path / "string.json"
    with open(text, "wb") as fh:
        fh.write(STRING_HEAD + b"x" * (64 * MB) + STRING_TAIL)
    res = subprocess.run([sys.executable, "-c", READ_PEAK, str(text)], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert res.returncode == 0, res.stderr
    assert int(res.stdout) < 4 * 64, res.stdout


@pytest.mark.parametrize("compressed", [False, True])
def test_a_trace_at_the_bound_loads(tmp_path, compressed):
    body = json.dumps({"traceEvents": [EVENT]}).encode()
    text = body[:-1] + b" " * (MB - len(body)) + b"}"        # exactly 1 MB
    assert len(text) == MB
    path = tmp_path / ("edge.json.gz" if compressed else "edge.json")
    path.write_bytes(zlib.compress(text, wbits=31) if compressed else text)
    if compressed:   # 1 MB from a few hundred bytes: within the ratio-free sixteenth of 16 MB
        assert cli.main([str(path), str(tmp_path / "out"), "--quiet", "--max_input_mb", "16"]) == 0
        with pytest.raises(InputError, match="expands beyond"):
            from reportgen.parsers.chrome.reader import read_text
            read_text(path, max_input_mb=15)
    else:
        assert cli.main([str(path), str(tmp_path / "out"), "--quiet", "--max_input_mb", "1"]) == 0
        path.write_bytes(text + b" ")
        with pytest.raises(InputError, match="beyond the input limit"):
            from reportgen.parsers.chrome.reader import read_text
            read_text(path, max_input_mb=1)


# -- PMU dumps -----------------------------------------------------------------------------------

@pytest.fixture
def dump(tmp_path):
    return write_dump(tmp_path, arch="AKS", cores=2, cmds_per_core=30, mode=2, seed=1).dump_dir


@pytest.mark.parametrize("gigabytes", [12, 50])
def test_sparse_core_file_is_refused_unread(dump, tmp_path, gigabytes):
    """The issue's sparse core files: refused at the end of the last block without reading the
    gigabytes of zeros (12 GB took 22 s and 12.6 GB before; 50 GB a traceback)."""
    core = dump / "cdmlib0_1.profile"
    blocks_end = core.stat().st_size
    os.truncate(core, gigabytes * GB)
    rc, seconds, peak_mb, err = run_child(dump, tmp_path / "out")
    assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "cdmlib0_1.profile" in err and f"byte offset {blocks_end}" in err and "in no block" in err
    assert seconds < 5 and peak_mb < 1024, (seconds, peak_mb)


def test_core_files_beyond_the_bound_together_are_refused(dump, tmp_path, capsys):
    """Blocks that do account for a sparse file's size: refused by the bound, unread."""
    core = dump / "cdmlib0_0.profile"
    end = core.stat().st_size
    with open(core, "ab") as fh:
        fh.write(struct.pack("<II", Block.DYN_EXTRA, 3 * MB))
    os.truncate(core, end + 8 + 3 * MB)
    refused(capsys, [dump, tmp_path / "out", "--max_input_mb", "2"], "beyond the input limit of 2 MB",
            dump.name)


def test_a_sparse_port_file_is_refused_unread(tmp_path, capsys):
    dump = write_dump(tmp_path, arch="AKS", cores=8, cmds_per_core=20, mode=2, seed=1).dump_dir
    port = sorted(dump.glob("cdma*.profile"))[0]
    os.truncate(port, 50 * GB)
    refused(capsys, [dump, tmp_path / "out"], "in no block", port.name)


def test_a_sparse_global_profile_is_refused_unread(dump, tmp_path, capsys):
    os.truncate(dump / "global.profile", 50 * GB)
    refused(capsys, [dump, tmp_path / "out"], "at most 1048576 bytes", "global.profile")


def test_a_dump_within_the_bound_loads(dump, tmp_path):
    assert cli.main([str(dump), str(tmp_path / "out"), "--quiet", "--max_input_mb", "1"]) == 0


# -- the option ----------------------------------------------------------------------------------

def test_the_option_is_validated_and_documented(capsys):
    assert Options(input="x").max_input_mb == MAX_INPUT_MB == 4096
    for bad in (0, -5, 1.5, True):
        with pytest.raises(OptionError, match="max_input_mb"):
            Options(input="x", max_input_mb=bad)
    with pytest.raises(SystemExit) as exc:
        cli.main(["x", "--max_input_mb", "0"])
    assert exc.value.code == 2
    assert "--max_input_mb" in cli.build_parser().format_help()
    assert "--max_input_mb" in (ROOT / "README.md").read_text(encoding="utf-8")
