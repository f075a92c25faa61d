"""The one reader of Chrome-trace JSON files: framework traces, the ``--trace_file`` host
trace and the content sniffing of :mod:`reportgen.parsers.detect` all open files here.

The container is recognised by content, never by name: gzip (a cut-off gzip still yields the
text before the cut), zip (the first ``.json`` member, else the first member) or plain.  The
JSON may start with a byte-order mark; an event array whose writer stopped early (no closing
``]``, a half-written last event) is read up to its last complete event, with a warning.
Nothing is read beyond the input bound (:mod:`reportgen.parsers.limits`): a file is size-checked
before it is read and a compressed one expanded chunk by chunk up to its limit.
"""
from __future__ import annotations

import os
import re
import zipfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from reportgen.errors import InputError
from reportgen.parsers import limits
from reportgen.parsers.chrome import exact_json

#: traces nest 3-5 levels (array, event, args, a list of shapes); anything far deeper is not a
#: trace and would exhaust a recursive JSON decoder
MAX_JSON_DEPTH = 256
GZIP_MAGIC = b"\x1f\x8b"
GZIP_WBITS = 16 + zlib.MAX_WBITS
#: compressed input is read and expanded this many bytes at a time
CHUNK = 1 << 20
ZIP_MAGIC = b"PK\x03\x04"
#: what reading a damaged (or encrypted, or exotically compressed) zip member raises
ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError)

#: warnings a read collects: (code, message) pairs
Warnings = list[tuple[str, str]]


def _zip_member(zf: zipfile.ZipFile) -> str | None:
    """The archive member holding the trace: the first ``.json`` file, else the first file."""
    names = [n for n in zf.namelist() if not n.endswith("/")]
    pick = [n for n in names if n.lower().endswith(".json")] or names
    return pick[0] if pick else None


def read_text(path: str | Path, label: str = "file", *, max_input_mb: int | None = None
              ) -> bytes | bytearray:
    """The JSON text of a trace file, decompressed by content (gzip or zip), not by name.
    ``label`` names the file in messages ("file", "host trace").  The file is refused before
    it is read when larger than the bound, a compressed one as soon as its expansion crosses
    the limit (:mod:`reportgen.parsers.limits`; ``max_input_mb`` None: the enclosing bound)."""
    path = Path(path)
    bound = limits.current(max_input_mb)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            limits.check_size(path, size, bound)
            magic = fh.read(4)
            fh.seek(0)
            if magic[:2] == GZIP_MAGIC:
                return _gunzip(path, fh, *limits.expansion_limit(size, bound))
            if magic == ZIP_MAGIC:
                return _unzip(path, fh, *limits.expansion_limit(size, bound))
            return fh.read()
    except OSError as exc:
        raise InputError(str(path), f"cannot read the {label} ({exc.strerror or exc})") from None


def _gunzip(path: Path, fh: BinaryIO, limit: int, how: str) -> bytearray:
    """Every gzip member of the file (zero padding between them skipped), expanded chunk by
    chunk; refused as soon as the text passes ``limit``.  A cut-off file yields the text before
    the cut (like an unterminated array); bytes after the last member that do not start another
    are ignored."""
    text = bytearray()
    inflate = zlib.decompressobj(GZIP_WBITS)
    data = b""
    try:
        while True:
            if not data:
                data = fh.read(CHUNK)
                if not data:
                    break
            if inflate.eof:                      # between members: padding, a member or junk
                data = data.lstrip(b"\0")
                if not data:
                    continue
                if len(data) < 2:
                    data += fh.read(1)
                if data[:2] != GZIP_MAGIC:
                    break
                inflate = zlib.decompressobj(GZIP_WBITS)
            text += inflate.decompress(data, limit + 1 - len(text))
            if len(text) > limit:
                raise limits.too_expanded(path, limit, how)
            data = inflate.unconsumed_tail or (inflate.unused_data if inflate.eof else b"")
    except zlib.error as exc:
        raise InputError(str(path), f"corrupt gzip data ({exc})") from None
    if not text and not inflate.eof:
        raise InputError(str(path), "corrupt gzip data (cut off before any text)")
    return text


def _unzip(path: Path, fh: BinaryIO, limit: int, how: str) -> bytearray:
    """The trace member of a zip archive, refused before it is read when the archive says it
    is larger than ``limit`` and as soon as it passes ``limit`` otherwise."""
    try:
        with zipfile.ZipFile(fh) as zf:
            member = _zip_member(zf)
            if member is None:
                raise InputError(str(path), "zip archive is empty; expected a trace JSON inside")
            if zf.getinfo(member).file_size > limit:
                raise limits.too_expanded(path, limit, how)
            text = bytearray()
            with zf.open(member) as inner:
                while chunk := inner.read(CHUNK):
                    text += chunk
                    if len(text) > limit:
                        raise limits.too_expanded(path, limit, how)
            return text
    except ZIP_ERRORS as exc:
        raise InputError(str(path), f"zip archive is corrupt or unreadable ({exc})") from None


