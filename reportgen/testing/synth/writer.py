"""The dump writer: lays out every core's counters, writes the core and CDMA port files,
global.profile, the truth and generator_meta.json; a dump appears complete or not at all."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.testing import dumpformat as df
from reportgen.testing.synth.bmodel import descriptor_blocks, pick_dynamic
from reportgen.testing.synth.catalogue import OP_INDEX
from reportgen.testing.synth.config import SynthConfig
from reportgen.testing.synth.descriptors import register_layouts
from reportgen.testing.synth.layers import write_layer_files
from reportgen.testing.synth.dyn import dyn_blocks
from reportgen.testing.synth.records import U32, cdma_records, dma_records, tiu_records
from reportgen.testing.synth.rows import core_rows
from reportgen.testing.synth.schedule import plan
from reportgen.testing.synth.truth import truth_table
from reportgen.writers.atomic import atomic_open

ID_WRAP_DANGER = (65001, 65535)  # a run must not end at a raw id here when a reset follows (§15.4)


@dataclass
class SynthResult:
    dump_dir: Path
    truth: pd.DataFrame
    meta: dict
    files: dict[str, int]          # file name -> size in bytes
    layers: pd.DataFrame | None = None   # expected_layers.csv (layer captures)


class DumpWriter:
    """Writes one dump of a configuration; every random draw comes from one generator seeded by
    ``cfg.seed``, in a fixed order, so the same configuration gives the same bytes."""

    def __init__(self, cfg: SynthConfig):
        self.cfg = cfg.resolved()
        self.rng = np.random.default_rng(self.cfg.seed)
        self.chip = df.CHIPS[self.cfg.arch]
        self.codes = df.ENGINE_CODES[self.cfg.arch]
        self.layouts = register_layouts(self.cfg.arch)

    def write(self, outdir: Path) -> SynthResult:
        cfg = self.cfg
        outdir = Path(outdir)
        final = outdir / cfg.dump_name
        _check_replaceable(final)
        outdir.mkdir(parents=True, exist_ok=True)
        # the dump is built in a hidden sibling folder and renamed when complete
        dump = Path(tempfile.mkdtemp(prefix=f".{cfg.dump_name}.", suffix=".part", dir=outdir))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(dump, 0o777 & ~umask)            # mkdtemp makes it private
        try:
            result = self._write(outdir, dump)
            _replace_dir(dump, final)
        except BaseException:
            shutil.rmtree(dump, ignore_errors=True)
            raise
        result.dump_dir = final
        return result

    def _write(self, outdir: Path, dump: Path) -> SynthResult:
        cfg, rng = self.cfg, self.rng
        programs, seq, rvt_kernels, des_kernels, submitter = plan(cfg, rng)
        if not cfg.layers:              # a layer capture has no id resets
            self._check_runs(programs)
        dyn_kernels = pick_dynamic(programs, cfg.dyn_ratio, rng) if cfg.dyn_ratio else []
        if cfg.bmodel and not cfg.dyn_ratio:
            for p in programs.values():
                for run in p.kernels:
                    run.in_blocks = True
        files: dict[str, int] = {}
        counts: dict[str, int] = {}
        sync_ns = {}
        bases = {}
        rows_by_core = {}
        anchor = self.chip["core_num"] - 1
        span_guess = max(int(max((r.cmds.cols["end"].max() for p in programs.values()
                                  for r in p.kernels), default=0)), 0) + 20000
        # The TIU counter ticks at tiu_freq, DMA at 1 GHz, from the same reset: a core's TIU and
        # DMA times agree after ns conversion only while neither counter has wrapped more often
        # than the other, so the faster counter must stay below 2^32 (except the wrap option).
        top = int(U32 * 1000 / max(cfg.tiu_freq, 1000))
        for core in range(cfg.cores):
            if cfg.time_wrap and core == 0:
                # the faster counter wraps 3-5 us after the sync point, in the first kernel
                base = int((U32 - 3000 - int(rng.integers(0, 2000))) * 1000
                           / max(cfg.tiu_freq, 1000))
            elif core == cfg.ring_core:
                # below 2^31: a lap's step back in time then cannot pass for a u32 wrap (the
                # reference's wrap rule needs the previous end above 2^31, §9.1 step 4)
                base = int(rng.integers(100_000_000, max((1 << 31) - span_guess, 100_000_001)))
            else:
                hi = max(top - span_guess - 10_000_000, 200_000_000)
                base = int(rng.integers(100_000_000, hi))
            bases[core] = base
            rows_by_core[core] = core_rows(programs[core], base, cfg.tiu_freq,
                                           id_resets=not cfg.layers)
        # ring buffer: the lapped core keeps its last `cap` GDMA records (rotated)
        ring = self._ring_plan(rows_by_core) if cfg.ring_core is not None else None
        max_rec = cfg.max_record_num
        if ring is not None:
            max_rec = ring["cap"]
        longest = max(int(((r["engine"] == e)).sum()) for r in rows_by_core.values()
                      for e in ("TIU", "GDMA", "SDMA"))
        if ring is None and longest >= max_rec:
            max_rec = 1 << int(longest).bit_length()
        for core in range(cfg.cores):
            rows = rows_by_core[core]
            blob, n_by_eng, tsync = self._core_file(core, rows, programs[core], ring)
            name = f"cdmlib0_{core}.profile"
            (dump / name).write_bytes(blob)
            files[name] = len(blob)
            for e in ("tiu", "gdma", "sdma"):
                counts[f"core{core}_{e}_record"] = n_by_eng[e.upper()]
            sync_ns[core] = tsync
        # CDMA ports
        port_rows = {}
        for i, p in enumerate(cfg.cdma_ports):
            blob, prow = self._port_file(p, i, programs, submitter[p])
            name = f"cdma_{p}.profile"
            (dump / name).write_bytes(blob)
            files[name] = len(blob)
            counts[f"cdma_port{p}_record"] = len(prow["start_raw"])
            port_rows[p] = prow
        # the bmodel runtime marks its captures with a bare `bmodel` line and writes arch 5/6
        lines = ["bmodel", f"arch={self.chip['bmodel_arch']}"] if cfg.bmodel else \
            [f"arch={self.chip['arch']}"]
        lines += [f"tpu_freq={cfg.tiu_freq}",
                 f"max_record_num={max_rec}", f"core_num={cfg.cores}"]
        if ring is None:
            lines += [f"{k}={v}" for k, v in counts.items()]
        lines.append(f"tail_offset_ns={cfg.tail_offset_ns}")
        gp = "\n".join(lines) + "\n"
        (dump / "global.profile").write_text(gp)
        files["global.profile"] = len(gp)
        truth = truth_table(cfg, rows_by_core, programs, port_rows, sync_ns, anchor, ring)
        layers = (write_layer_files(dump, outdir, cfg, rows_by_core, rng, cfg.write_truth)
                  if cfg.layers else None)
        for name in ("tensor_location.json", "final.mlir") if cfg.layers else ():
            files[name] = (dump / name).stat().st_size
        meta = {
            "arch": cfg.arch, "cores": cfg.cores, "mode": cfg.mode, "seed": cfg.seed,
            "tiu_freq": cfg.tiu_freq, "cmds_per_core": cfg.cmds_per_core,
            "kinds": list(dict.fromkeys(seq)),
            "func_names": [] if cfg.mode == 0 else list(dict.fromkeys(
                r.func for p in programs.values() for r in p.kernels)),
            "kernel_sequence": seq,
            "kernel_sequence_funcs": {str(c): [r.func for r in programs[c].kernels]
                                      for c in range(cfg.cores)},
            "cdma_ports": list(cfg.cdma_ports),
            "cdma_submitters": {str(p): c for p, c in submitter.items()},
            "anchor": anchor if cfg.cdma_ports else None, "des_kernels": des_kernels,
            "batch_idx": cfg.batch_idx,
            "rvt_kernels": rvt_kernels, "idle_cores": list(cfg.idle_cores),
            "id_wrap": cfg.id_wrap, "time_wrap": cfg.time_wrap, "ring_core": cfg.ring_core,
            "ring_capacity": ring["cap"] if ring else None, "max_record_num": max_rec,
            "counter_base": {str(c): b for c, b in bases.items()},
            "tail_offset_ns": cfg.tail_offset_ns, "bmodel": cfg.bmodel,
            "dyn_kernels": dyn_kernels, "compat": "0.3.7",
            "edge_markers": False, "trace": None,
            "generator": "reportgen.testing.synth", "dump_dir": cfg.dump_name,
            "commands": int(len(truth)),
            "layers": cfg.layers, "layer_format": cfg.layer_format if cfg.layers else None,
            "layer_records": None if layers is None else int(len(layers)),
        }
        sim = next((p.sim for p in programs.values() if p.sim is not None), None)
        if sim is not None:     # dataflow timing: the simulation's own critical path
            span_start = min(int(p.init.cols["start"].min()) for p in programs.values())
            meta["critical_path"] = sim.critical_path(span_start)
            meta["speedup"] = {"engine": cfg.speedup_engine, "factor": cfg.speedup}
        if cfg.write_truth:
            with atomic_open(outdir / "expected_commands.csv", newline="") as fh:
                truth.to_csv(fh, index=False)
        with atomic_open(outdir / "generator_meta.json") as fh:
            fh.write(json.dumps(meta, indent=1) + "\n")
        return SynthResult(dump, truth, meta, files, layers)

    # -- decoder-constraint checks --------------------------------------------------------
    def _check_runs(self, programs):
        """§15.4: no id run may end at a raw 16-bit id in 65001..65535 when a reset follows."""
        for p in programs.values():
            for ki, run in enumerate(p.kernels[:-1]):
                for e in ("TIU", "GDMA", "SDMA"):
                    n = int((run.cmds.cols["engine"] == e).sum())
                    if n and ID_WRAP_DANGER[0] <= (n - 1) % 65536 <= ID_WRAP_DANGER[1]:
                        raise ValueError(f"core {p.core} kernel {ki}: {e} run ends in the "
                                           "16-bit id-wrap window; use another seed")

    def _ring_plan(self, rows_by_core):
        """Lap the ring core's GDMA ring so that it keeps 2 records of one kernel + all later
        kernels complete; the decoder drops those 2 as 'init' (Q12) and pairs the rest."""
        core = self.cfg.ring_core
        rows = rows_by_core[core]
        g = np.flatnonzero(rows["engine"] == "GDMA")
        g = g[np.argsort(rows["start_raw"][g], kind="stable")]
        kern = rows["kernel"][g]
        cut_k = 1                               # kernel 0 is the overwritten prefetch kernel
        spans = [int((kern == k).sum()) for k in set(kern[kern >= 0].tolist())]
        if spans.count(int((kern == 0).sum())) > 1:
            raise ValueError("ring: prefetch span not unique; use another seed")
        first_kept = int(np.flatnonzero(kern == cut_k)[0])
        if first_kept < 4:
            raise ValueError("ring: kernel boundary too early")
        keep_from = first_kept - 2              # 2 tail records of the previous kernel
        cap = len(g) - keep_from
        others = [int((r["engine"] == e).sum()) for c, r in rows_by_core.items()
                  for e in ("TIU", "GDMA", "SDMA") if not (c == core and e == "GDMA")]
        if max(others) >= cap:
            raise ValueError("ring: another stream is longer than the lapped GDMA ring "
                             f"({max(others)} >= {cap}); the ring core needs more GDMA work")
        return {"core": core, "cap": cap, "keep_from": keep_from, "lost_kernels_before": cut_k}

    # -- core file --------------------------------------------------------------------------
    def _core_file(self, core, rows, prog, ring):
        cfg, rng = self.cfg, self.rng
        eng = rows["engine"]
        blocks = []
        n_by = {}
        tsync = None
        for bt, e in ((df.BlockType.MONITOR_BD, "TIU"), (df.BlockType.MONITOR_GDMA, "GDMA"),
                      (df.BlockType.MONITOR_SDMA, "SDMA")):
            m = np.flatnonzero(eng == e)
            # PMU records are in completion/slot order = time order per engine
            m = m[np.argsort(rows["start_raw"][m], kind="stable")]
            sub = {k: rows[k][m] for k in ("start_raw", "end_raw", "pmu_id", "op", "bytes")}
            rec = tiu_records(sub, rng) if e == "TIU" else dma_records(sub, rng)
            if ring and core == ring["core"] and e == "GDMA":
                kept = rec[ring["keep_from"]:]
                lap = len(rec) % ring["cap"]          # ring slot of the next write
                rec = np.roll(kept, lap)
            if e == "TIU" and len(rec) >= 2:
                tsync = int(np.round(rows["end_raw"][m[1]] / cfg.tiu_freq * 1000))
            n_by[e] = len(rec)
            blocks.append(df.block_bytes(bt, rec.tobytes()))
        if cfg.bmodel:
            blocks += descriptor_blocks(rows, prog, self.layouts)
            if any(not run.in_blocks for run in prog.kernels):
                words, _, _ = dyn_blocks(rows, prog, cfg.mode, self.codes, self.layouts)
                blocks.append(df.block_bytes(df.BlockType.DYN_DATA, words.tobytes()))
        elif cfg.mode >= 1:
            words, extra, kv_blocks = dyn_blocks(rows, prog, cfg.mode, self.codes, self.layouts,
                                                 id_resets=not cfg.layers)
            for kv in kv_blocks:       # writers emit 3, 4, 11, 17..., 6, 5 (§4)
                blocks.append(df.block_bytes(df.BlockType.BLOCK_DES_KV, kv))
            if cfg.mode == 2:
                blocks.append(df.block_bytes(df.BlockType.DYN_EXTRA, extra))
            blocks.append(df.block_bytes(df.BlockType.DYN_DATA, words.tobytes()))
        return b"".join(blocks), n_by, tsync

    # -- CDMA port file ---------------------------------------------------------------------
    def _port_file(self, port, port_idx, programs, submitter):
        """cdma_<port>.profile: tx_wait + nop sync pair, then one launch per kernel (§9.4)."""
        rng = self.rng
        # the anchor's VSDMA send for this port ends at phys t = 400 + 150*i + 11
        vs_end = 400 + 150 * port_idx + 11
        off = int(rng.integers(50_000_000, 500_000_000))
        sync_s = np.array([vs_end - 5411 - int(rng.integers(0, 200)), vs_end + 30])
        sync_e = np.array([vs_end, vs_end + 41])
        parts_s, parts_e, parts_id, parts_op, parts_b = [sync_s], [sync_e], \
            [np.array([4000 + 16 * port, 4001 + 16 * port])], \
            [np.array([OP_INDEX["cd_tx_wait"], OP_INDEX["cd_nop"]])], [np.zeros(2, np.int64)]
        for run in programs[submitter].kernels:
            c = run.cmds.cols
            m = (c["engine"] == "CDMA") & (c["port"] == port)
            if not m.any():
                continue
            o = np.argsort(c["start"][m], kind="stable")
            parts_s.append(c["start"][m][o]); parts_e.append(c["end"][m][o])
            parts_id.append(np.arange(1, m.sum() + 1)); parts_op.append(c["op"][m][o])
            parts_b.append(c["bytes"][m][o])
        rows = {"start_raw": np.concatenate(parts_s) + off, "end_raw": np.concatenate(parts_e) + off,
                "pmu_id": np.concatenate(parts_id), "op": np.concatenate(parts_op),
                "bytes": np.concatenate(parts_b)}
        rec = cdma_records(rows, rng)
        rows["phys_start"] = np.concatenate(parts_s)
        rows["phys_end"] = np.concatenate(parts_e)
        return df.block_bytes(df.BlockType.MONITOR_CDMA, rec.tobytes()), rows


DUMP_FILE_PATTERNS = ("global.profile", "cdmlib*.profile", "cdma*.profile",
                      "tensor_location.json", "final.mlir")


def _dump_files(d: Path) -> set[Path]:
    return {p for pat in DUMP_FILE_PATTERNS for p in d.glob(pat)}


def _check_replaceable(final: Path) -> None:
    """An existing target is replaced only if it holds nothing but dump files."""
    if final.exists():
        if not final.is_dir():
            raise ValueError(f"{final} exists and is not a directory")
        other = set(final.iterdir()) - _dump_files(final)
        if other:
            raise ValueError(f"{final} exists and holds other files ({sorted(other)[0].name}); "
                             "refusing to replace it")


def _replace_dir(new: Path, final: Path) -> None:
    """Move the finished dump into place; an older dump is removed only after that."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{new.name}")
        final.rename(old)
    new.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_dump(outdir, cfg: SynthConfig | None = None, **kwargs) -> SynthResult:
    """Write a synthetic dump and its truth under ``outdir`` (see the package docstring)."""
    cfg = cfg or SynthConfig(**kwargs)
    return DumpWriter(cfg).write(Path(outdir))
