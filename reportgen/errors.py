"""Errors a user can cause, and how they are reported.

An :class:`InputError` says which file (and offset or line) is wrong, what was expected and
what was found. The CLI prints ``str(err)`` as one line and exits with a non-zero code; it is
never shown as a traceback.
"""
from __future__ import annotations


class ReportgenError(Exception):
    """Base class of every error the CLI turns into one line and a non-zero exit code."""

    exit_code = 1


class InputError(ReportgenError):
    """The input is missing, malformed or of an unsupported kind."""

    def __init__(self, path: str, problem: str, *, offset: int | None = None,
                 line: int | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.offset = offset
        self.line = line
        where = self.path
        if offset is not None:
            where += f" at byte offset {offset}"
        if line is not None:
            where += f" line {line}"
        super().__init__(f"{where}: {problem}")


class OutputError(ReportgenError):
    """An output could not be written (permissions, disk full, a writer failed)."""

    exit_code = 3
