"""The NODE.toml page: every section and key of a clustered node's file, rendered from
the schema the node reads it by (`cluster.node.config_schema.NODE_TOML`), so that a
key, a default or a range cannot change without the page."""

from __future__ import annotations

from cluster.node.toml_schema import REQUIRED, Key, Schema, Section

from . import markdown as md

TITLE = "NODE.toml"
INTRO = (
    "Every section and key of a clustered node's configuration file (`custody node --config NODE.toml`), "
    "from the schema the node reads it by (`cluster/node/config_schema.py`). A key the file does not set "
    "takes its default; an unknown section or key, a value of the wrong type or outside its range is "
    "refused in one line naming the setting: a misspelt setting must not be silently ignored. File names "
    "are relative to the file. How to set a node up: [Configuration](../operate/configuration.md)."
)
# Durations and sizes in the default column also in the units an operator thinks in.
_DURATIONS = ((86400, "day"), (3600, "hour"), (60, "minute"))
_SIZES = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def heading(section: Section) -> str:
    return f"[{section.name}]" if section.name else "The top level"


def in_words(value, unit: str) -> str:
    """`value` of `unit` in days, hours or minutes, or in GiB, MiB or KiB, when it is a
    whole number of one; "" when not."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return ""
    if unit == "seconds":
        for size, name in _DURATIONS:
            if value >= size and value % size == 0:
                count = int(value // size)
                return f"{count} {name}{'s' if count > 1 else ''}"
    if unit == "bytes":
        for size, name in _SIZES:
            if value >= size and value % size == 0:
                return f"{value // size} {name}"
    return ""


def toml_literal(value) -> str:
    """A default as it would be written in the file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(item) for item in value) + "]"
    return repr(value)


def default_of(key: Key) -> str:
    if key.default is REQUIRED:
        return "required"
    if key.default_text:
        return md.text(key.default_text)
    if key.default in ("", {}, None):
        return "none"
    words = in_words(key.default, key.unit)
    return md.code(toml_literal(key.default)) + (f" ({words})" if words else "")


def section_lines(section: Section) -> list[str]:
    lines = [f"## {heading(section)}", ""]
    if section.help:
        lines += [md.text(section.help), ""]
    rows = [
        (md.code(key.name), md.text(key.type.describe()), default_of(key), md.text(key.unit), md.text(key.help))
        for key in section.keys
    ]
    return lines + md.table(("key", "type", "default", "unit", "meaning"), rows) + [""]


def node_toml_page(schema: Schema | None = None) -> str:
    if schema is None:
        from cluster.node.config_schema import NODE_TOML

        schema = NODE_TOML
    return md.page(TITLE, INTRO, [line for section in schema.sections for line in section_lines(section)])
