"""NiFi Expression Language carried over as is: Custody's expression language
(`flow.expression`) is NiFi's, for the functions it has. This finds the functions an
expression calls that Custody lacks, so that the import lists each one."""

from __future__ import annotations

import re

from ..expression import AGGREGATES, FUNCTIONS, MULTIPLE_SUBJECTS, SUBJECTS

_KNOWN = frozenset(FUNCTIONS) | frozenset(SUBJECTS) | frozenset(MULTIPLE_SUBJECTS) | frozenset(AGGREGATES)

# A function call: a subject function right after "${" (`${now()}`), or one chained
# after ":" (`${filename:toUpper()}`).
_CALL = re.compile(r"(?:\$\{|:)\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def missing_functions(text: str) -> list[str]:
    """The names of the functions `text` calls in its ${...} expressions that Custody's
    expression language lacks, each once, in order of appearance."""
    if "${" not in text:
        return []
    missing: list[str] = []
    for match in _CALL.finditer(text):
        name = match.group(1)
        if name not in _KNOWN and name not in missing:
            missing.append(name)
    return missing


def holds_expression(text: str) -> bool:
    return "${" in text
