"""reportgen: profile reports for TPU PMU dumps and framework traces."""
from __future__ import annotations

__version__ = "0.1.0"


def load(path: str, **options):
    """Load any supported input (PMU dump directory, chrome trace, Ascend/MindSpore folder).

    Returns a :class:`reportgen.model.Profile`: ``.commands`` (pandas), ``.host``,
    ``.meta`` and ``.metrics()`` (the engine summary table).
    """
    from reportgen.parsers.detect import load_profile

    return load_profile(path, **options)
