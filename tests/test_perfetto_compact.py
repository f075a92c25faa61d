"""perfetto.pftrace's compact encoding (incremental clocks, counter values riding on slice
events ...) changes bytes, never content: the decoded content of a synthetic mode-2 capture
equals the one the plain encoding (absolute timestamps, a packet per counter point) produced,
stored once in tests/data/perfetto/ (made by the writer of commit 36c55036, before this encoding)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from perfetto_content import content
from reportgen.analysis.derive import derive
from reportgen.parsers.detect import load_profile
from reportgen.testing.synth import write_dump
from reportgen.writers import perfetto

GOLDEN = Path(__file__).parent / "data" / "perfetto" / "synth-m2-2x3000.content.json.gz"


def test_synth_capture_content_unchanged(tmp_path):
    write_dump(tmp_path / "d", arch="AKS", cores=2, cmds_per_core=3000, mode=2, seed=11, write_truth=False)
    prof = load_profile(str(tmp_path / "d" / "cdm_profile_data_dev0-0"), quiet=True)
    summary = derive(prof, categories={"monitor": None, "launch": None, "device": None})
    out = perfetto.write(prof, summary, tmp_path, quiet=True)
    got = json.loads(json.dumps(content(out)))             # tuples -> lists, as stored
    want = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    assert len(prof.commands) == 6100
    for part in ("tracks", "slices", "counters", "flows"):
        assert len(got[part]) == len(want[part]), part
        assert got[part] == want[part], part
