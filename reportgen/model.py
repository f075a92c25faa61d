"""The Profile: the one contract between parsers, analysis and writers.

A parser fills a :class:`Profile`; analysis reads it and derives metrics; writers show
both. Nothing downstream knows which input format a Profile came from.

Conventions (see docs/architecture.md):

* Times are integer nanoseconds (``int64``) already converted with each engine's own clock
  and aligned across cores; ``cycles`` keeps the native cycle count.
* Unknown stays unknown: a missing value is NaN / ``<NA>`` / ``None``, never a made-up
  default such as "INT8" or "DDR->DDR".
* ``global_idx`` is the 0-based ordinal of a command inside its own sheet, i.e. its
  (engine, core) list, or its port list for CDMA.  ``sheet`` + ``global_idx`` identify a
  command in every output.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:   # the layer types live in their own module (which needs nothing from here)
    from reportgen.model_layers import LayerFiles, LayerView

#: Engines in display order. Engine ids are the ones the vendor tool writes everywhere.
ENGINES = ("TIU", "GDMA", "SDMA", "CDMA")
ENGINE_IDS = {"TIU": 0, "GDMA": 1, "SDMA": 3, "CDMA": 4}
DMA_ENGINES = ("GDMA", "SDMA", "CDMA")

#: Columns of ``Profile.commands`` and their dtypes. Parsers must produce exactly these
#: (``empty_commands`` builds a conforming empty frame); extra per-source columns are allowed
#: after them.
COMMAND_COLUMNS: dict[str, str] = {
    "core": "int16",          # core (device/rank for framework traces); CDMA: submitting core
    "engine": "category",     # TIU / GDMA / SDMA / CDMA (framework traces: stream/lane name)
    "port": "Int16",          # CDMA port, <NA> otherwise
    "sheet": "category",      # "TIU_0", "GDMA_3", "CDMA_1": the Excel sheet of the command
    "global_idx": "int64",    # row within its sheet (0-based)
    "cmd_id": "int64",        # hardware command id as the vendor shows it (PMU id + 1; CDMA id)
    "start_ns": "int64",
    "end_ns": "int64",
    "cycles": "int64",        # Asic Cycle: end - start + 1 in the engine's native cycles
    "func_type": "category",  # Function Type (sMM2, DMA_tensor, sys, conv, ...)
    "func_name": "category",  # Function Name (mm2.nn, tensorLd, send_msg, ...)
    "is_sys": "bool",         # system command (send/wait/nop/barrier): not real work
    "sys_wait": "bool",       # a system *wait* (excluded from DMA working time)
    "kernel": "category",     # kernel / layer function name, NaN when unknown
    # "Int64" columns are held as Int32 when every value fits (narrow_int)
    "func_scope": "Int64",    # id of the kernel-function scope (FUNC ... FUNC_END)
    "batch": "Int64",         # batch index (BATCH_IDX nodes)
    "mode": "category",       # TDI / RVT / DES / BMODEL / PMU (no command description)
    "bytes": "Int64",         # DMA data size (B); <NA> for TIU
    "direction": "category",  # "DDR->LMEM" ...; NaN when unknown
    "dtype": "category",      # data type; TIU: "FP16 -> FP32"; NaN when unknown
    "stall_cycles": "Int64",  # DMA stall counter; <NA> when not measured
    "gmem_xact": "Int64",     # DMA AXI transactions
    "ddr_bw": "float64",      # GB/s of this command if it touches DDR, else NaN
    "l2m_bw": "float64",      # GB/s of this command if it touches L2M (and not DDR), else NaN
    "alg_ops": "float64",     # algorithmic ops; NaN where no descriptor model exists
    "uarch_ops": "float64",   # ops after hardware alignment; NaN likewise
    "alg_cycle": "float64",   # ideal cycles from alg_ops; NaN likewise
    "uarch_rate": "float64",  # alg_ops / uarch_ops (0..1); NaN when not modelled
    "dep_cmd_id": "Int64",    # cmd_id_dep of the descriptor (dependency), <NA> when unknown
}
#: optional PMU columns of a command known from its dynamic node (mode 1): the node word's type
#: code, eu / special function and extra_info, which only the RegInfo files list
NODE_COLUMNS = ("node_tsk_typ", "node_eu", "node_extra")

#: host roles that are torch FunctionEvents (cpu_op, user_annotation, runtime/driver calls, and
#: Ascend's enqueue/dequeue): the slices of the operator tree.  Python frames and other slices
#: (Kineto "overhead", ...) form a second tree per thread; a generic trace without any of these
#: roles has its plain slices as operators.
OPERATOR_ROLES = ("op", "annotation", "runtime", "queue")


def operator_rows(role: np.ndarray) -> np.ndarray:
    """Which host slices (by their ``role``) belong to the operator tree (OPERATOR_ROLES)."""
    role = np.asarray(role, object)
    ops = np.isin(role, OPERATOR_ROLES)
    return ops if ops.any() else role != "python"


#: Columns of ``Profile.host`` (host/framework events).
HOST_COLUMNS: dict[str, str] = {
    "name": "object",
    "category": "category",
    "pid": "object",
    "tid": "object",
    "start_ns": "int64",
    "end_ns": "int64",
    "depth": "int32",
    "parent": "int64",        # parent row: torch's operator tree, other slices a tree of their own
    "args": "object",         # dict or None
}


def empty_frame(columns: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns.items()})


def empty_commands() -> pd.DataFrame:
    return empty_frame(COMMAND_COLUMNS)


def sheet_name(engine: str, core: int, port: int | None = None) -> str:
    """``ENGINE_core`` (``CDMA_port`` for CDMA), as the design card names sheets."""
    return f"CDMA_{port}" if engine == "CDMA" else f"{engine}_{core}"


@dataclass
class Warning_:
    """Something odd the parser tolerated; shown in every report."""

    code: str          # short machine tag, e.g. "ring-rotated", "id-wrap"
    message: str       # one human sentence
    where: str = ""    # file (and offset) it concerns

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


#: sources whose profile is a device PMU capture (engine summary, RegInfo, register columns);
#: every other source is a framework trace (device lanes, framework tables)
PMU_SOURCES = frozenset({"pmu", "synthetic"})


@dataclass
class Meta:
    source: str = "pmu"                 # pmu | synthetic (tests) | chrome | ascend | mindspore
    input_path: str = ""
    chip: str = ""                      # AKS / AKSV / ...
    chip_alias: str = ""                # SG2260 / SG2260E
    num_cores: int = 0
    cdma_ports: list[int] = field(default_factory=list)
    tiu_freq_mhz: float = 1000.0
    dma_freq_mhz: float = 1000.0
    mode: str = ""                      # "0", "1", "2", "bmodel", "mixed"
    tail_offset_ns: int | None = None   # global.profile tail_offset_ns
    pmu_tail_ns: int | None = None      # end of the last PMU record (before edge pruning)
    arch: dict[str, Any] = field(default_factory=dict)   # chip parameters (arch dict)
    warnings: list[Warning_] = field(default_factory=list)
    #: records read / shown / dropped with a reason, per sheet: {sheet: {"read": n, ...}}
    accounting: dict[str, dict[str, int]] = field(default_factory=dict)
    #: register fields of each engine in the descriptor tables' order (RegInfo text)
    register_field_order: dict[str, list[str]] = field(default_factory=dict)
    #: how a ``--trace_file`` host trace was placed on the device time axis (rule, offset_ns, ...)
    host_alignment: dict[str, Any] | None = None
    #: framework traces: the rank the trace file says it is
    rank: int | None = None

    @property
    def is_pmu(self) -> bool:
        """Whether the profile is a device PMU capture rather than a framework trace."""
        return self.source in PMU_SOURCES

    def warn(self, code: str, message: str, where: str = "") -> None:
        self.warnings.append(Warning_(code, message, where))

    def count(self, sheet: str, key: str, n: int) -> None:
        """Record accounting: ``read``, ``shown`` or ``dropped: <reason>`` records of a sheet."""
        if n:
            entry = self.accounting.setdefault(sheet, {})
            entry[key] = entry.get(key, 0) + int(n)

    def worker(self) -> "Meta":
        """A copy for a worker thread: same facts, its own warnings and accounting (to be
        merged back, in a fixed order, with :meth:`merge`)."""
        return dataclasses.replace(self, warnings=[], accounting={})

    def merge(self, other: "Meta") -> None:
        """Add the warnings and record accounting that ``other`` collected (a worker's)."""
        self.warnings += other.warnings
        for sheet, counts in other.accounting.items():
            for key, n in counts.items():
                self.count(sheet, key, n)


class LazyTables(MutableMapping):
    """A name -> DataFrame mapping built by ``build()`` on first use.

    The register side tables of a large dump take longer to assemble than its records take to
    decode, and the default report does not show them above a size limit; their decoded
    fields are kept and turned into tables only when someone reads them.
    """

    def __init__(self, build: Callable[[], dict[str, pd.DataFrame]], names: list[str]):
        """``names``: the keys ``build()`` will return, each a non-empty table."""
        self._build: Callable[[], dict[str, pd.DataFrame]] | None = build
        self._tables: dict[str, pd.DataFrame] = {}
        self._names = list(names)

    @property
    def built(self) -> bool:
        return self._build is None

    def release(self) -> None:
        """Free what ``build`` would read (the decoded fields) for a run that will not read
        the tables; their names stay. Reading a table afterwards is a bug and raises."""
        if self._build is not None:
            self._build = _released

    def _ready(self) -> dict[str, pd.DataFrame]:
        if self._build is not None:
            self._tables, self._build = self._build(), None
        return self._tables

    def __getitem__(self, key: str) -> pd.DataFrame:
        return self._ready()[key]

    def __setitem__(self, key: str, value: pd.DataFrame) -> None:
        self._ready()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._ready()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables if self.built else list(self._names))

    def __len__(self) -> int:
        return len(self._tables if self.built else self._names)


