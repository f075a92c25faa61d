"""Strict JSON for the page's <script> blocks."""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def clean(obj: Any) -> Any:
    """NaN/inf -> None and numpy scalars -> Python, recursively (for strict JSON)."""
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def strict_dumps(obj: Any, **options: Any) -> str:
    """``json.dumps(clean(obj))``, strict (no NaN); the Python walk of :func:`clean` only when
    ``obj`` is not strict JSON as it is (numpy scalars, NaN): the same text, and no walk of the
    ~10^5 values of the why data that are plain Python already."""
    try:
        return json.dumps(obj, allow_nan=False, **options)
    except (TypeError, ValueError):
        return json.dumps(clean(obj), allow_nan=False, **options)


def json_for_script(obj: Any) -> str:
    """JSON safe inside <script>: '<', '>' and '&' as \\u escapes, so no input text can end the
    block, and no NaN (not JSON; NaN and numpy scalars as :func:`clean` makes them)."""
    text = strict_dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
