"""AttributesToJSON: a JSON object of a FlowFile's attributes, put in its `JSONAttributes`
attribute or made its content, as NiFi's AttributesToJSON.

Which attributes, as NiFi decides:
- neither `attributes_list` nor `attributes_regex` set: all of them, `uuid` included;
  with `include_core_attributes: false`, without NiFi's core attributes (filename,
  path, absolute.path, mime.type, priority, uuid, discard.reason,
  alternate.identifier);
- otherwise each attribute named in `attributes_list` (comma separated, each name
  trimmed, case sensitive), then each whose name the regex matches whole. A listed
  attribute the FlowFile lacks is "" or, with `null_value: true`, JSON null. As in
  NiFi, `include_core_attributes` has no say here: a core attribute asked for by name
  or by the regex is written.

`json_handling_strategy`: `escaped` writes every value as a JSON string; `nested`
writes a value that, trimmed, starts with `{` and ends with `}` (or `[` and `]`) as
the JSON it holds, and sends the FlowFile to `failure` when it is not JSON. With
destination `flowfile-content` the JSON replaces the content (`mime.type`
application/json), pretty printed as NiFi's Jackson does with `pretty_print: true`
(`pretty_print` is ignored for the attribute, as in NiFi).

The listed names come in NiFi's order, which is a Java HashSet's (so the bytes are
NiFi's); the others, all of them or those the regex chose, by name (NiFi's follow the
FlowFile's attribute map). Ours: numbers of nested JSON are written as
they were (Jackson rewrites a decimal as a Java double: 1e7 becomes 1.0E7); nested
JSON is read strictly (Jackson ignores what follows the first value) and at most
`MAX_NESTING` deep (Jackson's limit is 1000); a blank name in the list is skipped.
A JSON text longer than an expression result may be (`MAX_STRING_LENGTH` characters)
is not put in the attribute, and content that cannot be UTF-8 (an attribute holding a
lone surrogate) is not written: the FlowFile goes to `failure`. Every FlowFile sent
there is penalized and says why in `attributestojson.error`.

`select_attributes` and `json_text` decide and render without the session.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from re import Pattern
from typing import TYPE_CHECKING

from ..expression import MAX_STRING_LENGTH
from ..java_hash_order import hash_set_order
from ..processor import ProcessContext, Processor, PropertyDescriptor

if TYPE_CHECKING:
    from ..session import ProcessSession

JSON_ATTRIBUTE = "JSONAttributes"
ERROR_ATTRIBUTE = "attributestojson.error"
MIME_TYPE = "application/json"
TO_ATTRIBUTE, TO_CONTENT = "flowfile-attribute", "flowfile-content"
ESCAPED, NESTED = "escaped", "nested"
SUCCESS, FAILURE = "success", "failure"
# NiFi's CoreAttributes: what `include_core_attributes: false` leaves out.
CORE_ATTRIBUTES = frozenset(
    ("filename", "path", "absolute.path", "mime.type", "priority", "uuid", "discard.reason", "alternate.identifier")
)
MAX_NESTING = 256
BATCH = 100


class NotConvertible(ValueError):
    """The attributes cannot become the JSON asked for; the message says why."""


class _Number(str):
    """A number of nested JSON, kept as its text."""


@dataclass(frozen=True)
class Selection:
    """Which attributes `select_attributes` takes and how it fills a missing one."""

    listed: tuple[str, ...] | None
    pattern: Pattern[str] | None
    include_core: bool
    null_for_missing: bool

    @classmethod
    def of(cls, context: ProcessContext) -> Selection:
        return cls(
            listed=listed_names(context.get("attributes_list")),
            pattern=context.get("attributes_regex"),
            include_core=context["include_core_attributes"],
            null_for_missing=context["null_value"],
        )


def listed_names(text: str | None) -> tuple[str, ...] | None:
    """The names of a comma separated list, trimmed, each once, in the order NiFi writes
    them (it keeps them in a Java HashSet sized for the list: `flow.java_hash_order`);
    None for a blank list (all attributes)."""
    if text is None or not text.strip():
        return None
    tokens = [token for token in text.split(",") if token]
    return tuple(hash_set_order((name for name in (t.strip() for t in tokens) if name), len(tokens)))


def select_attributes(attributes: Mapping[str, str], selection: Selection) -> dict[str, str | None]:
    """The members of the JSON object for a FlowFile whose attributes (`uuid` included)
    are `attributes`."""
    if selection.listed is None and selection.pattern is None:
        return {
            name: attributes[name]
            for name in sorted(attributes)
            if selection.include_core or name not in CORE_ATTRIBUTES
        }
    chosen: dict[str, str | None] = {}
    for name in selection.listed or ():
        value = attributes.get(name)
        chosen[name] = None if value is None and selection.null_for_missing else (value or "")
    if selection.pattern is not None:
        for name in sorted(attributes):
            if selection.pattern.fullmatch(name):
                chosen[name] = attributes[name]
    return chosen


def nested(members: Mapping[str, str | None]) -> dict[str, object]:
    """`members` with each value that looks like a JSON object or array read as one.
    Raises `NotConvertible` naming the attribute whose value is not JSON."""
    result: dict[str, object] = {}
    for name, value in members.items():
        trimmed = value.strip() if value is not None else ""
        if (trimmed[:1], trimmed[-1:]) not in (("{", "}"), ("[", "]")):
            result[name] = value
            continue
        try:
            document = json.loads(trimmed, parse_int=_Number, parse_float=_Number, parse_constant=_no_constant)
        except (ValueError, RecursionError) as error:
            reason = "it nests too deeply" if isinstance(error, RecursionError) else str(error)
            raise NotConvertible(f"attribute {name!r} looks like JSON but is not: {reason}") from None
        if _deeper_than(document, MAX_NESTING):
            raise NotConvertible(f"attribute {name!r} holds JSON nested more than {MAX_NESTING} deep")
        result[name] = document
    return result


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _deeper_than(document: object, limit: int) -> bool:
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, (dict, list)):
            if depth > limit:
                return True
            children = value.values() if isinstance(value, dict) else value
            pending.extend((child, depth + 1) for child in children)
    return False


def json_text(value: object, *, pretty: bool = False) -> str:
    """`value` (strings, `_Number`s, None, booleans, dicts and lists of them) as JSON:
    compact, or laid out as Jackson's default pretty printer does (members one a line,
    two spaces deeper for each object, `" : "` between name and value, arrays on the
    line they start on: `[ 1, 2 ]`, `{ }`, `[ ]`)."""
    pieces: list[str] = []
    _render(value, pretty, 0, pieces)
    return "".join(pieces)


def _render(value: object, pretty: bool, depth: int, out: list[str]) -> None:
    if isinstance(value, _Number):
        out.append(str.__str__(value))
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif value is None or isinstance(value, bool):
        out.append(json.dumps(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{ }" if pretty else "{}")
            return
        inner = "\n" + "  " * (depth + 1) if pretty else ""
        out.append("{")
        for index, (name, member) in enumerate(value.items()):
            out.append(("," if index else "") + inner + json.dumps(name, ensure_ascii=False))
            out.append(" : " if pretty else ":")
            _render(member, pretty, depth + 1, out)
        out.append(("\n" + "  " * depth if pretty else "") + "}")
    elif isinstance(value, list):
        if not value:
            out.append("[ ]" if pretty else "[]")
            return
        out.append("[ " if pretty else "[")
        for index, item in enumerate(value):
            if index:
                out.append(", " if pretty else ",")
            _render(item, pretty, depth, out)  # Jackson indents no deeper inside an array
        out.append(" ]" if pretty else "]")
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")


class AttributesToJSON(Processor):
    type_name = "AttributesToJSON"
    description = "Writes a JSON object of each FlowFile's attributes to its JSONAttributes attribute or its content."
    properties = (
        PropertyDescriptor(
            "attributes_list",
            description="comma separated names of the attributes to write (case sensitive); "
            "empty: all (unless attributes_regex is set)",
        ),
        PropertyDescriptor("attributes_regex", "regex", description="also write the attributes whose name it matches"),
        PropertyDescriptor(
            "destination",
            "choice",
            default=TO_ATTRIBUTE,
            choices=(TO_ATTRIBUTE, TO_CONTENT),
            description=f"the {JSON_ATTRIBUTE} attribute, or the content (replaced; mime.type {MIME_TYPE})",
        ),
        PropertyDescriptor(
            "include_core_attributes",
            "boolean",
            default=True,
            description="with neither list nor regex: whether NiFi's core attributes (filename, path, uuid, ...) "
            "are written",
        ),
        PropertyDescriptor(
            "null_value", "boolean", default=False, description='a listed attribute the FlowFile lacks: null, not ""'
        ),
        PropertyDescriptor(
            "json_handling_strategy",
            "choice",
            default=ESCAPED,
            choices=(ESCAPED, NESTED),
            description="escaped: every value a JSON string; nested: a value holding a JSON object or array as JSON",
        ),
        PropertyDescriptor(
            "pretty_print", "boolean", default=False, description="lay the content out (destination flowfile-content)"
        ),
    )
    relationships = (SUCCESS, FAILURE)

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        selection = Selection.of(context)
        to_content = context["destination"] == TO_CONTENT
        nest = context["json_handling_strategy"] == NESTED
        pretty = to_content and context["pretty_print"]
        for flowfile in session.get_batch(BATCH):
            attributes = dict(flowfile.attributes)
            attributes["uuid"] = flowfile.id
            members = select_attributes(attributes, selection)
            try:
                text = json_text(nested(members) if nest else members, pretty=pretty)
                if to_content:
                    data = _utf8(text)
                elif len(text) > MAX_STRING_LENGTH:
                    raise NotConvertible(
                        f"the JSON is {len(text):,} characters long, over the {MAX_STRING_LENGTH:,} "
                        f"an attribute may hold; write it to the content (destination {TO_CONTENT})"
                    )
            except NotConvertible as error:
                self._fail(context, session, flowfile, str(error))
                continue
            if to_content:
                flowfile = session.write_bytes(flowfile, data)
                flowfile = session.put_attribute(flowfile, "mime.type", MIME_TYPE)
            else:
                flowfile = session.put_attribute(flowfile, JSON_ATTRIBUTE, text)
            session.transfer(flowfile, SUCCESS)

    def _fail(self, context: ProcessContext, session: ProcessSession, flowfile, reason: str) -> None:
        context.limited_log.warning("failure", "%s: %s goes to failure: %s", self.id, flowfile.id, reason)
        flowfile = session.put_attribute(flowfile, ERROR_ATTRIBUTE, reason)
        session.transfer(session.penalize(flowfile), FAILURE)


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise NotConvertible(
            f"an attribute holds a lone surrogate (U+{ord(text[error.start]):04X}), which UTF-8 content cannot"
        ) from None
