"""OUT, written all or nothing, only where it is ours, never through a link.

A run (``staged``) locks OUT (``flock`` on the folder: one run at a time; a second one stops
with one line), first finishes whatever a killed earlier run left (``recover``), then lets the
writers fill a private stage folder ``OUT/.reportgen-stage-*``. When every writer succeeded:

1. **checks, changing nothing**: every folder on the way to each new file is a real folder on
   OUT's file system (not a link, not a file, not a mount point) and every final name is free
   or a regular file. Any other case stops the run with one line naming the path (exit 3);
   the stage is removed and OUT is as it was;
2. **journal**: ``OUT/.reportgen-journal.json`` (written to a temporary, then renamed: it is
   either absent or complete) lists the stage, a backup folder, the new files, our old files
   to move away (from the manifest, below) and the old manifest;
3. **moves**: old files into the backup, new files from the stage, one rename each, every
   folder entered with ``O_NOFOLLOW`` from a descriptor of OUT (nofollow.py);
4. **manifest** ``OUT/.reportgen-manifest.json`` := the new files, the journal removed (this
   is the commit point of a run that is not interrupted), stage and backup removed.

An error or a signal (SIGINT, SIGTERM, SIGHUP) in this process during steps 2-4 rolls back:
new files back to the stage, old ones back from the backup, then both removed. A run killed
outright (SIGKILL, power cut of the process) leaves the journal: the next run into OUT (or
``recover(out)``) rolls the commit *forward*, because a journal exists only once the stage is
complete (back, if the forward moves fail). Without a journal, any stage or backup is
incomplete or finished with, and recovery removes it. Every step checks where its file is, so
recovery may itself be interrupted and run again. So at any instant our files in OUT are the
complete previous report or the complete new one, at once or after the next start-up.

Only files of ours are removed: those the manifest lists, that are still regular files owned
by this user and that the new run does not write again. A name pattern alone never removes a
file. An OUT written by an older version (no manifest) has its files replaced where the new
run writes the same name; the others (e.g. RegInfo files for more cores) stay, and from then
on the manifest tracks ours. Files are not fsync'ed: a commit survives the death of the
process at any instant, not a power loss of the machine.

Races: names are checked and then used through descriptors, so a folder swapped for a link
between check and move makes the move fail (and roll back), never write through the link.
A final name swapped for a link is replaced by our file, never written through. What a
process of the same user can do in between (it may write our files directly anyway) is not
defended against.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path
from typing import Iterator

from reportgen.errors import OutputError
from reportgen.outdir import commit as _commit
from reportgen.outdir import nofollow

#: how long a run waits for another one (or the writers of a killed one) to release OUT
LOCK_WAIT_S = 5.0


@contextlib.contextmanager
def _errors(out: Path) -> Iterator[None]:
    """Everything below as one line naming the path (exit 3)."""
    try:
        yield
    except nofollow.Unsafe as exc:
        message = str(exc)
        raise OutputError(f"{out}/{message[4:]}" if message.startswith("OUT/") else f"{out}: {message}") from None
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            raise OutputError(f"{out}: a folder inside it is on another file system (a mount "
                              "point): the report cannot be moved in atomically") from None
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(out) else ""
        raise OutputError(f"{out}: cannot write the reports: {exc.strerror or exc}{where}") from None


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[int]:
    """A descriptor of OUT, locked against other runs for the block."""
    root = nofollow.open_root(out)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(root, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OutputError(f"{out}: another bigTpuProfile run is writing into this "
                                      "folder") from None
                time.sleep(0.05)
        yield root
    finally:
        os.close(root)                     # releases the lock


def recover(out: str | os.PathLike) -> None:
    """Finish or undo what a killed run left in ``out`` and remove stale stages (no-op when
    ``out`` is not a folder)."""
    out = Path(out)
    if not out.is_dir():
        return
    with _errors(out), _locked(out) as root:
        _commit.recover(root)


@contextlib.contextmanager
def staged(out: str | os.PathLike) -> Iterator[Path]:
    """Yield a private stage folder inside ``out``; when the block succeeds, commit it as
    described above. If the block fails, only the stage is removed."""
    out = Path(out)
    with _errors(out):
        if out.exists() and not out.is_dir():
            raise OutputError(f"{out}: exists and is not a folder")
        out.mkdir(parents=True, exist_ok=True)
        with _locked(out) as root:
            _commit.recover(root)
            stage = _commit.make_dir(root, "stage")
            try:
                yield out / stage
                _commit.commit(root, stage, _files(out / stage))
            except BaseException:
                # a journal left by an interrupted roll-back still needs its stage: the next
                # run's recovery completes that commit and removes the stage then
                if not _commit.journaled(root):
                    nofollow.remove_tree(root, stage)
                raise


def _files(stage: Path) -> list[str]:
    """The regular files the writers left in the stage, as relative paths."""
    found = []
    for folder, _, names in os.walk(stage):
        for name in names:
            path = Path(folder, name)
            if path.is_file() and not path.is_symlink():
                found.append(path.relative_to(stage).as_posix())
    return found
