"""reportgen: profile reports for TPU PMU dumps and framework traces."""
from __future__ import annotations

from reportgen.version import __version__  # noqa: F401  (the package API)


def load(path: str, **options):
    """Load any supported input (PMU dump directory, chrome trace, Ascend/MindSpore folder) with
    every analysis attached, as the report would show it.

    ``options`` are fields of :class:`reportgen.options.Options` (``tiu_freq``, ``trace_file``,
    ``min_depth``, ``max_depth``, ...). Returns a :class:`reportgen.model.Profile`:
    ``.commands`` (pandas), ``.host``, ``.tables``, ``.meta`` and ``.summary`` (the engine
    summary table).
    """
    from reportgen import pipeline
    from reportgen.options import Options

    run = Options(input=str(path), **{"quiet": True, **options})
    profile = pipeline.load(run)
    pipeline.analyse(profile, run)
    return profile
