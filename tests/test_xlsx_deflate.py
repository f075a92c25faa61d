"""The workbook's zip deflated by ISA-L (writers/xlsx/deflate.py): the same XML inside, any unzip
reads it, zlib's own compressor back after the block, higher levels left to zlib."""
from __future__ import annotations

import io
import zipfile
import zlib

import pytest

from reportgen.writers.xlsx import deflate

pytest.importorskip("isal")


def _zip(member: bytes, level: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=level) as z:
        z.writestr("xl/worksheets/sheet1.xml", member)
    return out.getvalue()


def test_isal_deflate_is_plain_deflate_and_scoped():
    member = b"".join(b'<row r="%d"><c r="A%d"><v>%d</v></c></row>' % (i, i, i * 7) for i in range(50_000))
    plain = _zip(member, 3)
    with deflate.isal_deflate(3) as used:
        fast = _zip(member, 3)
        assert used and zipfile.zlib is not zlib
    assert zipfile.zlib is zlib                        # restored
    assert fast != plain                               # another compressor wrote it...
    with zipfile.ZipFile(io.BytesIO(fast)) as z:       # ...and any inflate reads the same XML
        assert z.read("xl/worksheets/sheet1.xml") == member
        info = z.getinfo("xl/worksheets/sheet1.xml")
        assert info.compress_type == zipfile.ZIP_DEFLATED and info.CRC == zlib.crc32(member)
    raw = fast[30 + len("xl/worksheets/sheet1.xml"):][:info.compress_size]
    assert zlib.decompress(raw, -15) == member         # the raw stream: ordinary deflate
    with deflate.isal_deflate(9) as used:              # a small file asked for: zlib's
        assert not used and zipfile.zlib is zlib
    with pytest.raises(RuntimeError), deflate.isal_deflate(1):
        raise RuntimeError("a failed close")
    assert zipfile.zlib is zlib
