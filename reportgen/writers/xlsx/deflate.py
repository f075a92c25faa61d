"""The workbook's deflate through ISA-L (the ``isal`` package) where it is installed.

Deflating the sheet XML is a fifth of the CPU of the largest workbooks (1.87 GB of XML at 3.3M
commands): zlib at level 3 deflates such XML at ~350 MB/s, ISA-L at level 1 at ~1.1 GB/s for a
ratio of 14.1 instead of 15.7 (measured on the command sheets of the 3.3M-command capture). The
stream is ordinary deflate: any unzip reads it, and the XML inside is byte for byte the same.

``zipfile`` has no option for its compressor: it calls ``zlib.compressobj(level, DEFLATED,
-15)`` through the ``zlib`` name of its module. :func:`isal_deflate` points that name at a
stand-in whose ``compressobj`` is ISA-L's, for the duration of a ``with`` only (restored even
on error), and only where that name is what this module was checked against (CPython 3.11 to
3.13: ``zipfile._get_compressor`` reading module-level ``zlib``), for the fast zlib levels
(:data:`FAST_LEVELS`: a level above asks for a smaller file, and gets zlib). Elsewhere, or
without ``isal``, nothing changes: zlib at the level asked for.
"""
from __future__ import annotations

import contextlib
import types
import zlib
import zipfile

try:
    from isal import isal_zlib
except ImportError:          # pragma: no cover - isal is a dependency; a platform without its wheel
    isal_zlib = None

#: ISA-L's level (0-3); 1 and 2 compress the same on sheet XML, 3 is slower than zlib's 3
ISAL_LEVEL = 1
#: the zlib levels ISA-L stands in for
FAST_LEVELS = (1, 2, 3)


def usable(level: int | None) -> bool:
    return level in FAST_LEVELS and isal_zlib is not None \
        and getattr(zipfile, "zlib", None) is zlib and hasattr(zipfile, "_get_compressor")


def _stand_in() -> types.SimpleNamespace:
    """zlib's names, with ISA-L's compressobj (any zlib level asked for becomes ISAL_LEVEL)."""
    names = {k: getattr(zlib, k) for k in dir(zlib) if not k.startswith("__")}
    names["compressobj"] = lambda level=-1, method=zlib.DEFLATED, wbits=zlib.MAX_WBITS, *a: \
        isal_zlib.compressobj(ISAL_LEVEL, method, wbits, *a)
    return types.SimpleNamespace(**names)


@contextlib.contextmanager
def isal_deflate(level: int | None):
    """Zips written in this block at zlib ``level`` deflate with ISA-L when ``usable(level)``
    (see the module docstring); says whether they do."""
    if not usable(level):
        yield False
        return
    zipfile.zlib = _stand_in()
    try:
        yield True
    finally:
        zipfile.zlib = zlib
