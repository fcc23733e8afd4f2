"""A TOML file's schema, after ZODB's ZConfig component schemas: every section and key
is declared once (its datatype, default, unit and meaning), a file is read by walking
the declaration, and the reference page is rendered from the same declaration, so
that the parser, the defaults and the documentation cannot drift apart.

    SCHEMA = Schema((
        Section("", (Key("name", Text(), "the node's name"),)),
        Section("zookeeper", (Key("session_timeout", Number(minimum=1.0), "...", default=4.0, unit="seconds"),)),
    ))
    values = SCHEMA.read(tomllib.load(file), directory=os.path.dirname(path))
    values["zookeeper"]["session_timeout"]      # 4.0 when the file does not set it

A datatype converts one TOML value or raises `Invalid` saying what the value must be;
the walk puts the setting's name in front ("[zookeeper] session_timeout must be at
least 1.0, not 0.5"). Unknown sections and keys are refused by name: a misspelt
setting must not be silently ignored. A default goes through its key's datatype as a
value from the file does, so a declaration whose default its own range refuses fails
on its first read.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol


class Invalid(ValueError):
    """A value, key or table the schema refuses. From a datatype the message says what
    the value must be; from `Schema.read` it starts with the setting's name."""


class Required:
    """The default of a key that the file must set (to a non-empty string)."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = Required()


class Datatype(Protocol):
    table: bool  # the value is a TOML table: its name is written [section.key]

    def convert(self, value: object, directory: str) -> object:
        """The value as the program uses it, or `Invalid`; `directory` is the file's,
        for file names relative to it."""

    def describe(self) -> str:
        """The type and its allowed values, for the reference page."""


def _bounds(minimum, maximum) -> str:
    if minimum is not None and maximum is not None:
        return f", {minimum} to {maximum}"
    if minimum is not None:
        return f", at least {minimum}"
    return f", at most {maximum}" if maximum is not None else ""


def _within(value, minimum, maximum):
    if minimum is not None and value < minimum:
        raise Invalid(f"must be at least {minimum}, not {value!r}")
    if maximum is not None and value > maximum:
        raise Invalid(f"must be at most {maximum}, not {value!r}")
    return value


@dataclass(frozen=True)
class Integer:
    minimum: int | None = None
    maximum: int | None = None
    table = False

    def convert(self, value, directory):
        if isinstance(value, bool) or not isinstance(value, int):  # TOML's true is a Python int
            raise Invalid(f"must be an integer, not {value!r}")
        return _within(value, self.minimum, self.maximum)

    def describe(self) -> str:
        return "integer" + _bounds(self.minimum, self.maximum)


@dataclass(frozen=True)
class Number:
    """An integer or a float, read as a float."""

    minimum: float | None = None
    maximum: float | None = None
    table = False

    def convert(self, value, directory):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid(f"must be a number, not {value!r}")
        if not math.isfinite(value):  # TOML has nan and inf, and no bound refuses nan
            raise Invalid(f"must be a finite number, not {value!r}")
        return float(_within(value, self.minimum, self.maximum))

    def describe(self) -> str:
        return "number" + _bounds(self.minimum, self.maximum)


@dataclass(frozen=True)
class Flag:
    table = False

    def convert(self, value, directory):
        if not isinstance(value, bool):
            raise Invalid(f"must be true or false, not {value!r}")
        return value

    def describe(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class Text:
    """A string, without the blanks around it. `meaning` says what it must be, in the
    error and on the reference page; `blank` allows "" (an optional value left unset);
    `prefix` is how a value that is not blank must start."""

    meaning: str = "a string"
    blank: bool = True
    prefix: str = ""
    table = False

    def convert(self, value, directory):
        text = value.strip() if isinstance(value, str) else None
        if text is None or not (text or self.blank) or (text and not text.startswith(self.prefix)):
            raise Invalid(f"must be {self.meaning}, not {value!r}")
        return text

    def describe(self) -> str:
        return self.meaning


@dataclass(frozen=True)
class FileName:
    """A file name, made absolute against the file's directory; "" stays "" (none)."""

    table = False

    def convert(self, value, directory):
        name = Text("a file name (a string)").convert(value, directory)
        return os.path.normpath(os.path.join(directory, name)) if name else ""

    def describe(self) -> str:
        return "file name, relative to this file"


@dataclass(frozen=True)
class Choice:
    choices: tuple[str, ...]
    table = False

    def convert(self, value, directory):
        if value not in self.choices:
            raise Invalid(f"must be one of {list(self.choices)}, not {value!r}")
        return value

    def describe(self) -> str:
        return "one of " + ", ".join(f"`{choice}`" for choice in self.choices)


@dataclass(frozen=True)
class StringTable:
    """A table of settings passed on as strings (a number or a flag is written as one)."""

    table = True

    def convert(self, value, directory):
        if not isinstance(value, dict):
            raise Invalid("must be a table of strings")
        return {str(name): str(setting) for name, setting in value.items()}

    def describe(self) -> str:
        return "table of strings"


