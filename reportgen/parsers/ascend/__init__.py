"""Ascend outputs -> Profile: torch_npu / MindSpore ``ASCEND_PROFILER_OUTPUT`` folders (CSV/JSON or
their msprof / torch_npu SQLite export), CANN ``PROF_*`` msprof timelines, legacy MindSpore
``profiler/`` folders and their cluster files, single card or several ranks
(framework-traces.md §3-4).

One rank is one "core".  The vendor's own summary files are kept per rank as read, numbers
cleaned (``Profile.vendor_outputs``); the tables shown from them are derived in
:mod:`reportgen.analysis.framework` and :mod:`reportgen.analysis.ascend`.  Times are validated
as in every trace (:mod:`reportgen.parsers.times`: rows with unusable times are dropped and
counted); other numbers that are infinite are missing.

Modules, one seam each: :mod:`.layout` (where the profiles are: layouts, ranks, spans, logdir
runs), :mod:`.files` (reading one CSV/JSON; broken files are warnings), :mod:`.tables` (one
rank's summary files), :mod:`.rank` (one rank's output folder), :mod:`.sqlite` (DB exports),
:mod:`.legacy` (legacy MindSpore and CANN PROF folders), :mod:`.mindspore` (the MindSpore
guide's other files), :mod:`.cluster` (cluster files), :mod:`.load` (the entry point).
"""
from reportgen.parsers.ascend.layout import (APO, MS_TIMELINE, MSPROF_TIMELINE, find_rank_dirs,
                                             is_output_dir, rank_id, runs_below)
from reportgen.parsers.ascend.load import load_ascend

__all__ = ["APO", "MS_TIMELINE", "MSPROF_TIMELINE", "find_rank_dirs", "is_output_dir",
           "load_ascend", "rank_id", "runs_below"]
