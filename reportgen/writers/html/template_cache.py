"""The compiled templates kept between runs (Jinja's bytecode cache), beside the templates.

Compiling the page's templates (result.html.j2 and the parts it includes) costs 0.06-0.08 s of
CPU in every web writer; loading their compiled code back costs ~2 ms. Jinja keys each entry by
the template's name and path and checks a checksum of its source (and Jinja's bytecode format
version and Python's) before using it, so an edited template, a Jinja with another bytecode
format or another Python compiles afresh. The entries go in the templates package's ``__pycache__`` folder, where Python keeps the
package's own compiled modules and numba its compiled functions (``cache=True``), written under
a temporary name and renamed (Jinja's own way), so runs side by side never read half an entry.
Where that folder cannot be written (a read-only install), the templates are compiled each run,
as without a cache: a cache never makes a run fail.
"""
from __future__ import annotations

import importlib.resources
import os
from pathlib import Path

import jinja2

#: the file name of each entry (Jinja's key: a hash of the template's name and path)
PATTERN = "jinja2-%s.cache"


class TemplateCache(jinja2.FileSystemBytecodeCache):
    """Jinja's file cache that gives up quietly when it cannot write."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:             # read-only, full or vanished folder: compiled next time too
            pass


def for_package(package: str) -> TemplateCache | None:
    """The cache of ``package``'s templates, in its ``__pycache__``; None when the package is
    not a folder (a zip) or that folder cannot be made."""
    try:
        root = importlib.resources.files(package)
        if not isinstance(root, Path):
            return None
        folder = root / "__pycache__"
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return TemplateCache(str(folder), PATTERN)
