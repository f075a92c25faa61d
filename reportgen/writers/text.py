"""summary.txt / summary.json and the RegInfo text files.

The summary shows the engine summary of ``reportgen.analysis.metrics`` as a fixed-width table
(the same numbers the xlsx Engine Summary and the HTML overview show); summary.json holds the
same values unformatted. RegInfo files follow the vendor's layout (reference-tool.md §6):
``__CHIP_ARCH_ARGS__`` then one ``__TIU_REG_INFO__`` / ``__TDMA_REG_INFO__`` /
``__CDMA_REG_INFO__`` block per command with tab-indented ``key: value`` lines.
"""
from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.analysis import catalogue
from reportgen.model import ENGINE_IDS, Profile
from reportgen.writers.atomic import atomic_open
from reportgen.writers.layers_text import layers_document, top_layers_text
from reportgen.writers.diagnosis_text import diagnosis_document, diagnosis_text
from reportgen.writers.why_text import why_document, why_text
from reportgen.writers.fw_diagnosis_text import framework_document, framework_text
from reportgen.writers.fixed_width import TEXT_FORMATS, fixed_width, fmt
from reportgen.writers.torch_table_text import operators_text

#: engine-summary columns of the printed table (names and units: analysis/catalogue.py)
SUMMARY_COLUMNS = ["core", "parallelism", "span_ns", "tiu_busy_ns", "tiu_idle_ns", "tiu_util",
                   "tiu_uarch_rate"]
# per DMA engine: busy, idle, util, bandwidth in every direction (mode 0 too), DDR total / read /
# write, L2M (GDMA) -- what the vendor's README promises per core and engine (issue 25)
for _key in ("gdma", "sdma", "cdma"):
    SUMMARY_COLUMNS += [f"{_key}_busy_ns", f"{_key}_idle_ns", f"{_key}_util", f"{_key}_bw_busy",
                        f"{_key}_ddr_bw_busy", f"{_key}_ddr_read_bw_busy", f"{_key}_ddr_write_bw_busy"]
    SUMMARY_COLUMNS += ["gdma_l2m_bw_busy"] if _key == "gdma" else []

def _header(entry: catalogue.SummaryMetric) -> str:
    unit = TEXT_FORMATS[entry.metric.kind][0]
    return f"{entry.label}({unit})" if unit else entry.label


#: the widest line of summary.txt and of the printed summary (a terminal, a mail, a log viewer)
TEXT_WIDTH = 120


def _table_width(widths: list[int]) -> int:
    return sum(widths) + 3 * (len(widths) - 1)


def _parts(units: list[list[int]], widths: list[int], key: int, limit: int) -> list[list[int]]:
    """Column indices of each part of a table too wide for ``limit``: every part starts with the
    ``key`` column and takes whole ``units`` (an engine's columns) while it fits; a unit wider
    than a part on its own is cut between its columns."""
    fits = lambda cols: _table_width([widths[key]] + [widths[c] for c in cols]) <= limit  # noqa: E731
    pieces = []
    for unit in units:
        pieces += [unit] if fits(unit) else [[c] for c in unit]
    parts: list[list[int]] = []
    for piece in pieces:
        if parts and fits(parts[-1] + piece):
            parts[-1] += piece
        else:
            parts.append(list(piece))
    return [[key] + part for part in parts]


def summary_table(summary: pd.DataFrame, limit: int = TEXT_WIDTH) -> str:
    """The engine summary as fixed-width tables no wider than ``limit``: the Core column, then
    as many engines' columns as fit; the next engines in a table below, Core repeated."""
    # CDMA only when a port ran (as the HTML summary): most captures, and chips without CDMA
    # (BM1688, CV84X6), would otherwise carry a table of n/a
    no_cdma = "cdma_cmds" in summary and not summary["cdma_cmds"].fillna(0).sum()
    entries = [catalogue.lookup(c) for c in SUMMARY_COLUMNS if not (no_cdma and c.startswith("cdma_"))]
    headers = [_header(e) for e in entries]
    rows = [[fmt(r[e.column], e.metric.kind) for e in entries] for r in summary.to_dict("records")]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    units: dict[str, list[int]] = {}
    for i, e in enumerate(entries[1:], 1):
        units.setdefault(e.group, []).append(i)
    parts = _parts(list(units.values()), widths, 0, limit)
    tables = []
    for n, part in enumerate(parts, 1):
        groups = ", ".join(dict.fromkeys(entries[i].group for i in part if entries[i].group))
        title = "Summary" if len(parts) == 1 else f"Summary ({n} of {len(parts)})" + \
            (f": {groups}" if groups else "")
        pick = lambda r: [r[i] for i in part]  # noqa: E731
        tables.append(fixed_width(title, pick(headers), [pick(r) for r in rows[:-1]], pick(rows[-1])))
    return "\n\n".join(tables)


