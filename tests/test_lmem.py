"""Local memory (analysis/lmem_access.py, analysis/lmem.py) against the golden cases of
``../shared/data/lmem`` (spec lmem-view.md): the vendor 0.3.0's records, right and wrong, and
the spec's own accesses, live pieces and summary (written by the spec's reference
implementation, a separate program)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import lmem_oracle
from shared_data import DATA
from reportgen.analysis.lmem import local_memory
from reportgen.analysis.lmem_access import geometry, ALIGNED, FREE
from reportgen.parsers.pmu.dump import load_dump

LMEM = DATA / "lmem"
CASES = ("aks-m2-lmem-basic", "aks-m2-lmem-kernels")
GEOMETRY = ("local_addr", "start_lane", "lanes", "lane_offset", "extent_bytes", "data_bytes_per_lane",
            "first_bank", "last_bank")
KEY = ["core", "engine", "global_idx", "access", "operand"]


@pytest.fixture(scope="module", params=CASES)
def case(request):
    path = LMEM / request.param
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    profile = load_dump(path / "input")
    return path, profile, local_memory(profile, detail=True)


def _ours(lm) -> pd.DataFrame:
    a = lm.accesses.copy()
    a["local_addr"] = [hex(int(x)) for x in a["local_addr"]]
    return a


def test_every_access_of_the_spec_with_its_geometry(case):
    path, _, lm = case
    gold = pd.read_csv(path / "lmem_accesses.csv")
    ours = _ours(lm)
    assert ours["decoded"].all()
    m = gold.merge(ours, on=KEY, how="outer", suffixes=("_gold", ""), indicator=True)
    assert (m["_merge"] == "both").all(), m[m["_merge"] != "both"][KEY]
    for col in GEOMETRY + ("start_ns", "end_ns"):
        gold_v = m[f"{col}_gold"].astype(str) if col == "local_addr" else m[f"{col}_gold"].astype(np.int64)
        assert (gold_v.to_numpy() == m[col].to_numpy()).all(), col


def test_vendor_records_right_reproduced_wrong_not(case):
    path, _, lm = case
    rec = pd.read_csv(path / "lmem_records.csv", keep_default_na=False)
    ours = lm.accesses
    access = rec["lmem_access"].map({"write": "W", "read": "R"})
    operand = rec["operand"].replace({"opd0+opd1": "opd0"})       # the vendor's V4 record: opd0's
    m = pd.DataFrame({"core": rec["core"], "engine": rec["engine"], "global_idx": rec["global_idx"],
                      "access": access, "operand": operand}).merge(ours, on=KEY, how="left")
    assert m["lane_offset"].notna().all()
    right = ~rec["vendor_errors"].str.contains("V1|V2|V3|V4")
    assert right.sum() == {"aks-m2-lmem-basic": 60, "aks-m2-lmem-kernels": 30}[path.name]
    # right on geometry: address, bytes per lane, bank and read/write reproduced exactly
    r, g = m[right.to_numpy()], rec[right]
    assert (r["lane_offset"].to_numpy() == g["lane_local_addr"].to_numpy()).all()
    assert (r["extent_bytes"].to_numpy() == g["bytes_per_lane"].astype(float).to_numpy()).all()
    assert (("BANK[" + r["first_bank"].astype(str) + "]").to_numpy() == g["bank"].to_numpy()).all()
    # wrong: ours are the spec's values, and differ from the vendor's where its error says
    w, g = m[~right.to_numpy()], rec[~right]
    assert (w["lane_offset"].to_numpy() == g["spec_lane_offset"].to_numpy()).all()
    assert (w["extent_bytes"].to_numpy() == g["spec_extent_bytes"].to_numpy()).all()
    assert (w["first_bank"].to_numpy() == g["spec_first_bank"].to_numpy()).all()
    v1 = g["vendor_errors"].str.contains("V1").to_numpy()
    assert (w["lane_offset"].to_numpy()[v1] != g["lane_local_addr"].to_numpy()[v1]).all()
    size = g["vendor_errors"].str.contains("V2|V3|V4").to_numpy()
    assert (w["extent_bytes"].to_numpy()[size] != g["bytes_per_lane"].astype(float).to_numpy()[size]).all()


def test_live_pieces_equal_the_spec(case):
    path, profile, lm = case
    gold = pd.read_csv(path / "lmem_live.csv", keep_default_na=False)
    label = (profile.commands["engine"].astype(str) + "/" + profile.commands["global_idx"].astype(str)).to_numpy()
    p = lm.pieces
    ours = pd.DataFrame({
        "core": p["core"], "lo": p["lo"], "hi": p["hi"],
        "writer": np.where(p["writer"] >= 0, label[np.maximum(p["writer"], 0)], ""),
        "start": p["start_ns"].astype(float), "end": p["end_ns"].astype(float), "status": p["status"],
        "over": np.where(p["overwritten_by"] >= 0, label[np.maximum(p["overwritten_by"], 0)], ""),
        "overlap": p["overlap_ns"].astype(float)})
    theirs = pd.DataFrame({
        "core": gold["core"], "lo": gold["lane_offset_lo"], "hi": gold["lane_offset_hi"],
        "writer": gold["writer"], "start": gold["live_start_ns"].astype(float),
        "end": gold["live_end_ns"].astype(float), "status": gold["status"],
        "over": gold["overwritten_by"], "overlap": gold["overlap_ns"].astype(float)})
    key = list(ours.columns)
    assert ours.sort_values(key).to_numpy().tolist() == theirs.sort_values(key).to_numpy().tolist()


def test_peaks_conflicts_and_same_bank_operands(case):
    path, profile, lm = case
    gold = json.loads((path / "lmem_summary.json").read_text())
    for core, g in gold.items():
        row = lm.cores[lm.cores["core"] == int(core)].iloc[0]
        assert row["peak_bytes"] == g["peak_bytes"] and row["peak_at_ns"] == g["peak_at_ns"]
        assert row["accesses"] == g["accesses"] and row["undecoded"] == g["undecoded"]
        banks = lm.banks[lm.banks["core"] == int(core)]
        assert banks["peak_bytes"].tolist() == [b["peak_bytes"] for b in g["banks"]]
        assert np.nan_to_num(banks["peak_at_ns"].to_numpy(float), nan=-1).tolist() == \
            [-1 if b["peak_at_ns"] is None else b["peak_at_ns"] for b in g["banks"]]
        # (detail: every candidate, ranked by stall x overlap) in the golden's order
        conf = lm.conflicts[lm.conflicts["core"] == int(core)].sort_values(["dma_row", "tiu_row"])
        assert [(r.dma, r.tiu, r.overlap_start_ns, r.overlap_ns, list(r.banks), r.dma_operands,
                 r.tiu_operands, r.dma_stall_cycles) for r in conf.itertuples()] == \
            [(c["dma"], c["tiu"], c["overlap_start_ns"], c["overlap_ns"], c["banks"], c["dma_operands"],
              c["tiu_operands"], c["dma_stall_cycles"]) for c in g["conflict_candidates"]]
        label = (profile.commands["engine"].astype(str) + "/" + profile.commands["global_idx"].astype(str)).to_numpy()
        same = lm.same_bank[profile.commands["core"].to_numpy()[lm.same_bank["row"]] == int(core)]
        ours = {}
        for r in same.itertuples(index=False):
            ours.setdefault(label[r.row], []).append(f"{r.a}+{r.b} bank {r.banks}")
        assert {k: sorted(v) for k, v in ours.items()} == \
            {s["tiu"]: sorted(s["pairs"]) for s in g["tiu_same_bank_operands"]}
        assert row["tiu_same_bank"] == len(g["tiu_same_bank_operands"])


def test_geometry_worked_example_and_lane_wrap():
    # spec §2.4: BF16 1x256x1x384 at lane 2 offset 0, strides 98304/384/384/1 -> 3,840 B, bank 0
    g = geometry(np.array([0x80000]), (1, 256, 1, 384), np.array([2.0]), FREE,
                 (np.array([98304]), np.array([384]), np.array([384]), np.array([1])))
    assert (g["start_lane"][0], g["lane_offset"][0], g["extent_bytes"][0], g["data_bytes_per_lane"][0],
            g["first_bank"][0], g["last_bank"][0]) == (2, 0, 3840, 3072, 0, 0)
    # aligned FP16 100x200 matrix at lane 0: cs = align_up(200, 32) = 224 -> (224 + 200) x 2 B
    g = geometry(np.array([0]), (1, 100, 1, 200), np.array([2.0]), ALIGNED)
    assert g["extent_bytes"][0] == 848 and g["data_bytes_per_lane"][0] == 800
    # lanes 62, 63, then 0, 1 (wrapping); all 64 from lane 0
    mask = geometry(np.array([62 << 18, 0]), (1, np.array([4, 64]), 1, 1), np.array([1.0, 1.0]), ALIGNED)["lane_mask"]
    assert [int(m) for m in mask] == [0b11 | (0b11 << 62), (1 << 64) - 1]


def test_no_descriptors_no_view():
    from reportgen.testing.profiles import make_profile
    assert local_memory(make_profile(cores=1, per_engine=50)) is None


def test_above_the_command_limit_the_view_is_skipped_and_said(monkeypatch):
    from reportgen.analysis import lmem
    path = LMEM / CASES[1] / "input"
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    profile = load_dump(path)
    monkeypatch.setattr(lmem, "MAX_COMMANDS", len(profile.commands) - 1)
    assert lmem.local_memory(profile) is None
    assert [w.code for w in profile.meta.warnings if w.code == "lmem"] == ["lmem"]


def _same_as_oracle(sub):
    """The interval sweep's pieces equal the old per-segment sweep's (tests/lmem_oracle.py), and
    its occupancy events give the same distinct times and the same sum per (bank, time)."""
    from reportgen.analysis.lmem import core_pieces
    new_p, new_e = core_pieces(sub)
    old_p, old_e = lmem_oracle.core_pieces(sub)
    assert new_p.dtypes.tolist() == old_p.dtypes.tolist()
    assert new_p.to_numpy().tolist() == old_p.to_numpy().tolist()

    def per_bank_time(e):
        _, bank, t, d = e
        sums = pd.DataFrame({"b": bank, "t": t, "d": d}).groupby(["b", "t"])["d"].sum()
        return sorted(set(t.tolist())), sums[sums != 0].to_dict()
    assert per_bank_time(new_e) == per_bank_time(old_e)
    return len(new_p)


@pytest.mark.parametrize("name", CASES)
def test_interval_sweep_equals_the_segment_sweep_on_the_goldens(name):
    from reportgen.analysis.lmem import sweep_columns
    from reportgen.analysis.lmem_access import accesses
    path = LMEM / name / "input"
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    acc = accesses(load_dump(path))
    cols = sweep_columns(acc[acc["decoded"].to_numpy(bool)])
    for c in np.unique(cols["core"]):
        assert _same_as_oracle({k: v[cols["core"] == c] for k, v in cols.items()}) > 0


def test_interval_sweep_equals_the_segment_sweep_on_a_synthetic_capture(tmp_path):
    from reportgen.analysis.lmem import sweep_columns
    from reportgen.analysis.lmem_access import accesses
    from reportgen.testing.synth import write_dump
    write_dump(tmp_path, arch="AKS", cores=2, cmds_per_core=4000, mode=2, seed=5, write_truth=False)
    acc = accesses(load_dump(tmp_path / "cdm_profile_data_dev0-0"))
    cols = sweep_columns(acc[acc["decoded"].to_numpy(bool)])
    assert len(np.unique(cols["core"])) == 2
    for c in np.unique(cols["core"]):
        assert _same_as_oracle({k: v[cols["core"] == c] for k, v in cols.items()}) > 1000


def test_interval_sweep_equals_the_segment_sweep_on_random_accesses():
    """Adversarial access sets: equal starts, zero durations, zero extents, reads of bytes never
    written, in-place operands, commands with more own reads than the race rule steps over,
    ranges crossing banks and the lane's end."""
    rng = np.random.default_rng(26)
    checked = 0
    for _ in range(150):
        ncmd = int(rng.integers(1, 50))
        per = rng.integers(1, 12, ncmd)                   # accesses per command
        row = np.repeat(np.arange(ncmd), per)
        n = len(row)
        cstart = rng.integers(0, 40, ncmd) * int(rng.choice([1, 10]))
        cend = cstart + rng.integers(0, 30, ncmd)
        grain = int(rng.choice([1, 64, 4096]))
        lo = rng.integers(0, int(rng.choice([2048, 1 << 18])), n) // grain * grain
        sub = {"core": np.full(n, 3, np.int64), "lane_offset": lo.astype(np.int64),
               "extent_bytes": rng.integers(0, int(rng.choice([300, 20_000, 70_000])), n),
               "start_ns": cstart[row], "end_ns": cend[row], "row": row * 7 + 100,
               "write": rng.random(n) < rng.random()}
        if not (~sub["write"] & (sub["extent_bytes"] > 0)).any():
            continue                    # the oracle cannot index an empty list of reads
        perm = rng.permutation(n)
        _same_as_oracle({k: np.asarray(v)[perm].astype(bool if k == "write" else np.int64)
                         for k, v in sub.items()})
        checked += 1
    assert checked > 100


