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
_LOC_ALIAS = re.compile(r'^(#[\w.$\-]+)\s*=\s*loc\("((?:[^"\\]|\\.)*)"')
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


def read_final_mlir(path: Path) -> MlirFacts:
    """The facts of ``path``; OSError / UnicodeDecodeError propagate (the caller warns)."""
    facts = MlirFacts()
    aliases: dict[str, str] = {}
    weight_locs: list[str] = []
    group_line, depth, seen_module = 0, 0, False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            stripped = line.lstrip()
            if not seen_module and stripped.startswith("module") and stripped[6:7] in (" ", "\t", "{"):
                seen_module = True
                _header(stripped, facts)
            if stripped.startswith("#"):
                m = _LOC_ALIAS.match(stripped)
                if m:
                    aliases[m.group(1)] = m.group(2)
                continue
            if group_line:
                # a group's region closes at the `})` that brings its depth back to 0
                depth += stripped.count("({") - stripped.startswith("})")
                if depth == 0:
                    facts.groups.append((group_line, group_line + 1, number - 1))
                    group_line = 0
            elif _GROUP_OP.search(line) and "({" in line:
                group_line, depth = number, 1
            if '"top.Weight"' in line:
                m = _WEIGHT_OP.search(line.rstrip())
                if m:
                    weight_locs.append(m.group(1))
            elif "func.func" in line:
                m = _SUBNET.match(line)
                if m:
                    facts.subnets.append((number, int(m.group(1))))
    facts.weight_names = {aliases.get(loc, loc.strip('"')) for loc in weight_locs}
    return facts
