"""OUT/index.html for a run over several dumps: one row per dump, links to each report.

Dump folders are named by whoever made them: their names are shown as text (escaped by the
template) and the links are built by :func:`reportgen.textsafe.relative_href` only."""
from __future__ import annotations

from pathlib import Path

from reportgen.textsafe import clean_text, relative_href
from reportgen.writers.atomic import atomic_open
from reportgen.writers.html.page import environment   # the one Jinja environment of the package


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.2f}%"


def _num(v, fmt: str) -> str:
    return "n/a" if v is None else format(v, fmt)


def _link(out: Path, report: Path, *inside: str) -> str:
    """The href of a file of one dump's report, relative to OUT ("" when there is none, or the
    report is not inside OUT: only relative links are ever emitted, see textsafe.relative_href)."""
    if not report.is_relative_to(out) or not (report.joinpath(*inside)).exists():
        return ""
    return relative_href(*report.relative_to(out).parts, *inside)


def _row(out: Path, r: dict) -> dict:
    # a dump folder's name is input text: not UTF-8 it holds surrogates no page can encode
    name = clean_text(Path(r["input"]).name)
    if "error" in r:
        return {"name": name, "error": clean_text(r["error"])}
    s = r.get("summary", {})
    overall = (s.get("summary") or [{}])[-1]
    report = Path(r["output"])
    util = overall.get("tiu_util")
    return {
        "name": name, "chip": s.get("chip", ""), "mode": s.get("mode", ""), "cores": s.get("cores", ""),
        "commands": s.get("commands", ""),
        "span_us": _num(None if overall.get("span_ns") is None else overall["span_ns"] / 1000, ".3f"),
        "parallelism": _pct(overall.get("parallelism")), "tiu_util": _pct(util),
        "tiu_bar": 0 if util is None else round(60 * util), "uarch": _pct(overall.get("tiu_uarch_rate")),
        "gdma_bw": _num(overall.get("gdma_ddr_bw_busy"), ".2f"),
        "sdma_bw": _num(overall.get("sdma_ddr_bw_busy"), ".2f"),
        "warnings": len(s.get("warnings", [])),
        "html": _link(out, report, "PerfWeb", "result.html"),
        "xlsx": _link(out, report, "PerfDoc", "PerfAI_output.xlsx"),
    }


def write_index(out: Path, results: list[dict]) -> Path:
    page = environment().get_template("index.html.j2").render(results=[_row(Path(out), r) for r in results])
    target = Path(out) / "index.html"
    with atomic_open(target, "w", encoding="utf-8") as fh:
        fh.write(page)
    return target
