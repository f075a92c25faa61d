"""Atomic output: write to a temporary name beside the target, rename when complete.

A crash or an error mid-write never leaves a half-written report under the final name, and an
older report stays intact until the new one is complete.
"""
from __future__ import annotations

import contextlib
import os
import shutil
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


@contextlib.contextmanager
def staged_dir(final: str | os.PathLike, replace_glob: tuple[str, ...] = ()) -> Iterator[Path]:
    """Yield a private staging folder inside ``final``; when the block succeeds, move every file
    into ``final`` (one rename each) and remove the staging folder. If the block fails nothing
    in ``final`` changes, so a failed run never leaves old and new reports mixed.

    ``replace_glob``: patterns of files in ``final`` that the new run replaces as a set (e.g.
    ``*RegInfo_*.txt``): old ones the new run did not write are removed at commit.
    """
    final = Path(final)
    final.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".reportgen-", dir=final))
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    new = [p for p in stage.rglob("*") if p.is_file()]
    for pattern in replace_glob:
        if any(p.match(pattern) for p in new):
            for old in final.glob(pattern):
                old.unlink()
    for p in new:
        dest = final / p.relative_to(stage)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(p, dest)
    shutil.rmtree(stage, ignore_errors=True)
