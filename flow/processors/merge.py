"""MergeContent: joins FlowFiles into one (JOIN), by count, by bin age, by correlation attribute.

A member whose content cannot be read goes to `failure` (penalized, `content.error`:
`content_failures`) and the bin is merged without it, even if it then holds fewer than
`min_entries`: its members were ready together.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..errors import UnreadableContent
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from ..session import ProcessSession

READ_TOGETHER = 16 << 20  # a bundle whose contents add up to at most this is read in one go


class MergeContent(Processor):
    type_name = "MergeContent"
    description = "Concatenates FlowFiles (with header, delimiter and footer) into one."
    properties = (
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
