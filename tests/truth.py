"""Pairing of a decoded Profile with a generator truth table (expected_commands.csv), shared by
the golden tests and the synthetic round trips."""
from __future__ import annotations

from typing import Iterator

import pandas as pd


def truth_pairs(commands: pd.DataFrame, truth: pd.DataFrame, mode0: bool
                ) -> Iterator[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """(label, decoded rows, truth rows) per core x engine (CDMA: per port), both in time order.

    Without dynamic nodes (mode 0) nothing says which core submitted a CDMA command: the decoder
    attributes those rows to the anchor core, so a port is then compared as a whole.
    """
    if mode0:
        truth = truth.copy()
        truth.loc[truth["engine"] == "CDMA", "core"] = -1
    c = commands
    for (core, engine, port), t in truth.groupby(["core", "engine", "port"], sort=False):
        if engine == "CDMA":
            g = c[(c["engine"] == "CDMA") & (c["port"] == int(port))]
            g = g[g["core"] == core] if core >= 0 else g
        else:
            g = c[(c["engine"] == engine) & (c["core"] == core)]
        yield (f"{engine} core {core} port {port}", g.sort_values("global_idx"),
               t.sort_values("start_ns", kind="stable"))
