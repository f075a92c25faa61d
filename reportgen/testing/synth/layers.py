"""The compiler's layer files of a synthetic capture: ``tensor_location.json`` and ``final.mlir``
(shared/spec/layer-info.md §2-§3), and their truth ``expected_layers.csv``.

The capture is one compiled subnet per core (ids count on from the profile-init commands, so
the model's first command is Cmd Id 3, as in the golden captures). A model program of ``layers``
ops is drawn once and shared by all cores: global ops, zero-command ops (Reshape, Squeeze:
before == after) and layer groups (``tpu.Group``: a Load, one to three local compute ops and a
Store, repeated over 2-4 time steps, one record per step). Each core's TIU and GDMA commands,
in id order, are cut into consecutive stretches, one per record that uses the engine (at least
one command each); the last ``layer_tail`` commands of each engine belong to no record. Load
and Store records own GDMA commands only (their TIU pair holds the dependency id, below
``before``), local compute records TIU commands only, as TPU-MLIR writes them (§2.3).

``layer_format="old"`` writes the old variants: ``bdc_gdma_id(...)`` keys, no ``core_id`` or
``is_local`` (records of core 0 only, which an old file means), an anonymous module whose
attributes carry ``module.name`` with ``module.mode`` before ``module.FLOPs``, and the location
aliases before the module. Python loops here run per record (a few per op and core), never
per command.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.writers.atomic import atomic_open

GLOBAL_OPS = ("Conv2D", "MatMul", "Add", "Pool2D", "Active", "Softmax", "Permute", "Cast",
              "GroupNorm", "LayerNorm")          # GroupNorm: not a group (layer-info.md §3)
LOCAL_OPS = ("Conv2D", "Add", "Active", "Mul", "Pool2D")
ZERO_OPS = ("Reshape", "Squeeze")
WEIGHTED = {"Conv2D", "MatMul", "GroupNorm", "LayerNorm"}
INIT_CMDS = 2                                    # profile-init commands: Cmd Ids 1 and 2
LAYER_COLUMNS = ["record", "core", "subnet_id", "file_line", "opcode", "is_local", "group_line",
                 "tiu_cmd_first", "tiu_cmd_last", "gdma_cmd_first", "gdma_cmd_last"]


@dataclass
class Item:
    """One entry of the model program: a global op, a zero-command op or a layer group."""

    kind: str                        # "global", "zero" or "group"
    ops: list[str]                   # the op, or a group's local compute ops
    steps: int = 1                   # a group's time steps
    shape: tuple[int, ...] = ()      # output shape (n, c, h, w)
    line: int = 0                    # op line, or the tpu.Group line
    member_lines: tuple[int, ...] = ()   # group: Load, computes..., Store


def model_program(n_ops: int, rng: np.random.Generator) -> list[Item]:
    """Items whose ops (Load/Store included) number exactly ``n_ops``."""
    items, count = [], 0
    while count < n_ops:
        left, r = n_ops - count, rng.random()
        shape = (1, int(rng.choice([16, 32, 64])), int(rng.choice([7, 14, 28])),
                 int(rng.choice([7, 14, 28, 384])))
        if r < 0.25 and left >= 3:
            m = min(int(rng.integers(1, 4)), left - 2)
            items.append(Item("group", [str(x) for x in rng.choice(LOCAL_OPS, m)],
                              int(rng.integers(2, 5)), shape))
            count += m + 2
        else:
            zero = r > 0.92
            items.append(Item("zero" if zero else "global",
                              [str(rng.choice(ZERO_OPS if zero else GLOBAL_OPS))], 1, shape))
            count += 1
    return items


def _ttype(shape, addr=None) -> str:
    dims = "x".join(str(d) for d in shape)
    return f"tensor<{dims}xf16, {addr} : i64>" if addr is not None else f"tensor<{dims}xf16>"


def mlir_text(items: list[Item], name: str, flops: int, cores: int, old: bool) -> str:
    """final.mlir; sets every item's line numbers (1-based, as in the written file)."""
    locs: list[str] = []
    addr = 4310171648

    def loc(text: str) -> str:
        locs.append(text)
        return f"loc(#loc{len(locs)})"

    first, last = items[0].shape, items[-1].shape
    head = [f'  func.func @main(%arg0: {_ttype(first)} loc(unknown)) -> {_ttype(last)} {{',
            f'    %0 = "top.Input"(%arg0) {{do_preprocess = false}} : ({_ttype(first)}) -> '
            f'{_ttype(first, addr)} {loc("input")}',
            f'    %1 = call @subfunc_0(%0) : ({_ttype(first, addr)}) -> {_ttype(last)} loc(#loc)',
            f'    return %1 : {_ttype(last)} loc(#loc)', '  } loc(#loc)',
            f'  func.func @subfunc_0(%arg0: {_ttype(first, addr)} loc(unknown)) -> {_ttype(last)} '
            'attributes {id = 0 : i64, mode = #tpu<run_mode TPU_STATIC>, next_index = '
            'array<i32: -1>} {', '    %1 = "top.None"() : () -> none loc(#loc)']
    value, prev, prev_shape = 1, "%arg0", first
    lines: list[tuple[str, Item | None, str]] = []   # (text, item, role) in file order

    def op_line(op: str, ins: list[str], in_shapes, out_shape, indent="    ", attrs=""):
        nonlocal value, addr
        value += 1
        addr += 4096
        sig = ", ".join(_ttype(s, addr) for s in in_shapes)
        return (f'{indent}%{value} = "tpu.{op}"({", ".join(ins)}){attrs} : ({sig}) -> '
                f'{_ttype(out_shape, addr)} {loc(f"{op.lower()}_{value}")}')

    for it in items:
        if it.kind in ("global", "zero"):
            ins, shapes = [prev], [prev_shape]
            if it.ops[0] in WEIGHTED:
                value += 1
                w = (it.shape[1], prev_shape[1], 3, 3)
                lines.append((f'    %{value} = "top.Weight"() : () -> {_ttype(w, addr)} '
                              f'{loc(f"w_{value}")}', None, ""))
                ins, shapes = [prev, f"%{value}"], [prev_shape, w]
            lines.append((op_line(it.ops[0], ins, shapes, it.shape), it, "op"))
        else:
            value += 1
            group = value
            lines.append((f'    %{group} = "tpu.Group"({prev}) ({{', it, "group"))
            lines.append((op_line("Load", [prev], [prev_shape], prev_shape, "      ",
                                  " {do_bcast = false}"), it, "member"))
            for op in it.ops:
                lines.append((op_line(op, [f"%{value}"], [prev_shape], it.shape, "      ",
                                      f" {{ginfo = #tpu.lg<id = {value + 1}, stage = 1>}}"),
                              it, "member"))
            lines.append((op_line("Store", [f"%{value}", "%1"], [it.shape], it.shape, "      "),
                          it, "member"))
            lines.append((f'      "tpu.Yield"(%{value}) : ({_ttype(it.shape)}) -> () loc(#loc)',
                          None, ""))
            lines.append((f'    }}) {{flow = [-1, 1, 2, -2], group_type = 0 : i64, hsecs = 1 : i64, '
                          f'nsecs = {it.steps} : i64}} : ({_ttype(prev_shape)}) -> '
                          f'{_ttype(it.shape)} {loc(f"group_{group}")}', None, ""))
            prev, prev_shape = f"%{group}", it.shape     # the group's result
            continue
        prev, prev_shape = f"%{value}", it.shape
    body = [t for t, _, _ in lines]
    tail = [f'    return {prev} : {_ttype(last)} loc(#loc)', '  } loc(#loc)', '} loc(#loc)']
    aliases = ['#loc = loc(unknown)'] + [f'#loc{i + 1} = loc("{t}")' for i, t in enumerate(locs)]
    if old:
        module = (f'module attributes {{module.name = "{name}", module.mode = "F16", '
                  f'module.FLOPs = {flops} : i64, module.chip = "bm1690"}} {{')
        text = aliases + [module] + head + body + tail
        start = len(aliases) + 1 + len(head)
    else:
        module = (f'module @{name} attributes {{module.FLOPs = {flops} : i64, module.chip = '
                  f'"bm1690", module.cores = {cores} : i64, module.mode = "F16", module.platform'
                  f' = "ONNX", module.state = "TPU_ADDRESSED"}} {{')
        text = [module] + head + body + tail + aliases
        start = 1 + len(head)
    members: dict[int, list[int]] = {}
    for i, (_, it, role) in enumerate(lines):
        line = start + i + 1
        if role in ("op", "group"):
            it.line = line
        elif role == "member":
            members.setdefault(id(it), []).append(line)
    for it in items:
        if it.kind == "group":
            it.member_lines = tuple(members[id(it)])
    return "\n".join(text) + "\n"


