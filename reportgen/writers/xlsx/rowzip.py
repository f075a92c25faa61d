"""Command-sheet rows deflated as they are made, spliced into the workbook's zip at close.

xlsxwriter's way moves the rows' XML (~14x the workbook's size: 1.9 GB at 3.3M commands)
through the disk three times: into a sheet's row file, copied into the sheet's XML file at
close, read back (8 kB at a time) to be deflated into the zip; then both files are deleted.
Here the rows are deflated as they are made (:class:`RowStream`, a file of deflate blocks a
fourteenth of their size) and the sheet's zip member is assembled at close (:func:`write_member`):
the sheet XML before the rows (head) deflated, the rows' blocks, the XML after them (tail)
deflated with the final block. Blocks made by different compressors form one valid deflate
stream as long as each piece but the last ends on a sync flush (byte-aligned, not final) and
none refers back into another (a fresh compressor has no history); any unzip reads the member
as usual, and the XML inside is byte for byte what xlsxwriter's way gives. Its CRC-32 is
combined from the pieces' (``crc32_combine``).

Needs ISA-L (the ``isal`` package: its deflate and ``crc32_combine``) and zipfile internals
(a member written from already-deflated data: ``start_dir``, ``_writecheck``, ``_lock``,
``fp`` as in CPython 3.11 to 3.13). Without them :func:`usable` is False and the workbook is
written xlsxwriter's way.
"""
from __future__ import annotations

import os
import sys
import tempfile
import zipfile
import zlib

from reportgen.writers.xlsx import deflate

#: rows read back from a helper's file at a time; the blocks copied into the zip at a time
COPY_BYTES = 4 << 20


def usable(level: int | None) -> bool:
    """Whether rows can be streamed at zip ``level`` (ISA-L's deflate for it, checked zipfile)."""
    return deflate.usable(level) and hasattr(deflate.isal_zlib, "crc32_combine") \
        and (3, 11) <= sys.version_info[:2] <= (3, 13) \
        and all(hasattr(zipfile.ZipFile, a) for a in ("_writecheck", "_open_to_write"))


def _compressor():
    return deflate.isal_zlib.compressobj(deflate.ISAL_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)


class RowStream:
    """A sheet's rows as deflate blocks in a temporary file in ``directory``, with the CRC-32
    and length of the XML they hold."""

    def __init__(self, directory, path=None) -> None:
        if path is None:
            fd, path = tempfile.mkstemp(prefix=".reportgen-rows-", suffix=".deflate", dir=directory)
            self.fh = os.fdopen(fd, "w+b")
        else:
            self.fh = open(path, "w+b")
        self.path = str(path)
        self.z = _compressor()
        self.crc, self.size = 0, 0

    def write(self, xml) -> None:
        self.crc = deflate.isal_zlib.crc32(xml, self.crc)
        self.size += len(xml)
        self.fh.write(self.z.compress(xml))

    def finish(self) -> None:
        """No more rows: end the blocks on a sync flush (byte-aligned, not the final block)."""
        if self.z is not None:
            self.fh.write(self.z.flush(zlib.Z_SYNC_FLUSH))
            self.fh.flush()
            self.z = None

    def splice(self, path, crc: int, size: int) -> None:
        """Append the finished blocks of another RowStream (a helper process's file at
        ``path``, holding ``size`` bytes of XML of CRC-32 ``crc``); later rows get a fresh
        compressor, so that none refers back into the spliced blocks."""
        self.finish()
        with open(path, "rb") as src:
            while piece := src.read(COPY_BYTES):
                self.fh.write(piece)
        self.crc = deflate.isal_zlib.crc32_combine(self.crc, crc, size)
        self.size += size
        self.z = _compressor()

    def blocks(self):
        self.fh.seek(0)
        while piece := self.fh.read(COPY_BYTES):
            yield piece

    def discard(self) -> None:
        self.fh.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


def write_member(zf: zipfile.ZipFile, filename: str, arcname: str, rows: RowStream, at: int) -> None:
    """Zip the sheet XML file ``filename`` (without its rows) as ``arcname`` with ``rows``'
    XML inserted at byte ``at``: head deflated, the rows' blocks, tail deflated and final."""
    with open(filename, "rb") as fh:
        xml = fh.read()
    head, tail = xml[:at], xml[at:]
    z = _compressor()
    first = z.compress(head) + z.flush(zlib.Z_SYNC_FLUSH)
    z = _compressor()
    last = z.compress(tail) + z.flush(zlib.Z_FINISH)
    combine = deflate.isal_zlib.crc32_combine
    crc = combine(combine(zlib.crc32(head), rows.crc, rows.size), zlib.crc32(tail), len(tail))
    info = zipfile.ZipInfo.from_file(filename, arcname, strict_timestamps=zf._strict_timestamps)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.file_size = len(head) + rows.size + len(tail)
    _write_deflated(zf, info, crc, [first, rows.blocks(), [last]])


def _write_deflated(zf: zipfile.ZipFile, info: zipfile.ZipInfo, crc: int, parts) -> None:
    """Add member ``info`` (its file_size set) from deflated pieces: ``ZipFile._open_to_write``
    and ``_ZipWriteFile.close`` without the compressor (CPython 3.11-3.13)."""
    zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT
    if zip64 and not zf._allowZip64:
        raise zipfile.LargeZipFile("Filesize would require ZIP64 extensions")
    with zf._lock:
        if zf._writing:
            raise ValueError("another write handle is open on the zip")
        info.flag_bits, info.CRC, info.compress_size = 0, crc, 0
        zf.fp.seek(zf.start_dir)
        info.header_offset = zf.fp.tell()
        zf._writecheck(info)
        zf._didModify = True
        zf.fp.write(info.FileHeader(zip64))
        for part in parts:
            for piece in ([part] if isinstance(part, bytes) else part):
                zf.fp.write(piece)
                info.compress_size += len(piece)
        if not zip64 and info.compress_size > zipfile.ZIP64_LIMIT:
            raise RuntimeError("Compressed size too large")
        zf.start_dir = zf.fp.tell()
        zf.fp.seek(info.header_offset)
        zf.fp.write(info.FileHeader(zip64))        # now with the compressed size
        zf.fp.seek(zf.start_dir)
        zf.filelist.append(info)
        zf.NameToInfo[info.filename] = info
