"""What a node may be called.

A node's name is the first part of every name the cluster derives from it: its
incarnations and their home shards are `<name>-<epoch>`, a divvied shard's slices
`<shard>.e<epoch>s<index>`, and fencing renames a shard's directory to
`<shard>-fenced-<epoch>` (`layout.FENCED_MARK`). A name must not be able to pass for
any of those, or fencing one shard could rename a live node's directory (a node called
`n1-20-fenced` has shards `n1-20-fenced-<e>`, which look like `n1-20` fenced).

The pattern: 1 to 64 characters, letters, digits, `_` and `-`, starting with a letter
or a digit; not ending in `-<digits>` (the epoch's place); not containing `-fenced`.
"""

from __future__ import annotations

import re

FENCED_WORD = "-fenced"
MAX_LENGTH = 64
_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
RULE = (
    "1 to 64 letters, digits, '_' or '-', starting with a letter or digit, not ending in -<digits> "
    "and without '-fenced'"
)


def node_name_problem(name: object) -> str | None:
    """Why `name` cannot name a node, or None when it can."""
    if not isinstance(name, str) or not name:
        return "it is empty"
    if len(name) > MAX_LENGTH:
        return f"it is longer than {MAX_LENGTH} characters"
    if not _PATTERN.fullmatch(name):
        return "it has a character other than a letter, a digit, '_' or '-', or does not start with a letter or digit"
    if name.rpartition("-")[2].isdigit():
        return "it ends in -<digits>, which an incarnation adds (<name>-<epoch>)"
    if FENCED_WORD in name:
        return "it contains '-fenced', which marks a fenced shard's directory"
    return None


def check_node_name(name: object) -> str:
    """`name`, or ValueError saying what a node name must be."""
    problem = node_name_problem(name)
    if problem is not None:
        raise ValueError(f"node name {name!r} is refused: {problem} (a node name is {RULE})")
    assert isinstance(name, str)  # node_name_problem refuses whatever is not a str
    return name
