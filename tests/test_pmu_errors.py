"""Corrupt and odd PMU dumps: one clear line and a non-zero exit, or a warning and the data.

Dumps come from the project's own writer (reportgen.testing.synth) and are then broken on purpose.
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.errors import InputError
from reportgen.parsers.pmu import load_dump
from reportgen.testing.synth import write_dump

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("synth")
    return write_dump(base, arch="AKS", cores=8, cmds_per_core=150, mode=2, seed=11).dump_dir


@pytest.fixture
def copy(dump, tmp_path) -> Path:
    d = tmp_path / "cdm_profile_data_dev0-0"
    shutil.copytree(dump, d)
    return d


def run_cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "reportgen", *map(str, args), "--quiet"],
                          capture_output=True, text=True, env=env, timeout=300)


def blocks(path: Path) -> list[tuple[int, int, int]]:
    data, off, out = path.read_bytes(), 0, []
    while off < len(data):
        t, n = struct.unpack_from("<II", data, off)
        out.append((off, t, n))
        off += 8 + n
    return out


def assert_one_line_error(res, *needles, out: Path | None = None):
    assert res.returncode != 0, res.stdout
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    if out is not None:
        assert not out.exists() or not any(out.rglob("*")), "output written despite the error"


def test_missing_global_profile(copy, tmp_path):
    (copy / "global.profile").unlink()
    res = run_cli(copy, tmp_path / "out")
    assert_one_line_error(res, str(copy), "global.profile", out=tmp_path / "out")


def test_unknown_arch_names_the_line(copy, tmp_path):
    gp = copy / "global.profile"
    gp.write_text(gp.read_text().replace("arch=8800", "arch=1234"))
    res = run_cli(copy, tmp_path / "out")
    assert_one_line_error(res, "global.profile line 1", "arch='1234'", out=tmp_path / "out")


def test_truncated_block_names_file_and_offset(copy, tmp_path):
    f = copy / "cdmlib0_3.profile"
    off, t, n = blocks(f)[-1]
    f.write_bytes(f.read_bytes()[: off + 8 + n // 2])
    res = run_cli(copy, tmp_path / "out")
    assert_one_line_error(res, "cdmlib0_3.profile", f"byte offset {off}", "truncated",
                          out=tmp_path / "out")


def test_unknown_block_type(copy):
    f = copy / "cdmlib0_1.profile"
    size = f.stat().st_size
    f.write_bytes(f.read_bytes() + struct.pack("<II", 99, 4) + b"\0" * 4)
    with pytest.raises(InputError) as err:
        load_dump(copy)
    assert err.value.offset == size and "unknown block type 99" in str(err.value)


def test_huge_claimed_length_is_rejected_without_allocating(copy):
    f = copy / "cdmlib0_0.profile"
    f.write_bytes(f.read_bytes() + struct.pack("<II", 5, 0xFFFFFFF0))
    with pytest.raises(InputError, match="claims 4294967280 payload bytes"):
        load_dump(copy)


def test_empty_directory_and_not_a_dump(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line_error(run_cli(empty, tmp_path / "o1"), "empty", out=tmp_path / "o1")
    stray = tmp_path / "notes.txt"
    stray.write_text("hello")
    assert_one_line_error(run_cli(stray, tmp_path / "o2"), "notes.txt", out=tmp_path / "o2")


def test_record_count_mismatch_is_a_warning(copy, dump):
    gp = copy / "global.profile"
    lines = gp.read_text().splitlines()
    lines = [l if not l.startswith("core2_gdma_record=") else "core2_gdma_record=7" for l in lines]
    gp.write_text("\n".join(lines) + "\n")
    p = load_dump(copy)
    assert any(w.code == "record-count" and "core2_gdma_record=7" in w.message for w in p.meta.warnings)
    assert len(p.sheet("GDMA_2")) == len(load_dump(dump).sheet("GDMA_2")) > 7   # the data is kept


def test_blank_and_junk_lines_in_global_profile(copy, dump):
    gp = copy / "global.profile"
    gp.write_text("\n" + gp.read_text().replace("\n", "\n\n", 3) + "garbage without equals\n")
    p = load_dump(copy)
    assert any(w.code == "global-junk" for w in p.meta.warnings)
    assert len(p.commands) == len(load_dump(dump).commands)     # every record is still read


def test_zero_length_core_file_is_an_idle_core(copy):
    (copy / "cdmlib0_4.profile").write_bytes(b"")
    p = load_dump(copy)
    assert not (p.commands["core"] == 4).any()
    assert any(w.code == "empty-core" for w in p.meta.warnings)
    assert set(p.commands["core"]) >= {0, 1, 2, 3, 5, 6, 7}


def test_bad_option_is_a_usage_error(copy, tmp_path):
    res = run_cli(copy, tmp_path / "out", "--no-such-option")
    assert res.returncode == 2 and "unrecognized arguments" in res.stderr


def test_unreadable_core_file_is_one_line(copy, monkeypatch):
    """An I/O error on a core file (permissions, a failing disk) names the file."""
    victim = copy / "cdmlib0_2.profile"
    real_open = Path.open

    def failing_open(self, *args, **kwargs):
        if self == victim:
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", failing_open)
    with pytest.raises(InputError) as err:
        load_dump(copy)
    assert str(err.value) == f"{victim}: cannot read: Permission denied"
