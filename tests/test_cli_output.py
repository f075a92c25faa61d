"""What the `bigTpuProfile` command prints: progress piped into a log and on a terminal,
--quiet, --version, the summary's width and facts."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from reportgen.analysis.metrics import engine_summary
from reportgen.testing.profiles import make_profile
from reportgen.version import __version__
from reportgen.writers import text

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "cdm_profile_data_dev0-0"
TRACE = ROOT / "tests" / "data" / "framework" / "handmade_kineto.json"
#: the outputs a default run on a PMU dump writes (pipeline.OUTPUTS labels)
PMU_OUTPUTS = {"workbook", "RegInfo files", "perfetto trace", "web report", "summary", "Instr World"}
STAGE = re.compile(r"bigTpuProfile: (?:input read \((?P<source>\w+)\): (?P<commands>[\d,]+) commands"
                   r"|analysed|(?P<output>.+) written) in \d+(?:\.\d)? m?s")


def _command(*args) -> list[str]:
    return [sys.executable, "-m", "reportgen", *map(str, args)]


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("REPORTGEN_DEBUG", None)
    return env


def _stages(lines: list[str]) -> list[re.Match]:
    """Each line as a stage line (a line that is not one fails the test)."""
    matches = [STAGE.fullmatch(line) for line in lines]
    assert all(matches), [l for l, m in zip(lines, matches) if not m]
    return matches


def _check_stage_order(stages: list[re.Match], commands: int, outputs: set[str]) -> None:
    """input read, analysed, then one line per output (in the order they finished)."""
    assert stages[0]["source"] == "pmu" and int(stages[0]["commands"].replace(",", "")) == commands
    assert stages[1][0].startswith("bigTpuProfile: analysed in ")
    written = [m["output"] for m in stages[2:]]
    assert sorted(written) == sorted(outputs)         # each exactly once


def _summary_part(stdout: str) -> list[str]:
    return stdout.split("\nWrote ")[0].splitlines()


def test_piped_run_prints_one_line_per_stage(tmp_path):
    """stdout and stderr are files (not a terminal): no carriage return anywhere, no bar, and
    stderr holds exactly one whole line per stage although the writers run side by side."""
    out_file, err_file = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out_file, "wb") as out, open(err_file, "wb") as err:
        res = subprocess.run(_command(SAMPLE, tmp_path / "out"), stdout=out, stderr=err,
                             stdin=subprocess.DEVNULL, env=_env(), timeout=600)
    assert res.returncode == 0, err_file.read_text()
    stdout, stderr = out_file.read_bytes(), err_file.read_bytes()
    assert b"\r" not in stdout and b"\r" not in stderr
    lines = stderr.decode().splitlines()
    assert len(lines) == 2 + len(PMU_OUTPUTS)
    commands = len(pd.read_csv(SAMPLE.parent / "expected_commands.csv"))
    _check_stage_order(_stages(lines), commands, PMU_OUTPUTS)
    printed = stdout.decode()
    assert printed.startswith((tmp_path / "out" / "summary.txt").read_text())
    assert max(len(line) for line in _summary_part(printed)[1:]) <= 120


def _run_on_terminal(args, tmp_path) -> tuple[int, bytes, bytes]:
    """The CLI with stderr on a pseudo-terminal (120x40): (exit code, stdout, terminal bytes)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    out_file = tmp_path / "stdout.txt"
    with open(out_file, "wb") as out:
        proc = subprocess.Popen(_command(*args), stdout=out, stderr=slave,
                                stdin=subprocess.DEVNULL, env=_env())
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:               # EIO: the last holder of the terminal closed it
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(master)
        code = proc.wait(timeout=600)
    return code, out_file.read_bytes(), b"".join(chunks)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminal test: Linux only")
def test_terminal_run_draws_bars_from_the_main_process_only(tmp_path):
    """On a terminal: bars, but only the main process's ("decode cores", "writing"; the
    writers' own progress shows inside the "writing" bar), and still one line per stage."""
    code, stdout, term = _run_on_terminal([SAMPLE, tmp_path / "out"], tmp_path)
    assert code == 0, term.decode(errors="replace")
    assert b"\r" not in stdout
    segments = [s.strip() for s in re.split(r"[\r\n]", term.decode())]
    frames = [s for s in segments if s and not s.startswith("bigTpuProfile: ")]
    assert any(f.startswith("writing:") for f in frames)
    assert all(f.startswith(("decode cores:", "writing:")) for f in frames), \
        [f for f in frames if not f.startswith(("decode cores:", "writing:"))]
    commands = len(pd.read_csv(SAMPLE.parent / "expected_commands.csv"))
    lines = [s for s in segments if s.startswith("bigTpuProfile: ")]
    _check_stage_order(_stages(lines), commands, PMU_OUTPUTS)


