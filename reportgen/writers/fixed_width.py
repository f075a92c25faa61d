"""Fixed-width text tables and the text form of each metric kind (summary.txt, the console).

Kinds are the metric catalogue's (analysis/catalogue.py); every text output formats a value of a
kind the same way, so a number reads the same wherever it is printed.
"""
from __future__ import annotations

import math

#: metric kind -> (unit shown in the header, value -> text); times are printed in µs
TEXT_FORMATS = {
    "id": ("", lambda v: str(int(v))),
    "ns": ("us", lambda v: f"{v / 1000.0:.3f}"),
    "fraction": ("%", lambda v: f"{100.0 * v:.2f}%"),
    "gbps": ("GB/s", lambda v: f"{v:.2f}"),
    "ratio": ("", lambda v: f"{v:.3f}"),
    "count": ("", lambda v: str(int(v))),
}


def fmt(value, kind: str) -> str:
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return TEXT_FORMATS[kind][1](value)


def fixed_width(title: str, headers: list[str], rows: list[list[str]],
                total: list[str] | None = None) -> str:
    """A right-aligned table under a title; ``total`` (the Overall row) below a rule."""
    body = rows + ([total] if total else [])
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(headers)]
    line = lambda cells: " | ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    width = len(line(headers))
    out = ["=" * width, title, "=" * width, line(headers), "-" * width] + [line(r) for r in rows]
    if total is not None:
        out += ["-" * width, line(total)]
    return "\n".join(out + ["=" * width])