def sniff(path: str | Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of the JSON text inside (decompressing on the fly, without
    reading the whole file); empty when the file cannot be read."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
            if magic[:2] == GZIP_MAGIC:
                fh.seek(0)
                try:
                    return zlib.decompressobj(GZIP_WBITS).decompress(fh.read(1 << 16), size)
                except zlib.error:
                    return b""
        if magic == ZIP_MAGIC:
            with zipfile.ZipFile(path) as zf:
                member = _zip_member(zf)
                if member is None:
                    return b""
                with zf.open(member) as fh:
                    return fh.read(size)
        with open(path, "rb") as fh:
            return fh.read(size)
    except (OSError, *ZIP_ERRORS):
        return b""


_LEADING_BLANKS = re.compile(rb"\s*(?:\xef\xbb\xbf\s*)?")


def strip_bom(text: bytes | bytearray) -> bytes | bytearray:
    """The text without leading blanks and byte-order mark (a bytearray is cut in place: no
    copy of a text of gigabytes)."""
    start = _LEADING_BLANKS.match(text).end()
    if not start:
        return text
    if isinstance(text, bytearray):
        del text[:start]
        return text
    return text[start:]


#: +1 for an opening bracket, -1 for a closing one
_BRACKET_STEP = np.zeros(256, np.int8)
_BRACKET_STEP[[0x5B, 0x7B]] = 1
_BRACKET_STEP[[0x5D, 0x7D]] = -1
#: bytes scanned at a time (the scan's own memory: 5 bytes per byte of a chunk)
_NESTING_CHUNK = 8 << 20


def _nesting(data: bytes | bytearray) -> tuple[int, int]:
    """(deepest bracket nesting, byte offset where it is first reached); brackets inside
    strings count too, which can only overstate the depth."""
    b = np.frombuffer(data, np.uint8)
    deepest, at, depth = 0, 0, 0
    for start in range(0, len(b), _NESTING_CHUNK):
        levels = np.cumsum(_BRACKET_STEP[b[start:start + _NESTING_CHUNK]], dtype=np.int32) + depth
        top = int(np.argmax(levels))
        if levels[top] > deepest:
            deepest, at = int(levels[top]), start + top
        depth = int(levels[-1])
    return deepest, at


def _loads(data: bytes) -> Any:
    # exact_json keeps long decimal literals (ns-resolution timestamps) as written
    return exact_json.loads(data)


def decode_json(path: str | Path, data: bytes, warnings: Warnings) -> list | dict:
    """Decode trace JSON; repair an array whose closing ``]`` (or last events) is missing."""
    text = strip_bom(data)
    if not text[:1] in (b"[", b"{"):
        kind = "SQLite database" if text.startswith(b"SQLite format 3") else "not JSON"
        raise InputError(str(path), f"not a Chrome trace ({kind}); expected a JSON object or array "
                                    "of trace events")
    depth, at = _nesting(text)
    if depth > MAX_JSON_DEPTH:
        raise InputError(str(path), f"JSON nested {depth} levels deep; a trace nests a few levels, "
                                    "so this is not a trace", offset=at)
    try:
        return _loads(text)
    except exact_json.DECODE_ERRORS as exc:
        error = exc
    if text[:1] == b"[":
        # streamed writers stop mid-array: cut after the last complete event and close it
        body = text.rstrip()
        for _ in range(8):
            cut = body.rfind(b"}")
            if cut < 0:
                break
            body = body[:cut + 1]
            try:
                obj = _loads(body + b"]")
            except exact_json.DECODE_ERRORS:
                body = body[:cut]
                continue
            warnings.append(("unterminated-json", "trace array is not terminated (writer stopped "
                                                  "early); read the complete events before the end"))
            return obj
    raise InputError(str(path), f"not a chrome-trace JSON file (invalid JSON: {error})")


def read_events(path: str | Path, label: str = "file", *, max_input_mb: int | None = None
                ) -> tuple[list[dict], dict[str, Any], Warnings]:
    """The event objects of a trace file, its top-level metadata (the object form's other
    keys) and what was tolerated.  Rejects, with what it is instead, JSON that is not a
    timeline trace (an execution trace, a memory-timeline export, a summary object), and a
    file beyond the input bound (``max_input_mb``; None: the enclosing one)."""
    path = Path(path)
    warnings: Warnings = []
    obj = decode_json(path, read_text(path, label, max_input_mb=max_input_mb), warnings)
    if isinstance(obj, dict):
        if "traceEvents" not in obj:
            if "nodes" in obj and ("schema" in obj or "pid" in obj):
                raise InputError(str(path), "this is a PyTorch execution trace (a graph of 'nodes'), "
                                            "not a timeline trace; pass the Kineto trace recorded with it")
            keys = ", ".join(list(obj)[:6])
            raise InputError(str(path), "JSON object without 'traceEvents': an object without a "
                                        f"'traceEvents' array is not a Chrome trace (top-level keys: {keys})")
        events = obj["traceEvents"]
        if not isinstance(events, list):
            raise InputError(str(path), "'traceEvents' is not a list of events")
        metadata = {k: v for k, v in obj.items() if k != "traceEvents"}
    else:
        events, metadata = obj, {}
    dict_events = [e for e in events if type(e) is dict]
    if events and len(dict_events) < len(events) // 2:
        hint = ""
        if isinstance(events[0], list):
            hint = " (looks like a torch memory_timeline export: lists of numbers)"
        raise InputError(str(path), "JSON array does not hold trace event objects" + hint)
    if len(dict_events) < len(events):
        warnings.append(("bad-event", f"{len(events) - len(dict_events)} array entries are not "
                                      "event objects; ignored"))
    return dict_events, metadata, warnings
