"""Reading tensor_location.json: the usual file is decoded with its types checked, anything else
by the loose decoder, and JSON the fast decoder refuses by the standard library. Every path must
read the same records, and every odd input gives a warning (or skipped records), never a
traceback."""
from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from reportgen.model import Meta
from reportgen.parsers.layers import read_layer_files
from reportgen.parsers.layers.tensor_location import _Checked, _Record, decode_records
from shared_data import LAYERS, needs

pytestmark = needs(LAYERS)
SOURCE = LAYERS / "aks-layers-c2" / "input"


def _read(tmp_path, body: bytes):
    folder = tmp_path / "input"
    shutil.copytree(SOURCE, folder)
    (folder / "tensor_location.json").write_bytes(body)
    meta = Meta(source="pmu")
    return read_layer_files(folder, meta, 4096), {w.code: w.message for w in meta.warnings}


def _records():
    return json.loads((SOURCE / "tensor_location.json").read_text())


def test_the_golden_file_takes_the_checked_path():
    data = decode_records((SOURCE / "tensor_location.json").read_bytes())
    assert len(data) == 94 and all(type(r) is _Checked for r in data)


@pytest.mark.parametrize("extra", [7, "text", None, [1, 2]], ids=["int", "str", "null", "list"])
def test_the_loose_path_reads_the_same_records(tmp_path, extra):
    usual, _ = _read(tmp_path / "a", (SOURCE / "tensor_location.json").read_bytes())
    body = json.dumps(_records() + [extra]).encode()
    assert type(decode_records(body)[0]) is _Record
    loose, warnings = _read(tmp_path / "b", body)
    pd.testing.assert_frame_equal(loose.records, usual.records)
    pd.testing.assert_frame_equal(loose.ops, usual.ops)
    assert warnings["layer-records-skipped"].startswith("1 of 95 records skipped")


def test_a_record_with_the_old_keys_among_new_ones(tmp_path):
    data = _records()
    rec = data[0]
    rec["bdc_gdma_id(before)"] = rec.pop("tiu_dma_id(before)")
    rec["bdc_gdma_id(after)"] = rec.pop("tiu_dma_id(after)")
    files, warnings = _read(tmp_path, json.dumps(data).encode())
    first = files.records.iloc[0]
    assert (first["record"], first["tiu_before"], first["gdma_before"], first["tiu_after"],
            first["gdma_after"]) == (0, 2, 2, 4, 6)                 # spec §4's worked example
    assert "layer-records-skipped" not in warnings


@pytest.mark.parametrize("edit, skipped", [
    (lambda r: r.update({"tiu_dma_id(after)": [2 ** 70, 3]}), 1),     # beyond int64: was a crash
    (lambda r: r.update({"file-line": 9.0}), 1),
    (lambda r: r.update({"core_id": None}), 1),
    (lambda r: r.update({"tiu_dma_id(before)": [True, 2]}), 1),
    (lambda r: r.update({"is_local": None}), 0),                        # null = unknown: inferred
], ids=["huge id", "float line", "null core", "bool id", "null is_local"])
def test_odd_values_skip_their_record(tmp_path, edit, skipped):
    data = _records()
    edit(data[0])
    files, warnings = _read(tmp_path, json.dumps(data).encode())
    assert len(files.records) == 94 - skipped
    if skipped:
        assert warnings["layer-records-skipped"].startswith(f"{skipped} of 94 records skipped")


def test_nan_is_read_by_the_standard_library_and_its_record_skipped(tmp_path):
    text = (SOURCE / "tensor_location.json").read_bytes().replace(b'"file-line": 9,', b'"file-line": NaN,', 1)
    files, warnings = _read(tmp_path, text)
    assert len(files.records) == 93 and "layer-records-skipped" in warnings


def test_a_byte_order_mark_is_accepted(tmp_path):
    files, warnings = _read(tmp_path, b"\xef\xbb\xbf" + (SOURCE / "tensor_location.json").read_bytes())
    assert len(files.records) == 94 and not warnings


@pytest.mark.parametrize("body, says", [
    (b"", "not JSON at line 1 column 1"),
    (b"[" * 100_000 + b"]" * 100_000, "cannot be read (maximum recursion depth"),
    (b'[{"file-line": 9, "opcode": "tpu.P\xffool"}]', "cannot be read ('utf-8' codec can't decode"),
    (b'{"a": 1}', "a JSON array of records was expected, not dict"),
], ids=["empty", "too deep", "not UTF-8", "not an array"])
def test_an_unreadable_file_gives_one_warning(tmp_path, body, says):
    files, warnings = _read(tmp_path, body)
    assert files is None
    assert says in warnings["layer-files-unreadable"]


def test_a_layer_file_beyond_the_input_bound_is_not_read(tmp_path):
    folder = tmp_path / "input"
    shutil.copytree(SOURCE, folder)
    body = (SOURCE / "tensor_location.json").read_bytes()
    (folder / "tensor_location.json").write_bytes(body + b" " * (1 << 20))    # 1 MB + the file
    meta = Meta(source="pmu")
    assert read_layer_files(folder, meta, 1) is None
    (warning,) = meta.warnings
    assert (warning.code, warning.where) == ("layer-files-unreadable", str(folder / "tensor_location.json"))
    assert "larger than the input limit of 1 MB" in warning.message
