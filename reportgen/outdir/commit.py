"""The commit of a complete stage into OUT, its journal, the manifest, and recovery.

Names in OUT that belong to this tool: ``.reportgen-manifest.json`` (our files of the last
committed run), ``.reportgen-journal.json`` (a commit in progress), folders ``.reportgen-*``
(stages and backups, also the stages older versions left), and their ``*.tmp`` files.
"""
from __future__ import annotations

import os
import secrets
import stat

from reportgen.outdir import nofollow
from reportgen.outdir.nofollow import Unsafe

MANIFEST = ".reportgen-manifest.json"
JOURNAL = ".reportgen-journal.json"
PREFIX = ".reportgen-"
_FORMAT = 1


def make_dir(root: int, kind: str) -> str:
    """A new private folder ``.reportgen-<kind>-<random>`` in OUT; returns its name."""
    name = f"{PREFIX}{kind}-{secrets.token_hex(6)}"
    os.mkdir(name, 0o700, dir_fd=root)
    return name


def _plain_paths(value) -> list[str] | None:
    """``value`` if it is a list of plain relative paths outside our own names, else None."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    try:
        for v in value:
            nofollow.parts(v)
    except ValueError:
        return None
    return None if any(v.startswith(PREFIX) for v in value) else value


def read_manifest(root: int) -> list[str] | None:
    """Our files of the last committed run; None when OUT has no (usable) manifest of ours."""
    doc = nofollow.read_json(root, MANIFEST)
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        return None
    return _plain_paths(doc.get("files"))


def _write_manifest(root: int, files: list[str] | None) -> None:
    if files is None:
        nofollow.unlink(root, MANIFEST)
    else:
        nofollow.write_json(root, MANIFEST, {"format": _FORMAT, "files": sorted(files)})


def _read_journal(root: int) -> dict | None:
    doc = nofollow.read_json(root, JOURNAL)
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        return None
    for key in ("stage", "backup"):
        if not isinstance(doc.get(key), str) or not doc[key].startswith(PREFIX) or "/" in doc[key]:
            return None
    if _plain_paths(doc.get("new")) is None or _plain_paths(doc.get("displace")) is None:
        return None
    if doc.get("old_manifest") is not None and _plain_paths(doc["old_manifest"]) is None:
        return None
    return doc


def journaled(root: int) -> bool:
    """Whether a commit is in progress (or was left by a killed run)."""
    return nofollow.entry(root, JOURNAL) is not None


def _regular(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISREG(st.st_mode)


def commit(root: int, stage: str, new: list[str]) -> None:
    """Put the complete ``stage`` (holding ``new``) in place of our previous files.

    Checks come first and change nothing. Then the journal is written (one rename), and from
    that instant the commit is carried out by whoever gets there: this run, or, if it dies,
    the next run's :func:`recover`. An error or a signal in this process rolls back instead.
    """
    old = read_manifest(root)
    device = os.fstat(root).st_dev
    for rel in new:
        nofollow.check_target(root, rel, device)
    displace = []
    for rel in sorted(set(old or ()) | set(new)):
        try:
            st = nofollow.entry(root, rel)
        except Unsafe:          # an old file's folder became a link: not ours to touch any more
            continue
        if _regular(st) and (rel in new or st.st_uid == os.getuid()):
            displace.append(rel)
    journal = {"format": _FORMAT, "stage": stage, "backup": make_dir(root, "backup"),
               "new": sorted(new), "displace": displace, "old_manifest": old}
    try:
        nofollow.write_json(root, JOURNAL, journal)
        _forward(root, journal)
    except BaseException:
        _rollback(root, journal)
        raise
    _finish(root, journal, set(displace) - set(new))


def _forward(root: int, j: dict) -> None:
    """Old files to the backup, new files from the stage, the new manifest. Each step checks
    where its file is, so running it again after an interruption completes the same commit."""
    new = set(j["new"])
    with _subdir(root, j["stage"]) as stage, _subdir(root, j["backup"]) as backup:
        for rel in j["displace"]:
            if rel in new and nofollow.entry(stage, rel) is None:
                continue                                    # the new file is already in place
            if _regular(nofollow.entry(root, rel)) and nofollow.entry(backup, rel) is None:
                nofollow.move(root, rel, backup)
        for rel in j["new"]:
            if nofollow.entry(stage, rel) is not None:
                nofollow.move(stage, rel, root)
    _write_manifest(root, j["new"])
    nofollow.unlink(root, JOURNAL)                          # committed


def _rollback(root: int, j: dict) -> None:
    """Undo a journaled commit: new files back to the stage, old files back from the backup."""
    with _subdir(root, j["stage"]) as stage, _subdir(root, j["backup"]) as backup:
        for rel in j["new"]:
            if nofollow.entry(stage, rel) is None and _regular(nofollow.entry(root, rel)):
                nofollow.move(root, rel, stage)
        for rel in j["displace"]:
            if nofollow.entry(backup, rel) is not None:
                nofollow.move(backup, rel, root)
    if read_manifest(root) != j["old_manifest"]:
        _write_manifest(root, j["old_manifest"])
    nofollow.unlink(root, JOURNAL)
    _finish(root, j, set(j["new"]) - set(j["displace"]))


def _finish(root: int, j: dict, gone: set[str]) -> None:
    """Remove the stage, the backup and folders our removed files leave empty."""
    nofollow.remove_tree(root, j["stage"])
    nofollow.remove_tree(root, j["backup"])
    nofollow.remove_empty_dirs(root, gone)


class _subdir:
    """An open descriptor of one of our folders in OUT (never through a link)."""

    def __init__(self, root: int, name: str):
        self.fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                          dir_fd=root)

    def __enter__(self) -> int:
        return self.fd

    def __exit__(self, *exc) -> None:
        os.close(self.fd)


def recover(root: int) -> None:
    """Finish what a killed run left (OUT locked by the caller): a journal means its stage was
    complete, so the commit is rolled forward (back, if that fails: e.g. a folder became a
    link meanwhile); then every stage and backup folder of ours and our temporaries go."""
    journal = _read_journal(root)
    if journal is not None:
        try:
            _forward(root, journal)
            _finish(root, journal, set(journal["displace"]) - set(journal["new"]))
        except (OSError, Unsafe):
            _rollback(root, journal)
    for name in os.listdir(root):
        if not name.startswith(PREFIX) or name == MANIFEST:
            continue
        st = os.stat(name, dir_fd=root, follow_symlinks=False)
        ours = st.st_uid == os.getuid()
        if ours and (stat.S_ISDIR(st.st_mode) or name in (MANIFEST + ".tmp", JOURNAL + ".tmp")):
            nofollow.remove_tree(root, name)
        elif ours and name == JOURNAL:              # unreadable: it cannot be carried out
            nofollow.unlink(root, name)