def top_operators_text(ops: pd.DataFrame) -> str:
    """The top operators as torch's ``table()`` prints them (writers.torch_table_text)."""
    totals = {"self_cpu_us": float(ops["Self CPU (us)"].sum()),
              "self_device_us": float(ops["Self Device (us)"].sum())}
    return "Top operators (torch key_averages)\n" + operators_text(ops, totals)


def lanes_table(profile: Profile) -> str:
    """Framework traces: the device lanes table (analysis.derive) instead of TIU/DMA columns."""
    t = profile.tables["Device lanes"]
    headers = ["Core", "Engine", "Commands", "busy(us)", "util(%)"]
    rows = [[str(r["core"]), str(r["engine"]), str(r["commands"]), fmt(r["busy_ns"], "ns"),
             fmt(r["util"], "fraction")] for r in t.to_dict("records")]
    return fixed_width("Device lanes", headers, rows)


#: the input kinds as the summary names them
SOURCE_NAMES = {"chrome": "chrome trace", "ascend": "Ascend profiler output",
                "mindspore": "MindSpore profiler output"}

#: the notes under the table, one short line each
PMU_NOTES = ["Definitions: docs/metrics.md.",
             "Busy = union of non-system command intervals; util = busy / span.",
             "BW = bytes / busy time of the commands that moved them (DDR: DDR commands; "
             "plain BW: every direction, also mode 0).",
             "uArch rate n/a = no command with a modelled op (modes 0/1)."]
FRAMEWORK_NOTES = ["Definitions: docs/metrics.md.",
                   "Busy = union of a lane's work intervals (a device row: of all its lanes); util = busy / span.",
                   "Operator and kernel tables: tables/*.csv and the workbook."]


def _facts(profile: Profile) -> list[str]:
    """The capture facts that apply to the input: chip, clocks and capture mode for a PMU dump,
    the source (and rank) for a framework trace; a fact without a value is left out."""
    m = profile.meta
    n = len(profile.commands)
    if m.is_pmu:
        chip = m.chip + (f" ({m.chip_alias})" if m.chip_alias else "")
        lines = [[("Chip", chip), ("cores", m.num_cores), ("capture mode", m.mode),
                  ("TIU clock", f"{m.tiu_freq_mhz:g} MHz"), ("DMA clock", f"{m.dma_freq_mhz:g} MHz")],
                 [("Commands", n), ("CDMA ports", ", ".join(map(str, m.cdma_ports)) or "none")]]
    else:
        lines = [[("Source", SOURCE_NAMES.get(m.source, m.source)), ("rank", m.rank),
                  ("device commands", n)]]
    return ["  ".join(f"{k}: {v}" for k, v in line if v not in (None, "")) for line in lines]


def _wrapped(text: str, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, TEXT_WIDTH, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False) or [""]


def warnings_text(meta) -> str:
    """The warnings block: a line per warning (the first 50), wrapped to the text width."""
    lines = [f"Warnings ({len(meta.warnings)}):"]
    for w in meta.warnings[:50]:
        lines += _wrapped(f"  - {w}", "    ")
    if len(meta.warnings) > 50:
        lines.append(f"  ... and {len(meta.warnings) - 50} more (summary.json lists all)")
    return "\n".join(lines)


def summary_text(profile: Profile, summary: pd.DataFrame) -> str:
    m = profile.meta
    head = [f"Input: {m.input_path}"] + _facts(profile)
    head += _wrapped(records_line(m.accounting)) if m.accounting else []
    body = summary_table(summary) if m.is_pmu else lanes_table(profile)
    if not m.is_pmu and len(profile.tables.get("Operators", ())):
        body += "\n\n" + top_operators_text(profile.tables["Operators"])
    if profile.layer_view is not None:
        body += "\n\n" + top_layers_text(profile.layer_view)
    notes = PMU_NOTES if m.is_pmu else FRAMEWORK_NOTES
    warn = ["", warnings_text(m)] if m.warnings else []
    diagnosis = ["", diagnosis_text(profile.diagnosis)] if profile.diagnosis is not None else []
    if profile.diagnosis is not None and profile.diagnosis.why is not None:
        diagnosis += ["", why_text(profile.diagnosis.why)]
    if profile.framework_diagnosis is not None:
        diagnosis += ["", framework_text(profile.framework_diagnosis)]
    return "\n".join(head + ["", body, ""] + notes + diagnosis + warn) + "\n"