def _released() -> dict[str, pd.DataFrame]:
    raise RuntimeError("the register tables were released before the writers started "
                       "(pipeline.registers_read said this run does not read them)")


@dataclass
class HostTrace:
    """A ``--trace_file`` host trace as read (host clock); analysis.host_align places it."""

    path: str
    #: complete events in file order: name, cat, pid, tid, args, start_ns, end_ns (host clock)
    events: pd.DataFrame
    #: event objects in the file, of any phase
    events_read: int
    #: (code, message) of what the reader tolerated
    warnings: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class VendorOutput:
    """The summary files a vendor profiler wrote for one rank (Ascend ``ASCEND_PROFILER_OUTPUT``,
    a legacy MindSpore profiler folder), as read: header names stripped, ``N/A`` missing."""

    #: tables shown as they are (numbers cleaned), in reading order: "Op Statistic", "Steps",
    #: "API Statistic", "AI CPU", "Communication Matrix", "Communication"
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: operator_details.csv, one row per call: Name, Input Shapes, host_self_us, host_total_us,
    #: device_self_us, device_total_us (+ the AI Core variants)
    operator_calls: pd.DataFrame | None = None
    #: memory_record.csv: Device, Component, Time (ns), Total Allocated (MB), Total Reserved (MB)
    memory_record: pd.DataFrame | None = None
    #: operator_memory.csv: Device, Name, Size (KB), Duration (us), Total Allocated (MB)
    operator_memory: pd.DataFrame | None = None
    #: npu_module_mem.csv: Device, Component, Total Reserved (MB)
    module_memory: pd.DataFrame | None = None
    #: kernel_details.csv, one row per device task: the NPU plugin's columns (shapes, data
    #: types, formats, block dims, PMU counters named with their unit; parsers.ascend.tables)
    kernel_details: pd.DataFrame | None = None
    #: trace_view.json's "Overlap Analysis" lanes: core, lane (Computing, Communication,
    #: Communication(Not Overlapped), Free), start_ns, end_ns
    overlap_lanes: pd.DataFrame | None = None
    #: the frame fields above, by name (merged across a worker's spans)
    FRAMES = ("operator_calls", "memory_record", "operator_memory", "module_memory", "kernel_details",
              "overlap_lanes")

    def is_empty(self) -> bool:
        return not self.tables and all(getattr(self, f) is None for f in self.FRAMES)


