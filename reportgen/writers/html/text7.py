"""Binary data as the text of an HTML ``<script>`` block at 7 bits per byte of the file (base64
carries 6): 8/7 of the binary size instead of 4/3, ~14 % less page for the same payload.

The bytes are read as 7-bit chunks (most significant bit first, the last chunk padded with zero
bits). A chunk becomes one ASCII character, except the three the HTML parser does not hand back
unchanged inside a script block: NUL (replaced by U+FFFD), CR (turned into LF) and ``<`` (could
start ``</script``). Such a chunk is written together with the next chunk as one 2-byte UTF-8
character, U+0080 + 128 * (its index in ``UNSAFE``) + (next chunk), so every byte of the file
still carries 7 bits. A lone unsafe last chunk pairs with a zero chunk; the decoder stops after
the block's ``data-bytes`` bytes.

``b7ToBytes`` in ``templates/codec.js`` decodes it in the browser;
``reportgen.testing.html_page.text7_decode`` is its Python twin, used by the tests.
"""
from __future__ import annotations

import numpy as np

#: Chunk values a script block does not keep as they are: NUL, CR, "<"
UNSAFE = (0x00, 0x0D, 0x3C)
#: The first code point of the 2-byte characters (one per unsafe chunk and following chunk)
PAIR_BASE = 0x80


def _chunks(data: bytes) -> np.ndarray:
    """The 7-bit chunks of ``data``, most significant bit first, the last padded with zeros:
    every 7 bytes (56 bits, read as one big-endian integer) are 8 chunks."""
    n = (len(data) * 8 + 6) // 7
    groups = -(-len(data) // 7)
    flat = np.zeros(groups * 7, np.uint8)
    flat[:len(data)] = np.frombuffer(data, np.uint8)
    padded = np.zeros((groups, 8), np.uint8)
    padded[:, 1:] = flat.reshape(groups, 7)
    words = padded.view(">u8").reshape(-1, 1)
    shifts = np.arange(49, -1, -7, dtype=np.uint64)
    return ((words >> shifts) & np.uint64(0x7F)).astype(np.int32).reshape(-1)[:n]


def encode(data: bytes) -> str:
    """``data`` as script-block text (see the module's docstring); vectorised, no loop per byte."""
    chunks = _chunks(data)
    if not len(chunks):
        return ""
    unsafe = (chunks == UNSAFE[0]) | (chunks == UNSAFE[1]) | (chunks == UNSAFE[2])
    # a run of unsafe chunks pairs up from its start: chunks 0, 2, 4... of the run open a pair
    # (each takes the chunk after it, unsafe or not)
    idx = np.arange(len(chunks))
    begins = unsafe & ~np.concatenate([[False], unsafe[:-1]])
    run_start = np.maximum.accumulate(np.where(begins, idx, 0))
    opens = unsafe & ((idx - run_start) % 2 == 0)
    if opens[-1]:
        chunks, opens = np.append(chunks, 0), np.append(opens, False)
    taken = np.concatenate([[False], opens[:-1]])
    pos = np.flatnonzero(~taken)
    codes = chunks[pos].astype("<u4")
    paired = opens[pos]
    which = np.searchsorted(np.array(UNSAFE), chunks[pos][paired])
    codes[paired] = PAIR_BASE + 128 * which + chunks[pos[paired] + 1]
    return codes.tobytes().decode("utf-32-le")