def test_stable_order_is_numpys_stable_argsort():
    from lmem_oracle import stable_order               # the oracle's sort
    rng = np.random.default_rng(26)
    for top in (7, 1 << 16, 70_000, (1 << 32) - 1, 1 << 40):       # one pass, two passes, fallback
        keys = rng.integers(0, top, 100_000)
        assert (stable_order(keys) == np.argsort(keys, kind="stable")).all()
    assert len(stable_order(np.zeros(0, np.int64))) == 0


def test_same_bank_texts_of_masks_beyond_bank_15_are_one_category():
    """CV84X6 bmodel descriptors reach above bank 15: masks that differ only there read the same
    text and must share a category (the categorical needs unique categories)."""
    path = DATA / "pmu" / "cv84x6-bmodel-c4" / "input"
    if not path.exists():
        pytest.skip(f"shared data not present at {path}")
    lm = local_memory(load_dump(path), detail=True)
    banks = lm.same_bank["banks"]
    assert len(lm.same_bank) > 0 and banks.cat.categories.is_unique
    assert lm.cores["tiu_same_bank"].sum() == lm.same_bank["row"].nunique()


@pytest.mark.parametrize("name", [CASES[1], "synthetic"])
def test_report_view_equals_the_detailed_one_and_lists_the_top_conflicts(name, monkeypatch, tmp_path):
    """Without ``detail`` (the report) the per-core sums come from the sweep's parts, not the
    pieces, and only the first LISTED_CONFLICTS candidates per core are kept: the same counts
    and sums as the detailed view, and the listed rows are the detailed list's best ones by DMA
    Stall Cycle x overlap (ties: DMA row, then TIU row), re-ranked here with pandas."""
    from reportgen.analysis import lmem
    if name == "synthetic":
        from reportgen.testing.synth import write_dump
        write_dump(tmp_path, arch="AKS", cores=2, cmds_per_core=3000, mode=2, seed=3, write_truth=False)
        path = tmp_path / "cdm_profile_data_dev0-0"
    else:
        path = LMEM / name / "input"
        if not path.exists():
            pytest.skip(f"shared data not present at {path}")
    profile = load_dump(path)
    full = lmem.local_memory(profile, detail=True)
    p = full.pieces
    size = p["hi"] - p["lo"]
    for c in full.cores.itertuples(index=False):
        mine = p["core"] == c.core
        assert c.never_read_bytes == size[mine & (p["status"] == "never read")].sum()
        assert c.before_capture_bytes == size[mine & (p["status"] == "written before capture")].sum()
        assert c.races == (mine & (p["overlap_ns"] > 0)).sum()
        assert c.conflict_candidates == (full.conflicts["core"] == c.core).sum()
    assert full.cores["conflict_candidates"].max() > 3              # the cut below bites
    monkeypatch.setattr(lmem, "LISTED_CONFLICTS", 3)
    short = lmem.local_memory(profile)
    assert short.accesses is None and short.pieces is None and short.same_bank is None
    pd.testing.assert_frame_equal(short.cores, full.cores)
    pd.testing.assert_frame_equal(short.banks, full.banks)
    c = full.conflicts.assign(w=full.conflicts["dma_stall_cycles"].fillna(0) * full.conflicts["overlap_ns"])
    want = (c.sort_values(["core", "w", "dma_row", "tiu_row"], ascending=[True, False, True, True])
            .groupby("core").head(3).drop(columns="w").reset_index(drop=True))
    pd.testing.assert_frame_equal(short.conflicts.reset_index(drop=True), want)