def test_quiet_silences_progress_not_the_summary(tmp_path):
    res = subprocess.run(_command(SAMPLE, tmp_path / "out", "--quiet", "--disable_web",
                                  "--no_perfetto"), capture_output=True, text=True, env=_env(),
                         timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    assert res.stdout.startswith((tmp_path / "out" / "summary.txt").read_text())
    files = res.stdout.split("\nWrote ")[1]
    assert files.startswith(f"{len(files.splitlines()) - 1} file(s)")


def test_quiet_without_summary_still_shows_warnings(tmp_path):
    """--disable_summary --quiet: the warnings the summary would list go to stderr."""
    res = subprocess.run(_command(TRACE, tmp_path / "out", "--quiet", "--disable_summary",
                                  "--disable_web", "--no_perfetto", "--disable_doc"),
                         capture_output=True, text=True, env=_env(), timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stderr.startswith("Warnings (1):\n  - ") and "linked to no host call" in res.stderr


def test_version():
    res = subprocess.run(_command("--version"), capture_output=True, text=True, env=_env(),
                         timeout=60)
    assert res.returncode == 0 and res.stdout == f"bigTpuProfile {__version__}\n"


# -- the summary text ----------------------------------------------------------------------------

def _parse_tables(block: str) -> list[dict[str, list[str]]]:
    """Each fixed-width table of ``block`` as {header: [cells top to bottom]}."""
    tables = []
    lines = block.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("=") and i + 2 < len(lines) and lines[i + 1].startswith("Summary"):
            headers = [h.strip() for h in lines[i + 3].split("|")]
            rows = []
            for row in lines[i + 5:]:
                if row.startswith("="):
                    break
                if not row.startswith("-"):
                    rows.append([c.strip() for c in row.split("|")])
            tables.append({h: [r[k] for r in rows] for k, h in enumerate(headers)})
    return tables


@pytest.mark.parametrize("cores", [1, 4, 64])
def test_summary_table_fits_120_columns_and_keeps_every_value(cores):
    """Split into tables of at most 120 characters, Core repeated in each, every column once,
    every value as the one-table layout showed it."""
    profile = make_profile(cores=cores, per_engine=20, seed=cores)
    summary = engine_summary(profile)
    block = text.summary_table(summary)
    assert max(len(line) for line in block.splitlines()) <= 120
    tables = _parse_tables(block)
    assert len(tables) > 1
    expected = {text._header(e): [text.fmt(v, e.metric.kind) for v in summary[e.column]]
                for e in map(text.catalogue.lookup, text.SUMMARY_COLUMNS)}
    seen: dict[str, list[str]] = {}
    for t in tables:
        assert next(iter(t)) == "Core" and t["Core"] == expected["Core"]
        for header, cells in list(t.items())[1:]:
            assert header not in seen
            seen[header] = cells
    assert seen == {h: v for h, v in expected.items() if h != "Core"}
    # an engine's columns stay together: each table's engines are whole, unless the engine's
    # columns alone are wider than a table (GDMA: busy, idle, util and five bandwidths)
    width = lambda g: sum(len(h) + 3 for h in expected if h.startswith(g + " ")) + 10  # noqa: E731
    for t in tables:
        groups = {h.split()[0] for h in list(t)[1:] if h.split()[0] in ("TIU", "GDMA", "SDMA", "CDMA")}
        for g in groups:
            if width(g) <= 120:
                assert all(h in t for h in expected if h.startswith(g + " "))


def test_parts_cut_an_engine_only_when_it_alone_is_too_wide():
    widths = [5, 10, 10, 10, 40, 40]             # key, unit [1, 2, 3], unit [4, 5]
    assert text._parts([[1, 2, 3], [4, 5]], widths, 0, 60) == [[0, 1, 2, 3], [0, 4], [0, 5]]
    assert text._parts([[1, 2, 3], [4, 5]], widths, 0, 200) == [[0, 1, 2, 3, 4, 5]]


def test_framework_summary_shows_only_what_applies(tmp_path):
    """A framework trace has no chip, clocks, capture mode or CDMA ports: none is printed."""
    from reportgen import pipeline
    from reportgen.options import Options

    options = Options(input=str(TRACE), output=str(tmp_path / "o"), quiet=True)
    profile = pipeline.load(options)
    head = text.summary_text(profile, pipeline.analyse(profile, options)).split("\n\n")[0]
    for pmu_only in ("Chip", "capture mode", "TIU clock", "DMA clock", "CDMA ports", "cores:"):
        assert pmu_only not in head
    assert f"Source: chrome trace  rank: {profile.meta.rank}  device commands: " \
           f"{len(profile.commands)}" in head

    pmu = make_profile(cores=2, per_engine=5)
    pmu.meta.chip, pmu.meta.mode = "AKS", "2"
    head = text.summary_text(pmu, engine_summary(pmu)).split("\n\n")[0]
    assert "Chip: AKS  cores: 2  capture mode: 2  TIU clock: 1000 MHz  DMA clock: 1000 MHz" in head
