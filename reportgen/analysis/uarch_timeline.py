"""TIU uArch rate over time, per core (docs/metrics.md "uArch rate over time").

In a time window the rate is Σ Alg Ops / Σ uArch Ops of the core's modelled TIU work commands,
each command's ops spread evenly over its duration (a command of zero duration counts whole in
the window holding its start). Over the whole span this is exactly the engine summary's
``tiu_uarch_rate`` of the core (the same commands, every op counted once), so the curve and the
table never disagree; zoomed in, it is the rate of what ran in each bucket.

:func:`rate_bins` is the rule for one window and bucket count; the page draws it in the browser
(``uarchBins`` in templates/diagnosis.js) so that it re-bins to the visible window as the
timelines do, and tests compare the two.
"""
from __future__ import annotations

import numpy as np

from reportgen.model import Profile


def modelled(c) -> np.ndarray:
    """Per command: a TIU work command whose ops are modelled (the commands ``tiu_uarch_rate``
    sums, and the only ones the rate over time counts)."""
    return ((c["engine"].astype(str) == "TIU").to_numpy(bool) & ~c["is_sys"].to_numpy(bool)
            & c["alg_ops"].notna().to_numpy(bool) & c["uarch_ops"].notna().to_numpy(bool))


def modelled_tiu(profile: Profile) -> dict[int, tuple[np.ndarray, ...]]:
    """Per core: (start_ns, end_ns, alg_ops, uarch_ops) of its :func:`modelled` commands, in
    start order."""
    c = profile.commands
    if c.empty:
        return {}
    idx = np.flatnonzero(modelled(c))
    core, start = c["core"].to_numpy(np.int64)[idx], c["start_ns"].to_numpy(np.int64)[idx]
    idx = idx[np.lexsort((start, core))]
    core = c["core"].to_numpy(np.int64)[idx]
    columns = [c[k].to_numpy(t)[idx] for k, t in (("start_ns", np.int64), ("end_ns", np.int64),
                                                   ("alg_ops", np.float64), ("uarch_ops", np.float64))]
    return {int(k): tuple(col[core == k] for col in columns) for k in np.unique(core)}


def rate_bins(start: np.ndarray, end: np.ndarray, alg: np.ndarray, uarch: np.ndarray,
              a: float, b: float, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(Σ Alg Ops, Σ uArch Ops) per bucket of ``bins`` equal buckets of [a, b): each command's
    ops spread evenly over [start, end); the rate of a bucket is their ratio (none: no ops)."""
    width = (b - a) / bins
    sums = []
    start, end = np.asarray(start, np.float64), np.asarray(end, np.float64)
    dur = end - start
    point = dur <= 0
    s, e = np.clip(start, a, b), np.clip(end, a, b)
    spread = ~point & (e > s)
    instant = point & (start >= a) & (start < b)
    b0 = np.minimum(np.floor((s - a) / width), bins - 1).astype(np.int64)
    b1 = np.minimum(np.floor((e - a) / width), bins - 1).astype(np.int64)
    one = spread & (b0 == b1)
    many = spread & (b0 < b1)
    for ops in (np.asarray(alg, np.float64), np.asarray(uarch, np.float64)):
        total = np.zeros(bins)
        with np.errstate(divide="ignore", invalid="ignore"):
            density = np.where(point, 0.0, ops / np.where(point, 1.0, dur))
        np.add.at(total, b0[one], density[one] * (e - s)[one])
        np.add.at(total, b0[instant], ops[instant])
        lo, hi = b0[many], b1[many]
        dm = density[many]
        np.add.at(total, lo, dm * (a + (lo + 1) * width - s[many]))
        np.add.at(total, hi, dm * (e[many] - (a + hi * width)))
        steps = np.zeros(bins + 1)                  # whole buckets in between: a difference array
        np.add.at(steps, lo + 1, dm * width)
        np.add.at(steps, hi, -dm * width)
        total += np.cumsum(steps)[:-1]
        sums.append(total)
    return sums[0], sums[1]
