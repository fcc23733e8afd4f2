"""SplitText and ReplaceText: content transforms, streamed.

Content comes from outside, so neither holds more than `maximum_buffer_size` of it in
memory: a line (or a SplitText split) longer than that sends its FlowFile to
`failure`, penalized, with `text.error` saying why, and the content is left as it was.
A FlowFile whose content cannot be read goes to `failure` too, penalized, with
`content.error` (`content_failures`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import ExpressionError, UnreadableContent
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from ..session import ProcessSession

ERROR_ATTRIBUTE = "text.error"


class TooLong(ValueError):
    """A line or a split of the content is over `maximum_buffer_size`."""


def read_line(stream, room: int) -> bytes:
    """The next line of `stream` (b"" at its end), at most `room` bytes; TooLong if the
    line goes on past that."""
    line = stream.readline(room + 1)
    if len(line) > room:
        raise TooLong(f"a line is longer than maximum_buffer_size ({room} bytes left)")
    return line


def to_failure(session: ProcessSession, flowfile, reason: str) -> None:
    session.transfer(session.penalize(session.put_attribute(flowfile, ERROR_ATTRIBUTE, reason)), "failure")


class SplitText(Processor):
    type_name = "SplitText"
    description = "Splits text content into FlowFiles of at most N lines each (FORK)."
    properties = (
        PropertyDescriptor("line_split_count", "integer", required=True),
        PropertyDescriptor("header_line_count", "integer", default=0),
        PropertyDescriptor("remove_trailing_newlines", "boolean", default=True),
        PropertyDescriptor(
            "maximum_buffer_size", "size", default="10 MB", description="the most one split (header included) may hold"
        ),
    )
    relationships = ("original", "splits", "failure")

    @classmethod
    def validate(cls, properties, dynamic):
        if properties["line_split_count"] < 1:
            return [("line_split_count", "must be at least 1")]
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        flowfile = session.get()
        if flowfile is None:
            return
        try:
            children = self._split(context, session, flowfile)
        except TooLong as error:
            to_failure(session, flowfile, f"cannot split: {error}")
            return
        except UnreadableContent as error:
            unreadable = ContentFailures(self.id, context, session)
            unreadable.set_aside(flowfile, error)
            unreadable.log()
            return
        identifier = flowfile.id
        for index, (child, line_count) in enumerate(children):
            child = session.put_all_attributes(
                child,
                {
                    "fragment.identifier": identifier,
                    "fragment.index": str(index + 1),
                    "fragment.count": str(len(children)),
                    "text.line.count": str(line_count),
                    "segment.original.filename": flowfile.attributes.get("filename", ""),
                },
            )
            session.transfer(child, "splits")
        session.transfer(flowfile, "original")

    @staticmethod
    def _split(context, session: ProcessSession, flowfile) -> list:
        """The children of `flowfile`, with their line counts; TooLong when a split would
        hold more than maximum_buffer_size, UnreadableContent when the content cannot be
        read (either way every child made so far removed)."""
        count, limit = context["line_split_count"], context["maximum_buffer_size"]
        header_lines, strip = context["header_line_count"], context["remove_trailing_newlines"]
        children: list = []
        try:
            with session.read(flowfile) as stream:
                header = b""
                for _ in range(header_lines):
                    header += read_line(stream, limit - len(header))
                lines: list[bytes] = []
                held = len(header)

                def emit() -> None:
                    body = b"".join(lines)
                    if strip:
                        body = body.rstrip(b"\r\n")
                    if not body.strip(b"\r\n") and strip:
                        return
                    child = session.write_bytes(session.create(flowfile), header + body)
                    children.append((child, len(lines)))

                while line := read_line(stream, limit - held):
                    lines.append(line)
                    held += len(line)
                    if len(lines) == count:
                        emit()
                        lines, held = [], len(header)
                if lines:
                    emit()
        except (TooLong, UnreadableContent):
            for child, _ in children:
                session.remove(child)
            raise
        return children


def _python_replacement(text: str) -> str:
    """NiFi writes back-references as $1; Python's re wants \\1."""
    return re.sub(r"\$(\d+)", r"\\g<\1>", text.replace("\\", "\\\\"))


class ReplaceText(Processor):
    type_name = "ReplaceText"
    description = "Replaces, prepends or appends text in the content (whole text or line by line)."
    properties = (
        PropertyDescriptor("search_value", "regex", default=r"(?s)(^.*$)"),
        PropertyDescriptor("replacement_value", "expression", default="$1"),
        PropertyDescriptor(
            "replacement_strategy",
            "choice",
            default="regex_replace",
            choices=("regex_replace", "literal_replace", "prepend", "append", "always_replace"),
        ),
        PropertyDescriptor("evaluation_mode", "choice", default="entire_text", choices=("entire_text", "line_by_line")),
        PropertyDescriptor("maximum_buffer_size", "size", default="1 MB"),
    )
    relationships = ("success", "failure")

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        strategy = context["replacement_strategy"]
        pattern = context["search_value"]
        limit = context["maximum_buffer_size"]
        batch = session.get_batch(100)
        session.prefetch(batch)
        unreadable = ContentFailures(self.id, context, session)
        for flowfile in batch:
            try:
                replacement = context["replacement_value"].evaluate(flowfile)
            except ExpressionError as error:  # this FlowFile's attributes, not the batch's fault
                to_failure(session, flowfile, f"replacement_value: {error}")
                continue

            def change(text: str, replacement: str = replacement) -> str:
                if strategy == "regex_replace":
                    return pattern.sub(_python_replacement(replacement), text)
                if strategy == "literal_replace":
                    return text.replace(pattern.pattern, replacement)
                if strategy == "prepend":
                    return replacement + text
                if strategy == "append":
                    return text + replacement
                return replacement

            if context["evaluation_mode"] == "entire_text":
                if flowfile.size > limit:
                    to_failure(
                        session,
                        flowfile,
                        f"the content ({flowfile.size} bytes) is over maximum_buffer_size "
                        f"({limit} bytes); raise it or use evaluation_mode line_by_line",
                    )
                    continue
                try:
                    text = session.read_bytes(flowfile).decode("utf-8", errors="surrogateescape")
                except UnreadableContent as error:
                    unreadable.set_aside(flowfile, error)
                    continue
                result = change(text).encode("utf-8", errors="surrogateescape")
                flowfile = session.write_bytes(flowfile, result)
            else:

                def by_line(source, out):
                    while line := read_line(source, limit):
                        text = line.decode("utf-8", errors="surrogateescape")
                        ending = text[len(text.rstrip("\r\n")) :]
                        out.write(
                            (change(text[: len(text) - len(ending)]) + ending).encode("utf-8", errors="surrogateescape")
                        )

                try:
                    flowfile = session.transform(flowfile, by_line)
                except TooLong as error:
                    to_failure(session, flowfile, str(error))
                    continue
                except UnreadableContent as error:
                    unreadable.set_aside(flowfile, error)
                    continue
            session.transfer(flowfile, "success")
        unreadable.log()
