"""EvaluateJsonPath: JsonPaths over each FlowFile's JSON content, their results put in
attributes or in the content, as NiFi's EvaluateJsonPath.

Each dynamic property is a JsonPath (`flow.json_path`, read as written: no expression
language), its name the attribute that gets the result. Every path is compiled when the
flow is loaded, and one that cannot be read is refused there, naming the property and
the position; so is a processor with no path, or with more than one when the
destination is the content.

The decisions follow NiFi's:
- `return_type`: `scalar` takes strings, numbers, booleans and null, and sends the
  FlowFile to `failure` when a path gives an object or an array; `json` takes anything,
  objects and arrays written as compact JSON text; `auto-detect` is `scalar` for the
  attributes and `json` for the content. An indefinite path (a wildcard, a filter, a
  deep scan) always gives an array, empty when nothing matched.
- A definite path that matches nothing: with destination `flowfile-content` the FlowFile
  goes to `unmatched` unchanged; with `flowfile-attribute` its attribute is set to ""
  (`ignore`, `warn`, which also logs it) or left alone (`skip`), and the FlowFile still
  goes to `matched`.
- A null result is written as "" or as "null" (`null_value_representation`).
- Content that is not one JSON document (empty, invalid, JSON null, not UTF-8/16/32)
  sends the FlowFile to `failure`, as does a string in it longer than
  `max_string_length` (NiFi's parser limit).

Ours: every FlowFile sent to `failure` is penalized and says why in `jsonpath.error`;
content over `max_content_size` (default 100 MB: the parsed document takes several
times its size in memory) goes there unread; an attribute value longer than
`max_string_length`, or new content longer than `max_content_size`, is refused the same
way before it is built; an evaluation gets a budget of steps in proportion to the
content (`flow.json_path`: a deep scan inside a filter is quadratic). Content that
cannot be read at all goes to `failure` through `content_failures`.

`evaluate` decides, from a parsed document, what becomes of a FlowFile (`Outcome`),
without the session: the processor reads, parses, and carries it out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import UnreadableContent
from ..json_path import (
    JsonPath,
    JsonPathError,
    JsonPathEvaluationError,
    PathNotFound,
    ResultTooLong,
    compile_path,
    json_text,
)
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from ..session import ProcessSession

ERROR_ATTRIBUTE = "jsonpath.error"
MATCHED, UNMATCHED, FAILURE = "matched", "unmatched", "failure"
TO_ATTRIBUTE, TO_CONTENT = "flowfile-attribute", "flowfile-content"
AUTO, JSON, SCALAR = "auto-detect", "json", "scalar"
IGNORE, WARN, SKIP = "ignore", "warn", "skip"
NULL_AS_EMPTY, NULL_AS_TEXT = "empty string", "the string 'null'"
BATCH = 100
# Steps an evaluation may take: a few walks of the document (a node takes at least a
# byte or two of its text), and never fewer than this.
STEPS_PER_BYTE = 4
MINIMUM_STEPS = 1_000_000


class InvalidDocument(ValueError):
    """The content is not a JSON document this processor takes; the message says why."""


@dataclass(frozen=True)
class Settings:
    """The configuration `evaluate` decides by."""

    to_content: bool
    scalar_only: bool
    not_found: str
    null_text: str
    max_string_length: int
    max_content_size: int

    @classmethod
    def of(cls, context: ProcessContext) -> Settings:
        to_content = context["destination"] == TO_CONTENT
        return_type = context["return_type"]
        if return_type == AUTO:
            return_type = JSON if to_content else SCALAR
        return cls(
            to_content=to_content,
            scalar_only=return_type == SCALAR,
            not_found=context["path_not_found_behavior"],
            null_text="null" if context["null_value_representation"] == NULL_AS_TEXT else "",
            max_string_length=context["max_string_length"],
            max_content_size=context["max_content_size"],
        )


@dataclass(frozen=True)
class Outcome:
    """What becomes of one FlowFile: its relationship, the attributes to set, its new
    content (None: unchanged), why it failed, and the properties whose paths found
    nothing (logged with `warn`)."""

    relationship: str
    attributes: dict[str, str] = field(default_factory=dict)
    content: str | None = None
    error: str | None = None
    not_found: tuple[str, ...] = ()


def parse_document(data: bytes, max_string_length: int):
    """The JSON document `data` holds. Raises `InvalidDocument` saying what is wrong."""
    if not data.strip():
        raise InvalidDocument("the content is empty, not a JSON document")
    try:
        document = json.loads(data, parse_constant=_refuse_constant)
    except RecursionError:
        raise InvalidDocument("the content is JSON nested too deeply to read") from None
    except UnicodeDecodeError as error:
        raise InvalidDocument(f"the content is not text in UTF-8, UTF-16 or UTF-32: {error}") from None
    except ValueError as error:  # json.JSONDecodeError, and numbers Python will not read
        raise InvalidDocument(f"the content is not valid JSON: {error}") from None
    if document is None:
        raise InvalidDocument("the content is JSON null: there is nothing to evaluate a path on")
    if len(data) > max_string_length:  # else no string in it can be longer
        longest = _longest_string(document)
        if longest > max_string_length:
            raise InvalidDocument(
                f"the content holds a string of {longest:,} characters, longer than max_string_length "
                f"({max_string_length:,})"
            )
    return document


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")


def _longest_string(document) -> int:
    longest = 0
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            longest = max(longest, len(item))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return longest


def evaluate(document, paths: Mapping[str, JsonPath], settings: Settings, budget: int) -> Outcome:
    """What becomes of a FlowFile whose content is `document` (see the module docstring),
    each of `paths` (property name -> path) evaluated with at most `budget` steps."""
    attributes: dict[str, str] = {}
    not_found: list[str] = []
    content = None
    for name, path in paths.items():
        try:
            result = path.evaluate(document, budget=budget)
        except PathNotFound:
            not_found.append(name)
            if settings.to_content:
                return Outcome(UNMATCHED, not_found=tuple(not_found))
            if settings.not_found != SKIP:
                attributes[name] = ""
            continue
        except JsonPathEvaluationError as error:
            return Outcome(FAILURE, error=f"{name} ({path.text}): {error}")
        if settings.scalar_only and isinstance(result, (dict, list)):
            kind = "an object" if isinstance(result, dict) else "an array"
            return Outcome(
                FAILURE,
                error=(
                    f"{name} ({path.text}) gives {kind}, not a scalar, and return_type is scalar (auto-detect is "
                    "scalar for destination flowfile-attribute): set return_type json to get JSON text"
                ),
            )
        limit = settings.max_content_size if settings.to_content else settings.max_string_length
        try:
            text = _representation(result, settings.null_text, limit)
        except ResultTooLong as error:
            which = "max_content_size" if settings.to_content else "max_string_length"
            return Outcome(FAILURE, error=f"{name} ({path.text}): the result is too long for {which}: {error}")
        except (RecursionError, ValueError) as error:
            return Outcome(FAILURE, error=f"{name} ({path.text}): the result cannot be written as JSON: {error}")
        if settings.to_content:
            content = text
        else:
            attributes[name] = text
    return Outcome(MATCHED, attributes=attributes, content=content, not_found=tuple(not_found))


def _representation(result, null_text: str, limit: int) -> str:
    if result is None:
        return null_text
    if isinstance(result, str):
        if len(result) > limit:
            raise ResultTooLong(f"it is {len(result):,} characters long, over {limit:,}")
        return result
    if isinstance(result, bool):
        return "true" if result else "false"
    return json_text(result, limit)


class EvaluateJsonPath(Processor):
    type_name = "EvaluateJsonPath"
    description = (
        "Evaluates JsonPaths (one per dynamic property, named after the attribute it sets) against each FlowFile's "
        "JSON content, into attributes or the content, as NiFi's EvaluateJsonPath."
    )
    properties = (
        PropertyDescriptor(
            "destination",
            "choice",
            default=TO_CONTENT,  # NiFi's default
            choices=(TO_ATTRIBUTE, TO_CONTENT),
            description="where results go: attributes named after the properties, or the content (then exactly one "
            "path)",
        ),
        PropertyDescriptor(
            "return_type",
            "choice",
            default=AUTO,
            choices=(AUTO, JSON, SCALAR),
            description="scalar: objects and arrays go to failure; json: they become JSON text; auto-detect: scalar "
            "for attributes, json for the content",
        ),
        PropertyDescriptor(
            "path_not_found_behavior",
            "choice",
            default=IGNORE,
            choices=(IGNORE, WARN, SKIP),
            description="a definite path that matches nothing, with destination flowfile-attribute: its attribute "
            'is set to "" (ignore; warn logs it too) or not set (skip)',
        ),
        PropertyDescriptor(
            "null_value_representation",
            "choice",
            default=NULL_AS_EMPTY,
            choices=(NULL_AS_EMPTY, NULL_AS_TEXT),
            description="how a null result is written",
        ),
        PropertyDescriptor(
            "max_string_length",
            "size",
            default="20 MB",
            minimum=1,
            description="the longest string the content may hold (else failure), and the longest attribute value "
            "a result may give",
        ),
        PropertyDescriptor(
            "max_content_size",
            "size",
            default="100 MB",
            minimum=1,
            description="larger content goes to failure unread (a parsed document takes several times its size in "
            "memory); also the longest new content",
        ),
    )
    relationships = (MATCHED, UNMATCHED, FAILURE)
    dynamic_properties = True

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._paths: dict[str, JsonPath] = {}

    @classmethod
    def validate(cls, properties, dynamic):
        if not dynamic:
            return [("destination", "EvaluateJsonPath needs a JsonPath: a property named after the attribute to set")]
        if properties.get("destination") == TO_CONTENT and len(dynamic) != 1:
            names = ", ".join(sorted(dynamic))
            return [
                (
                    "destination",
                    f"with destination flowfile-content exactly one JsonPath is allowed, got {len(dynamic)} ({names})",
                )
            ]
        for name, expression in dynamic.items():
            try:
                compile_path(expression.text)
            except JsonPathError as error:
                return [(name, str(error))]
        return []

    def on_scheduled(self, context: ProcessContext) -> None:
        self._paths = {name: compile_path(expression.text) for name, expression in context.dynamic.items()}

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        if not self._paths:  # driven without on_scheduled (a bench that runs it by hand)
            self.on_scheduled(context)
        settings = Settings.of(context)
        batch = session.get_batch(BATCH)
        session.prefetch(batch)
        unreadable = ContentFailures(self.id, context, session)
        for flowfile in batch:
            if flowfile.size > settings.max_content_size:
                self._fail(
                    context,
                    session,
                    flowfile,
                    f"the content is {flowfile.size:,} bytes, over max_content_size ({settings.max_content_size:,})",
                )
                continue
            try:
                data = session.read_bytes(flowfile)
            except UnreadableContent as error:
                unreadable.set_aside(flowfile, error)
                continue
            try:
                document = parse_document(data, settings.max_string_length)
            except InvalidDocument as error:
                self._fail(context, session, flowfile, str(error))
                continue
            budget = max(MINIMUM_STEPS, STEPS_PER_BYTE * len(data))
            outcome = evaluate(document, self._paths, settings, budget)
            del document, data
            if outcome.not_found and settings.not_found == WARN:
                context.limited_log.warning(
                    "path-not-found",
                    "%s: FlowFile %s: nothing at the path of %s",
                    self.id,
                    flowfile.id,
                    ", ".join(outcome.not_found),
                )
            if outcome.relationship == FAILURE:
                self._fail(context, session, flowfile, outcome.error or "")
                continue
            if outcome.attributes:
                flowfile = session.put_all_attributes(flowfile, outcome.attributes)
            if outcome.content is not None:
                flowfile = session.write_bytes(flowfile, outcome.content.encode("utf-8", errors="surrogatepass"))
            session.transfer(flowfile, outcome.relationship)
        unreadable.log()

    def _fail(self, context: ProcessContext, session: ProcessSession, flowfile, reason: str) -> None:
        context.limited_log.warning("failure", "%s: %s goes to failure: %s", self.id, flowfile.id, reason)
        flowfile = session.put_attribute(flowfile, ERROR_ATTRIBUTE, reason)
        session.transfer(session.penalize(flowfile), FAILURE)
