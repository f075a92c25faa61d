"""The Findings sheet of a framework trace's workbook, after the Summary: the ranked findings of
``Profile.framework_diagnosis`` in the PMU Findings sheet's columns plus the estimated gain.
The device-time, launch and step tables are ``Profile.tables`` sheets like the other framework
tables."""
from __future__ import annotations

from reportgen.analysis.fw_diagnosis import FrameworkDiagnosis
from reportgen.writers.xlsx.diagnosis_sheets import FINDINGS, TAB_COLOR, sheet_columns
from reportgen.writers.xlsx.workbook import Book

#: the PMU Findings columns, core read as the device, plus the gain
FW_FINDINGS = [(("Device", "core", "0", "Device (rank) the finding is about; empty: the whole run.")
                if spec[1] == "core" else spec) for spec in FINDINGS if spec[1] != "engine"] + [
    ("Estimated gain (ns)", "gain_ns", "#,##0",
     "Device time a fix could give back, where the rule can tell (docs/metrics.md)."),
    ("Gain share of span", "gain_share", "0.0%", "Estimated gain / the device's span."),
    ("Gain scenario", "gain_scenario", None, "What the estimated gain assumes.")]


def write_framework_findings(book: Book, diag: FrameworkDiagnosis, quiet: bool) -> list[str]:
    cols = sheet_columns(diag.findings, FW_FINDINGS)
    return book.table_sheets("Findings", cols, len(diag.findings), TAB_COLOR, quiet, 1)
