"""The "Chip facts and peaks" block of the Engine Summary sheet: the vendor's Detail Spec items
(NPU lanes, local memory, DDR frequency, clocks, ...) with their units, then the peaks derived
from them. The values and their sources come from analysis/chip.py."""
from __future__ import annotations

from reportgen.analysis.chip import chip_facts
from reportgen.model import Meta


def write_chip_facts(book, ws, row: int, meta: Meta) -> int:
    """Write the block at ``row`` (label, value, unit, source per line); return the next free row."""
    facts = chip_facts(meta)
    if not facts:
        return row
    ws.write_string(row, 0, "Chip facts and peaks", book.key)
    row += 1
    for c, head in enumerate(("Item", "Value", "Unit", "Source")):
        ws.write_string(row, c, head, book.header)
    row += 1
    for label, value, unit, source in facts:
        ws.write_string(row, 0, label, book.key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            ws.write_number(row, 1, value, book.num("#,##0.###"))
        else:
            ws.write_string(row, 1, str(value))
        ws.write_string(row, 2, unit)
        ws.write_string(row, 3, source)
        row += 1
    return row + 1
