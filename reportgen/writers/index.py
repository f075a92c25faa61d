"""OUT/index.html for a run over several dumps: one row per dump, links to each report."""
from __future__ import annotations

from pathlib import Path

from reportgen.writers.atomic import atomic_open
from reportgen.writers.html.page import environment   # the one Jinja environment of the package


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.2f}%"


def _num(v, fmt: str) -> str:
    return "n/a" if v is None else format(v, fmt)


def _row(out: Path, r: dict) -> dict:
    name = Path(r["input"]).name
    if "error" in r:
        return {"name": name, "error": r["error"]}
    s = r.get("summary", {})
    overall = (s.get("summary") or [{}])[-1]
    rel = Path(r["output"]).relative_to(out) if Path(r["output"]).is_relative_to(out) else Path(r["output"])
    html = rel / "PerfWeb" / "result.html"
    xlsx = rel / "PerfDoc" / "PerfAI_output.xlsx"
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
        "html": html.as_posix() if (out / html).exists() else "",
        "xlsx": xlsx.as_posix() if (out / xlsx).exists() else "",
    }


def write_index(out: Path, results: list[dict]) -> Path:
    page = environment().get_template("index.html.j2").render(results=[_row(Path(out), r) for r in results])
    target = Path(out) / "index.html"
    with atomic_open(target, "w", encoding="utf-8") as fh:
        fh.write(page)
    return target
