"""ValidateRecord: each FlowFile's records checked against a schema, the valid ones to
`valid` and the invalid ones to `invalid`, as NiFi's.

The records are read as they are (the reader infers their schema, so nothing is
dropped or converted on the way in; when their types disagree so that no schema fits
them, they are read again leniently, each such field as text that keeps what every
value was: `RecordReader.lenient_schema`) and checked a batch at a time
(`flow.records.validation`) against the schema: the reader's own schema
(`reader-schema`: the one it is given, or, when it infers one, the schema it infers
from the FlowFile's records, so that, as in NiFi, every record it can read is valid)
or an Avro schema in `schema_text`. Where the records' types disagree (a field a
number in one and text in another) NiFi infers a choice of types; that schema is the
one with such a field as the JSON text of each value (`rewrite.schema_of_all`), and
the records are valid and written as they were. Valid records are written by
`record_writer` with the schema's fields and types into one new FlowFile to `valid`;
invalid ones as they came by `invalid_record_writer` (by default the same writer) into
one to `invalid`. Both are
children of the original, which is dropped; a side with no record is not made,
except that a FlowFile of no records at all goes to `valid` with none.

Each invalid record's reason is in the ROUTE event of the `invalid` FlowFile's
provenance (the first `MAX_REASONS_SHOWN`, then how many more), and the first one in
its `record.error.message` (`record N: why`, N counting the FlowFile's records from
0). Records that cannot be read at all send the original to `failure` whole, with
`record.error.*` as ConvertRecord does.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

import pyarrow as pa

from ..controller_service import RECORD_WRITER
from ..errors import ExpressionError
from ..processor import ProcessContext, Processor, PropertyDescriptor
from ..records.avro_schema import arrow_schema
from ..records.errors import ERROR_MESSAGE, RecordError, SchemaChanged
from ..records.readers import SCHEMA_TEXT
from ..records.rewrite import MIME_TYPE, RECORD_COUNT, schema_of_all
from ..records.validation import check_batch
from .records import READER_PROPERTY, WRITER_PROPERTY, each_flowfile

if TYPE_CHECKING:
    from ..flowfile import FlowFile
    from ..session import ProcessSession

MAX_REASONS_SHOWN = 50
READER_SCHEMA = "reader-schema"


class ValidateRecord(Processor):
    type_name = "ValidateRecord"
    description = "Checks each record against a schema: valid records to valid, invalid ones (with why) to invalid."
    properties = (
        READER_PROPERTY,
        WRITER_PROPERTY,
        PropertyDescriptor(
            "invalid_record_writer",
            "service",
            service_kind=RECORD_WRITER,
            description="the writer of the invalid records (by default record_writer)",
        ),
        PropertyDescriptor(
            "schema_access_strategy",
            "choice",
            default=READER_SCHEMA,
            choices=(READER_SCHEMA, SCHEMA_TEXT),
            description="validate against the schema the reader is given, or the Avro schema in schema_text",
        ),
        PropertyDescriptor(
            "schema_text",
            "expression",
            default="${avro.schema}",
            description="an Avro schema (JSON), with schema-text-property",
        ),
        PropertyDescriptor(
            "allow_extra_fields",
            "boolean",
            default=True,
            description="a record with fields the schema lacks is valid (they are not written)",
        ),
        PropertyDescriptor(
            "strict_type_checking",
            "boolean",
            default=True,
            description="a value of another type is invalid (else it is valid when it converts, and is converted)",
        ),
    )
    relationships = ("valid", "invalid", "failure")

    @classmethod
    def validate(cls, properties, dynamic):
        if properties["schema_access_strategy"] == READER_SCHEMA:
            return []
        expression = properties["schema_text"]
        if expression.is_literal:
            try:
                arrow_schema(expression.evaluate())
            except RecordError as error:
                return [("schema_text", error.message)]
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        each_flowfile(self.id, context, session, lambda flowfile: self._validate(context, session, flowfile))

    def _schema(self, context: ProcessContext, session: ProcessSession, flowfile) -> tuple[pa.Schema, bool]:
        """The schema to validate against, and whether it is the one the reader infers
        from this FlowFile's records."""
        if context["schema_access_strategy"] == READER_SCHEMA:
            reader = context["record_reader"]
            schema = reader.given_schema(flowfile)
            if schema is not None:
                return schema, False
            return schema_of_all(session, flowfile, reader), True
        try:
            return arrow_schema(context["schema_text"].evaluate(flowfile)), False
        except ExpressionError as error:
            raise RecordError(f"schema_text: {error}") from None

    def _validate(self, context: ProcessContext, session: ProcessSession, flowfile: FlowFile) -> None:
        reader, writer = context["record_reader"], context["record_writer"]
        invalid_writer = context.get("invalid_record_writer") or writer
        strict, allow_extra = context["strict_type_checking"], context["allow_extra_fields"]
        schema, inferred = self._schema(context, session, flowfile)
        read_schema = schema if inferred else None  # None: the records as they are, inferred
        lenient = False
        while True:
            valid_child, invalid_child = session.create(flowfile), session.create(flowfile)
            counts = [0, 0]
            reasons: list[tuple[int, str]] = []
            try:
                with ExitStack() as stack:
                    valid_out = stack.enter_context(session.write(valid_child))
                    invalid_out = stack.enter_context(session.write(invalid_child))
                    valid_set = writer.open(valid_out, writer.fit(pa.RecordBatch.from_pylist([], schema=schema)).schema)
                    invalid_set = None
                    for batch in reader.batches(lambda: session.read(flowfile), read_schema):
                        if inferred:  # the records' own schema: each one read is valid
                            valid_set.write(writer.fit(batch))
                            counts[0] += batch.num_rows
                            continue
                        checked = check_batch(
                            batch, schema, strict=strict, allow_extra=allow_extra, text=reader.values_are_text
                        )
                        offset = counts[0] + counts[1]
                        reasons += [(offset + index, why) for index, why in checked.reasons]
                        if checked.valid.num_rows:
                            valid_set.write(writer.fit(checked.valid))
                        if checked.invalid.num_rows:
                            if invalid_set is None:
                                invalid_set = invalid_writer.open(invalid_out, checked.invalid.schema)
                            invalid_set.write(checked.invalid)
                        counts[0] += checked.valid.num_rows
                        counts[1] += checked.invalid.num_rows
                    valid_set.close()
                    if invalid_set is not None:
                        invalid_set.close()
            except SchemaChanged:
                session.remove(valid_child)
                session.remove(invalid_child)
                read_schema = reader.infer_schema(lambda: session.read(flowfile))
                continue
            except RecordError:
                session.remove(valid_child)
                session.remove(invalid_child)
                if lenient:
                    raise
                # Records whose values disagree in type fit no schema: read each such
                # field as what it held, to judge every value by itself.
                read_schema, lenient = reader.lenient_schema(lambda: session.read(flowfile)), True
                continue
            except BaseException:
                session.remove(valid_child)
                session.remove(invalid_child)
                raise
            break
        valid_written, invalid_written = valid_out.flowfile, invalid_out.flowfile
        assert valid_written is not None and invalid_written is not None  # both blocks were left without an exception
        self._route(session, flowfile, (valid_written, invalid_written), counts, reasons, (writer, invalid_writer))

    @staticmethod
    def _route(session: ProcessSession, flowfile: FlowFile, children, counts, reasons, writers) -> None:
        """The valid and the invalid child to their relationships (each when it holds
        records; the valid one too when neither does), the original dropped."""
        (valid_child, invalid_child), (writer, invalid_writer) = children, writers
        if counts[0] or not counts[1]:
            attributes = {RECORD_COUNT: str(counts[0]), MIME_TYPE: writer.mime_type}
            session.transfer(session.put_all_attributes(valid_child, attributes), "valid")
        else:
            session.remove(valid_child)
        if counts[1]:
            first = f"record {reasons[0][0]}: {reasons[0][1]}"
            attributes = {RECORD_COUNT: str(counts[1]), MIME_TYPE: invalid_writer.mime_type, ERROR_MESSAGE: first}
            invalid_child = session.put_all_attributes(invalid_child, attributes)
            shown = "; ".join(f"record {index}: {why}" for index, why in reasons[:MAX_REASONS_SHOWN])
            more = len(reasons) - MAX_REASONS_SHOWN
            session.route(invalid_child, "invalid", shown + (f"; and {more} more" if more > 0 else ""))
            session.transfer(invalid_child, "invalid")
        else:
            session.remove(invalid_child)
        session.remove(flowfile)
