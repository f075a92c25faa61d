"""Reading a written result.html back, the way the page's own script does: the Python twin of
``decodeItems`` (the timeline payload, ``templates/codec.js``) and of the Tables tab's reader in ``templates/report.js``.
Tests use it to check the page against the model without a browser.
"""
from __future__ import annotations

import base64
import gzip
import json
import re
from typing import Any

import numpy as np
import pandas as pd


def _script(text: str, ident: str) -> str | None:
    """The text of the page's ``<script id=ident>`` block (None when the page has none)."""
    m = re.search(rf'<script id="{ident}" type="[^"]+">(.*?)</script>', text, re.DOTALL)
    return m.group(1) if m else None


def text7_decode(text: str, n: int) -> bytes:
    """Python twin of ``b7ToBytes`` in codec.js: the ``n`` bytes in a block written by
    ``reportgen.writers.html.text7.encode`` (one 7-bit chunk per character below U+0080, an
    unsafe chunk and the chunk after it per character from U+0080)."""
    from reportgen.writers.html.text7 import PAIR_BASE, UNSAFE

    codes = np.frombuffer(text.encode("utf-32-le"), "<u4").astype(np.int64)
    pair = codes >= PAIR_BASE
    at = np.cumsum(1 + pair) - 1 - pair                   # where each character's first chunk goes
    chunks = np.empty(len(codes) + int(pair.sum()), np.uint8)
    unsafe = np.asarray(UNSAFE)[np.clip((codes - PAIR_BASE) >> 7, 0, len(UNSAFE) - 1)]
    chunks[at] = np.where(pair, unsafe, codes)
    chunks[at[pair] + 1] = (codes[pair] - PAIR_BASE) & 0x7F
    bits = np.unpackbits(chunks[:, None], axis=1)[:, 1:].reshape(-1)
    return np.packbits(bits[:n * 8]).tobytes()


def _unshuffle(raw: bytes, dtype: np.dtype, n: int) -> np.ndarray:
    k = dtype.itemsize
    planes = np.frombuffer(raw, np.uint8).reshape(k, n)
    return np.ascontiguousarray(planes.T).view(dtype).reshape(n)


def _lane_undelta(deltas: np.ndarray, lane_off: np.ndarray) -> np.ndarray:
    """Inverse of ``payload._lane_delta``: prefix sums restarting at each lane."""
    out = np.cumsum(deltas.astype(np.float64 if deltas.dtype.kind == "f" else np.int64))
    lane_of = np.repeat(np.arange(len(lane_off) - 1), np.diff(lane_off))
    before = np.concatenate([[0], out])[lane_off[:-1]]     # running sum before each lane
    return out - before[lane_of]


