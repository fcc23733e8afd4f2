"""SplitJson: one FlowFile for each element of the array a JsonPath selects in each
FlowFile's JSON content, as NiFi's SplitJson.

The path (`flow.json_path`, Custody's Jayway syntax, as EvaluateJsonPath takes it) is
compiled when the flow is loaded; one that cannot be read is refused there. For each
FlowFile, what the path gives decides:
- an array (a definite path to an array, or any indefinite path, which always gives
  the list of what it matched): each element becomes a split on `split`, in order;
  strings as their text, null as "" or "null" (`null_value_representation`), numbers
  and booleans as JSON writes them, objects and arrays as compact JSON text. The
  original goes to `original`. An empty array makes no split, and the original still
  goes to `original`, with fragment.count 0.
- anything else (an object, a scalar), or a definite path that matches nothing: the
  FlowFile goes to `failure` and nothing is made, as in NiFi, which splits arrays only.
Content that is not one JSON document (empty, invalid, JSON null) goes to `failure`, as
does a string in it longer than `max_string_length`.

Each split gets NiFi's attributes: fragment.identifier (a random UUID, the same for
every split of one FlowFile), fragment.index (from 0, as NiFi's SplitJson counts),
fragment.count, segment.original.filename; it keeps the original's attributes,
filename included, as NiFi's children do. The original gets fragment.identifier and
fragment.count.

Ours: every FlowFile sent to `failure` is penalized, the reason in `jsonpath.error`;
content over `max_content_size` (default 100 MB: the parsed document takes several
times its size in memory) goes there unread; an evaluation has a budget of steps in
proportion to the content, as in EvaluateJsonPath. Content that cannot be read goes to
`failure` through `content_failures`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UnreadableContent
from ..json_path import JsonPath, JsonPathError, JsonPathEvaluationError, PathNotFound, compile_path, json_text
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures
from .json_path import (
    ERROR_ATTRIBUTE,
    MINIMUM_STEPS,
    NULL_AS_EMPTY,
    NULL_AS_TEXT,
    STEPS_PER_BYTE,
    InvalidDocument,
    parse_document,
)

if TYPE_CHECKING:
    from ..session import ProcessSession

SPLIT, ORIGINAL, FAILURE = "split", "original", "failure"
FILENAME = "filename"
BATCH = 16


class NotSplittable(ValueError):
    """What the path gives cannot be split; the message says why."""


@dataclass(frozen=True)
class Splits:
    """The contents of the splits of one FlowFile, in order."""

    contents: list[bytes]


def split_document(document, path: JsonPath, null_text: str, budget: int) -> Splits:
    """The splits of `document` at `path`. Raises NotSplittable."""
    try:
        result = path.evaluate(document, budget=budget)
    except PathNotFound:
        raise NotSplittable(f"nothing at {path.text}") from None
    except JsonPathEvaluationError as error:
        raise NotSplittable(f"{path.text}: {error}") from None
    if not isinstance(result, list):
        kind = "an object" if isinstance(result, dict) else "a scalar"
        raise NotSplittable(f"{path.text} gives {kind}, not an array to split")
    return Splits([element_text(element, null_text).encode("utf-8", errors="surrogatepass") for element in result])


def element_text(element, null_text: str) -> str:
    """An array element as the content of its split."""
    if element is None:
        return null_text
    if isinstance(element, str):
        return element
    if isinstance(element, bool):
        return "true" if element else "false"
    return json_text(element)


class SplitJson(Processor):
    type_name = "SplitJson"
    description = (
        "Splits the array a JsonPath selects in each FlowFile's JSON content into one FlowFile per element, with "
        "fragment attributes, as NiFi's SplitJson."
    )
    properties = (
        PropertyDescriptor(
            "json_path_expression",
            "string",
            required=True,
            description="the JsonPath of the array to split (read as written: no expression language)",
        ),
        PropertyDescriptor(
            "null_value_representation",
            "choice",
            default=NULL_AS_EMPTY,
            choices=(NULL_AS_EMPTY, NULL_AS_TEXT),
            description="the content of the split of a null element",
        ),
        PropertyDescriptor(
            "max_string_length",
            "size",
            default="20 MB",
            minimum=1,
            description="the longest string the content may hold (else failure)",
        ),
        PropertyDescriptor(
            "max_content_size",
            "size",
            default="100 MB",
            minimum=1,
            description="larger content goes to failure unread (a parsed document takes several times its size in "
            "memory)",
        ),
    )
    relationships = (ORIGINAL, SPLIT, FAILURE)

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._path: JsonPath | None = None

    @classmethod
    def validate(cls, properties, dynamic):
        try:
            compile_path(properties["json_path_expression"])
        except JsonPathError as error:
            return [("json_path_expression", str(error))]
        return []

    def on_scheduled(self, context: ProcessContext) -> None:
        self._path = compile_path(context["json_path_expression"])

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        if self._path is None:  # driven without on_scheduled (a bench that runs it by hand)
            self.on_scheduled(context)
        assert self._path is not None
        null_text = "null" if context["null_value_representation"] == NULL_AS_TEXT else ""
        max_string_length, max_content_size = context["max_string_length"], context["max_content_size"]
        batch = session.get_batch(BATCH)
        session.prefetch(batch)
        unreadable = ContentFailures(self.id, context, session)
        for flowfile in batch:
            if flowfile.size > max_content_size:
                self._fail(
                    context,
                    session,
                    flowfile,
                    f"the content is {flowfile.size:,} bytes, over max_content_size ({max_content_size:,})",
                )
                continue
            try:
                data = session.read_bytes(flowfile)
            except UnreadableContent as error:
                unreadable.set_aside(flowfile, error)
                continue
            try:
                document = parse_document(data, max_string_length)
                splits = split_document(document, self._path, null_text, max(MINIMUM_STEPS, STEPS_PER_BYTE * len(data)))
            except (InvalidDocument, NotSplittable) as error:
                self._fail(context, session, flowfile, str(error))
                continue
            del document, data
            self._emit(session, flowfile, splits)
        unreadable.log()

    @staticmethod
    def _emit(session: ProcessSession, flowfile, splits: Splits) -> None:
        identifier = str(uuid.uuid4())
        count = str(len(splits.contents))
        filename = flowfile.attributes.get(FILENAME, "")
        shared = {"fragment.identifier": identifier, "fragment.count": count, "segment.original.filename": filename}
        if FILENAME in flowfile.attributes:
            shared[FILENAME] = filename  # NiFi's children keep their parent's filename
        children = [
            session.create(flowfile, {**shared, "fragment.index": str(index)}) for index in range(len(splits.contents))
        ]
        for child in session.write_bytes_many(children, splits.contents) if children else ():
            session.transfer(child, SPLIT)
        original = session.put_all_attributes(flowfile, {"fragment.identifier": identifier, "fragment.count": count})
        session.transfer(original, ORIGINAL)

    def _fail(self, context: ProcessContext, session: ProcessSession, flowfile, reason: str) -> None:
        context.limited_log.warning("failure", "%s: %s goes to failure: %s", self.id, flowfile.id, reason)
        flowfile = session.put_attribute(flowfile, ERROR_ATTRIBUTE, reason)
        session.transfer(session.penalize(flowfile), FAILURE)
