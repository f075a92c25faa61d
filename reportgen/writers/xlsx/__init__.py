"""PerfDoc/PerfAI_output.xlsx: the workbook people filter, sort and search by Global Idx.

Layout
------
* ``Engine Summary`` first (:mod:`.summary_sheet`): capture facts and warnings, the
  :func:`reportgen.analysis.metrics.engine_summary` table, definitions, notes.
* PMU captures: the diagnosis sheets (:mod:`.diagnosis_sheets`): Findings, Function Types,
  Function Names, Kernels, Kernel Calls.
* One sheet per ``profile.sheets()`` name (``TIU_0``, ``GDMA_0``, ``SDMA_0``, ``CDMA_1`` ...),
  its columns chosen by :mod:`.sheet_columns`: header in row 1 (frozen together with columns
  A:C), autofilter over the whole table, **Global Idx** in column C.
* One sheet per ``profile.tables`` entry, written generically (framework analyses).
* Print setup (``workbook.print_setup``): landscape, header rows on every page, sheet name and
  page number in the footer; the Engine Summary one page wide; a command sheet prints its
  command columns one page wide, its register fields are left out of the print area.

Cell conventions (:mod:`.columns`): numbers are numeric cells with a number format (ratios
are fractions shown with a ``0.0%`` format); missing values (NaN, ``<NA>``, None, "") are
empty cells; integer register fields, addresses included, are decimal numbers with format
``0`` so they sort and filter numerically (``=DEC2HEX(cell)`` shows hex); integers beyond
2**53 are written as ``0x...`` text instead. A table longer than Excel's 1,048,576 rows
continues on ``NAME (2)``, ``NAME (3)`` ... sheets, each with its own header
(:mod:`.workbook`); every xlsxwriter return code is checked so nothing is dropped.

Speed: xlsxwriter in ``constant_memory`` mode (rows stream to disk, flat memory). Each column
is converted once, vectorised, into typed numpy data (texts as codes into their distinct
values). Command sheets are then written as sheet XML built column by column for a chunk of
rows at a time (:mod:`.sheet_xml`), about half the size of xlsxwriter's, and the zip uses zlib
level :data:`ZIP_LEVEL` (3, not 6): ~110k rows/s at 19 columns for 640k-1.28M synthetic
commands, ~145k on decoded 8-core dumps of 0.68M and 1.1M commands (before: ~52k and ~58k;
xlsxwriter's cell API: ~13k). From ``helper.HELPER_MIN_ROWS`` commands on, a forked helper
builds the row XML of the last sheets while this process writes the first (:mod:`.helper`).
Decoded 8-core dumps of 0.68M and 1.1M commands: 2.8–3.4 s and 5.5 s (~200k rows/s).
The rows of a command sheet are deflated as they are made and spliced into the zip at close
(:mod:`.rowzip`) instead of going through the disk three times as XML; rows are built as byte
matrices of ~100k cells (:mod:`.sheet_bytes`). Workbook CPU (helper included), 8 x 80k dump
(677,842 commands): 4.0 -> 1.9 s; 3.3M commands: 16.0 -> 6.4 s (issue 28).
All of this needs xlsxwriter internals: they are used in :mod:`.xlsxwriter_private` only,
behind one version check; with an xlsxwriter it was not checked against, the same workbook
is written through xlsxwriter's public API (the small Engine Summary always is).

Other backends: the Rust-backed ``rustpy-xlsxwriter`` (0.8.0) was evaluated and not adopted.
It writes one table per sheet (a header row, then rows from a DataFrame or dicts; merged
cells only above that header), so the Engine Summary's facts, group band, table and
definitions below it cannot be laid out, and one workbook cannot come from two libraries. On
the command sheets alone it measured 51-64k rows/s without pyarrow (72-87k with pyarrow and
categorical texts) against this path's 106-125k; ``benchmarks/bench_xlsx.py --paths
xml,cells,rust`` repeats the comparison.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Literal

import pandas as pd
from xlsxwriter.exceptions import XlsxWriterException

from reportgen.errors import OutputError
from reportgen.model import Profile
from reportgen.writers.atomic import atomic_path
from reportgen.writers.xlsx import stack_sheets, summary_sheet, workbook
from reportgen.writers.xlsx.layer_sheets import write_layer_sheets
from reportgen.writers.xlsx import xlsxwriter_private as private
from reportgen.writers.xlsx.columns import cut_count
from reportgen.writers.xlsx.diagnosis_sheets import write_diagnosis_sheets
from reportgen.writers.xlsx.helper import SheetHelper
from reportgen.writers.xlsx.sheet_columns import (FREEZE_COLS, TAB_COLORS, command_sheet_columns,
                                                  table_columns)

FILE_NAME = "PerfAI_output.xlsx"
#: registers="auto" writes register fields only below this many commands: they multiply the
#: cell count 3-4x and with it the time to write and open the workbook.
REGISTER_AUTO_LIMIT = 200_000
#: zlib level of the workbook's zip. xlsxwriter uses zlib's default 6; 3 writes a 640k-command
#: workbook ~20% faster (compression is a third of the time) for a file ~15% larger.
#: None keeps xlsxwriter's own setting. Levels 1-3 deflate with ISA-L where ``isal`` is
#: installed (deflate.py: ~3x faster than zlib's 3, a file ~10% larger).
ZIP_LEVEL: int | None = 3


def write(profile: Profile, summary: pd.DataFrame, out_dir, *,
          registers: Literal["auto", True, False] = "auto", quiet: bool = False) -> Path:
    """Write ``out_dir/PerfDoc/PerfAI_output.xlsx`` atomically and return its path.

    ``summary`` is ``engine_summary(profile)``; ``registers`` is "auto" (register fields only
    below :data:`REGISTER_AUTO_LIMIT` commands), True or False; ``quiet`` hides the progress bars.
    """
    final = Path(out_dir) / "PerfDoc" / FILE_NAME
    with_registers, why = _registers_decision(profile, registers)
    register_note = summary_sheet.register_note(why, len(profile.commands), REGISTER_AUTO_LIMIT)
    try:
        with atomic_path(final) as tmp, private.zip_level(ZIP_LEVEL):
            book = workbook.Book(tmp)
            try:
                _write_workbook(book, profile, summary, with_registers, register_note, quiet)
            except BaseException:
                # still close: xlsxwriter's temp files go away; the half-made file is then
                # removed by atomic_path and the error that stopped us is the one raised
                with contextlib.suppress(Exception):
                    book.wb.close()
                raise
            book.wb.close()
    except OutputError:
        raise
    except (OSError, XlsxWriterException) as err:
        raise OutputError(f"cannot write {final}: {err}") from err
    return final


def register_columns_wanted(profile: Profile, registers) -> bool:
    """Whether the command sheets get register columns (``registers`` as for :func:`write`)."""
    return _registers_decision(profile, registers)[0]


def _registers_decision(profile: Profile, registers) -> tuple[bool, str]:
    """Whether register columns go in, and why: "absent", "off", "on", "over-limit" or "auto"."""
    if registers not in ("auto", True, False):
        raise ValueError(f"registers must be 'auto', True or False, not {registers!r}")
    if not profile.has_registers():
        return False, "absent"
    if registers is False:
        return False, "off"
    if registers is True:
        return True, "on"
    if len(profile.commands) >= REGISTER_AUTO_LIMIT:
        return False, "over-limit"
    return True, "auto"


def _write_workbook(book: workbook.Book, profile: Profile, summary: pd.DataFrame,
                    with_registers: bool, register_note: str, quiet: bool) -> None:
    summary_ws, note_row = summary_sheet.write_summary_sheet(book, profile, summary, register_note)
    if profile.comparison is not None:      # --baseline: second sheet, beside the summary
        from reportgen.writers.xlsx.compare_sheet import write_compare_sheet
        write_compare_sheet(book, profile.comparison)
    if profile.layer_view is not None:
        write_layer_sheets(book, profile.layer_view, quiet)
    if profile.diagnosis is not None:
        write_diagnosis_sheets(book, profile.diagnosis, quiet)
    if profile.framework_diagnosis is not None:
        from reportgen.writers.xlsx.fw_sheets import write_framework_findings
        write_framework_findings(book, profile.framework_diagnosis, quiet)
    commands = profile.commands
    positions = commands.groupby("sheet", observed=True, sort=False).indices
    sheets = [(name, positions[name]) for name in profile.sheets()]
    if with_registers:
        list(profile.registers.values())      # assembled once, before a helper forks
    columns = lambda name, pos: command_sheet_columns(profile, pos, with_registers)  # noqa: E731
    notes = summary_sheet.Notes()
    cut = 0
    with SheetHelper(book, sheets, columns) as helper:
        for i, (name, pos) in enumerate(sheets):
            engine = str(commands["engine"].iloc[pos[0]])
            done = helper.write(i, name, TAB_COLORS.get(engine))
            if done is not None:
                names, sheet_cut = done
            else:
                cols = columns(name, pos)
                sheet_cut = cut_count(cols)
                names = book.table_sheets(name, cols, len(pos), TAB_COLORS.get(engine), quiet,
                                          FREEZE_COLS)
            cut += sheet_cut
            notes.command_sheet(name, names, workbook.SHEET_MAX_ROWS - 1)
    for name, table in profile.tables.items():
        cols = table_columns(table)
        cut += cut_count(cols)
        if stack_sheets.linked(profile.tables, name):   # Stack Id cells link into Call Stacks
            notes.table(name, stack_sheets.write_stack_table(
                book, table, profile.tables[stack_sheets.FRAMES], "#31869B", quiet))
            continue
        notes.table(name, book.table_sheets(name, cols, len(table), "#31869B", quiet, 1))
    notes.write(book, summary_ws, note_row, cut)
    summary_ws.activate()
