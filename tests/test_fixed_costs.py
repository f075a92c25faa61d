"""The fixed costs of a run paid once: numba's registries loaded in the process that forks
(reportgen.jit), the page's templates compiled once and kept (writers/html/template_cache), the
garbage collector paused while the run's modules load (heap.collector_paused in cli.run), the page's
clickable waits said without a row dict each (analysis.waits.describe_all). Each keeps every
output byte the same; what they save is measured in benchmarks, not here."""
from __future__ import annotations

import gc
import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path

import jinja2
import pandas as pd
import pytest

from reportgen import cli, heap
from reportgen.analysis.waits import describe, describe_all
from reportgen.writers.html import page
from reportgen.writers.html.template_cache import PATTERN, TemplateCache, for_package

from shared_data import PMU

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "cdm_profile_data_dev0-0"
#: a module that only numba's registry loading imports (numba/core/cpu.py load_additional_registries)
REGISTRY_MODULE = "numba.np.linalg"


# -- numba's registries --------------------------------------------------------------------------

def test_ready_loads_numbas_registries_and_keeps_the_collector_as_it_was():
    code = ("import gc, sys; import numba; assert %r not in sys.modules; "
            "from reportgen import jit; gc.disable(); jit.ready(); assert not gc.isenabled(); "
            "gc.enable(); jit.ready(); assert gc.isenabled(); print(%r in sys.modules)"
            % (REGISTRY_MODULE, REGISTRY_MODULE))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"


FORKS = """
import sys
from reportgen import parallel, pipeline
from reportgen.options import Options
real = parallel._fork
def fork(target, args, listed):
    print(args[0], %r in sys.modules, flush=True)
    return real(target, args, listed)
parallel._fork = fork
pipeline.report(Options(input=sys.argv[1], output=sys.argv[2], quiet=True, jobs=2))
""" % REGISTRY_MODULE


def test_the_analysis_child_and_the_writers_fork_with_the_registries_loaded(tmp_path):
    """In a PMU run every fork inherits numba's registries: Instr World (its `prepare` loads its
    compiled loops before it forks), the analysis' child (Beside) and the writers do not load
    them again (0.13-0.25 s of CPU each)."""
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform: everything runs in one process")
    run = subprocess.run([sys.executable, "-c", FORKS, str(SAMPLE), str(tmp_path / "out")],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                         timeout=600)
    assert run.returncode == 0, run.stderr
    forks = dict(line.rsplit(" ", 1) for line in run.stdout.splitlines())
    assert {"Instr World", "diagnosis tables", "workbook", "perfetto trace", "web report",
            "summary"} <= set(forks)
    assert [label for label, loaded in forks.items() if loaded != "True"] == []


# -- the compiled templates ----------------------------------------------------------------------

def _environment(cache: TemplateCache | None) -> jinja2.Environment:
    """page.environment() with another cache (the same loader and options)."""
    env = page.environment.__wrapped__()
    env.bytecode_cache = cache
    return env


@pytest.fixture(scope="module")
def sample():
    from reportgen.analysis.derive import derive
    from reportgen.parsers.detect import load_profile

    profile = load_profile(str(SAMPLE))
    return profile, derive(profile, jobs=1)


def test_a_page_from_cached_templates_is_the_page_compiled_afresh(sample, tmp_path, monkeypatch):
    profile, summary = sample
    pages = []
    cache = TemplateCache(str(tmp_path), PATTERN)
    for env in (_environment(None), _environment(cache), _environment(cache)):
        monkeypatch.setattr(page, "environment", lambda env=env: env)
        pages.append(page.render(profile, summary, lambda stage: None))
    entries = sorted(p.name for p in tmp_path.iterdir())
    # result.html.j2 and every template it includes, one entry each, nothing left half-written
    assert len(entries) >= 5 and all(n.startswith("jinja2-") and n.endswith(".cache") for n in entries)
    assert pages[0] == pages[1] == pages[2]


def test_an_edited_template_is_compiled_again(tmp_path):
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "t.j2").write_text("<b>{{ x }}</b>\n", encoding="utf-8")
    cache = TemplateCache(str(tmp_path), PATTERN)

    def render():
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), autoescape=True,
                                 bytecode_cache=cache)
        return env.get_template("t.j2").render(x="a<b")

    assert render() == "<b>a&lt;b</b>"
    assert render() == "<b>a&lt;b</b>"             # from the cache
    (folder / "t.j2").write_text("<i>{{ x }}</i>\n", encoding="utf-8")
    assert render() == "<i>a&lt;b</i>"             # the checksum differs: compiled again


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_cache_folder_that_cannot_be_written_only_costs_the_compilation(tmp_path):
    tmp_path.chmod(0o500)
    try:
        env = _environment(TemplateCache(str(tmp_path), PATTERN))
        assert env.get_template("layers.html.j2") is not None
        assert list(tmp_path.iterdir()) == []
    finally:
        tmp_path.chmod(0o700)


