"""The pipeline: typed options, the outputs table, the several-dump runner, the import map."""
from __future__ import annotations

import ast
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from reportgen import pipeline
from reportgen.analysis.metrics import engine_summary
from reportgen.model import LazyTables
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


# -- what a run keeps before its writers fork (issue 28) ----------------------------------------

def _with_lazy_registers(profile):
    built = []
    table = pd.DataFrame({"des_opd0_addr": [7]}, index=[0])
    profile.registers = LazyTables(lambda: built.append(1) or {"TIU": table}, ["TIU"])
    return profile, built


def test_released_register_tables_keep_their_names_and_refuse_reads():
    profile, built = _with_lazy_registers(make_profile(cores=1, per_engine=5))
    profile.registers.release()
    assert list(profile.registers) == ["TIU"] and len(profile.registers) == 1
    assert profile.has_registers()            # the workbook's note still says they exist
    with pytest.raises(RuntimeError, match="released"):
        profile.registers["TIU"]
    assert built == []


@pytest.mark.parametrize("flags, limits, read", [
    ({}, False, True),                              # a small capture: every reader wants them
    ({}, True, False),                              # above every limit: nothing reads them
    ({"reginfo": "on"}, True, True),
    ({"registers": "on"}, True, True),
    ({"registers": "on", "workbook": False}, True, False),
])
def test_registers_are_read_only_where_a_reader_wants_them(flags, limits, read, monkeypatch):
    from reportgen.analysis import lmem
    from reportgen.writers import xlsx

    profile, _ = _with_lazy_registers(make_profile(cores=1, per_engine=20))
    warnings = list(profile.meta.warnings)
    if limits:
        below = len(profile.commands) - 1
        monkeypatch.setattr(pipeline, "REGINFO_AUTO_LIMIT", below)
        monkeypatch.setattr(lmem, "MAX_COMMANDS", below)
        monkeypatch.setattr(xlsx, "REGISTER_AUTO_LIMIT", below)
    assert pipeline.registers_read(Options("in", **flags), profile) is read
    assert profile.meta.warnings == warnings  # deciding warns nothing (the writers do)


def _contents(folder: Path) -> dict[str, bytes]:
    """Every file of a report, a workbook per zip member without its creation time."""
    found = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if path.suffix == ".xlsx":
            with zipfile.ZipFile(path) as z:
                found.update({f"{name}:{m}": z.read(m) for m in z.namelist() if m != "docProps/core.xml"})
        elif path.is_file():
            found[name] = path.read_bytes()
    return found


def test_a_large_run_releases_the_register_fields_and_writes_the_same_reports(tmp_path, monkeypatch):
    """Above every limit the register tables are released after the load; the reports are
    byte for byte those of a run that keeps them (no writer and no analysis reads them)."""
    from reportgen.analysis import lmem
    from reportgen.writers import xlsx

    sample = Path(__file__).resolve().parents[1] / "sample_data" / "cdm_profile_data_dev0-0"
    for module, name in ((pipeline, "REGINFO_AUTO_LIMIT"), (lmem, "MAX_COMMANDS"),
                         (xlsx, "REGISTER_AUTO_LIMIT")):
        monkeypatch.setattr(module, name, 10)
    released = pipeline.report(Options(str(sample), output=str(tmp_path / "released"), quiet=True))
    with pytest.raises(RuntimeError, match="released"):
        released.profile.registers["TIU"]
    monkeypatch.setattr(pipeline, "registers_read", lambda options, profile: True)
    monkeypatch.setattr(pipeline, "writers_read_registers", lambda options, profile: True)
    kept = pipeline.report(Options(str(sample), output=str(tmp_path / "kept"), quiet=True))
    assert len(kept.profile.registers["TIU"]) > 0
    a, b = _contents(tmp_path / "released"), _contents(tmp_path / "kept")
    assert sorted(a) == sorted(b) and "PerfDoc/instr_world.csv" in a
    assert [n for n in a if a[n] != b[n]] == []


def test_registers_read_by_the_analysis_only_are_released_before_the_writers(tmp_path, monkeypatch):
    """Under the local-memory view's limit but above the writers' (no RegInfo, no register
    columns), the view reads the descriptors and the writers fork without them: the reports
    are those of a run that keeps the tables to the end."""
    from reportgen.writers import xlsx

    sample = Path(__file__).resolve().parents[1] / "sample_data" / "cdm_profile_data_dev0-0"
    for module, name in ((pipeline, "REGINFO_AUTO_LIMIT"), (xlsx, "REGISTER_AUTO_LIMIT")):
        monkeypatch.setattr(module, name, 10)
    released = pipeline.report(Options(str(sample), output=str(tmp_path / "released"), quiet=True))
    with pytest.raises(RuntimeError, match="released"):
        released.profile.registers["TIU"]
    monkeypatch.setattr(pipeline, "writers_read_registers", lambda options, profile: True)
    pipeline.report(Options(str(sample), output=str(tmp_path / "kept"), quiet=True))
    a, b = _contents(tmp_path / "released"), _contents(tmp_path / "kept")
    assert sorted(a) == sorted(b) and "PerfDoc/PerfAI_output.xlsx:xl/workbook.xml" in a
    assert [n for n in a if a[n] != b[n]] == []
