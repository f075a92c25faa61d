"""The C heap's free pages given back to the system (glibc ``malloc_trim``), and the cyclic
garbage collector paused where it would only pass over what lives on (:func:`collector_paused`);
a leaf any layer may import.

The decode and the analysis free most of what they allocate, but glibc keeps freed heap pages
mapped: its threshold for mapping large blocks on their own grows with every large block
freed, and what a worker thread freed sits in that thread's arena, out of the main thread's
reach. At 3.3M commands that is several hundred MB that the process holds (and every forked
writer would inherit and the tree would count) although nothing uses it.
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
from typing import Iterator


def release_free_memory() -> None:
    """Return every arena's free pages to the system (a few ms); a no-op without glibc.
    Called between the stages, before anything forks, and inside the decode where it frees
    a core's input or a column's parts."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _glibc():
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:                        # pragma: no cover - no C library to load
        return None


_LIBC = _glibc()


@contextlib.contextmanager
def collector_paused(freeze: bool = False) -> Iterator[None]:
    """No cyclic garbage collection inside: for work that builds many containers and no
    cycles (modules loading, decoded records), over which each collection pass would only
    walk. ``freeze``: what exists when it ends is kept out of every later collection
    (``gc.freeze``: for what lives as long as the process). A collector the caller turned off
    stays off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if freeze:
                gc.freeze()
            gc.enable()