#: Columns of ``Diagnosis.breakdown`` (``Diagnosis.functions`` adds ``func_name`` after
#: ``func_type``); definitions in docs/metrics.md "Diagnosis".
BREAKDOWN_COLUMNS = (
    "core", "engine", "func_type", "category", "count", "busy_ns", "sum_ns", "share_busy",
    "share_span", "min_ns", "mean_ns", "p50_ns", "p95_ns", "max_ns", "cycles", "alg_cycles",
    "alg_ops", "uarch_ops", "uarch_rate", "alg_ops_per_cycle", "bytes", "ddr_bytes", "l2m_bytes",
    "ddr_bw", "l2m_bw")
FUNCTION_COLUMNS = BREAKDOWN_COLUMNS[:3] + ("func_name",) + BREAKDOWN_COLUMNS[3:]
#: Columns of ``Diagnosis.kernel_calls``: one row per kernel call (device scope or host event)
KERNEL_CALL_COLUMNS = (
    "source", "name", "core", "scope", "start_ns", "end_ns", "wall_ns", "commands",
    "tiu_busy_ns", "gdma_busy_ns", "sdma_busy_ns", "tiu_util", "uarch_rate", "bytes",
    "ddr_bytes", "l2m_bytes", "ddr_bw", "l2m_bw")