def test_a_cache_that_fails_to_write_never_fails_the_page(tmp_path):
    cache = TemplateCache(str(tmp_path / "gone"), PATTERN)     # a folder that does not exist
    env = _environment(cache)
    assert "<section" in env.get_template("diagnosis.html.j2").render(
        diagnosis={"kernels": [], "calls": [], "calls_total": 0, "roofline": None}, why=None)


def test_the_package_cache_lives_in_the_templates_pycache():
    cache = for_package("reportgen.templates")
    assert cache is not None
    templates = Path(page.environment().loader.get_source(page.environment(), "result.html.j2")[1]).parent
    assert Path(cache.directory) == templates / "__pycache__"
    assert page.environment().bytecode_cache is not None


# -- the collector while the modules load --------------------------------------------------------

def test_collector_paused_inside_and_frozen_only_when_asked():
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with heap.collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    kept = [[] for _ in range(3)]                   # tracked objects alive at the freeze
    try:
        with heap.collector_paused(freeze=True):
            assert not gc.isenabled()
        assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(kept)
    finally:
        gc.unfreeze()
    before = gc.get_freeze_count()
    gc.disable()
    try:
        with heap.collector_paused(freeze=True):
            pass
        assert not gc.isenabled() and gc.get_freeze_count() == before   # a caller's choice stays
    finally:
        gc.enable()


def test_the_run_imports_with_the_collector_paused_and_freezes_only_in_the_console(monkeypatch, tmp_path):
    asked = []
    real = heap.collector_paused

    def paused(freeze=False):
        asked.append(freeze)
        return real(freeze=False)                  # never freeze this test process

    monkeypatch.setattr(heap, "collector_paused", paused)
    missing = str(tmp_path / "no-such-dump")
    assert cli.main([missing, str(tmp_path / "out"), "--quiet"]) != 0
    monkeypatch.setattr(cli, "_console", True)
    assert cli.main([missing, str(tmp_path / "out"), "--quiet"]) != 0
    assert asked == [False, True]


# -- the page's clickable waits ------------------------------------------------------------------

def _one_by_one(table) -> list[str]:
    """describe() of each row as the page made them before: a dict of native values per row."""
    columns = list(table.columns)
    return [describe(dict(zip(columns, values))) for values in zip(*(table[k].tolist() for k in columns))]


@pytest.mark.parametrize("case", ["aks-m1-c8", "aks-m2-c8", "aks-m2-des", "bm1688-m2-c2"])
def test_every_wait_is_described_as_one_by_one(case):
    from reportgen.analysis.derive import derive
    from reportgen.parsers.detect import load_profile

    folder = PMU / case / "input"
    if not folder.exists():
        pytest.skip(f"shared data not present at {folder}")
    profile = load_profile(str(folder))
    derive(profile, jobs=1)
    table = profile.diagnosis.why.waits.table
    assert len(table) > 0
    assert describe_all(table) == _one_by_one(table)


def test_missing_and_odd_values_are_said_as_before():
    """None and NaN kernels (a NaN is said, as before: it is truthy), a kernel name with markup
    (the page escapes it where it shows it, not here), an unattributed wait without a core."""
    table = pd.DataFrame({
        "row": [0, 1, 2, 3, 4], "kind": ["barrier", "barrier", "barrier", "dependency", "unattributed"],
        "core": [3, 0, 1, 2, 7], "engine": ["TIU", "GDMA", "SDMA", "TIU", "CDMA"],
        "kernel": pd.Series([None, float("nan"), "<b>k&amp;</b>", "", None], dtype=object),
        "start_ns": [0, 1, 2, 3, 4], "ns": [2100, 1, 123456789, 999999, 5],
        "waited_for_core": pd.array([0, 1, 2, 3, None], "Int64"),
        "waited_for_engine": ["GDMA", "TIU", "TIU", "SDMA", None], "waited_for_row": [5, 6, 7, 8, -1]})
    said = describe_all(table)
    assert said == _one_by_one(table)
    assert said[0] == "core 3 TIU waited 2.100 us at the barrier for core 0, whose GDMA finished last"
    assert said[1] == "core 0 GDMA waited 0.001 us at the barrier of nan for core 1, whose TIU finished last"
    assert said[2] == ("core 1 SDMA waited 123456.789 us at the barrier of <b>k&amp;</b> for core 2, "
                       "whose TIU finished last")
    assert said[3] == "core 2 TIU waited 999.999 us for core 3 SDMA (descriptor dependency)"
    assert said[4] == "core 7 CDMA waited 0.005 us; nothing in the capture says for what"
    assert describe_all(table.head(0)) == []
