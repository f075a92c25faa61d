"""Reader of the reference decoder's RegInfo text files (the golden answers in shared/data/pmu).

Independent of the project's writer: it parses the vendor layout (spec reference-tool.md §6)
into one dict per record, so golden tests compare our model with what the reference printed.
"""
from __future__ import annotations

import re
from pathlib import Path

HEADERS = ("__TIU_REG_INFO__", "__TDMA_REG_INFO__", "__CDMA_REG_INFO__")


def read_reginfo(path: Path) -> list[dict[str, str]]:
    records: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line in HEADERS:
            current = {}
            records.append(current)
        elif line.startswith("__"):
            current = None                      # __CHIP_ARCH_ARGS__
        elif current is not None and line.startswith("\t"):
            key, _, value = line[1:].partition(": ")
            current.setdefault(key, value)
    return records


def reference_sheets(ref_dir: Path) -> dict[str, list[dict[str, str]]]:
    """Reference records per sheet name (TIU_<core>, GDMA_<core>, SDMA_<core>, CDMA_<port>)."""
    out: dict[str, list[dict[str, str]]] = {}
    for f in sorted(Path(ref_dir).glob("*RegInfo_*.txt")):
        n = int(re.search(r"_(\d+)\.txt$", f.name).group(1))
        for rec in read_reginfo(f):
            if f.name.startswith("tiu"):
                sheet = f"TIU_{n}"
            elif f.name.startswith("cdma"):
                sheet = f"CDMA_{n}"
            else:
                sheet = f"{'GDMA' if rec.get('Engine Id') == '1' else 'SDMA'}_{n}"
            out.setdefault(sheet, []).append(rec)
    return out
