"""The bulky parts of the page's JSON that nothing reads before the first drawing, as one
gzip'd block (``rg-lazy``, written 7 bits per byte by :mod:`.text7`).

Each entry of ``LAZY`` is a key path into the page's data. :func:`split` moves those values out
of the inline ``rg-data`` JSON into one JSON object of the same shape, gzip'd; the page inflates
it with the items, after the first drawing, and merges it back (``mergeInto`` in
``templates/codec.js``; Python twin ``reportgen.testing.html_page.read_page``). At 3.3M
commands this is ~3.3 MB of JSON before gzip (the why data), plus ~0.25 MB of diagnosis rows.
"""
from __future__ import annotations

import gzip
from typing import Any

from reportgen.writers.html.jsonsafe import strict_dumps

#: read only by a click, the critical-path toggle (templates/why.js) or the tests: the static
#: tables of the Diagnosis tab are rendered into the page's HTML already
LAZY: tuple[tuple[str, ...], ...] = (
    ("why", "path"),                    # every outlined path command, per sheet
    ("why", "waits"),                   # every clickable wait
    ("diagnosis", "calls"),             # the kernel calls table's rows
    ("diagnosis", "roofline", "rows"),  # the roofline table's rows
)


def split(data: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """``data`` without the ``LAZY`` values and those values as one gzip'd JSON object of the
    same shape (``b""`` when the page has none of them). ``data`` is left as it is: the dicts on
    the paths are copied (the templates may share them), everything else is shared."""
    rest, lazy = dict(data), {}
    for path in LAZY:
        parent = rest
        for key in path[:-1]:
            if not isinstance(parent.get(key), dict):
                break
            parent[key] = dict(parent[key])
            parent = parent[key]
        else:
            if path[-1] in parent:
                target = lazy
                for key in path[:-1]:
                    target = target.setdefault(key, {})
                target[path[-1]] = parent.pop(path[-1])
    if not lazy:
        return rest, b""
    text = strict_dumps(lazy, separators=(",", ":"))
    return rest, gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