#: Columns of ``Diagnosis.kernels``: one row per (source, kernel name), longest total first
KERNEL_COLUMNS = ("source", "name", "calls", "total_ns", "mean_ns", "min_ns", "max_ns",
                  "share_wall", "share_kernels")
#: Columns of ``Diagnosis.overlap``: one row per core plus ``Overall``
OVERLAP_COLUMNS = (
    "core", "span_ns", "tiu_busy_ns", "dma_busy_ns", "both_ns", "tiu_only_ns", "dma_only_ns",
    "idle_ns", "waiting_ns", "bound", "concurrency", "tiu_alg_cycles", "tiu_asic_cycles",
    "alg_cycle_ratio")
#: Columns of ``Diagnosis.stretches``: the longest data-bound stretches (DMA busy, TIU idle)
STRETCH_COLUMNS = ("core", "start_ns", "end_ns", "length_ns", "share_span")
#: Columns of ``Diagnosis.findings``, ranked (most severe and largest first)
FINDING_COLUMNS = ("rank", "rule", "severity", "core", "engine", "subject", "value", "threshold",
                   "unit", "text")


@dataclass
class Diagnosis:
    """Where the time goes and what it means, derived once by ``analysis.derive`` (PMU captures).

    Every table is a DataFrame with the columns listed above; ``core`` is a core index or
    ``"Overall"`` (all cores) as in the engine summary; ``engine`` is TIU/GDMA/SDMA/CDMA; times
    are ns, shares 0..1, bandwidths GB/s. Unknown is NaN. Definitions: docs/metrics.md.
    """

    #: per core × engine × Function Type (+ ``Overall`` rows over all cores); system commands
    #: are their own rows with ``category = "waiting"`` (work rows: ``"work"``)
    breakdown: pd.DataFrame
    #: the same per Function Name
    functions: pd.DataFrame
    #: one row per kernel call: PMU kernel scopes (``source = "device"``) and host kernels of
    #: ``--trace_file`` (``source = "host"``)
    kernel_calls: pd.DataFrame
    #: one row per kernel name
    kernels: pd.DataFrame
    #: per core: TIU and DMA busy together / alone / neither, waiting, Concurrency, Alg vs Asic
    overlap: pd.DataFrame
    #: the longest data-bound stretches per core
    stretches: pd.DataFrame
    #: ranked plain statements with their numbers and the rule (analysis/rules.py RULES);
    #: ``core`` / ``engine`` / ``subject`` are None where a finding has none
    findings: pd.DataFrame
    #: why it is slow and what would help (analysis/why.py: dependency graph, critical path,
    #: waits, what-if); None for captures without commands
    why: Any = None
    #: roofline per kernel, call, layer, Function Type and core, ranked by time under the roof
    #: (analysis/roofline.py COLUMNS; empty without chip peaks)
    roofline: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the local-memory view (analysis/lmem.py LocalMemory); None without descriptors
    lmem: Any = None


