"""ConvertRecord: records from one format to another, through the flow's reader and
writer services (`flow.records`), as NiFi's ConvertRecord.

Each FlowFile's content is read by the reader and written by the writer, streamed:
the FlowFile goes to `success` with its new content, `record.count` and `mime.type`.
Records that cannot be read or written (a malformed record, a value that does not fit
the given schema, a field the writer's format cannot hold) send the FlowFile to
`failure` as it was, with `record.error.message` and, when known, the record's index
(`record.error.index`, 0-based) and line (`record.error.line`). A FlowFile whose
content cannot be read at all goes to `failure` penalized (`content_failures`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..controller_service import RECORD_READER, RECORD_WRITER
from ..errors import UnreadableContent
from ..processor import ProcessContext, Processor, PropertyDescriptor
from ..records.errors import RecordError
from ..records.rewrite import rewrite_records
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from ..flowfile import FlowFile
    from ..session import ProcessSession

# FlowFiles per session: record FlowFiles are large, so a few amortise the commit.
BATCH = 16

READER_PROPERTY = PropertyDescriptor(
    "record_reader",
    "service",
    required=True,
    service_kind=RECORD_READER,
    description="the id of the flow's record reader service that reads the incoming records",
)
WRITER_PROPERTY = PropertyDescriptor(
    "record_writer",
    "service",
    required=True,
    service_kind=RECORD_WRITER,
    description="the id of the flow's record writer service that writes the outgoing records",
)

INCLUDE_ZERO_RECORDS_PROPERTY = PropertyDescriptor(
    "include_zero_record_flowfiles",
    "boolean",
    default=True,
    description="send on a FlowFile (or a query's result) that holds no records (else it is dropped)",
)


class ConvertRecord(Processor):
    type_name = "ConvertRecord"
    description = "Converts the records of each FlowFile from one format to another through reader and writer services."
    properties = (
        READER_PROPERTY,
        WRITER_PROPERTY,
        INCLUDE_ZERO_RECORDS_PROPERTY,
    )
    relationships = ("success", "failure")

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        reader, writer = context["record_reader"], context["record_writer"]
        keep_empty = context["include_zero_record_flowfiles"]

        def convert(flowfile: FlowFile) -> None:
            converted, count = rewrite_records(session, flowfile, reader, writer)
            if count == 0 and not keep_empty:
                session.remove(converted)
            else:
                session.transfer(converted, "success")

        each_flowfile(self.id, context, session, convert)


def each_flowfile(
    processor_id: str, context: ProcessContext, session: ProcessSession, work: Callable[[FlowFile], None]
) -> None:
    """Run `work` on each FlowFile of a batch, as every record processor does: records
    that cannot be read or written (`RecordError`) send the FlowFile to `failure` whole,
    with `record.error.*` (logged at most once a minute); a content that cannot be read
    at all sets it aside penalized (`content_failures`). `work` removes whatever it made
    for a FlowFile before it raises."""
    unreadable = ContentFailures(processor_id, context, session)
    for flowfile in session.get_batch(BATCH):
        try:
            work(flowfile)
        except RecordError as error:
            context.limited_log.warning("records", "%s: %s goes to failure: %s", processor_id, flowfile.id, error)
            session.transfer(session.put_all_attributes(flowfile, error.attributes()), "failure")
        except UnreadableContent as error:
            unreadable.set_aside(flowfile, error)
    unreadable.log()
