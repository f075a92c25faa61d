"""The workbook's "Roofline", "Local Memory" and "LMEM Conflicts" sheets: ``Diagnosis.roofline``
and ``Diagnosis.lmem`` as computed (docs/metrics.md "Roofline", "Local memory"), one filterable
table each, definitions as header notes."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.lmem import LISTED_CONFLICTS
from reportgen.model import Diagnosis

NS, PCT, INT, GBPS, RATE = "#,##0", "0.0%", "#,##0", "0.00", "0.000E+00"

ROOFLINE = [
    ("Scope", "scope", None, "kernel (name, all cores), call (one kernel call), layer, function_type "
     "(all cores, system commands excluded) or core."),
    ("Name", "name", None, ""), ("Core", "core", "0", "Empty: all cores (times are core-time: "
                                                       "per-core unions added)."),
    ("Commands", "commands", INT, ""), ("Start (ns)", "start_ns", NS, "First command start (timeline link)."),
    ("End (ns)", "end_ns", NS, ""), ("Data type", "dtype", None, "Input data type carrying the most ops "
                                                                 "(mixed: several)."),
    ("Ops", "ops", INT, "TIU Alg Ops."), ("DDR Bytes", "ddr_bytes", INT, "GDMA + SDMA bytes touching DDR."),
    ("L2M Bytes", "l2m_bytes", INT, "GDMA + SDMA bytes touching L2M (not DDR)."),
    ("Time (ns)", "ns", NS, "Union of the scope's command intervals per core, added over cores."),
    ("Ops per DDR byte", "intensity", "0.000", "Arithmetic intensity."),
    ("Ops per L2M byte", "intensity_l2m", "0.000", ""),
    ("Achieved ops/s", "ops_per_s", RATE, ""), ("DDR GB/s", "ddr_gbps", GBPS, ""),
    ("L2M GB/s", "l2m_gbps", GBPS, ""),
    ("Peak ops/s", "peak_ops_per_s", RATE, "The chip's per-core peak for the scope's data-type mix."),
    ("Compute util", "util_compute", PCT, "Time the ops need at peak / time."),
    ("DDR util", "util_ddr", PCT, "DDR bytes / per-core DDR peak / time."),
    ("L2M util", "util_l2m", PCT, "L2M bytes / L2M peak / time."),
    ("Roof ops/s", "roof_ops_per_s", RATE, "min(peak ops, intensity x peak bandwidth) over DDR and L2M."),
    ("Bound by", "bound_by", None, "The resource with the highest utilisation; latency when all are "
                                   "below the threshold (docs/metrics.md \"Roofline\")."),
    ("Efficiency", "efficiency", PCT, "Achieved / roof (= the highest utilisation)."),
    ("Under roof (ns)", "under_roof_ns", NS, "Time x (1 - efficiency): the ranking."),
]
LOCAL_MEMORY = [
    ("Core", "core", "0", ""), ("Bank", "bank", "0", "Empty: the whole lane (16 banks of 16 KiB)."),
    ("Peak (B per lane)", "peak_bytes", INT, "Most live bytes at once (a byte counted once)."),
    ("Peak share", "peak_share", PCT, "Peak / 262,144 B (lane) or 16,384 B (bank)."),
    ("Peak at (ns)", "peak_at_ns", NS, "Earliest time the peak is reached."),
    ("Accesses", "accesses", INT, "Local-memory ranges read or written by TIU and DMA commands."),
    ("Not placed", "undecoded", INT, "Accesses whose address is not decodable (see the notes)."),
    ("Never read (B)", "never_read_bytes", INT, "Bytes of live pieces written and never read."),
    ("Before capture (B)", "before_capture_bytes", INT, "Bytes read before any write in the capture."),
    ("Overwrite races", "races", INT, "Pieces overwritten while another command still used them."),
    ("Conflict candidates", "conflict_candidates", INT, "TIU/DMA pairs in time on a common bank and lane "
     f"(all of them; the LMEM Conflicts sheet lists the {LISTED_CONFLICTS} per core with the largest "
     "Stall Cycle x overlap)."),
    ("TIU same-bank commands", "tiu_same_bank", INT, "TIU commands with two operands in one bank."),
]
CONFLICTS = [
    ("Core", "core", "0", f"Per core the {LISTED_CONFLICTS} candidates with the largest DMA Stall Cycle x "
     "overlap, ranked (ties: DMA, then TIU command order); the Local Memory sheet counts all of them."),
    ("DMA", "dma", None, "ENGINE/global index."), ("DMA Cmd Id", "dma_cmd_id", "0", ""),
    ("TIU", "tiu", None, ""), ("TIU Cmd Id", "tiu_cmd_id", "0", ""),
    ("Overlap start (ns)", "overlap_start_ns", NS, ""), ("Overlap (ns)", "overlap_ns", NS, ""),
    ("Banks", "banks", None, "Banks both commands touch in a common lane."),
    ("DMA operands", "dma_operands", None, ""), ("TIU operands", "tiu_operands", None, ""),
    ("DMA Stall Cycle", "dma_stall_cycles", INT, "Measured: cycles the DMA waited on local memory."),
]


def local_memory_table(lm) -> pd.DataFrame:
    """Per core: the whole lane, then its 16 banks."""
    whole = lm.cores.assign(bank=np.nan)
    banks = lm.banks.assign(order=lm.banks["bank"] + 1)
    t = pd.concat([whole.assign(order=0), banks], ignore_index=True)
    return t.sort_values(["core", "order"], kind="stable").reset_index(drop=True)


def conflicts_table(lm) -> pd.DataFrame:
    t = lm.conflicts.copy()
    t["banks"] = [" ".join(str(b) for b in banks) for banks in t["banks"]]
    return t


def hardware_sheets(d: Diagnosis) -> list[tuple[str, pd.DataFrame, list]]:
    """(sheet name, table, spec) of the sheets that have data."""
    out = []
    if d.roofline is not None and len(d.roofline):
        out.append(("Roofline", d.roofline, ROOFLINE))
    if d.lmem is not None:
        out.append(("Local Memory", local_memory_table(d.lmem), LOCAL_MEMORY))
        out.append(("LMEM Conflicts", conflicts_table(d.lmem), CONFLICTS))
    return out