@dataclass
class Profile:
    """Everything a report shows. Build with a parser, read with analysis and writers."""

    commands: pd.DataFrame = field(default_factory=empty_commands)
    #: register-level detail (mode-2 descriptors) per engine: index = row label in ``commands``,
    #: columns ``des_<field>`` (TIU) or ``<field>`` (DMA), as the vendor names them.
    registers: MutableMapping[str, pd.DataFrame] = field(default_factory=dict)
    host: pd.DataFrame = field(default_factory=lambda: empty_frame(HOST_COLUMNS))
    meta: Meta = field(default_factory=Meta)
    #: named tables that writers show as they are, in order (framework analyses: derived from
    #: the fields below by ``analysis.framework.attach_framework_tables``)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: a ``--trace_file`` host trace as read; analysis.derive aligns it into ``host``
    host_trace: HostTrace | None = None
    #: the engine summary per core + Overall (docs/metrics.md), attached by analysis.derive
    summary: pd.DataFrame | None = None
    #: PMU captures: breakdown, kernels, overlap and findings (docs/metrics.md "Diagnosis"),
    #: attached by analysis.derive; None until derived and for framework traces
    diagnosis: Diagnosis | None = None
    #: framework traces: allocator events (memory curves and peaks are derived from them)
    memory_events: pd.DataFrame | None = None
    #: framework traces: device-side copies of annotations (Kineto gpu_user_annotation: name,
    #: rank, start_ns, end_ns); rows of torch's key_averages, never device work
    device_annotations: pd.DataFrame | None = None
    #: tables the source itself holds, shown as they are (CANN "Step Trace" lanes, Ascend
    #: cluster_step_trace_time.csv)
    source_tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: vendor summary files per rank, as read (Ascend / MindSpore folders)
    vendor_outputs: dict[int, VendorOutput] = field(default_factory=dict)
    #: the run's comparable tables (analysis.digest.Digest), attached by analysis.derive
    digest: Any = None
    #: ``--baseline``: this run against the baseline (analysis.compare.Comparison)
    comparison: Any = None
    #: bmodel captures: the compiler's layer files as read (parsers.layers), None without them
    layers: "LayerFiles | None" = None
    #: the commands mapped onto those layers (analysis.layers), attached by analysis.derive
    layer_view: "LayerView | None" = None
    #: framework traces: device time, launch statistics, step variation and findings
    #: (analysis.fw_diagnosis.FrameworkDiagnosis), attached by analysis.derive
    framework_diagnosis: Any = None

    def has_registers(self) -> bool:
        """Whether any command has register fields (without assembling lazy tables)."""
        if isinstance(self.registers, LazyTables) and not self.registers.built:
            return len(self.registers) > 0
        return any(df is not None and len(df.columns) and len(df) for df in self.registers.values())

    # -- convenience views (notebook API) ---------------------------------------------
    def sheets(self) -> list[str]:
        """Sheet names in report order: per core TIU, GDMA, SDMA, then CDMA ports."""
        c = self.commands
        if c.empty:
            return []
        keys = c[["sheet", "engine", "core", "port"]].drop_duplicates("sheet")
        order = keys.assign(
            _e=keys["engine"].map({e: i for i, e in enumerate(ENGINES)}).fillna(9).astype(int),
            _k=np.where(keys["engine"].astype(str) == "CDMA", 1, 0),
            _n=np.where(keys["engine"].astype(str) == "CDMA",
                        keys["port"].fillna(0).astype(int), keys["core"].astype(int)),
        ).sort_values(["_k", "_n", "_e"])
        return [str(s) for s in order["sheet"]]

    def sheet(self, name: str) -> pd.DataFrame:
        """The commands of one sheet, in global_idx order."""
        c = self.commands
        return c[c["sheet"] == name].sort_values("global_idx")


