"""Rows deflated as they are made and spliced into the zip (writers/xlsx/rowzip.py): the member
reads back (CRC checked by zipfile and by an independent zlib inflate) as head + rows + tail;
a workbook written so holds the same XML as one written xlsxwriter's way, with or without the
helper process, and leaves no temporary file behind, even when the zip fails."""
from __future__ import annotations

import zipfile
import zlib

import pytest

from reportgen.analysis.metrics import engine_summary
from reportgen.errors import OutputError
from reportgen.testing.profiles import make_profile
from reportgen.writers import xlsx
from reportgen.writers.xlsx import helper as xlsx_helper
from reportgen.writers.xlsx import rowzip, sheet_xml
from reportgen.writers.xlsx import xlsxwriter_private as private

pytest.importorskip("isal")
pytestmark = pytest.mark.skipif(not rowzip.usable(3), reason="rows are not streamed on this Python")


def test_spliced_member_is_one_deflate_stream(tmp_path):
    head = b'<?xml version="1.0"?><worksheet><sheetData>'
    tail = b"</sheetData><pageSetup/></worksheet>"
    rows = [b"".join(b'<row r="%d"><c><v>%d</v></c></row>' % (i, i * 7) for i in range(k, k + 20_000))
            for k in range(0, 60_000, 20_000)]
    sheet = tmp_path / "sheet.xml"
    sheet.write_bytes(head + tail)
    stream = rowzip.RowStream(tmp_path)
    for piece in rows:
        stream.write(piece)
    stream.finish()
    target = tmp_path / "book.zip"
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("first.xml", b"<a/>")
        rowzip.write_member(z, str(sheet), "xl/worksheets/sheet1.xml", stream, len(head))
        z.writestr("last.xml", b"<b/>")                 # members after it land right
    stream.discard()
    assert not list(tmp_path.glob(".reportgen-rows-*"))
    whole = head + b"".join(rows) + tail
    with zipfile.ZipFile(target) as z:
        assert z.testzip() is None                      # every member's CRC-32
        assert z.read("xl/worksheets/sheet1.xml") == whole
        assert (z.read("first.xml"), z.read("last.xml")) == (b"<a/>", b"<b/>")
        info = z.getinfo("xl/worksheets/sheet1.xml")
    assert info.CRC == zlib.crc32(whole) and info.file_size == len(whole)
    data = target.read_bytes()
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    inflate = zlib.decompressobj(-15)                   # zlib itself: one stream, ended
    assert inflate.decompress(data[start:start + info.compress_size]) == whole and inflate.eof
    assert info.compress_size < len(whole) / 5


def _members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist() if n != "docProps/core.xml"}


@pytest.mark.parametrize("with_helper", [False, True])
def test_workbook_streamed_equals_written_the_xlsxwriter_way(tmp_path, monkeypatch, with_helper):
    p = make_profile(cores=2, per_engine=3_000, seed=4)
    s = engine_summary(p)
    monkeypatch.setattr(xlsx_helper, "HELPER_MIN_ROWS", 1 if with_helper else 10**9)
    monkeypatch.setattr(sheet_xml, "CHUNK_CELLS", 20_000)     # several chunks per sheet
    monkeypatch.setattr(rowzip, "usable", lambda level: False)
    plain = xlsx.write(p, s, tmp_path / "plain", quiet=True)
    monkeypatch.undo()
    monkeypatch.setattr(xlsx_helper, "HELPER_MIN_ROWS", 1 if with_helper else 10**9)
    monkeypatch.setattr(sheet_xml, "CHUNK_CELLS", 20_000)
    splices = []
    real = rowzip.write_member
    monkeypatch.setattr(rowzip, "write_member", lambda *a: splices.append(a[2]) or real(*a))
    helper_sheets = []                                  # sheets the helper deflated itself
    real_splice = rowzip.RowStream.splice
    monkeypatch.setattr(rowzip.RowStream, "splice",
                        lambda self, *a: helper_sheets.append(a) or real_splice(self, *a))
    streamed = xlsx.write(p, s, tmp_path / "streamed", quiet=True)
    assert len(splices) == len(p.sheets())              # every command sheet went the new way
    assert (len(helper_sheets) > 0) == with_helper
    a, b = _members(plain), _members(streamed)
    assert list(a) == list(b) and all(a[n] == b[n] for n in a)
    assert sorted(f.name for f in streamed.parent.iterdir()) == ["PerfAI_output.xlsx"]
    assert private._streams is None and not private._splices


def test_failed_zip_leaves_no_rows_file(tmp_path, monkeypatch):
    p = make_profile(cores=1, per_engine=2_000, seed=6)

    def full_disk(*a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rowzip, "write_member", full_disk)
    with pytest.raises(OutputError, match="No space left"):
        xlsx.write(p, engine_summary(p), tmp_path, quiet=True)
    assert not list(tmp_path.rglob(".reportgen-rows-*")) and not list(tmp_path.rglob("*.xlsx"))
    assert private._streams is None and not private._splices
