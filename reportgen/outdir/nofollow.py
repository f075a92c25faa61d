"""File operations inside OUT that never follow a symbolic link.

Every path below OUT is reached one component at a time from an open descriptor of OUT
(``openat`` with ``O_NOFOLLOW``), so a folder that is (or becomes, between a check and a move)
a symbolic link is never entered: the operation fails instead of writing elsewhere. A final
name is only ever renamed onto, which replaces a link rather than writing through it. OUT
itself is opened normally: making OUT a link is the user's choice.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from pathlib import PurePosixPath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Unsafe(Exception):
    """A name inside OUT is a link, or the wrong kind of entry: ``str()`` is the one line."""


def parts(rel: str) -> list[str]:
    """The components of a relative path; raises ValueError for anything that could leave OUT."""
    p = PurePosixPath(rel)
    if not rel or p.is_absolute() or "\\" in rel or any(c in ("", ".", "..") for c in rel.split("/")):
        raise ValueError(f"not a plain relative path: {rel!r}")
    return list(p.parts)


def open_root(path: str | os.PathLike) -> int:
    """A descriptor of OUT (OUT itself may be a link)."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


@contextlib.contextmanager
def parent_dir(root: int, rel: str, *, create: bool = False, label: str = "OUT"):
    """Yield a descriptor of ``rel``'s folder below ``root``, entered without following links;
    None when a folder is missing (``create=False``). Folders made here get the usual mode."""
    fds = []
    try:
        fd = root
        names = parts(rel)[:-1]
        for i, name in enumerate(names):
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    yield None
                    return
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
                try:
                    fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _unsafe_dir(label, names[:i + 1], fd, exc) from None
            except OSError as exc:
                raise _unsafe_dir(label, names[:i + 1], fd, exc) from None
            fds.append(fd)
        yield fd
    finally:
        for fd in fds:
            os.close(fd)


def _unsafe_dir(label: str, names: list[str], parent: int, exc: OSError) -> Exception:
    """Why ``names[-1]`` (in folder ``parent``) could not be entered as a folder."""
    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
        return exc
    where = "/".join([label, *names])
    if stat.S_ISLNK(os.stat(names[-1], dir_fd=parent, follow_symlinks=False).st_mode):
        return Unsafe(f"{where} is a symbolic link: not writing through it (remove or rename it)")
    return Unsafe(f"{where} is a file where the report needs a folder (remove or rename it)")


def entry(root: int, rel: str) -> os.stat_result | None:
    """``lstat`` of ``rel`` reached without following links; None if it does not exist."""
    with parent_dir(root, rel) as fd:
        if fd is None:
            return None
        try:
            return os.stat(parts(rel)[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None


def check_target(root: int, rel: str, device: int) -> None:
    """Raise :class:`Unsafe` unless our file ``rel`` can be put in place: every existing folder
    on the way is a real folder on OUT's file system and the name is free or a regular file."""
    with parent_dir(root, rel) as fd:
        if fd is not None and os.fstat(fd).st_dev != device:
            folder = "/".join(["OUT", *parts(rel)[:-1]])
            raise Unsafe(f"{folder} is on another file system than OUT (a mount point): "
                         "the report cannot be moved in atomically")
    st = entry(root, rel)
    if st is None or stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISLNK(st.st_mode):
        raise Unsafe(f"OUT/{rel} is a symbolic link: not writing through it (remove or rename it)")
    if stat.S_ISDIR(st.st_mode):
        raise Unsafe(f"OUT/{rel} is a folder where the report writes a file (remove or rename it)")
    raise Unsafe(f"OUT/{rel} is not a regular file (remove or rename it)")


def move(src_root: int, rel: str, dst_root: int) -> None:
    """Rename ``src_root/rel`` to ``dst_root/rel`` (same relative path), making folders."""
    with parent_dir(src_root, rel) as src, parent_dir(dst_root, rel, create=True) as dst:
        name = parts(rel)[-1]
        os.rename(name, name, src_dir_fd=src, dst_dir_fd=dst)


def remove_empty_dirs(root: int, rels) -> None:
    """Remove the folders of ``rels`` that are now empty, deepest first (never a link)."""
    dirs = {"/".join(parts(r)[:i]) for r in rels for i in range(1, len(parts(r)))}
    for d in sorted(dirs, key=lambda d: -d.count("/")):
        with contextlib.suppress(Unsafe, OSError), parent_dir(root, d) as fd:
            if fd is not None:
                os.rmdir(parts(d)[-1], dir_fd=fd)

def read_json(root: int, name: str) -> object | None:
    """A JSON file of ours directly in OUT; None if absent, a link, not ours or unreadable."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > 64 << 20:
            return None
        try:
            return json.loads(fh.read())
        except ValueError:
            return None


def write_json(root: int, name: str, doc: object) -> None:
    """Replace ``OUT/name`` with ``doc`` in one rename (a fresh temporary, never a link)."""
    tmp = name + ".tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=root)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o666, dir_fd=root)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    os.rename(tmp, name, src_dir_fd=root, dst_dir_fd=root)


def unlink(root: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=root)


def remove_tree(root: int, name: str) -> None:
    """Remove ``OUT/name`` (a folder of ours; a link is removed, never followed)."""
    try:
        st = os.stat(name, dir_fd=root, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=root, ignore_errors=True)
    else:
        unlink(root, name)
