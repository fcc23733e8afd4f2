"""MergeRecord: FlowFiles of records joined into one, bin by bin, as NiFi's.

FlowFiles are binned by the schema of their records (a merged FlowFile has one) and,
when `correlation_attribute` is set, by that attribute's value. A bin is merged when
it holds at least `min_records` records and `min_bin_size` bytes, or when it has
waited `max_bin_age`; it never takes more than `max_records` records or
`max_bin_size` bytes (the FlowFiles past that wait for the next bin; a FlowFile over
the maximum alone is merged on its own). The merged FlowFile (a JOIN of its members:
`merge.count` of them, `record.count` records, the writer's `mime.type`, the
correlation value) goes to `merged`, the members to `original`.

The bins are durable the way MergeContent's are: a FlowFile stays in its queue, in the
WAL, until the session that merges its bin commits; a bin not ready yet is put back
(a rollback, which writes nothing) and its age is kept in memory only, so after a
restart a bin's age starts again. A FlowFile's record count is its `record.count`
attribute when it has one, and its schema that of its first records, read once and
remembered while it waits. A FlowFile whose later records widen that schema (found
when it is read whole, to count it or to merge it) is binned again by the schema of
all its records: taken out of the bin being merged, it waits for the next.

Records that cannot be read send that FlowFile to `failure` whole with `record.error.*`
(the bin is merged without it); a content that cannot be read sets it aside.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pyarrow as pa

from ..errors import UnreadableContent
from ..processor import ProcessContext, Processor, PropertyDescriptor
from ..records.errors import RecordError, SchemaChanged
from ..records.rewrite import MIME_TYPE, RECORD_COUNT, mixed_schema, schema_of_all
from .content_failures import ContentFailures
from .records import READER_PROPERTY, WRITER_PROPERTY

if TYPE_CHECKING:
    from ..flowfile import FlowFile
    from ..session import ProcessSession

# FlowFiles looked at per run (at least max_records of one-record FlowFiles fit).
POLL = 10_000
_NO_RECORDS = "(no records)"


class MergeRecord(Processor):
    type_name = "MergeRecord"
    description = "Merges FlowFiles of records into one, in bins by schema (and a correlation attribute)."
    properties = (
        READER_PROPERTY,
        WRITER_PROPERTY,
        PropertyDescriptor("min_records", "integer", default=1, minimum=1, description="a bin merges at this many"),
        PropertyDescriptor("max_records", "integer", default=1000, minimum=1, description="at most this many a bin"),
        PropertyDescriptor("min_bin_size", "size", default="0 B", description="a bin merges once it holds this much"),
        PropertyDescriptor("max_bin_size", "size", description="at most this much content a bin (no limit by default)"),
        PropertyDescriptor("max_bin_age", "duration", description="merge a bin that waited this long, however small"),
        PropertyDescriptor("correlation_attribute", "string", description="bin by this attribute's value too"),
    )
    relationships = ("merged", "original", "failure")

    @classmethod
    def validate(cls, properties, dynamic):
        if properties["max_records"] < properties["min_records"]:
            return [("max_records", "must be at least min_records")]
        limit = properties.get("max_bin_size")
        if limit is not None and limit < properties["min_bin_size"]:
            return [("max_bin_size", "must be at least min_bin_size")]
        return []

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._bin_since: dict[tuple, float] = {}  # bin -> when it was first seen short
        self._known: dict[str, tuple[str, int]] = {}  # FlowFile id -> (schema, records)
        # FlowFile id -> the schema to read it with, when its first records were not
        # enough to infer it (a field widened further on, values of several types).
        self._schemas: dict[str, pa.Schema] = {}
        self.clock = time.monotonic

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        batch = session.get_batch(POLL)
        if not batch:
            return
        unreadable = ContentFailures(self.id, context, session)
        bins: dict[tuple, list[tuple[FlowFile, int]]] = {}
        correlation = context.get("correlation_attribute")
        changed = False  # anything merged or sent to failure: the session commits
        for flowfile in batch:
            try:
                schema, records = self._describe(context, session, flowfile)
            except RecordError as error:
                self._forget(flowfile.id)
                session.transfer(session.put_all_attributes(flowfile, error.attributes()), "failure")
                changed = True
                continue
            except UnreadableContent as error:
                self._forget(flowfile.id)
                unreadable.set_aside(flowfile, error)
                changed = True
                continue
            key = (flowfile.attributes.get(correlation, "") if correlation else "", schema)
            bins.setdefault(key, []).append((flowfile, records))
        if len(batch) < POLL:  # the whole queue was seen: forget what it no longer holds
            present = {flowfile.id for flowfile in batch}
            self._known = {key: value for key, value in self._known.items() if key in present}
            self._schemas = {key: value for key, value in self._schemas.items() if key in present}
            self._bin_since = {key: since for key, since in self._bin_since.items() if key in bins}
        for key, members in bins.items():
            taken, left = self._take(context, members, key)
            if taken:
                changed = True
                self._merge(context, session, taken, key[0] if correlation else None, unreadable)
            for flowfile, _ in left:
                session.transfer(flowfile)  # back to its queue: its bin is not ready
        unreadable.log()
        if not changed:
            # Nothing ready: the FlowFiles go back untouched (a rollback writes nothing),
            # and the processor waits its yield instead of taking them again at once.
            session.rollback()
            context.yield_()

    def _describe(self, context: ProcessContext, session: ProcessSession, flowfile: FlowFile) -> tuple[str, int]:
        """(the FlowFile's schema as text, its record count), read once and remembered."""
        known = self._known.get(flowfile.id)
        if known is not None:
            return known
        reader = context["record_reader"]
        schema = self._schema_of(reader, flowfile)
        counted = flowfile.attributes.get(RECORD_COUNT, "")
        records = int(counted) if counted.isdigit() else None
        first = None
        count = 0
        try:
            for batch in reader.batches(lambda: session.read(flowfile), schema):
                first = first or batch.schema
                count += batch.num_rows
                if records is not None:
                    break  # its count is known: the first records give its schema
        except SchemaChanged:
            self._schemas[flowfile.id] = schema_of_all(session, flowfile, reader)
            return self._describe(context, session, flowfile)
        except RecordError as error:
            if schema is not None:
                raise
            self._schemas[flowfile.id] = mixed_schema(session, flowfile, reader, error)
            return self._describe(context, session, flowfile)
        described = (first.to_string() if first is not None else _NO_RECORDS, records if records is not None else count)
        self._known[flowfile.id] = described
        return described

    def _schema_of(self, reader, flowfile: FlowFile) -> pa.Schema | None:
        """The schema `flowfile` is read with: the one found over all its records when
        its first ones were not enough, else the reader's given one (None: inferred)."""
        return self._schemas.get(flowfile.id) or reader.given_schema(flowfile)

    def _forget(self, flowfile_id: str) -> None:
        self._known.pop(flowfile_id, None)
        self._schemas.pop(flowfile_id, None)

    def _take(self, context: ProcessContext, members: list, key: tuple) -> tuple[list, list]:
        """The members of a bin to merge now (none when it is not ready), and the rest."""
        most_records, most_bytes = context["max_records"], context.get("max_bin_size")
        taken: list = []
        records = size = 0
        for flowfile, count in members:
            over = records + count > most_records or (most_bytes is not None and size + flowfile.size > most_bytes)
            if over and taken:
                break
            taken.append((flowfile, count))
            records, size = records + count, size + flowfile.size
        full = len(taken) < len(members) or records >= most_records
        enough = records >= context["min_records"] and size >= context["min_bin_size"]
        age = context.get("max_bin_age")
        now = self.clock()
        old = age is not None and now - self._bin_since.setdefault(key, now) >= age
        if full or enough or old:
            self._bin_since.pop(key, None)
            return taken, members[len(taken) :]
        self._bin_since.setdefault(key, now)
        return [], members

    def _merge(self, context, session: ProcessSession, members: list, correlation_value, unreadable) -> None:
        reader, writer = context["record_reader"], context["record_writer"]
        flowfiles = [flowfile for flowfile, _ in members]
        while flowfiles:
            merged = session.create(flowfiles)
            records = 0
            try:
                with session.write(merged) as out:
                    opened, schema = None, None
                    for member in flowfiles:
                        try:
                            read_with = self._schema_of(reader, member)
                            for batch in reader.batches(lambda m=member: session.read(m), read_with):
                                batch = writer.fit(batch)  # a field of mixed values as the writer takes it
                                if opened is None or schema is None:
                                    opened, schema = writer.open(out, batch.schema), batch.schema
                                opened.write(batch if batch.schema == schema else batch.cast(schema))
                                records += batch.num_rows
                        except SchemaChanged:
                            # Its first records gave its bin; the rest widen it: binned
                            # again, next time, by the schema of all of them.
                            try:
                                self._schemas[member.id] = schema_of_all(session, member, reader)
                            except (RecordError, UnreadableContent) as error:
                                raise _MemberFailed(member, error) from None
                            raise _MemberWidened(member) from None
                        except (RecordError, UnreadableContent, pa.ArrowInvalid) as error:
                            raise _MemberFailed(member, error) from None
                    if opened is None:
                        opened = writer.open(out, pa.schema([]))
                    opened.close()
            except _MemberWidened as widened:
                session.remove(merged)
                flowfiles = [flowfile for flowfile in flowfiles if flowfile.id != widened.member.id]
                self._known.pop(widened.member.id, None)
                session.transfer(widened.member)  # back to its queue, for its own bin
                continue
            except _MemberFailed as failed:
                session.remove(merged)
                flowfiles = [flowfile for flowfile in flowfiles if flowfile.id != failed.member.id]
                self._forget(failed.member.id)
                if isinstance(failed.error, UnreadableContent):
                    unreadable.set_aside(failed.member, failed.error)
                else:
                    reason = failed.error if isinstance(failed.error, RecordError) else RecordError(str(failed.error))
                    session.transfer(session.put_all_attributes(failed.member, reason.attributes()), "failure")
                continue
            assert out.flowfile is not None  # set as the block was left without an exception
            attributes = {"merge.count": str(len(flowfiles)), RECORD_COUNT: str(records), MIME_TYPE: writer.mime_type}
            if correlation_value is not None:
                attributes[context["correlation_attribute"]] = correlation_value
            session.transfer(session.put_all_attributes(out.flowfile, attributes), "merged")
            for flowfile in flowfiles:
                self._forget(flowfile.id)
                session.transfer(flowfile, "original")
            return


class _MemberWidened(Exception):
    def __init__(self, member):
        super().__init__(member.id)
        self.member = member


class _MemberFailed(Exception):
    def __init__(self, member, error: Exception):
        super().__init__(str(error))
        self.member, self.error = member, error
