"""The metric catalogue: name, unit, kind and definition of every engine-summary column.

Each output lays these out its own way (fixed-width text, workbook headers with number formats,
HTML table with hover help, summary.json), but all of them read the words and units from here,
so a metric is named and defined once (docs/metrics.md gives the long form; a test checks the two
agree). ``kind`` says how a value is formatted; each writer has one small table from kind to its
own format.

Kinds: ``id`` (core index or "Overall"), ``ns`` (a time), ``count``, ``bytes``, ``cycles``,
``fraction`` (0..1, shown as %), ``gbps`` (GB/s = bytes/ns), ``ratio`` (a plain ratio).
"""
from __future__ import annotations

from dataclasses import dataclass

ENGINE_LABELS = {"tiu": "TIU", "gdma": "GDMA", "sdma": "SDMA", "cdma": "CDMA"}
DMA_ENGINES = ("gdma", "sdma", "cdma")


@dataclass(frozen=True)
class Metric:
    column: str        # engine_summary column (per engine: without the "<engine>_" prefix)
    name: str          # short label, without the engine
    unit: str          # "ns", "B", "GB/s", "%", "cycles" or "" (count / ratio)
    kind: str
    definition: str    # one sentence, shown beside or under the number


@dataclass(frozen=True)
class SummaryMetric:
    """A metric as one column of the engine summary: its full column name and engine group."""
    column: str
    group: str         # engine label ("TIU", ...) or "" for core-wide metrics
    metric: Metric

    @property
    def label(self) -> str:
        return f"{self.group} {self.metric.name}" if self.group else self.metric.name


CORE = [
    Metric("core", "Core", "", "id", "Core index; Overall = all cores (CDMA: all ports)."),
    Metric("span_ns", "Span", "ns", "ns",
           "First command start to last command end over the whole profile; same on every row."),
]

#: every engine, in this order
ENGINE = [
    Metric("cmds", "cmds", "", "count",
           "Commands shown, system commands included (CDMA per core: commands it submitted)."),
    Metric("busy_ns", "busy", "ns", "ns",
           "Union of the intervals of the engine's non-system commands; Overall adds the per-core "
           "unions."),
    Metric("idle_ns", "idle", "ns", "ns",
           "Span - busy (Overall: span x cores - busy)."),
    Metric("util", "util", "%", "fraction",
           "Busy / span (Overall: busy / (span x cores))."),
]

TIU = [
    Metric("alg_ops", "Alg Ops", "", "count", "Sum of Alg Ops over modelled TIU commands."),
    Metric("uarch_ops", "uArch Ops", "", "count", "Sum of uArch Ops over the same commands."),
    Metric("modelled_cmds", "modelled cmds", "", "count",
           "TIU commands with an op model (Alg and uArch Ops known)."),
    Metric("uarch_rate", "uArch rate", "%", "fraction",
           "Alg Ops / uArch Ops; unknown when no command is modelled."),
]

DMA = [
    Metric("ddr_bytes", "DDR bytes", "B", "bytes",
           "Bytes of non-system commands whose direction touches DDR."),
    Metric("ddr_read_bytes", "DDR read", "B", "bytes", "Bytes with DDR as the source."),
    Metric("ddr_write_bytes", "DDR write", "B", "bytes", "Bytes with DDR as the destination."),
    Metric("ddr_busy_ns", "DDR time", "ns", "ns", "Summed duration of the commands moving DDR bytes."),
    Metric("ddr_bw_busy", "DDR BW", "GB/s", "gbps",
           "DDR bytes / DDR time: bandwidth while transferring."),
    Metric("ddr_bw_wall", "DDR BW wall", "GB/s", "gbps", "DDR bytes / span: average over the whole run."),
    Metric("l2m_bytes", "L2M bytes", "B", "bytes",
           "Bytes of non-system commands touching L2M but not DDR."),
    Metric("l2m_busy_ns", "L2M time", "ns", "ns", "Summed duration of the commands moving L2M bytes."),
    Metric("l2m_bw_busy", "L2M BW", "GB/s", "gbps", "L2M bytes / L2M time: bandwidth while transferring."),
    Metric("l2m_bw_wall", "L2M BW wall", "GB/s", "gbps", "L2M bytes / span."),
    Metric("stall_cycles", "stall", "cycles", "cycles",
           "Summed stall counter (TIU and DMA on the same memory bank)."),
    Metric("ddr_read_bw_busy", "DDR read BW", "GB/s", "gbps",
           "DDR read bytes / DDR time: the read share of the DDR bandwidth."),
    Metric("ddr_write_bw_busy", "DDR write BW", "GB/s", "gbps",
           "DDR write bytes / DDR time: the write share of the DDR bandwidth."),
    Metric("bytes", "bytes", "B", "bytes",
           "Bytes of non-system commands in every direction, also where the direction is unknown "
           "(mode 0)."),
    Metric("xfer_ns", "transfer time", "ns", "ns",
           "Summed duration of the non-system commands that moved bytes."),
    Metric("bw_busy", "BW", "GB/s", "gbps",
           "Bytes / transfer time, every direction: the bandwidth while transferring (shown in "
           "mode 0, where DDR and L2M cannot be told apart)."),
]

ALL_ENGINES = [
    Metric("parallelism", "Parallelism", "%", "fraction",
           "(TIU + GDMA + SDMA busy) / span (Overall: / (span x cores)); above 100% when engines "
           "overlap."),
    Metric("compute_ratio", "Compute ratio", "", "ratio",
           "TIU busy / (GDMA + SDMA busy); unknown without data movement."),
]


def summary_metrics() -> list[SummaryMetric]:
    """Every engine-summary column in report order: core-wide, each engine's group, all engines."""
    out = [SummaryMetric(m.column, "", m) for m in CORE]
    for key, label in ENGINE_LABELS.items():
        own = ENGINE + (TIU if key == "tiu" else DMA)
        out += [SummaryMetric(f"{key}_{m.column}", label, m) for m in own]
    out += [SummaryMetric(m.column, "", m) for m in ALL_ENGINES]
    return out


BY_COLUMN = {s.column: s for s in summary_metrics()}


def lookup(column: str) -> SummaryMetric:
    """The catalogue entry of one engine-summary column (KeyError: not in the catalogue)."""
    return BY_COLUMN[column]
