"""The top-operators table of summary.txt, laid out like torch's ``key_averages().table()``:
dashed rules, times with their unit (us/ms/s), then the "Self CPU time total" and "Self Device
time total" lines.  The numbers are the "Operators" table's (analysis.torch_tables)."""
from __future__ import annotations

import math

import pandas as pd

#: rows shown (torch's table shows 100 by default; the workbook and tables/*.csv hold all)
TOP_ROWS = 20
#: widest line written
WIDTH = 120
#: narrowest name column before the per-call averages are left out
MIN_NAME = 40


def _time(us: float) -> str:
    """torch's time format: 3 decimals in s, ms or us."""
    if us is None or (isinstance(us, float) and math.isnan(us)):
        return ""
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _pct(v: float) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}%"


def operators_text(ops: pd.DataFrame, totals: dict[str, float], rows: int = TOP_ROWS) -> str:
    """The table (at most WIDTH columns: the name column takes what the numbers leave)."""
    has_dev = bool(totals.get("self_device_us"))
    cols = [("Self CPU %", "Self CPU %", _pct), ("Self CPU", "Self CPU (us)", _time),
            ("CPU total %", "CPU total %", _pct), ("CPU total", "CPU total (us)", _time),
            ("CPU time avg", "CPU time avg (us)", _time)]
    if has_dev:
        cols += [("Self Device", "Self Device (us)", _time), ("Self Device %", "Self Device %", _pct),
                 ("Device total", "Device total (us)", _time),
                 ("Device time avg", "Device time avg (us)", _time)]
    top = ops.head(rows)
    calls = [str(int(v)) for v in top["# of Calls"].tolist()]
    calls_w = max([len("# of Calls")] + [len(c) for c in calls]) + 1
    while True:   # the per-call averages go first when the names would get too narrow
        cells = [[f(v) for v in top[src].tolist()] for _, src, f in cols]
        widths = [max([len(h)] + [len(c) for c in col]) + 1 for (h, _, _), col in zip(cols, cells)]
        name_w = WIDTH - sum(widths) - calls_w
        avg = [i for i, (h, _, _) in enumerate(cols) if h.endswith("avg")]
        if name_w >= MIN_NAME or not avg:
            break
        del cols[avg[-1]]
    names = [n if len(n) <= name_w - 1 else n[:name_w - 4] + "..." for n in top["Name"].astype(str)]
    name_w = min(name_w, max([len("Name")] + [len(n) for n in names]) + 1)

    def line(name: str, vals: list[str], ncalls: str) -> str:
        return (name.ljust(name_w) + "".join(v.rjust(w) for v, w in zip(vals, widths))
                + ncalls.rjust(calls_w)).rstrip()

    rule = "-" * (name_w + sum(widths) + calls_w)
    out = [rule[:WIDTH], line("Name", [h for h, _, _ in cols], "# of Calls"), rule[:WIDTH]]
    for i, n in enumerate(names):
        out.append(line(n, [c[i] for c in cells], calls[i]))
    out.append(rule[:WIDTH])
    out.append(f"Self CPU time total: {_time(totals.get('self_cpu_us', 0.0))}")
    if has_dev:
        out.append(f"Self Device time total: {_time(totals['self_device_us'])}")
    if len(ops) > rows:
        out.append(f"(top {rows} of {len(ops)} rows; all in tables/Operators.csv and the workbook)")
    return "\n".join(out)
