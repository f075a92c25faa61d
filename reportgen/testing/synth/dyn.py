"""DYN_DATA node words, DYN_EXTRA descriptor entries and BLOCK_DES_KV chains of one core, in
program order (§6, §7)."""
from __future__ import annotations

import numpy as np

from reportgen.testing import dumpformat as df
from reportgen.testing.synth.catalogue import OP_DST_MEM, OP_EU, OP_LAYOUT, OP_SRC_MEM, OP_TYP
from reportgen.testing.synth.descriptors import Layout, descriptor_values, pack_descriptors
from reportgen.testing.synth.schedule import CoreProgram

DES_KEY_BASE, DES_KEY_STEP = 4096, 256             # BLOCK_DES_KV keys (descriptor offsets)


def _extra_block(blobs: dict[int, np.ndarray], order_pos: dict[int, np.ndarray], n: int) -> bytes:
    """DYN_EXTRA payload: entry i = header(profile_id=i, BINARY, len) + descriptor (§7.1).

    ``blobs[g]`` holds the packed descriptors (all of one length) of the entries at positions
    ``order_pos[g]`` (0..n-1, node order). Each group is scattered in one fancy-index write."""
    lens = np.zeros(n, np.int64)
    for g, pos in order_pos.items():
        lens[pos] = blobs[g].shape[1]
    sizes = 12 + lens
    offs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    buf = np.empty(int(sizes.sum()), np.uint8)
    for g, pos in order_pos.items():
        blob = blobs[g]
        hdr = np.zeros(len(pos), df.DYN_EXTRA_HEADER)
        hdr["profile_id"] = pos
        hdr["type"] = int(df.ExtraType.BINARY)
        hdr["length"] = blob.shape[1]
        rows = np.concatenate([hdr.view(np.uint8).reshape(len(pos), 12), blob], axis=1)
        buf[offs[pos][:, None] + np.arange(rows.shape[1])] = rows
    return buf.tobytes()