def _records_of(items: list[Item]) -> pd.DataFrame:
    """The records one core gets, in codegen order: kind, op, line, group line, shape."""
    rows = []
    for it in items:
        if it.kind != "group":
            rows.append((it.kind, it.ops[0], it.line, -1, it))
            continue
        for _ in range(it.steps):
            lines = it.member_lines
            rows.append(("load", "Load", lines[0], it.line, it))
            rows += [("local", op, ln, it.line, it) for op, ln in zip(it.ops, lines[1:-1])]
            rows.append(("store", "Store", lines[-1], it.line, it))
    return pd.DataFrame(rows, columns=["kind", "op", "line", "group_line", "item"])


def _split(n_cmds: int, users: np.ndarray, rng, what: str, core: int) -> np.ndarray:
    """Commands per record: >= 1 for every user, 0 otherwise, ``n_cmds`` in total."""
    k = int(users.sum())
    if k > n_cmds:
        raise ValueError(f"layers: core {core} has {n_cmds} {what} commands for {k} records "
                         "that need one each; use more commands per core or fewer layers")
    share = rng.gamma(1.0, size=k)
    out = np.zeros(len(users), np.int64)
    out[users] = 1 + rng.multinomial(n_cmds - k, share / share.sum()) if k else 0
    return out


def layer_records(items: list[Item], counts: dict[int, tuple[int, int]], tail: int,
                  rng: np.random.Generator, old: bool) -> pd.DataFrame:
    """Every record of every core with its counters and its owned Cmd Ids (the truth).
    ``counts[core]`` = (TIU, GDMA) commands of the core after the profile-init ones."""
    per_core = _records_of(items)
    kind = per_core["kind"].to_numpy()
    tiu_user = np.isin(kind, ["global", "local"])
    gdma_user = np.isin(kind, ["global", "load", "store"])
    parts = []
    for core, (n_tiu, n_gdma) in counts.items():
        if old and core:
            break                                  # an old file knows core 0 only
        t = _split(n_tiu - tail, tiu_user, rng, "TIU", core)
        g = _split(n_gdma - tail, gdma_user, rng, "GDMA", core)
        b0 = INIT_CMDS + np.cumsum(t) - t
        b1 = INIT_CMDS + np.cumsum(g) - g
        a0 = b0 + t
        a1 = b1 + g
        a0 = np.where(kind == "store", b0 - 1, a0)       # the dependency id, not a command
        a1 = np.where(kind == "local", b1 - 1, a1)
        df = per_core.assign(core=core, b0=b0, b1=b1, a0=a0, a1=a1)
        parts.append(df)
    out = pd.concat(parts, ignore_index=True)
    out.insert(0, "record", np.arange(len(out)))
    return out