def records_line(accounting: dict[str, dict[str, int]]) -> str:
    """'Records: read N, shown M, dropped K (reason: n, ...)' over every sheet."""
    if not accounting:
        return ""
    totals: dict[str, int] = {}
    for entry in accounting.values():
        for k, v in entry.items():
            totals[k] = totals.get(k, 0) + v
    drops = {k.split(": ", 1)[1]: v for k, v in totals.items() if k.startswith("dropped: ")}
    text = f"Records: read {totals.get('read', 0)}, shown {totals.get('shown', 0)}"
    if drops:
        text += f", dropped {sum(drops.values())} (" + ", ".join(f"{k}: {v}" for k, v in drops.items()) + ")"
    return text


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if math.isnan(v) else float(v)
    return v


def summary_document(profile: Profile, summary: pd.DataFrame) -> dict:
    """summary.json's content: the run's facts and the engine summary, unformatted."""
    m = profile.meta
    layers = layers_document(profile.layer_view) if profile.layer_view is not None else {}
    return {
        "input": m.input_path, "chip": m.chip, "cores": m.num_cores, "mode": m.mode,
        "tiu_freq_mhz": m.tiu_freq_mhz, "dma_freq_mhz": m.dma_freq_mhz, "cdma_ports": m.cdma_ports,
        "commands": int(len(profile.commands)),
        "warnings": [{"code": w.code, "message": w.message, "where": w.where} for w in m.warnings],
        "records": m.accounting,
        "summary": [{k: _jsonable(v) for k, v in r.items()} for r in summary.to_dict("records")],
        "metrics": {c: {"label": e.label, "unit": e.metric.unit, "definition": e.metric.definition}
                    for c in summary.columns if (e := catalogue.BY_COLUMN.get(c))},
        **layers,
        **(diagnosis_document(profile.diagnosis) if profile.diagnosis is not None else {}),
        **(why_document(profile.diagnosis.why) if getattr(profile.diagnosis, "why", None) else {}),
        **(framework_document(profile.framework_diagnosis)
           if profile.framework_diagnosis is not None else {}),
        **_comparable(profile),
    }


def _comparable(profile: Profile) -> dict:
    """``digest`` (what a later --baseline run needs of this one) and ``compare``."""
    from reportgen.analysis.compare import comparison_document
    from reportgen.analysis.digest import digest_document

    out = {}
    if profile.digest is not None:
        out["digest"] = digest_document(profile.digest, not profile.meta.is_pmu)
    if profile.comparison is not None:
        out["compare"] = comparison_document(profile.comparison)
    return out


def write_summary(profile: Profile, summary: pd.DataFrame, out_dir: Path) -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    txt = out_dir / "summary.txt"
    with atomic_open(txt, "w", encoding="utf-8") as fh:
        fh.write(summary_text(profile, summary))
    js = out_dir / "summary.json"
    with atomic_open(js, "w", encoding="utf-8") as fh:
        json.dump(summary_document(profile, summary), fh, indent=1)
    return txt, js


# -- RegInfo ----------------------------------------------------------------------------------

def rate_text(alg: np.ndarray, uarch: np.ndarray) -> np.ndarray:
    """uArch Rate as the vendor prints it: Python '{:.1%}' of alg / uarch, '0.0%' if uarch is 0."""
    out = np.full(len(alg), "", object)
    ok = ~np.isnan(alg) & ~np.isnan(uarch)
    vals = np.where(uarch[ok] != 0, alg[ok] / np.where(uarch[ok] != 0, uarch[ok], 1), 0.0)
    uniq, inverse = np.unique(vals, return_inverse=True)      # each distinct ratio formatted once
    out[ok] = np.array([f"{v:.1%}" for v in uniq.tolist()], object)[inverse]
    return out


_STR = np.dtypes.StringDType()


