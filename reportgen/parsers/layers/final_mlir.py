"""``final.mlir``: the module header, subnets, layer groups and weights, in one streaming pass
(spec ``layer-info.md`` §3). Not an MLIR parser: only the header line, the ``tpu.Group`` region
boundaries and the ``top.Weight`` values' location names are read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_MODULE_NAME = re.compile(r'^module\s+@("(?:[^"\\]|\\.)*"|[\w$.\-]+)')
_GROUP_OP = re.compile(r'=\s*"tpu\.Group"\s*\(')
_WEIGHT_OP = re.compile(r'=\s*"top\.Weight"\s*\(.*\bloc\((#[\w.$\-]+|"(?:[^"\\]|\\.)*")\)\s*$')
#: a location alias line `#loc5 = loc("name")`: found by its `loc("`, then its head checked
_LOC_STRING = re.compile(r'loc\("')
_ALIAS_HEAD = re.compile(r'[^\S\n]*(#[\w.$\-]+)[^\S\n]*=[^\S\n]*')
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_MODULE_WORD = re.compile(r"module[ \t{]")
_REGION_OPEN, _REGION_CLOSE = re.compile(r"\(\{"), re.compile(r"\}\)")
_WEIGHT_WORD, _FUNC_WORD = re.compile(r'"top\.Weight"'), re.compile(r"func\.func")
_SUBNET = re.compile(r'^\s*func\.func\s+@\S+\(.*\battributes\s*\{.*?\bid\s*=\s*(-?\d+)')


@dataclass
class MlirFacts:
    network: str | None = None
    flops: int | None = None
    quant_mode: str | None = None
    cores: int | None = None
    #: (group_line, first_line, last_line) of each tpu.Group, 1-based lines
    groups: list[tuple[int, int, int]] = field(default_factory=list)
    #: location names of the values top.Weight defines
    weight_names: set[str] = field(default_factory=set)
    #: (first line, subnet id) of each func.func carrying an id, in file order
    subnets: list[tuple[int, int]] = field(default_factory=list)


def split_top_level(text: str) -> list[str]:
    """``text`` split at commas outside brackets, braces, angles, parentheses and strings."""
    parts, depth, start, quoted, i = [], 0, 0, False, 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "{[(<":
            depth += 1
        elif ch in "}])>" and depth:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _attribute_dict(line: str) -> dict[str, str]:
    """The first ``attributes {...}`` dictionary of ``line`` as key -> value text."""
    at = line.find("attributes")
    start = line.find("{", at if at >= 0 else 0)
    if start < 0:
        return {}
    depth, quoted = 0, False
    for end in range(start, len(line)):
        ch = line[end]
        if quoted:
            quoted = not (ch == '"' and line[end - 1] != "\\")
        elif ch == '"':
            quoted = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
    attrs = {}
    for item in split_top_level(line[start + 1:end]):
        key, eq, value = item.partition("=")
        if eq:
            attrs[key.strip().strip('"')] = value.strip()
    return attrs


def _int_attr(value: str | None) -> int | None:
    m = re.match(r"^\s*(-?\d+)", value or "")
    return int(m.group(1)) if m else None


def _str_attr(value: str | None) -> str | None:
    m = re.match(r'^\s*"((?:[^"\\]|\\.)*)"', value or "")
    return m.group(1) if m else None


def _header(line: str, facts: MlirFacts) -> None:
    attrs = _attribute_dict(line)
    m = _MODULE_NAME.match(line)
    name = m.group(1).strip('"') if m else _str_attr(attrs.get("module.name"))
    facts.network = name or None
    facts.flops = _int_attr(attrs.get("module.FLOPs"))
    facts.quant_mode = _str_attr(attrs.get("module.mode"))
    facts.cores = _int_attr(attrs.get("module.cores"))


def _line_at(text: str, pos: int) -> tuple[int, str]:
    """(offset of the line holding ``pos``, that line with its newline)."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, text[start:] if end < 0 else text[start:end + 1]


def _lines_with(text: str, needle: re.Pattern) -> dict[int, str]:
    """Line offset -> line, for the lines holding ``needle`` that are not location aliases."""
    found = {}
    for m in needle.finditer(text):
        start, line = _line_at(text, m.start())
        if start not in found and not line.lstrip().startswith("#"):
            found[start] = line
    return found


def _number_lines(text: str, offsets: list[int]) -> dict[int, int]:
    """Line offset -> 1-based line number, counting newlines once over the text."""
    numbers, line, last = {}, 1, 0
    for offset in sorted(offsets):
        line += text.count("\n", last, offset)
        numbers[offset], last = line, offset
    return numbers


def read_final_mlir(path: Path) -> MlirFacts:
    """The facts of ``path``; OSError / UnicodeDecodeError propagate (the caller warns).

    The text is searched for the few tokens that matter (``module``, ``({``/``})``,
    ``"top.Weight"``, ``func.func``, location aliases); only their lines are looked at."""
    facts = MlirFacts()
    with open(path, encoding="utf-8") as f:       # universal newlines, as a line-by-line read
        text = f.read()
    for m in _MODULE_WORD.finditer(text):
        start, line = _line_at(text, m.start())
        if not text[start:m.start()].strip():
            _header(line.lstrip(), facts)
            break
    opening, closing = _lines_with(text, _REGION_OPEN), _lines_with(text, _REGION_CLOSE)
    closing = {at: line for at, line in closing.items() if line.lstrip().startswith("})")}
    weights = _lines_with(text, _WEIGHT_WORD)
    subnets = {at: line for at, line in _lines_with(text, _FUNC_WORD).items() if at not in weights}
    numbers = _number_lines(text, [*opening, *closing, *subnets])
    # a group's region closes at the `})` that brings its depth back to 0; lines holding
    # neither `({` nor a leading `})` do not change the depth
    group_line, depth = 0, 0
    for at in sorted({*opening, *closing}):
        line, number = opening.get(at) or closing[at], numbers[at]
        if group_line:
            depth += line.count("({") - line.lstrip().startswith("})")
            if depth == 0:
                facts.groups.append((group_line, group_line + 1, number - 1))
                group_line = 0
        elif at in opening and _GROUP_OP.search(line):
            group_line, depth = number, 1
    for at in sorted(subnets):
        m = _SUBNET.match(subnets[at])
        if m:
            facts.subnets.append((numbers[at], int(m.group(1))))
    weight_locs = [m.group(1) for m in (_WEIGHT_OP.search(line.rstrip()) for line in weights.values()) if m]
    aliases = _aliases(text, {loc for loc in weight_locs if loc.startswith("#")})
    facts.weight_names = {aliases.get(loc, loc.strip('"')) for loc in weight_locs}
    return facts


def _aliases(text: str, wanted: set[str]) -> dict[str, str]:
    """The location names of the ``wanted`` aliases (the last definition wins)."""
    found = {}
    for m in _LOC_STRING.finditer(text) if wanted else ():
        head = _ALIAS_HEAD.fullmatch(text, text.rfind("\n", 0, m.start()) + 1, m.start())
        if head and head.group(1) in wanted:
            name = _STRING.match(text, m.end() - 1)
            if name:
                found[head.group(1)] = name.group(1)
    return found
