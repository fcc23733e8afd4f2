"""SplitText and ReplaceText: content transforms, streamed."""

from __future__ import annotations

import re

from ..processor import ProcessContext, Processor, PropertyDescriptor


class SplitText(Processor):
    type_name = "SplitText"
    description = "Splits text content into FlowFiles of at most N lines each (FORK)."
    properties = (
        PropertyDescriptor("line_split_count", "integer", required=True),
        PropertyDescriptor("header_line_count", "integer", default=0),
        PropertyDescriptor("remove_trailing_newlines", "boolean", default=True),
    )
    relationships = ("original", "splits", "failure")

    @classmethod
    def validate(cls, properties, dynamic):
        if properties["line_split_count"] < 1:
            return [("line_split_count", "must be at least 1")]
        return []

    def on_trigger(self, context: ProcessContext, session) -> None:
        flowfile = session.get()
        if flowfile is None:
            return
        count = context["line_split_count"]
        header_lines = context["header_line_count"]
        strip = context["remove_trailing_newlines"]
        children = []
        with session.read(flowfile) as stream:
            header = b"".join(stream.readline() for _ in range(header_lines))
            lines: list[bytes] = []

            def emit() -> None:
                body = b"".join(lines)
                if strip:
                    body = body.rstrip(b"\r\n")
                if not body.strip(b"\r\n") and strip:
                    return
                child = session.create(flowfile)
                child = session.write_bytes(child, header + body)
                children.append((child, len(lines)))

            for line in iter(stream.readline, b""):
                lines.append(line)
                if len(lines) == count:
                    emit()
                    lines = []
            if lines:
                emit()
        identifier = flowfile.id
        for index, (child, line_count) in enumerate(children):
            child = session.put_all_attributes(child, {
                "fragment.identifier": identifier, "fragment.index": str(index + 1),
                "fragment.count": str(len(children)), "text.line.count": str(line_count),
                "segment.original.filename": flowfile.attributes.get("filename", ""),
            })
            session.transfer(child, "splits")
        session.transfer(flowfile, "original")


def _python_replacement(text: str) -> str:
    """NiFi writes back-references as $1; Python's re wants \\1."""
    return re.sub(r"\$(\d+)", r"\\g<\1>", text.replace("\\", "\\\\"))


class ReplaceText(Processor):
    type_name = "ReplaceText"
    description = "Replaces, prepends or appends text in the content (whole text or line by line)."
    properties = (
        PropertyDescriptor("search_value", "regex", default=r"(?s)(^.*$)"),
        PropertyDescriptor("replacement_value", "expression", default="$1"),
        PropertyDescriptor("replacement_strategy", "choice", default="regex_replace",
                           choices=("regex_replace", "literal_replace", "prepend", "append", "always_replace")),
        PropertyDescriptor("evaluation_mode", "choice", default="entire_text", choices=("entire_text", "line_by_line")),
        PropertyDescriptor("maximum_buffer_size", "size", default="1 MB"),
    )
    relationships = ("success", "failure")

    def on_trigger(self, context: ProcessContext, session) -> None:
        strategy = context["replacement_strategy"]
        pattern = context["search_value"]
        limit = context["maximum_buffer_size"]
        for flowfile in session.get_batch(100):
            replacement = context["replacement_value"].evaluate(flowfile)

            def change(text: str) -> str:
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
                    session.transfer(session.penalize(flowfile), "failure")
                    continue
                text = session.read_bytes(flowfile).decode("utf-8", errors="surrogateescape")
                result = change(text).encode("utf-8", errors="surrogateescape")
                flowfile = session.write_bytes(flowfile, result)
            else:
                def by_line(source, out):
                    for line in iter(source.readline, b""):
                        text = line.decode("utf-8", errors="surrogateescape")
                        ending = text[len(text.rstrip("\r\n")):]
                        out.write((change(text[:len(text) - len(ending)]) + ending).encode(
                            "utf-8", errors="surrogateescape"))

                flowfile = session.transform(flowfile, by_line)
            session.transfer(flowfile, "success")