def decode_items(header: dict[str, Any], blob: bytes) -> dict[str, np.ndarray]:
    """Python twin of ``decodeItems`` in codec.js: the arrays the page works with.

    ``header`` is the page's ``payload`` header with the page's ``ops`` and ``urate_scale``.
    Returns ``lane, start, end`` (ns relative to t0), ``op, kernel`` (0 = unknown), ``gidx``,
    ``cmd``, ``bytes`` (NaN = unknown), ``bw`` (GB/s, NaN = none) and ``urate`` (0..1, NaN).
    """
    raw = gzip.decompress(blob)
    cols = {}
    for spec in header["columns"]:
        dt = np.dtype("<" + spec["dtype"])
        size = spec["n"] * dt.itemsize
        cols[spec["name"]] = _unshuffle(raw[spec["offset"]:spec["offset"] + size], dt, spec["n"])
    # columns stored grouped by op (stable): item i's value is the next one of its op's group
    # (``then``: by op, then by a second key: prev_op, the op before on the lane + 1, 0 at a
    # lane's first item; or another column, put back in item order first)
    lane_off = np.asarray(header["lane_off"], np.int64)
    op = cols["op"].astype(np.int64)
    prev = np.concatenate([[0], op[:-1] + 1]) if len(op) else op
    prev[lane_off[:-1][np.diff(lane_off) > 0]] = 0
    grouped = [s for s in header["columns"] if s.get("by_op")]
    names = {s["name"] for s in grouped}
    for spec in sorted(grouped, key=lambda s: s.get("then") in names):
        then = spec.get("then")
        key = None if then is None else prev if then == "prev_op" else cols[then].astype(np.int64)
        at = np.argsort(op, kind="stable") if key is None else np.lexsort((key, op))
        stored, cols[spec["name"]] = cols[spec["name"]], np.empty_like(cols[spec["name"]])
        cols[spec["name"]][at] = stored
    n = header["n"]
    lane = np.repeat(np.arange(len(lane_off) - 1), np.diff(lane_off))
    gap = cols["gap"].astype(np.int64) if cols["gap"].dtype.kind != "f" else cols["gap"]
    dur = cols["dur"].astype(np.int64) if cols["dur"].dtype.kind != "f" else cols["dur"]
    # start = previous end + gap, end = start + dur: per lane, start_i = sum(gap) + sum(dur before i)
    step = gap + dur
    end = _lane_undelta(step, lane_off)
    start = end - dur
    nbytes = cols["bytes"].astype(np.float64)
    nbytes = np.where(nbytes > 0, nbytes - 1, np.nan)
    urate = cols["urate"].astype(np.float64)
    urate = np.where(urate > 0, (urate - 1) / header["urate_scale"], np.nan)
    ops_kind = np.array([op[3] for op in header["ops"]], object) if n else np.zeros(0, object)
    op = cols["op"].astype(np.int64)
    has_bw = ops_kind[op] != "" if n else np.zeros(0, bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where(has_bw, nbytes / (dur + header["bw_pad_ns"]), np.nan)
    pos = np.cumsum(cols["bwx_pos"].astype(np.int64))
    bw[pos] = cols["bwx_val"]
    out = {"lane": lane, "start": start, "end": end, "op": op,
           "kernel": cols["kernel"].astype(np.int64),
           "gidx": _lane_undelta(cols["gidx"], lane_off), "cmd": _lane_undelta(cols["cmd"], lane_off),
           "bytes": nbytes, "bw": bw, "urate": urate}
    if "layer" in cols:          # pages with a layer view: layer + 1 per item, 0 = none
        out["layer"] = cols["layer"].astype(np.int64) - 1
    return out


def items_blob(text: str) -> bytes:
    """The gzip stream of the page's timeline payload (its ``rg-items`` block, text7-coded)."""
    m = re.search(r'<script id="rg-items" type="[^"]+" data-bytes="(\d+)">(.*?)</script>', text, re.DOTALL)
    if m is None:
        raise ValueError("no <script id=rg-items> block in the page")
    return text7_decode(m.group(2), int(m.group(1)))


def _merge_into(target: dict, part: dict) -> None:
    """Python twin of ``mergeInto`` in codec.js (writers/html/lazy.py's block back in place)."""
    for k, v in part.items():
        if isinstance(v, dict) and isinstance(target.get(k), dict):
            _merge_into(target[k], v)
        else:
            target[k] = v


def read_page(text: str, items: bool = True) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """The page's JSON data and its items as a DataFrame, decoded the way report.js does.

    Columns: ``sheet`` (lane name), ``host``, ``global_idx`` (host: row of profile.host),
    ``cmd_id``, ``start_ns``/``end_ns`` (absolute), ``func_type`` (host: category),
    ``func_name`` (host: event name), ``direction``, ``bw_kind``, ``kernel``, ``bytes``, ``bw``,
    ``uarch_rate``; with a layer view also ``layer`` (row of its layer table, -1 = none).
    """
    def block(ident: str) -> str:
        found = _script(text, ident)
        if found is None:
            raise ValueError(f"no <script id={ident}> block in the page")
        return found

    data = json.loads(block("rg-data"))
    lazy = re.search(r'<script id="rg-lazy" type="[^"]+" data-bytes="(\d+)">(.*?)</script>', text, re.DOTALL)
    if lazy:       # the bulky parts read after the first drawing, merged back as report.js does
        _merge_into(data, json.loads(gzip.decompress(text7_decode(lazy.group(2), int(lazy.group(1))))))
    if not items:
        return data, None
    blob = items_blob(text)
    header = dict(data["payload"], ops=data["ops"], urate_scale=data["urate_scale"])
    arr = decode_items(header, blob)
    ops, types, lanes = data["ops"], data["types"], data["lanes"]
    op = arr["op"]
    t0 = int(data["t0_ns"])
    kernels = np.array([None] + data["kernels"], object)
    frame = pd.DataFrame({
        "sheet": np.array([l["name"] for l in lanes], object)[arr["lane"]] if len(op) else [],
        "host": np.array([l["host"] for l in lanes], bool)[arr["lane"]] if len(op) else [],
        "global_idx": arr["gidx"], "cmd_id": arr["cmd"],
        "start_ns": arr["start"] + t0, "end_ns": arr["end"] + t0,
        "func_type": np.array([types[o[0]]["name"] for o in ops], object)[op] if len(op) else [],
        "func_name": np.array([o[1] for o in ops], object)[op] if len(op) else [],
        "direction": np.array([o[2] for o in ops], object)[op] if len(op) else [],
        "bw_kind": np.array([o[3] for o in ops], object)[op] if len(op) else [],
        "kernel": kernels[arr["kernel"]], "bytes": arr["bytes"], "bw": arr["bw"],
        "uarch_rate": arr["urate"],
    })
    if "layer" in arr:
        frame["layer"] = arr["layer"]
    return data, frame


def read_tables(text: str) -> dict[str, pd.DataFrame]:
    """The tables embedded in a written page, as the page decodes them (Python twin)."""
    data, _ = read_page(text, items=False)
    block = _script(text, "rg-tables")
    if block is None:
        return {}
    bodies = json.loads(gzip.decompress(base64.b64decode(block)))
    out = {}
    for head, body in zip(data["tables"], bodies):
        # a time column is shown in its own unit under another header; its values stay stored
        out[head["name"]] = pd.DataFrame({
            c.get("stored_name", c["name"]): pd.array([None if x is None else int(x) for x in v], dtype="Int64")
            if c["kind"] in ("int", "bigint") else v
            for c, v in zip(head["columns"], body["columns"])})
    return out

