"""Atomic output: write to a temporary name beside the target, rename when complete.

A crash or an error mid-write never leaves a half-written report under the final name, and an
older report stays intact until the new one is complete. (A whole report is staged and
committed into OUT by reportgen/outdir.)
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator


_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; on success rename it to ``final``."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp makes the file private (0600); a report gets the usual permissions
        os.chmod(tmp_path, 0o666 & ~_UMASK)
        os.replace(tmp_path, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


@contextlib.contextmanager
def atomic_open(final: str | os.PathLike, mode: str = "w", **kwargs):
    """``open()`` a temporary file that replaces ``final`` when the block succeeds."""
    with atomic_path(final) as tmp:
        with open(tmp, mode, **kwargs) as fh:
            yield fh