def _tensor(shape, addr: int, local: bool) -> dict:
    dims = "x".join(str(d) for d in shape)
    obj = {"name": f"t_{addr}", "address": addr, "memory_type": f"<{dims}xf16>",
           "shape": list(shape), "layout": "eu_align" if local else "continuous",
           "type": f"tensor<{dims}xf16, {addr} : i64>", "reshape": "", "slice": "[...]"}
    if local:
        n, c, h, w = shape
        obj["reshape"] = f"<{n}x{c}x1x{h}x{w}>"
        obj["slice"] = f"[0:{n}, 0:{c}, 0:1, 0:{h}, 0:{w}]"
    return obj


def tensor_location(records: pd.DataFrame, old: bool) -> list[dict]:
    out = []
    pairs = ("bdc_gdma_id(before)", "bdc_gdma_id(after)") if old else \
        ("tiu_dma_id(before)", "tiu_dma_id(after)")
    for r in records.itertuples(index=False):
        local = r.kind in ("load", "local", "store")
        rec = {"file-line": int(r.line), "subnet_id": 0}
        if not old:
            rec["core_id"] = int(r.core)
        rec["opcode"] = f"tpu.{r.op}"
        if not old:
            rec["is_local"] = bool(local)
        rec[pairs[0]] = [int(r.b0), int(r.b1)]
        rec[pairs[1]] = [int(r.a0), int(r.a1)]
        shape = r.item.shape
        rec["operands"] = [_tensor(shape, 4096 * (1 + r.record % 997), local and r.kind != "load"),
                           {}]
        rec["results"] = [_tensor(shape, 8192 * (1 + r.record % 997), local and r.kind != "store")]
        if not old:
            rec["buffers"] = []
        out.append(rec)
    return out


