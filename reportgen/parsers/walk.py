"""Recursive file search that follows symlinked folders.

``Path.glob("**/...")`` (Python < 3.13) does not descend into symlinked folders, yet cluster runs
are often assembled as ``profiler_data/rank_N -> /store/job/rank_N`` links.  :func:`glob_below`
follows them, keeps the path as seen through the link (so ``rank_N`` still names the rank), and
never enters a folder that is already one of its own ancestors (a link loop).  It only reads:
where a link points, outside the input folder or not, does not matter.
"""
from __future__ import annotations

import os
from fnmatch import fnmatchcase
from pathlib import Path


def glob_below(root: Path, tail: str) -> list[Path]:
    """Paths under ``root`` (at any depth, ``root``'s own children included) whose last path
    components match the ``/``-separated glob ``tail``, as ``root.glob("**/" + tail)`` would
    find them if it followed symlinked folders; sorted."""
    patterns = tail.split("/")
    found: list[Path] = []
    # (folder, its components below root, real paths of the folder and its ancestors)
    stack: list[tuple[str, tuple[str, ...], frozenset[str]]] = [
        (str(root), (), frozenset({os.path.realpath(root)}))]
    while stack:
        folder, below, chain = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:  # unreadable or vanished folder: nothing below it to find
            continue
        for entry in entries:
            parts = below + (entry.name,)
            if len(parts) >= len(patterns) and all(
                    fnmatchcase(name, pattern) for name, pattern in zip(parts[-len(patterns):], patterns)):
                found.append(Path(entry.path))
            try:
                is_dir = entry.is_dir()  # follows a symlink to its target
            except OSError:
                continue
            if is_dir:
                real = os.path.realpath(entry.path)
                if real not in chain:
                    stack.append((entry.path, parts, chain | {real}))
    return sorted(found)


__all__ = ["glob_below"]
