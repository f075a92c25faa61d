"""Command descriptor decoding driven by the register tables in ``data/`` (spec §8).

Field layouts are data (``data/AKS.csv``, ``data/AKSV.csv``: op, field, bit offset, width);
this module only knows how descriptors are *classified* (which bits select the op) and
extracts every field of a batch of same-op descriptors at once with numpy.
"""
from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

#: TIU op -> tsk_typ (spec §8.2); long forms drop the leading "s".
TIU_TSK_TYP = {
    "sCONV": 0, "sCONV_BW": 0, "sPorD": 1, "sMM": 2, "sMM2": 2, "sAR": 3, "sRQ&sDQ": 4,
    "sCW&sBC": 5, "sSG": 6, "sSGL": 6, "LAR": 7, "RAND": 8, "sSFU": 9, "sLIN": 10,
    "SYS_TR_ACC": 12, "sCMP": 13, "sVC": 14, "SYS": 15,
}
#: short op -> long op name in the register tables
LONG_FORM = {"sCONV": "CONV", "sCONV_BW": "CONV_BW", "sPorD": "PorD", "sMM": "MM", "sMM2": "MM2",
             "sAR": "AR", "sRQ&sDQ": "RQ&DQ", "sCW&sBC": "CW&BC", "sSG": "SG", "sSGL": "SGL",
             "sSFU": "SFU", "sLIN": "LIN", "sCMP": "CMP", "sVC": "VC"}
SHORT_FORM = {v: k for k, v in LONG_FORM.items()}

#: DMA cmd_type -> op (GDMA and SDMA share the tables); 6 is the 128-bit system command
DMA_OPS = {0: "DMA_tensor", 1: "DMA_matrix", 2: "DMA_masked_select", 3: "DMA_general",
           4: "DMA_cw_transpose", 5: "DMA_nonzero", 6: "sDMA_sys", 7: "DMA_gather",
           8: "DMA_scatter", 9: "DMA_reverse", 12: "DMA_lossy_compress", 13: "DMA_lossy_decompress"}
#: CDMA cmd_type (bits 7..4) -> op
CDMA_OPS = {0: "CDMA_send", 1: "CDMA_read", 2: "CDMA_write", 3: "CDMA_general", 4: "CDMA_receive",
            5: "CDMA_lossy_compress", 6: "CDMA_lossy_decompress", 7: "sCDMA_sys",
            8: "CDMA_tcp_send", 9: "CDMA_tcp_receive"}


@dataclass(frozen=True)
class Layout:
    op: str
    bits: int
    fields: tuple[tuple[str, int, int], ...]   # (name, bit offset, width) in register order

    @property
    def nbytes(self) -> int:
        return self.bits // 8


def _data_file(name: str):
    return resources.files("reportgen.parsers.pmu").joinpath("data", name)