def truth_table(records: pd.DataFrame) -> pd.DataFrame:
    """expected_layers.csv: the Cmd Ids each record owns, (before, after] (empty: none)."""
    def owned(before, after):
        has = after > before
        first = pd.array(np.where(has, before + 1, 0), "Int64")
        last = pd.array(np.where(has, after, 0), "Int64")
        first[~has], last[~has] = pd.NA, pd.NA
        return first, last
    tf, tl = owned(records["b0"].to_numpy(), records["a0"].to_numpy())
    gf, gl = owned(records["b1"].to_numpy(), records["a1"].to_numpy())
    return pd.DataFrame({
        "record": records["record"], "core": records["core"], "subnet_id": 0,
        "file_line": records["line"], "opcode": "tpu." + records["op"],
        "is_local": np.where(records["kind"].isin(["load", "local", "store"]), "true", "false"),
        "group_line": pd.array(records["group_line"].where(records["group_line"] >= 0), "Int64"),
        "tiu_cmd_first": tf, "tiu_cmd_last": tl, "gdma_cmd_first": gf, "gdma_cmd_last": gl,
    })[LAYER_COLUMNS]


def write_layer_files(dump: Path, outdir: Path, cfg, rows_by_core: dict[int, dict],
                      rng: np.random.Generator, write_truth: bool) -> pd.DataFrame:
    """Write tensor_location.json and final.mlir into the dump, expected_layers.csv beside it."""
    old = cfg.layer_format == "old"
    items = model_program(cfg.layers, rng)
    name = f"synth_{cfg.layers}_ops"
    text = mlir_text(items, name, int(rng.integers(10**8, 10**10)), cfg.cores, old)
    counts = {}
    for core, rows in rows_by_core.items():
        model = rows["kernel"] >= 0
        counts[core] = (int((model & (rows["engine"] == "TIU")).sum()),
                        int((model & (rows["engine"] == "GDMA")).sum()))
    records = layer_records(items, counts, cfg.layer_tail, rng, old)
    (dump / "final.mlir").write_text(text)
    with (dump / "tensor_location.json").open("w") as fh:
        json.dump(tensor_location(records, old), fh, indent=2)
        fh.write("\n")
    truth = truth_table(records)
    if write_truth:
        with atomic_open(outdir / "expected_layers.csv", newline="") as fh:
            truth.to_csv(fh, index=False)
    return truth