def _as_text(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(text, present) of a column, as the vendor files print values (whole floats as integers)."""
    present = col.notna().to_numpy()
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = np.asarray(list(col.cat.categories.astype(str)) + [""], dtype=_STR)
        return cats[col.cat.codes.to_numpy()], present      # code -1 (missing) -> ""
    if pd.api.types.is_extension_array_dtype(col.dtype) and pd.api.types.is_integer_dtype(col.dtype):
        return col.to_numpy(dtype=np.uint64 if col.dtype.name.startswith("U") else np.int64,
                            na_value=0).astype(_STR), present
    values = col.to_numpy()
    if values.dtype.kind == "f":
        whole = present & (values == np.floor(np.where(present, values, 0)))
        txt = values.astype(_STR)
        txt[whole] = values[whole].astype(np.int64).astype(_STR)
        return txt, present
    if values.dtype.kind == "O":
        return np.array(["" if v is None else str(v) for v in values], dtype=_STR), present
    return values.astype(_STR), present


def _key_lines(key: str, col: pd.Series) -> np.ndarray:
    """'\t<key>: <value>\n' per row ("" where the value is missing), as Python strings.

    Most columns (register fields above all) repeat a few values: then each distinct line is
    built once and picked per row (a reference, not a new string)."""
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    if len(uniques) * 4 <= len(col):
        txt, _ = _as_text(pd.Series(uniques, dtype=col.dtype))
        table = np.append(np.strings.add(np.strings.add("\t" + key + ": ", txt), "\n").astype(object), "")
        return table[codes]                       # code -1 (missing) picks the trailing ""
    txt, present = _as_text(col)
    return np.where(present, np.strings.add(np.strings.add("\t" + key + ": ", txt), "\n"), "").astype(object)


def _register_pieces(reg: pd.DataFrame, func_type: np.ndarray, order: dict[str, list[str]],
                     label: bool) -> tuple[np.ndarray, list[tuple[np.ndarray, list[np.ndarray]]]]:
    """The register lines of each row, in the register order of the row's op: (count per row,
    [(rows, line arrays over those rows)] per op). ``label``: the op's lines are preceded by
    '<Function Type>:' (TIU), which is left out ("") for a row without register values."""
    count = np.zeros(len(reg), np.int64)
    groups = []
    if reg.shape[1] == 0:
        return count, groups
    lines = {k: _key_lines(k, reg[k]) for k in reg.columns}
    for name in pd.unique(func_type):
        rows = np.flatnonzero(func_type == name)
        fields = [lines[k][rows] for k in order.get(name, list(reg.columns)) if k in lines]
        if label:
            has = np.zeros(len(rows), bool)
            for f in fields:
                has |= f != ""
            fields.insert(0, np.where(has, f"{name}:\n", "").astype(object))
        count[rows] = len(fields)
        groups.append((rows, fields))
    return count, groups


def _slice_pieces(varying, lo: int, hi: int):
    """The register pieces of rows lo:hi only (row numbers relative to lo)."""
    count, groups = varying
    out = []
    for rows, pieces in groups:
        sel = (rows >= lo) & (rows < hi)
        if sel.any():
            out.append((rows[sel] - lo, [p[sel] for p in pieces]))
    return count[lo:hi], out


def _row_texts(n: int, head: str, before: list[np.ndarray], varying, after: list[np.ndarray]):
    """Each row's text, joined for all rows at once: ``head``, the ``before`` lines, the row's
    own ``varying`` register lines (see :func:`_register_pieces`), the ``after`` lines.

    Every piece gets its slot in one flat array (row after row), so the text is a single
    ``"".join`` of references, with no per-row Python work and no growing strings."""
    count, groups = varying
    per_row = 1 + len(before) + count + len(after)
    start = np.concatenate([[0], np.cumsum(per_row)[:-1]])
    flat = np.empty(int(per_row.sum()), object)
    flat[start] = head
    for j, piece in enumerate(before):
        flat[start + 1 + j] = piece
    for rows, pieces in groups:
        base = start[rows] + 1 + len(before)
        for j, piece in enumerate(pieces):
            flat[base + j] = piece
    tail = start + 1 + len(before) + count
    for j, piece in enumerate(after):
        flat[tail + j] = piece
    return flat


def _node_keys(frame: pd.DataFrame) -> None:
    """Columns of the dynamic node's fields (spec reference-tool.md §6): TIU ``type`` (1 a
    NODE_SET, 13 an RVT node), ``engine`` 0, the result precision (not for Type "sys"), the
    "<Function Type>:" line that opens them; DMA the data format (extra_info bits 3..0)."""
    extra = frame["node_extra"]
    node = extra.notna().to_numpy()
    tiu = node & (frame["engine"] == "TIU").to_numpy()
    frame["node_type"] = pd.array(np.where((frame["mode"] == "RVT").to_numpy(), 13, 1), "Int16")
    frame["node_engine"] = pd.array(np.zeros(len(frame), np.int16), "Int16")
    frame["node_res0_prec"] = extra & 0x7F
    frame["node_format"] = extra & 0xF
    for key in ("node_type", "node_engine"):
        frame.loc[~tiu, key] = pd.NA
    frame.loc[~tiu | (frame["func_type"] == "sys").to_numpy(), "node_res0_prec"] = pd.NA
    frame.loc[tiu, "node_format"] = pd.NA
    ft = frame["func_type"].astype("category")                 # one label per Function Type
    labels = np.array([f"{t}:\n" for t in ft.cat.categories] + [""], object)
    frame["node_label"] = labels[np.where(tiu, ft.cat.codes.to_numpy(), -1)]


def write_reginfo(profile: Profile, out_dir: Path) -> list[Path]:
    """tiuRegInfo_<core>.txt, tdmaRegInfo_<core>.txt (GDMA then SDMA), cdmaRegInfo_<port>.txt.

    PMU dumps only: the files describe TPU engine commands (framework traces have none)."""
    out_dir = Path(out_dir)
    for old in out_dir.glob("*RegInfo_*.txt"):
        old.unlink()
    c = profile.commands
    if c.empty or not profile.meta.is_pmu:
        return []
    arch = "__CHIP_ARCH_ARGS__\n" + "".join(f"\t{k}: {v}\n" for k, v in profile.meta.arch.items())
    frame = c.copy()
    frame["Engine Id"] = frame["engine"].astype(str).map(ENGINE_IDS)
    frame["uArch Rate"] = rate_text(frame["alg_ops"].to_numpy(float), frame["uarch_ops"].to_numpy(float))
    frame.loc[frame["uArch Rate"] == "", "uArch Rate"] = None
    # the two ends of a known direction; the vendor's mode tag only where it has one (TDI, RVT,
    # DES): bmodel and PMU-only records carry none
    direction = frame["direction"].astype("category")
    for side, key in enumerate(("from_addr", "to_addr")):      # per category, not per row
        ends = [str(d).split("->")[side] for d in direction.cat.categories]
        names = list(dict.fromkeys(ends))
        pick = np.array([names.index(e) for e in ends] + [-1])[direction.cat.codes.to_numpy()]
        frame[key] = pd.Categorical.from_codes(pick, categories=names)
    mode = frame["mode"].astype("category")
    frame["mode"] = mode.cat.remove_categories([m for m in ("BMODEL", "PMU") if m in mode.cat.categories])
    if "node_extra" in frame:     # a mode-1 command's dynamic node, as the vendor lists it
        _node_keys(frame)
    cycles = frame["cycles"].to_numpy(float)
    for key, part, whole in (("Bank Conflict Ratio", "bank_conflict_ratio", None),
                             ("Initial Cycle Ratio", "init_cycles", cycles)):
        if part in frame:          # percentages of BM1688 / CV84X6 TIU records (spec §8.3)
            frame[key] = rate_text(frame[part].to_numpy(float), np.ones(len(frame)) if whole is None else whole)
            frame.loc[frame[key] == "", key] = None
    info = [("Function Name", "func_name"), ("Function Type", "func_type"),
            ("Start Time(ns)", "start_ns"), ("End Time(ns)", "end_ns"), ("Cmd Id", "cmd_id"),
            ("Asic Cycle", "cycles"), ("Engine Id", "Engine Id")]
    tiu_ops = [("Alg Ops", "alg_ops"), ("uArch Ops", "uarch_ops"), ("uArch Rate", "uArch Rate"),
               ("Alg Cycle", "alg_cycle"), ("Initial Cycle Ratio", "Initial Cycle Ratio"),
               # CV84X6 only (its TIU record counts them; spec chips-bm1688-cv84x6.md §8.3)
               ("Bank Conflict Cycle", "bank_conflict"), ("Bank Conflict Ratio", "Bank Conflict Ratio"),
               ("Thread Id", "thread_id")]
    dma = [("Engine Id", "Engine Id"), ("Direction", "direction"), ("from_addr", "from_addr"),
           ("to_addr", "to_addr"), ("src_data_format", "node_format"), ("cmd_type", "node_tsk_typ"),
           ("cmd_special_function", "node_eu"), ("Function Type", "func_type"),
           ("Function Name", "func_name"), ("Start Time(ns)", "start_ns"), ("End Time(ns)", "end_ns"),
           ("Cmd Id", "cmd_id"), ("Data Type", "dtype"), ("Asic Cycle", "cycles"),
           ("Stall Cycle", "stall_cycles"), ("DMA data size(B)", "bytes"), ("gmem_xact_cnt", "gmem_xact"),
           ("DDR Bandwidth(GB/s)", "ddr_bw"), ("L2M Bandwidth(GB/s)", "l2m_bw"),
           # BM1688 / CV84X6 per-port counters (spec chips-bm1688-cv84x6.md §8.2)
           ("Thread Id", "thread_id"), ("AR Latency Cycle", "ar_latency"),
           ("gmem_xfer_bytes(B)", "gmem_bytes"), ("gmem_dma_data_size(B)", "gmem_bytes"),
           ("lmem_xfer_bytes", "lmem_bytes"), ("lmem_dma_data_size(B)", "lmem_bytes"),
           ("gmem_bandwidth", "gmem_bw"), ("lmem_bandwidth", "lmem_bw"), ("lmem_xact_cnt", "lmem_xact")]
    tiu_message = [("Msg Id", "msg_id"), ("Sd\\Wt Count", "sd_wt_count")]
    tiu_node = [("type", "node_type"), ("engine", "node_engine"), ("des_tsk_typ", "node_tsk_typ"),
                ("des_tsk_eu_typ", "node_eu"), ("extra_info", "node_extra"),
                ("des_opt_res0_prec", "node_res0_prec")]
    tail = [("Global Idx", "global_idx"), ("Core Id", "core"), ("mode", "mode"),
            ("kernel_func", "kernel"), ("func_scope_id", "func_scope"), ("batch_launch", "batch")]
    written = []
    orders = profile.meta.register_field_order
    groups: dict[Path, list[tuple[str, pd.DataFrame]]] = {}
    for sheet in profile.sheets():
        eng, _, n = sheet.partition("_")
        name = {"TIU": "tiuRegInfo", "GDMA": "tdmaRegInfo", "SDMA": "tdmaRegInfo",
                "CDMA": "cdmaRegInfo"}[eng]
        groups.setdefault(out_dir / f"{name}_{n}.txt", []).append((eng, frame[frame["sheet"] == sheet]))
    for path, parts in groups.items():
        with atomic_open(path, "w", encoding="utf-8") as fh:
            fh.write(arch)
            for eng, rows in parts:
                regs = profile.registers.get(eng)
                reg = regs.reindex(rows.index) if regs is not None else pd.DataFrame(index=rows.index)
                ft = rows["func_type"].astype(str).to_numpy()
                lines = lambda keys: [_key_lines(k, rows[c]) for k, c in keys if c in rows]  # noqa: E731
                if eng == "TIU":
                    head = "__TIU_REG_INFO__\n"
                    # after the register fields: a node's fields (mode 1), a BM1688 / CV84X6
                    # send_msg / wait_msg's message id
                    before = lines(info + tiu_ops + tail)
                    after = ([rows["node_label"].to_numpy()] if "node_label" in rows else []) \
                        + lines(tiu_node + tiu_message)
                else:
                    head = "__CDMA_REG_INFO__\n" if eng == "CDMA" else "__TDMA_REG_INFO__\n"
                    before, after = [], lines(dma + tail)
                varying = _register_pieces(reg, ft, orders.get(eng, {}), label=eng == "TIU")
                for lo in range(0, len(rows), 20_000):    # bounded memory for the joined text
                    hi = min(lo + 20_000, len(rows))
                    fh.write("".join(_row_texts(hi - lo, head, [b[lo:hi] for b in before],
                                                _slice_pieces(varying, lo, hi),
                                                [a[lo:hi] for a in after]).tolist()))
        written.append(path)
    return written