def finalize_commands(df: "pd.DataFrame | dict[str, Any]") -> pd.DataFrame:
    """Give a parser's columns (a frame, or a dict of equally long arrays) the canonical
    column order and dtypes; derive ``sheet`` when it is not given.

    Columns a parser did not fill are created empty (unknown). Columns that already have their
    dtype are not copied, and the frame is built unconsolidated (one block per column): for a
    million commands, consolidating and re-converting cost more than the whole binary decode.
    """
    columns = dict(df.items())
    n = len(df) if isinstance(df, pd.DataFrame) else len(next(iter(columns.values()), ()))
    out: dict[str, Any] = {}
    for col, dtype in COMMAND_COLUMNS.items():
        if col == "sheet":
            continue
        out[col] = _as_dtype(columns[col], dtype) if col in columns else _empty(col, dtype, n)
    out["sheet"] = (_as_dtype(columns["sheet"], "category") if "sheet" in columns
                    else _sheet_names(out["engine"], out["core"], out["port"]))
    out = {col: out[col] for col in COMMAND_COLUMNS}
    for col, values in columns.items():
        if col not in COMMAND_COLUMNS:
            out[col] = values.array if isinstance(values, pd.Series) else values
    return pd.DataFrame(share_unknown_columns(out, n), copy=False)


def share_unknown_columns(columns: dict[str, Any], n: int) -> dict[str, Any]:
    """``columns`` with every column that is unknown for all ``n`` commands (a float64 column of
    NaN, a nullable integer column of <NA>) made a view of one read-only array per dtype.

    Such a column holds no information, yet a mode-1 capture (no descriptors: no ops model, no
    dependency, no kernel scope) carries seven of them, 40 MB at 678k commands, through the
    analysis and every forked writer. The values and dtypes are unchanged (every output reads
    the same), and read-only arrays make any write into one of them fail instead of changing
    the others (pandas' own views of a column are read-only already).
    """
    if n == 0:
        return columns
    shared: dict[str, Any] = {}
    out = dict(columns)
    for col, arr in columns.items():
        dtype = str(getattr(arr, "dtype", ""))
        if isinstance(arr, np.ndarray) and dtype == "float64":
            if np.isnan(arr[:1]).all() and np.isnan(arr).all():
                if dtype not in shared:     # the first such column itself, if it owns its data
                    shared[dtype] = _read_only(arr if arr.base is None else np.full(n, np.nan))
                out[col] = shared[dtype]
        elif isinstance(arr, pd.arrays.IntegerArray):
            if arr[:1].isna().all() and arr.isna().all():
                if dtype not in shared:
                    mask = shared.setdefault("mask", _read_only(np.ones(n, bool)))
                    shared[dtype] = pd.arrays.IntegerArray(_read_only(np.zeros(n, dtype.lower())), mask)
                out[col] = shared[dtype]
    return out


