"""The pipeline: typed options, the outputs table, the several-dump runner, the import map."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from reportgen import pipeline
from reportgen.analysis.metrics import engine_summary
from reportgen.options import OptionError, Options
from reportgen.testing.profiles import make_profile

PACKAGE = Path(__file__).resolve().parents[1] / "reportgen"


def test_options_defaults_are_every_output():
    o = Options("in")
    assert (o.summary, o.workbook, o.web, o.perfetto, o.registers, o.reginfo) == \
        (True, True, True, True, "auto", "auto")
    assert o.output == "profile_out" and o.registers_wanted == "auto"
    assert Options("in", registers="off").registers_wanted is False


@pytest.mark.parametrize("bad", [dict(registers="maybe"), dict(reginfo="yes"), dict(tiu_freq=0.0),
                                 dict(tiu_freq=-5.0), dict(jobs=0), dict(input="")])
def test_options_reject_values_no_run_can_use(bad):
    with pytest.raises(OptionError):
        Options(**{"input": "in", **bad})


@pytest.mark.parametrize("flags, labels", [
    ({}, ["workbook", "RegInfo files", "perfetto trace", "Instr World", "web report", "summary"]),
    ({"workbook": False}, ["perfetto trace", "web report", "summary"]),
    ({"workbook": False, "reginfo": "on"}, ["RegInfo files", "perfetto trace", "web report", "summary"]),
    ({"web": False, "perfetto": False, "summary": False, "reginfo": "off"}, ["workbook", "Instr World"]),
])
def test_writer_jobs_follow_the_options(flags, labels, tmp_path):
    profile = make_profile(cores=1, per_engine=20)
    jobs = pipeline.writer_jobs(Options("in", **flags), profile, engine_summary(profile), tmp_path)
    assert [label for label, _ in jobs] == labels


def test_reginfo_auto_stops_at_the_limit_with_a_warning(tmp_path, monkeypatch):
    profile = make_profile(cores=1, per_engine=20)
    monkeypatch.setattr(pipeline, "REGINFO_AUTO_LIMIT", len(profile.commands) - 1)
    jobs = pipeline.writer_jobs(Options("in"), profile, engine_summary(profile), tmp_path)
    assert "RegInfo files" not in [label for label, _ in jobs]
    assert [w.code for w in profile.meta.warnings].count("reginfo-skipped") == 1


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_entry_points_do_not_import_each_other():
    """cli uses batch and the pipeline; batch uses the pipeline only; the pipeline neither."""
    assert "reportgen.cli" not in _imports(PACKAGE / "batch.py")
    assert not {"reportgen.cli", "reportgen.batch"} & _imports(PACKAGE / "pipeline.py")


def test_no_module_is_a_monolith():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 700}
    assert not long


def test_every_package_is_installed():
    """setup.cfg lists packages by hand: a package folder missing there is missing from a wheel."""
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(PACKAGE.parent / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    on_disk = {".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")}
    assert on_disk | {"reportgen.templates"} == listed
