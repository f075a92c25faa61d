"""What one report run is asked to do: the typed options every entry point builds.

The command line (`reportgen.cli`), the several-dump runner (`reportgen.batch`) and the Python
API (`reportgen.load`) all describe a run with one :class:`Options`; the pipeline reads nothing
else. Defaults are the vendor tool's defaults where it has them (every output on).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

#: --reginfo auto writes the RegInfo text up to this many commands (about 1.2 KB of text each)
REGINFO_AUTO_LIMIT = 200_000
#: --max_input_mb: MB of input a run reads (a file as read, or a compressed file once expanded;
#: the files of a PMU dump together); see reportgen/parsers/limits.py
MAX_INPUT_MB = 4096

AUTO_ON_OFF = ("auto", "on", "off")


class OptionError(ValueError):
    """An option value no run can use (the command line turns it into a usage error, exit 2)."""


@dataclass(frozen=True)
class Options:
    input: str
    output: str = "profile_out"
    summary: bool = True            # summary.txt + summary.json
    workbook: bool = True           # PerfDoc/PerfAI_output.xlsx (+ tables/*.csv for framework traces)
    web: bool = True                # PerfWeb/result.html
    perfetto: bool = True           # perfetto.pftrace
    registers: str = "auto"         # register columns in the workbook: auto | on | off
    reginfo: str = "auto"           # RegInfo text files: auto | on | off
    trace_file: str | None = None   # host chrome trace merged above the device lanes
    tiu_freq: float | None = None   # MHz; None: global.profile, else the chip default
    min_depth: int | None = None    # framework traces: shallowest call depth kept
    max_depth: int | None = None    # framework traces: deepest call depth kept (-1: no limit)
    stack_frames: int = 5           # framework traces: frames of the Operators by Stack key
    monitor_cat: str | None = None  # seed CSV: monitored host category (None: fits the trace)
    host_cat: str | None = None     # seed CSV: launch (runtime) category (None: the trace's runtime calls)
    device_cat: str | None = None   # seed CSV: device category, "all" for all work (None: fits the trace)
    quiet: bool = False             # no progress (bars, stage lines); results still printed
    jobs: int | None = None         # writer processes at once; None: one per CPU we may use
    max_input_mb: int = MAX_INPUT_MB  # input read (or expanded) at most; beyond: one line, exit 1
    scheduler: str | None = None    # several dumps: a running Dask scheduler (host:port), else local
    baseline: str | None = None     # compare with this run: a dump, a trace or an earlier report folder

    def __post_init__(self) -> None:
        if not self.input:
            raise OptionError("an input path is required")
        if not self.output:
            raise OptionError("the output folder must not be empty (give a path, e.g. '.' for "
                              "the current folder)")
        for name in ("registers", "reginfo"):
            if getattr(self, name) not in AUTO_ON_OFF:
                raise OptionError(f"{name} must be one of {', '.join(AUTO_ON_OFF)}, "
                                  f"not {getattr(self, name)!r}")
        if self.tiu_freq is not None and not self.tiu_freq > 0:
            raise OptionError(f"--tiu_freq must be a clock in MHz above 0, not {self.tiu_freq:g}")
        if self.jobs is not None and self.jobs < 1:
            raise OptionError(f"jobs must be 1 or more, not {self.jobs}")
        for name in ("monitor_cat", "host_cat", "device_cat"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise OptionError(f"--{name} must name a category, not an empty string")
        if type(self.max_input_mb) is not int or self.max_input_mb < 1:
            raise OptionError(f"--max_input_mb must be a whole number of MB above 0, not {self.max_input_mb!r}")
        if self.scheduler is not None and not self.scheduler.strip():
            raise OptionError("--scheduler needs an address (tcp://host:8786)")
        if self.baseline is not None and not self.baseline:
            raise OptionError("--baseline needs a path (a dump, a trace or a report folder)")

    def replace(self, **changes) -> "Options":
        return dataclasses.replace(self, **changes)

    @property
    def out_path(self) -> Path:
        return Path(self.output)

    @property
    def registers_wanted(self) -> bool | str:
        """The workbook's register switch: True, False or "auto"."""
        return {"auto": "auto", "on": True, "off": False}[self.registers]
