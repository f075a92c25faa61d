"""``PerfWeb/result.html``: one self-contained, mailable report page.

The page is rendered from the Jinja2 templates of ``reportgen.templates`` (``result.html.j2``
with ``codec.js`` (reading the embedded blocks), ``report.js`` and ``report.css`` inlined) and
carries everything it needs:

* plotly.js: the official cartesian partial bundle (scatter, bar, heatmap and the other
  cartesian traces), vendored gzipped in ``templates/vendor`` (provenance and licence in its
  README) and written 7 bits per byte (:mod:`.text7`); the browser inflates it with
  ``DecompressionStream`` (0.57 MB of page instead of 1.96 MB for the full plotly.js);
* every command and host event as one compact binary payload (:mod:`.payload`), decoded by
  ``decodeItems`` in ``templates/codec.js``, written 7 bits per byte of the page (:mod:`.text7`);
* small JSON for the rest: names tables, lanes, views, the engine summary table
  (:mod:`.summary`) and the overview charts (Plotly figure dicts, :mod:`.charts`);
* every analysis table of ``profile.tables`` (framework traces) as one gzip+base64 JSON block
  (:mod:`.tables`), drawn by the Tables tab as sortable tables.

:mod:`.page` assembles the page. The browser draws timelines with the level-of-detail rule of
``analysis.timeline``: an occupancy heatmap while many commands are visible, real bars with
hover when few are. ``reportgen.testing.html_page`` reads a written page back (tests).

Modules: palette (colours), payload (timeline codec), text7 (binary as script text), lazy (data read
after the first drawing, one gzip'd block), summary (engine summary table), charts,
tables, jsonsafe (strict JSON in <script>), diagnosis (the Diagnosis tab and the per-core uArch
rate charts, drawn by templates/diagnosis.js), page (templates, assembly).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from reportgen.errors import OutputError
from reportgen.progress import bar as progress_bar
from reportgen.model import Profile
from reportgen.writers.atomic import atomic_open
from reportgen.writers.html.page import render


def write(profile: Profile, summary: pd.DataFrame, out_dir, *, quiet: bool = False) -> Path:
    """Write ``out_dir/PerfWeb/result.html`` atomically and return its path."""
    target = Path(out_dir) / "PerfWeb" / "result.html"
    with progress_bar(4, "html", "stage", quiet) as bar:
        def progress(stage: str) -> None:      # called as each of the 4 stages starts
            bar.describe(stage)
            bar.update(1)

        text = render(profile, summary, progress)
        progress("write")
        try:
            with atomic_open(target, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        except OSError as err:
            raise OutputError(f"{target}: cannot write the HTML report ({err.strerror or err})") from err
    return target