def dyn_blocks(rows: dict[str, np.ndarray], prog: CoreProgram, mode: int, codes: dict[str, int],
               layouts: dict[str, Layout], id_resets: bool = True
               ) -> tuple[np.ndarray, bytes, list[bytes]]:
    """DYN_DATA words, the DYN_EXTRA payload (mode 2, else empty) and the BLOCK_DES_KV payloads
    of a core's rows (program order, as :func:`~reportgen.testing.synth.rows.core_rows`)."""
    eng = rows["engine"]
    op = rows["op"]
    n = len(op)
    anchor_vsdma = (rows["kernel"] < 0) & (eng == "SDMA") & (rows["id"] >= 2)
    ecode = np.select([eng == "TIU", eng == "GDMA", eng == "SDMA"],
                      [codes["TIU"], codes["GDMA"], codes["SDMA"]], codes["CDMA"])
    ecode[anchor_vsdma] = codes["VSDMA"]
    src, dst = OP_SRC_MEM[op], OP_DST_MEM[op]
    is_dma = np.isin(eng, ["GDMA", "SDMA", "CDMA"])
    is_sys = np.isin(OP_TYP[op], [15]) & (eng == "TIU") | \
        (is_dma & np.isin(OP_LAYOUT[op], ["sDMA_sys", "sCDMA_sys"]))
    cd_port = np.where(eng == "CDMA", rows["port"], 0)
    extra = np.where(eng == "TIU", rows["prec"],
                     df.dma_extra_info(rows["dtype"], src, dst, cd_port))
    extra = np.where(is_sys & (eng != "CDMA"), 0, extra)
    extra = np.where(is_sys & (eng == "CDMA"), cd_port << 8, extra)
    rvt_k = np.array([r.rvt for r in prog.kernels] + [False], bool)
    des_k = np.array([r.des for r in prog.kernels] + [False], bool)
    is_rvt = rvt_k[rows["kernel"]] & (rows["kernel"] >= 0) & (eng != "CDMA")
    is_des = des_k[rows["kernel"]] & (rows["kernel"] >= 0)
    ntype = np.where(is_rvt, int(df.DynType.RVT_NODE_SET), int(df.DynType.NODE_SET))
    node_words = df.pack_dyn_words(ntype, ecode, OP_TYP[op], OP_EU[op], extra)
    # kernel headers between node slices; DES kernels are two-word chain references
    kb = np.searchsorted(rows["kernel"], np.arange(len(prog.kernels) + 1), side="left")
    pieces = [node_words[:kb[0]]]
    chains = []                            # (key, row indices in id order)
    des_types = (("TIU", df.DynType.DES_TIU), ("GDMA", df.DynType.DES_GDMA),
                 ("SDMA", df.DynType.DES_SDMA))
    for ki, run in enumerate(prog.kernels):
        if run.in_blocks:                  # bmodel: its commands are in descriptor blocks
            continue
        end = kb[ki + 1] if ki + 1 < len(kb) else n
        hdr = [df.func_name_words(run.func)]
        if run.batch is not None:
            hdr.append(df.pack_dyn_packed([int(df.DynType.BATCH_IDX)], [run.batch]))
        if run.des:
            for ename, dtype_ in des_types:
                idx = kb[ki] + np.flatnonzero(eng[kb[ki]:end] == ename)
                if len(idx):
                    key = DES_KEY_BASE + DES_KEY_STEP * len(chains)
                    chains.append((key, idx))
                    hdr += [df.pack_dyn_packed([int(dtype_)], [key]),
                            np.array([len(idx)], "<u4")]
            pieces += hdr + [df.pack_dyn_words([int(df.DynType.FUNC_END)])]
            continue
        if id_resets:
            hdr.append(df.pack_dyn_words(np.full(3, int(df.DynType.ID_RESET)),
                                         [codes["TIU"], codes["GDMA"], codes["SDMA"]]))
        for p in run.ports:
            hdr.append(df.pack_dyn_words([int(df.DynType.ID_RESET)], [codes["CDMA"]], 0, 0,
                                         [p << 8]))
        pieces += hdr + [node_words[kb[ki]:end],
                         df.pack_dyn_words([int(df.DynType.FUNC_END)])]
    words = np.concatenate([np.atleast_1d(p) for p in pieces]).astype("<u4")
    kv_blocks = []
    if chains:
        order = np.concatenate([idx for _, idx in chains])
        buf, offs, lens = pack_rows(rows, order, layouts)
        at = 0
        for key, idx in chains:
            k = len(idx)
            hdr = np.array([(key, k, prog.core)], df.DES_KV_HEADER).tobytes()
            lo, hi = offs[at], offs[at + k - 1] + lens[at + k - 1]
            kv_blocks.append(hdr + buf[lo:hi].tobytes())
            at += k
    if mode < 2:
        return words, b"", kv_blocks
    tdi = np.flatnonzero(~is_rvt & ~is_des)  # one DYN_EXTRA entry per TDI node, in order
    lay = OP_LAYOUT[op[tdi]]
    blobs, pos = {}, {}
    for li, lname in enumerate(dict.fromkeys(lay.tolist())):
        sel = np.flatnonzero(lay == lname)
        blobs[li] = _pack_layout(rows, tdi[sel], layouts[lname])
        pos[li] = sel
    return words, _extra_block(blobs, pos, len(tdi)), kv_blocks


def _pack_layout(rows, idx: np.ndarray, layout: Layout) -> np.ndarray:
    sub = {k: rows[k][idx] for k in ("op", "dep", "c", "h", "w", "iter", "bytes", "dtype",
                                    "prec")}
    return pack_descriptors(layout, len(idx), descriptor_values(layout.op, sub))


def pack_rows(rows, idx: np.ndarray, layouts: dict[str, Layout]):
    """Descriptors of rows ``idx`` back to back (ragged): bytes, offsets, lengths."""
    lay = OP_LAYOUT[rows["op"][idx]]
    lens = np.zeros(len(idx), np.int64)
    groups = {}
    for lname in dict.fromkeys(lay.tolist()):
        sel = np.flatnonzero(lay == lname)
        groups[lname] = (sel, _pack_layout(rows, idx[sel], layouts[lname]))
        lens[sel] = layouts[lname].nbytes
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    buf = np.empty(int(lens.sum()), np.uint8)
    for sel, blob in groups.values():
        buf[offs[sel][:, None] + np.arange(blob.shape[1])] = blob
    return buf, offs, lens