def test_step_functions_exact_up_to_the_cap_then_maxima_per_bucket(monkeypatch):
    """core_steps: hand-made +/- events; below MAX_STEPS every distinct time keeps its level
    (after all events at that time); above it each bucket keeps the maximum of its levels,
    computed here independently with pandas."""
    from reportgen.analysis import lmem
    # bank 0: +100 at 0, +50 at 10, -100 at 20, -50 at 30; bank 1: +7 at 10, -7 at 25
    t = np.array([0, 10, 20, 30, 10, 25])
    d = np.array([100, 50, -100, -50, 7, -7])
    bank = np.array([0, 0, 0, 0, 1, 1])
    steps, peaks = lmem.core_steps(t, d, bank)
    assert steps["t"].tolist() == [0, 10, 20, 25, 30]
    assert steps["total"].tolist() == [100, 157, 57, 50, 0]
    assert steps["banks"][0].tolist() == [100, 150, 50, 50, 0] and steps["banks"][1].tolist() == [0, 7, 7, 0, 0]
    assert (peaks["total"][0], peaks["total"][1]) == (157, 10)
    rng = np.random.default_rng(4)
    t = np.sort(rng.integers(0, 10_000, 3000))
    d = rng.integers(1, 100, 3000) * np.where(np.arange(3000) % 2, -1, 1)
    bank = rng.integers(0, 16, 3000)
    exact, _ = lmem.core_steps(t, d, bank)
    monkeypatch.setattr(lmem, "MAX_STEPS", 50)
    cut, peaks = lmem.core_steps(t, d, bank)
    assert len(exact["t"]) > 50 and len(cut["t"]) <= 50
    edges = np.linspace(exact["t"][0], exact["t"][-1], 51)
    bucket = np.minimum(np.searchsorted(edges, exact["t"], side="right") - 1, 49)
    want = pd.DataFrame({"b": bucket, "t": exact["t"], "v": exact["total"]}).groupby("b").agg(t=("t", "min"), v=("v", "max"))
    assert cut["t"].tolist() == want["t"].tolist() and cut["total"].tolist() == want["v"].tolist()
    assert cut["total"].max() == exact["total"].max() == peaks["total"][0]
