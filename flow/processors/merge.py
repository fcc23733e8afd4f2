"""MergeContent: joins FlowFiles into one (JOIN), by count, by bin age, by correlation attribute.

`merge_format`, as NiFi's "Merge Format":

- `binary_concatenation` (the default): the members' contents one after the other, with
  `header`, `delimiter` and `footer`.
- `flowfile_stream_v3`: NiFi's "FlowFile Stream, v3" (`flow.flowfile_v3`): each
  member's attributes (its `uuid` among them, as NiFi packages it) and content, in the
  members' order; the merged FlowFile's `mime.type` is `application/flowfile-v3` and its
  `filename` ends in `.pkg`, as NiFi sets them. ListenHTTP and UnpackContent (here or in
  NiFi) give each member back. `header`, `delimiter` and `footer` are refused with it:
  they would break the stream.

A member whose content cannot be read goes to `failure` (penalized, `content.error`:
`content_failures`) and the bin is merged without it, even if it then holds fewer than
`min_entries`: its members were ready together.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from repositories.content.errors import ContentTruncated

from .. import flowfile_v3
from ..errors import UnreadableContent
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from ..session import ProcessSession

READ_TOGETHER = 16 << 20  # a bundle whose contents add up to at most this is read in one go
BINARY_CONCATENATION = "binary_concatenation"
FLOWFILE_STREAM_V3 = "flowfile_stream_v3"
_FRAMING = ("header", "delimiter", "footer")


def packaged_attributes(flowfile) -> dict[str, str]:
    """The attributes a FlowFile Stream v3 carries for `flowfile`: all of them with its
    `uuid` (NiFi packages every attribute), in the order of their names, so that the
    same FlowFile always packages to the same bytes."""
    attributes = {**flowfile.attributes, "uuid": flowfile.id}
    return {name: attributes[name] for name in sorted(attributes)}


class MergeContent(Processor):
    type_name = "MergeContent"
    description = (
        "Merges FlowFiles into one: their contents concatenated (with header, delimiter and footer), or "
        "packaged with their attributes as NiFi's FlowFile Stream v3 (merge_format flowfile_stream_v3: "
        "mime.type application/flowfile-v3, which ListenHTTP and UnpackContent, here or in NiFi, unpack). "
        "A member whose content cannot be read goes to failure; the others are merged without it."
    )
    properties = (
        PropertyDescriptor(
            "merge_format",
            "choice",
            default=BINARY_CONCATENATION,
            choices=(BINARY_CONCATENATION, FLOWFILE_STREAM_V3),
            description="binary_concatenation: the contents one after the other; flowfile_stream_v3: NiFi's "
            "FlowFile Stream v3, each member's attributes and content (no header, delimiter or footer)",
        ),
        PropertyDescriptor("min_entries", "integer", default=1),
        PropertyDescriptor("max_entries", "integer", default=1000),
        PropertyDescriptor("max_bin_age", "duration", description="merge what waits once this old"),
        PropertyDescriptor("header", "string", default=""),
        PropertyDescriptor("delimiter", "string", default=""),
        PropertyDescriptor("footer", "string", default=""),
        PropertyDescriptor("correlation_attribute", "string"),
    )
    relationships = ("merged", "original", "failure")

    @classmethod
    def validate(cls, properties, dynamic):
        if properties["min_entries"] < 1 or properties["max_entries"] < properties["min_entries"]:
            return [("max_entries", "need 1 <= min_entries <= max_entries")]
        if properties.get("merge_format") == FLOWFILE_STREAM_V3:
            for name in _FRAMING:
                if properties.get(name):
                    return [
                        (
                            name,
                            "merge_format flowfile_stream_v3 packages each member whole: a header, delimiter "
                            "or footer would break the stream (leave it empty)",
                        )
                    ]
        return []

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        # When each bin (a correlation value; "" without one) was first seen short of
        # `min_entries`: its age, for `max_bin_age`. The FlowFiles stay in the queue.
        self._bin_since: dict[str, float] = {}
        self.clock = time.monotonic

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        minimum, maximum = context["min_entries"], context["max_entries"]
        age = context.get("max_bin_age")
        correlation = context.get("correlation_attribute")
        batch = session.get_batch(maximum)
        if not batch:
            return
        now = self.clock()
        bins: dict[str, list] = {}
        for flowfile in batch:
            bins.setdefault(flowfile.attributes.get(correlation, "") if correlation else "", []).append(flowfile)
        ready = {
            key
            for key, members in bins.items()
            if len(members) >= minimum or (age is not None and now - self._bin_since.setdefault(key, now) >= age)
        }
        if len(batch) < maximum:  # the whole queue was seen: a bin it no longer holds is gone
            self._bin_since = {key: since for key, since in self._bin_since.items() if key in bins}
        if not ready:
            # Nothing to merge: the FlowFiles go back untouched (a rollback writes nothing),
            # and the processor waits its yield instead of taking them again at once.
            session.rollback()
            context.yield_()
            return
        unreadable = ContentFailures(self.id, context, session)
        for key, members in bins.items():
            if key in ready:
                self._bin_since.pop(key, None)
                self._merge(context, session, members, key if correlation else None, unreadable)
            else:
                for flowfile in members:
                    session.transfer(flowfile)  # back to the queue: the bin is not full yet
        unreadable.log()

    def _merge(self, context, session: ProcessSession, members, key, unreadable: ContentFailures) -> None:
        while members:
            merged = session.create(members)
            try:
                merged = self._write(context, session, merged, members)
            except UnreadableContent as error:
                # The merged FlowFile goes (no trace: its content was aborted) and is
                # made again from the members left.
                session.remove(merged)
                left = [flowfile for flowfile in members if flowfile.id != error.flowfile.id]
                if len(left) == len(members):
                    raise  # not a member's content: nothing to set aside
                unreadable.set_aside(error.flowfile, error)
                members = left
                continue
            attributes = {"merge.count": str(len(members))}
            if context.get("merge_format") == FLOWFILE_STREAM_V3:
                attributes["mime.type"] = flowfile_v3.MIME_TYPE
                attributes["filename"] = _package_name(members, merged) + ".pkg"
            if key is not None:
                attributes[context["correlation_attribute"]] = key
            merged = session.put_all_attributes(merged, attributes)
            session.transfer(merged, "merged")
            for flowfile in members:
                session.transfer(flowfile, "original")
            return

    @staticmethod
    def _write(context, session: ProcessSession, merged, members):
        """`merged` with the members' contents joined as its content; `UnreadableContent`
        (nothing written) for the first member whose content cannot be read."""
        if context.get("merge_format") == FLOWFILE_STREAM_V3:
            return _write_stream_v3(session, merged, members)
        delimiter = context["delimiter"].encode("utf-8")
        with session.write(merged) as out:
            out.write(context["header"].encode("utf-8"))
            if sum(flowfile.size for flowfile in members) <= READ_TOGETHER:
                # Small contents, mostly side by side in a few resource files: read at once.
                out.write(delimiter.join(session.read_bytes_many(members)))
            else:
                for index, flowfile in enumerate(members):
                    if index and delimiter:
                        out.write(delimiter)
                    with session.read(flowfile) as source:
                        while chunk := source.read(1 << 20):
                            out.write(chunk)
            out.write(context["footer"].encode("utf-8"))
        return out.flowfile


def _write_stream_v3(session: ProcessSession, merged, members):
    """`merged` with the members packaged as a FlowFile Stream v3. Each package's header
    says its content's length before the content is read, so a member whose content
    comes back another length would break the stream: it raises `UnreadableContent`
    (`ContentTruncated`) like a damaged claim, and the whole write is aborted."""
    together = sum(flowfile.size for flowfile in members) <= READ_TOGETHER
    contents = session.read_bytes_many(members) if together else None
    with session.write(merged) as out:
        for index, flowfile in enumerate(members):
            out.write(flowfile_v3.header(packaged_attributes(flowfile), flowfile.size))
            copied = 0
            if contents is not None:
                copied = out.write(contents[index])
            else:
                with session.read(flowfile) as source:
                    while chunk := source.read(1 << 20):
                        copied += out.write(chunk)
            if copied != flowfile.size:
                cause = ContentTruncated(f"the content is {copied} bytes, its FlowFile says {flowfile.size}")
                raise UnreadableContent(flowfile, cause)
    return out.flowfile


def _package_name(members, merged) -> str:
    """The merged package's name before `.pkg`, as NiFi names it: the one member's
    filename, else the first member's `segment.original.filename`, else the merged
    FlowFile's own (its uuid)."""
    if len(members) == 1:
        return members[0].attributes.get("filename", merged.attributes["filename"])
    return members[0].attributes.get("segment.original.filename", merged.attributes["filename"])