@dataclass(frozen=True)
class FileNameList:
    """A list of file or directory names, each made absolute against the file's
    directory; with `urls`, an item with a scheme (`https://...`) is kept as it is."""

    urls: bool = False
    table = False

    def convert(self, value, directory):
        if not isinstance(value, (list, tuple)) or not all(isinstance(name, str) and name.strip() for name in value):
            raise Invalid(f"must be a list of file names, not {value!r}")
        return tuple(
            name.strip() if self.urls and "://" in name else os.path.normpath(os.path.join(directory, name.strip()))
            for name in value
        )

    def describe(self) -> str:
        return (
            "list of file names (or URLs), each relative to this file"
            if self.urls
            else ("list of file names, each relative to this file")
        )


@dataclass(frozen=True)
class HostList:
    table = False

    def convert(self, value, directory):
        if not isinstance(value, (list, tuple)) or not all(isinstance(host, str) and host.strip() for host in value):
            raise Invalid(f"must be a list of host names, not {value!r}")
        return tuple(host.strip() for host in value)

    def describe(self) -> str:
        return "list of host names"


@dataclass(frozen=True)
class Key:
    """One key of a section. `default`: what a file without the key reads as (`REQUIRED`:
    the file must set it; None: nothing, the program derives a value, as `default_text`
    says); `field`: the attribute of the program's settings the value fills (None: the
    program derives one from it)."""

    name: str
    type: Datatype
    help: str
    default: object = REQUIRED
    unit: str = ""
    field: str | None = None
    default_text: str = ""


@dataclass(frozen=True)
class Section:
    """A TOML table: `name` is its dotted path ("" the top level, "hdfs.kerberos" the
    table [hdfs.kerberos]). An `optional` section that is absent reads as None, not as
    its keys' defaults: that it is there says something."""

    name: str
    keys: tuple[Key, ...]
    help: str = ""
    optional: bool = False

    @property
    def title(self) -> str:
        return f"[{self.name}]" if self.name else "the top level"

    def setting(self, key: Key) -> str:
        """How messages name `key`: `name`, `[zookeeper] hosts`, `[hdfs.config]`."""
        if key.type.table:
            return f"[{self.name + '.' if self.name else ''}{key.name}]"
        return f"[{self.name}] {key.name}" if self.name else key.name


@dataclass(frozen=True)
class Schema:
    sections: tuple[Section, ...]  # each after the section it is in

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for section in self.sections:
            parent = section.name.rpartition(".")[0]
            if section.name in seen or (section.name and parent not in seen):
                raise ValueError(f"section {section.title} is declared twice or before its parent")
            seen.add(section.name)

    def keys(self) -> Iterator[tuple[Section, Key]]:
        for section in self.sections:
            for key in section.keys:
                yield section, key

    def known(self, section: Section) -> set[str]:
        """The names a section's table may hold: its keys and the sections in it."""
        inside = {
            other.name.rpartition(".")[2]
            for other in self.sections
            if other.name and other.name.rpartition(".")[0] == section.name
        }
        return {key.name for key in section.keys} | inside

    def defaults(self) -> dict[str, object]:
        """Field -> the default of the key that fills it, for every key with both."""
        return {key.field: key.default for _, key in self.keys() if key.field and key.default is not REQUIRED}

    def read(self, body: dict, directory: str) -> dict[str, dict | None]:
        """Section name -> key name -> value, every key there (a default where the file
        has none); None for an optional section the file does not have. First every
        table's shape and names, then the values, so that a misspelt key is reported
        as such and not as the required key it was meant to be."""
        tables: dict[str, dict | None] = {}
        for section in self.sections:
            parent, _, last = section.name.rpartition(".")
            table = body if not section.name else (tables[parent] or {}).get(last)
            if table is None:
                tables[section.name] = None if section.optional or tables.get(parent, {}) is None else {}
                continue
            if not isinstance(table, dict):
                raise Invalid(f"{section.title} must be a table")
            known = self.known(section)
            unknown = sorted(set(table) - known)
            if unknown:
                raise Invalid(f"unknown setting(s) {unknown} in {section.title}; known: {sorted(known)}")
            tables[section.name] = table
        return {
            section.name: None
            if tables[section.name] is None
            else {key.name: self._value(section, key, tables[section.name], directory) for key in section.keys}
            for section in self.sections
        }

    @staticmethod
    def _value(section: Section, key: Key, table: dict, directory: str):
        if key.default is REQUIRED:
            value = table.get(key.name)
            if not isinstance(value, str) or not value.strip():
                raise Invalid(f"{section.setting(key)} is required (a non-empty string)")
        elif key.name in table:
            value = table[key.name]
        elif key.default is None:
            return None
        else:
            value = key.default
        try:
            return key.type.convert(value, directory)
        except Invalid as error:
            raise Invalid(f"{section.setting(key)} {error}") from None


def field_default(cls: type, name: str) -> object:
    """The default of field `name` of dataclass `cls`: a key that fills another module's
    dataclass takes that module's default, so the value is set in one place."""
    found = {field.name: field for field in dataclasses.fields(cls)}[name]
    if found.default is dataclasses.MISSING:
        raise ValueError(f"{cls.__name__}.{name} has no plain default")
    return found.default
