"""Progress on stderr while a run goes: bars on a terminal, plain lines in a log, or nothing.

* ``quiet``: nothing (results and warnings are the CLI's business, not this module's).
* stderr is not a terminal (a log file, a pipe): no bars and no carriage returns; at most one
  line per finished stage (:func:`line`), each written with a single ``write`` so that the
  lines of processes side by side never mix.
* stderr is a terminal: tqdm bars, drawn by the run's main process only. A writer running in a
  forked process (``parallel.py``) forwards how far its bar got (:func:`forward_to`) and the
  main process shows it on its one "writing" bar: bars of processes side by side never
  interleave.

A leaf module: any layer may import it.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Callable

#: in a forked writer process: where its bars send (description, fraction done)
_forward: Callable[[str, float], None] | None = None
#: a forwarded bar reports at most this often (seconds)
FORWARD_EVERY = 0.25


def interactive() -> bool:
    """Whether bars may be drawn: stderr is a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):     # replaced or closed stderr
        return False


def forward_to(send: Callable[[str, float], None] | None) -> None:
    """In a forked writer process: send bar progress to the main process instead of drawing."""
    global _forward
    _forward = send


class _Silent:
    """A bar that shows nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None

    def describe(self, text: str) -> None:
        return None


class _Forwarded(_Silent):
    """A bar in a forked writer: its fraction done goes to the main process, a few times a second."""

    def __init__(self, total: int, desc: str, send: Callable[[str, float], None]):
        self.total, self.desc, self.send = max(total, 1), desc, send
        self.done = 0
        self.sent_at = 0.0

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.sent_at >= FORWARD_EVERY:
            self.sent_at = now
            self.send(self.desc, min(self.done / self.total, 1.0))

    def describe(self, text: str) -> None:
        self.desc = text


class _Drawn(_Silent):
    """A tqdm bar on the terminal, removed when done (the stage's line says what happened)."""

    def __init__(self, total: int, desc: str, unit: str):
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                        dynamic_ncols=True)

    def __exit__(self, *exc) -> None:
        self.bar.close()

    def update(self, n: int = 1) -> None:
        self.bar.update(n)

    def describe(self, text: str) -> None:
        self.bar.set_postfix_str(text, refresh=False)


def bar(total: int, desc: str, unit: str = "it", quiet: bool = False):
    """A progress bar of ``total`` steps (a context manager with ``update(n)`` and
    ``describe(text)``): drawn, forwarded or silent as the module docstring says."""
    if quiet or not interactive():
        return _Silent()
    if _forward is not None:
        return _Forwarded(total, desc, _forward)
    return _Drawn(total, desc, unit)


def line(text: str, quiet: bool = False) -> None:
    """One finished stage's line on stderr, ``bigTpuProfile: <text>``."""
    if quiet:
        return
    message = f"bigTpuProfile: {text}\n"
    if interactive():
        from tqdm import tqdm

        tqdm.write(message, file=sys.stderr, end="")   # above this process's bars, which redraw
        return
    sys.stderr.flush()
    data = message.encode(sys.stderr.encoding or "utf-8", "replace")
    try:
        os.write(sys.stderr.fileno(), data)        # one write: lines of processes never mix
    except (AttributeError, ValueError, OSError):  # stderr without a descriptor (tests)
        sys.stderr.write(message)
        sys.stderr.flush()


def seconds(t: float) -> str:
    """A stage's duration as its line shows it."""
    return f"{t:.1f} s" if t >= 0.1 else f"{t * 1000:.0f} ms"