def _read_only(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def _empty(col: str, dtype: str, n: int):
    """An all-unknown column; a plain integer column cannot be unknown, so a parser must fill it."""
    if dtype == "bool":
        return np.zeros(n, bool)
    if dtype == "category":
        return pd.Categorical.from_codes(np.full(n, -1, np.int8), categories=pd.Index([], dtype=object))
    if dtype[0].isupper():          # all unknown: an "Int64" column fits int32 (narrow_int)
        return pd.arrays.IntegerArray(np.zeros(n, "int32" if dtype == "Int64" else dtype.lower()),
                                      np.ones(n, bool))
    if dtype == "float64" or n == 0:
        return np.full(n, np.nan, dtype)
    raise ValueError(f"the commands need a {col} column ({dtype})")


#: the nullable 64-bit integer columns of COMMAND_COLUMNS ("Int64") are held as Int32 when every
#: known value fits (``narrow_int``): half the bytes, the same values. Readers convert them to
#: int64 or float64 before any arithmetic, as they do the Int64 of a column that needs it.
_INT32_MIN, _INT32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def narrow_int(values: np.ndarray, known: np.ndarray | None = None) -> np.dtype:
    """The dtype a nullable Int64 command column is stored with: int32 when each of
    ``values`` (where ``known``) lies in int32's range, else int64 (the fallback)."""
    v = values if known is None or known.all() else values[known]
    if len(v) == 0 or (v.min() >= _INT32_MIN and v.max() <= _INT32_MAX):
        return np.dtype(np.int32)
    return np.dtype(np.int64)


def _as_dtype(values, dtype: str):
    """``values`` (array, ExtensionArray or Series) as an array of ``dtype``; no copy if it is.
    An "Int64" column is returned as Int32 when its values fit (``narrow_int``)."""
    arr = values.array if isinstance(values, pd.Series) else values
    if dtype == "category":
        return _categorical(arr)
    if dtype == "Int64":
        if str(getattr(arr, "dtype", None)) == "Int32":
            return arr
        if str(getattr(arr, "dtype", None)) != "Int64":
            arr = pd.array(pd.to_numeric(pd.Series(arr), errors="coerce")).astype(dtype)
        known = ~np.asarray(arr.isna(), bool)
        data = arr.to_numpy(np.int64, na_value=0)
        return pd.arrays.IntegerArray(data.astype(narrow_int(data, known), copy=False), ~known)
    if str(getattr(arr, "dtype", None)) == dtype:
        return arr
    if dtype[0].isupper():                                        # nullable integer
        return pd.array(pd.to_numeric(pd.Series(arr), errors="coerce")).astype(dtype)
    return np.asarray(arr).astype(dtype)


def _categorical(values) -> pd.Categorical:
    """A categorical whose missing entries (None / NaN) stay missing; hash-based, one pass."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.array if isinstance(values, pd.Series) else values
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))


def _sheet_names(engine: pd.Series, core: pd.Series, port: pd.Series) -> pd.Categorical:
    """``ENGINE_core`` / ``CDMA_port`` per row, named once per distinct (engine, core, port)."""
    e_codes, engines = pd.factorize(np.asarray(engine, dtype=object))
    c = np.asarray(core, np.int64)
    p = pd.array(port, dtype="Int64").fillna(-1).to_numpy(np.int64)
    key = (e_codes.astype(np.int64) << 42) | ((c & 0xFFFFF) << 21) | ((p + 1) & 0x1FFFFF)
    codes, uniques = pd.factorize(key)
    names = [sheet_name(str(engines[k >> 42]), int((k >> 21) & 0xFFFFF),
                        int(k & 0x1FFFFF) - 1 if (k & 0x1FFFFF) else None) for k in uniques]
    cats = list(dict.fromkeys(names))      # CDMA rows of several submitting cores share a sheet
    remap = np.array([cats.index(n) for n in names], np.int64)
    return pd.Categorical.from_codes(remap[codes], categories=pd.Index(cats, dtype=object))