@lru_cache(maxsize=None)
def layouts(chip: str) -> dict[str, Layout]:
    """op -> Layout for a chip (AKS / AKSV)."""
    rows: dict[str, list] = {}
    bits: dict[str, int] = {}
    with _data_file(f"{chip}.csv").open(encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            op = _op_name(r["op"])
            fields = rows.setdefault(op, [])
            entry = (r["field"], int(r["bit_offset"]), int(r["bit_width"]))
            if entry not in fields:
                fields.append(entry)
            bits[op] = int(r["descriptor_bits"])
    return {op: Layout(op, bits[op], tuple(f)) for op, f in rows.items()}


@lru_cache(maxsize=None)
def mode2_names(chip: str = "AKS") -> dict[tuple[str, int], str]:
    """(register op, tsk_eu_typ) -> Function Name, e.g. ("sMM2", 4) -> "mm2.nn": the chip's own
    table (``<chip>-mode2-names.csv``: BM1688, CV84X6; TIU rows) or the shared AKS/AKSV one."""
    out = {}
    if _data_file(f"{chip}-mode2-names.csv").is_file():
        for r in _chip_mode2_rows(chip):
            if r["engine"] == "TIU":
                out[(r["op"], int(r["eu_or_special"]))] = r["function_name"]
        return out
    with _data_file("mode2-names.csv").open(encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            out[(r["function_type"], int(r["eu_or_special"]))] = r["function_name"]
    return out


@lru_cache(maxsize=None)
def _chip_mode2_rows(chip: str) -> tuple[dict[str, str], ...]:
    """Rows of a chip's own mode-2 name table, op names without the "（0x000）" suffix."""
    with _data_file(f"{chip}-mode2-names.csv").open(encoding="utf-8") as fh:
        return tuple(dict(r, op=_op_name(r["op"])) for r in csv.DictReader(fh))


def _op_name(op: str) -> str:
    return re.sub(r"[（(].*$", "", op).strip()     # "DMA_tensor（0x000）" -> "DMA_tensor"


@lru_cache(maxsize=None)
def tiu_op_codes(chip: str) -> dict[str, int]:
    """TIU register op -> tsk_typ: §8.2 for AKS/AKSV, the chip's own table otherwise."""
    if _data_file(f"{chip}-mode2-names.csv").is_file():
        return {r["op"]: int(r["code"]) for r in _chip_mode2_rows(chip) if r["engine"] == "TIU"}
    return TIU_TSK_TYP


@lru_cache(maxsize=None)
def dma_ops(chip: str) -> dict[int, str]:
    """DMA cmd_type -> register op of a chip."""
    if _data_file(f"{chip}-mode2-names.csv").is_file():
        return {int(r["code"]): r["op"] for r in _chip_mode2_rows(chip) if r["engine"] == "DMA"}
    return DMA_OPS


@lru_cache(maxsize=None)
def dma_head(chip: str) -> tuple[int, int, int, int]:
    """(cmd_type offset, width, special offset, width) of the chip's DMA head (BM1688: 4-bit type)."""
    f = {name: (off, w) for name, off, w in layouts(chip)["sDMA_sys"].fields}
    return (*f["cmd_type"], *f["cmd_special_function"])


@lru_cache(maxsize=None)
def tiu_wide_sys_op(chip: str) -> str:
    """The chip's type-12 system op, whose eu field is 3 bits wide (SYS_TR_ACC / SYS_TR_WR)."""
    return next((op for op, t in tiu_op_codes(chip).items() if t == 12 and op.startswith("SYS")),
                "SYS_TR_ACC")


@lru_cache(maxsize=None)
def mode2_name_table(op: str, chip: str = "AKS") -> np.ndarray:
    """Function Name of a decoded TIU op by tsk_eu_typ (0..31); unknown eu -> "<op>_<eu>"."""
    names = mode2_names(chip)
    return np.array([names.get((op, e), f"{op}_{e}") for e in range(32)], object)


@lru_cache(maxsize=None)
def mode1_names(chip: str) -> dict[tuple[str, int, int], tuple[str, str]]:
    """(TIU|DMA|CDMA, cmd type, eu/special) -> (Function Type, Function Name)."""
    out = {}
    with _data_file(f"{chip}-mode1-names.csv").open(encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            out[(r["engine"], int(r["cmd_type"]), int(r["special_or_eu"]))] = (
                r["function_type"], r["function_name"])
    return out


def extract(buf: np.ndarray, offset: int, width: int) -> np.ndarray:
    """Field ``[offset, offset+width)`` of every row of ``buf`` (n x nbytes uint8) as uint64.

    Rows are little endian; a field may straddle 64-bit words (up to 64 bits wide).
    """
    first, last = offset // 8, (offset + width - 1) // 8
    span = buf[:, first:last + 1].astype(np.uint64)
    value = np.zeros(len(buf), np.uint64)
    for i in range(span.shape[1]):          # at most 9 bytes: a loop over bytes, not rows
        shift = 8 * i - (offset % 8)
        if shift >= 0:
            value |= span[:, i] << np.uint64(shift)
        else:
            value |= span[:, i] >> np.uint64(-shift)
    if width < 64:
        value &= np.uint64((1 << width) - 1)
    return value


def gather(file: np.ndarray, offs: np.ndarray, lens: np.ndarray, width: int) -> np.ndarray:
    """n x width matrix of descriptor bytes (zero past each descriptor's own length).

    ``file`` is padded with zeros at its end (see dump._read_core), so a row copy of a sliding
    window view never runs past it.
    """
    pad = max(0, int(offs.max()) + width - len(file)) if len(offs) else 0
    if pad:
        file = np.concatenate([file, np.zeros(pad, np.uint8)])
    out = np.lib.stride_tricks.sliding_window_view(file, width)[offs]
    short = lens < width
    if short.any():
        out[short] = np.where(np.arange(width) < lens[short, None], out[short], 0)
    return out


def field_dtype(width: int) -> type:
    """The smallest unsigned integer type that holds a ``width``-bit field."""
    return np.uint8 if width <= 8 else np.uint16 if width <= 16 else np.uint32 if width <= 32 else np.uint64


class Fields(Mapping):
    """The register fields of a batch of descriptors of one op, each decoded on first read.

    The description of the commands reads a few fields of each op; the register tables (shown
    only for captures small enough) read all of them, later or never. So the batch keeps its
    descriptors as little-endian 64-bit words, one contiguous array per word (as many bytes as
    the descriptors themselves), and a field costs a shift, a mask and (when it straddles two
    words) an or when it is read. Each field comes in the smallest unsigned type its width
    allows (cast before arithmetic).
    """

    def __init__(self, buf: np.ndarray | None, layout: Layout, words: np.ndarray | None = None):
        """``buf``: n x nbytes descriptor bytes (or ``words``: their transposed 64-bit words)."""
        if words is None:
            nwords = -(-layout.nbytes // 8)
            k = min(buf.shape[1], layout.nbytes)
            if k == nwords * 8 and buf.shape[1] == k and buf.flags.c_contiguous:
                padded = buf
            else:
                padded = np.zeros((len(buf), nwords * 8), np.uint8)
                padded[:, :k] = buf[:, :k]
            words = np.ascontiguousarray(padded.view("<u8").T)   # words[i]: word i of each
        self.layout, self.words = layout, words
        self._at = {name: (off, width) for name, off, width in layout.fields}
        self._read: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._at)

    def __iter__(self):
        return iter(self._at)

    def __contains__(self, name) -> bool:
        return name in self._at

    def __getitem__(self, name: str) -> np.ndarray:
        value = self._read.get(name)
        if value is None:
            off, width = self._at[name]
            w, shift = divmod(off, 64)
            value = self.words[w] >> np.uint64(shift)
            if shift + width > 64 and w + 1 < len(self.words):
                value |= self.words[w + 1] << np.uint64(64 - shift)
            if width < 64:
                value &= np.uint64((1 << width) - 1)
            value = self._read[name] = value.astype(field_dtype(width))
        return value

    @property
    def rows(self) -> int:
        return self.words.shape[1]

    def unread(self) -> "Fields":
        """The same descriptors without the fields decoded so far (what a batch kept for
        later costs: its descriptors' bytes, nothing more)."""
        return Fields(None, self.layout, self.words)

    def take(self, sel: np.ndarray) -> "Fields":
        """Descriptors ``sel`` (a mask or positions), nothing decoded."""
        return Fields(None, self.layout, np.ascontiguousarray(self.words[:, sel]))


# -- classification ---------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _tiu_eu_table(chip: str) -> dict[tuple[int, int, int], str]:
    """(cmd_short, tsk_typ, eu) -> register op, from the mode-2 name table and §8.2."""
    names = mode2_names(chip)
    codes = tiu_op_codes(chip)
    have = layouts(chip)
    table: dict[tuple[int, int, int], str] = {}
    for (op, eu) in names:
        if op.startswith("SYS"):
            for short in (0, 1):
                table[(short, codes[op], eu)] = op
        elif op in ("LAR", "RAND") and op in have:
            table[(0, codes[op], eu)] = op
            table[(1, codes[op], eu)] = op
        elif op in SHORT_FORM and op in have:       # long form: cmd_short 0
            table[(0, codes.get(op, TIU_TSK_TYP.get(SHORT_FORM[op], -1)), eu)] = op
        elif op in codes and op in have:
            table[(1, codes[op], eu)] = op
    return {k: v for k, v in table.items() if k[1] >= 0}


@lru_cache(maxsize=None)
def op_names(chip: str) -> tuple[str, ...]:
    """Every register op of a chip; the classifiers return positions in this tuple."""
    return tuple(layouts(chip))


def _op_code(chip: str, op: str) -> int:
    names = op_names(chip)
    return names.index(op) if op in names else -1


@lru_cache(maxsize=None)
def _tiu_op_lookup(chip: str) -> np.ndarray:
    """Register op code by key cmd_short * 512 + tsk_typ * 32 + eu (-1 = unknown)."""
    out = np.full(2 * 16 * 32, -1, np.int64)
    for (short, typ, eu), op in _tiu_eu_table(chip).items():
        out[short * 512 + typ * 32 + eu] = _op_code(chip, op)
    return out


@lru_cache(maxsize=None)
def tiu_length_lookup(chip: str) -> np.ndarray:
    """Descriptor bytes by the same key as :func:`_tiu_op_lookup` (-1 = unknown op)."""
    lay, names = layouts(chip), op_names(chip)
    return np.array([lay[names[c]].nbytes if c >= 0 else -1 for c in _tiu_op_lookup(chip)], np.int64)


def classify_tiu(buf: np.ndarray, chip: str) -> np.ndarray:
    """Register op of each TIU descriptor, as a position in :func:`op_names` (-1: unknown)."""
    short = extract(buf, 0, 1).astype(np.int64)
    typ = extract(buf, 41, 4).astype(np.int64)
    eu = extract(buf, 45, 5).astype(np.int64)
    out = _tiu_op_lookup(chip)[short * 512 + typ * 32 + eu]
    tr_acc = (typ == 12) & (extract(buf, 45, 3) == 0)     # SYS_TR_ACC / _WR: a 3-bit eu field
    out[tr_acc & (out < 0)] = _op_code(chip, tiu_wide_sys_op(chip))
    return out


def classify_dma(buf: np.ndarray, chip: str) -> np.ndarray:
    short = extract(buf, 3, 1).astype(np.int64)
    off, width, _, _ = dma_head(chip)
    ctype = extract(buf, off, width).astype(np.int64)
    out = np.full(len(buf), -1, np.int64)
    for code, op in dma_ops(chip).items():
        want_short = 1 if op == "sDMA_sys" else 0
        out[(ctype == code) & (short == want_short)] = _op_code(chip, op)
    return out


def classify_cdma(buf: np.ndarray, chip: str) -> np.ndarray:
    ctype = extract(buf, 4, 4).astype(np.int64)
    out = np.full(len(buf), -1, np.int64)
    for code, op in CDMA_OPS.items():
        out[ctype == code] = _op_code(chip, op)
    return out
