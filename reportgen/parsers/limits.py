"""How much input a run reads: the ``--max_input_mb`` bound (``Options.max_input_mb``).

Every input file is size-checked before it is read, and compressed input is expanded in chunks
that stop as soon as a limit is crossed, so an input over a bound costs no more memory than
the limit lets in and ends in one line (an :class:`InputError`, exit 1) instead of exhausting
memory (docs/formats.md, "Resource bounds"):

* a file read as it is (JSON, CSV, a PMU core or port file) may be ``max_input_mb`` MB; the core
  and port files of one PMU dump together too (they are read into one buffer);
* compressed JSON (gzip, zip) may expand to ``max_input_mb`` MB, and beyond a sixteenth of that
  only up to :data:`MAX_RATIO` times its own size: real traces compress 10-30 times, a
  decompression bomb about 1000 times.

The bound reaches the parsers' entry points (``load_dump``, ``load_chrome_trace(s)``,
``load_ascend``, ``read_host_trace``) and the readers as an explicit ``max_input_mb`` keyword.
Below ``load_chrome_trace(s)`` and ``load_ascend`` the path goes through
:func:`reportgen.parsers.chrome.events.read_trace` (a path in, a TraceData out, no bound
keyword) and a dozen Ascend file readers: there the entry point sets the bound with
:func:`bounded` and the readers take it from :func:`current`.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
from pathlib import Path
from typing import Iterator

from reportgen.errors import InputError
from reportgen.options import MAX_INPUT_MB

MB = 1 << 20
#: expansion beyond max_input_mb / RATIO_FREE_FRACTION needs a ratio of at most this
MAX_RATIO = 100
RATIO_FREE_FRACTION = 16
RAISE_HINT = "--max_input_mb raises it"

_bound: contextvars.ContextVar[int] = contextvars.ContextVar("max_input_mb", default=MAX_INPUT_MB)


@contextlib.contextmanager
def bounded(max_input_mb: int) -> Iterator[None]:
    """Readers called inside (without a ``max_input_mb`` of their own) use this bound."""
    token = _bound.set(max_input_mb)
    try:
        yield
    finally:
        _bound.reset(token)


def current(max_input_mb: int | None) -> int:
    """The bound a reader applies: its own keyword, else the enclosing :func:`bounded`."""
    return _bound.get() if max_input_mb is None else max_input_mb


class InputTooLarge(InputError):
    """An input beyond the bound: always fatal, never skipped like an unreadable file of a
    folder of traces."""


def mb(n: float) -> str:
    return f"{n / MB:.4g} MB"


def check_size(path: str | Path, size: int, max_input_mb: int, what: str = "file is") -> None:
    """Refuse ``size`` bytes of input beyond the bound (before they are read); ``what`` starts
    the message ("file is", "its core and port files hold")."""
    if size > max_input_mb * MB:
        raise InputTooLarge(str(path), f"{what} {mb(size)}, beyond the input limit of "
                                       f"{mb(max_input_mb * MB)} ({RAISE_HINT})")


def check_file(path: str | Path, max_input_mb: int) -> int:
    """The size of a file to be read whole, refused beyond the bound; 0 when it cannot be
    stat'ed (opening it then says why)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return 0
    check_size(path, size, max_input_mb)
    return size


def expansion_limit(compressed_size: int, max_input_mb: int) -> tuple[int, str]:
    """(bytes a compressed file of this size may expand to, how that limit was set)."""
    bound = int(max_input_mb * MB)
    free = bound // RATIO_FREE_FRACTION
    by_ratio = MAX_RATIO * compressed_size
    if by_ratio >= bound:
        return bound, f"limit {mb(bound)} of expanded input"
    if by_ratio <= free:
        return free, f"limit max_input_mb/{RATIO_FREE_FRACTION} = {mb(free)} at any ratio"
    return by_ratio, (f"limit {MAX_RATIO} times its {mb(compressed_size)} compressed size beyond "
                      f"max_input_mb/{RATIO_FREE_FRACTION} = {mb(free)}")


def too_expanded(path: str | Path, limit: int, how: str) -> InputTooLarge:
    return InputTooLarge(str(path), f"expands beyond {mb(limit)} ({how}; {RAISE_HINT})")
