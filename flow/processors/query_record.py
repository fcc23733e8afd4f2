"""QueryRecord: SQL over each FlowFile's records, one relationship per query, as NiFi's.

Each dynamic property is a query (an expression, so it may use the FlowFile's
attributes) over the table `FLOWFILE`, the records as the reader gives them
(`flow.records.sql`: DuckDB, streamed). Each query's result is written by the writer
into a new FlowFile (a child of the original) sent to the relationship named after
the property, with `record.count`, `mime.type` and `QueryRecord.Route` (the
relationship); the original goes to `original`. A query that fails, or records that
cannot be read, send the original to `failure` whole, with `record.error.message`
(which query, and why), and no result of it goes anywhere.

A query is checked when the flow is loaded: one SELECT that parses, and, when the
reader's schema is given literally, whose columns exist, each refused naming the
processor and the query's property.
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING

from ..errors import ExpressionError
from ..processor import ProcessContext, Processor
from ..records.errors import RecordError, SchemaChanged
from ..records.readers import plain_schema, plain_text
from ..records.rewrite import MIME_TYPE, RECORD_COUNT, copy_records, schema_of_all
from ..records.sql import QueryResult, query_problem
from .records import INCLUDE_ZERO_RECORDS_PROPERTY, READER_PROPERTY, WRITER_PROPERTY, each_flowfile

if TYPE_CHECKING:
    from ..flowfile import FlowFile
    from ..session import ProcessSession

ROUTE_ATTRIBUTE = "QueryRecord.Route"
FIXED_RELATIONSHIPS = ("original", "failure")


class QueryRecord(Processor):
    type_name = "QueryRecord"
    description = (
        "Runs SQL over each FlowFile's records (the table FLOWFILE); each query's result goes to the "
        "relationship named after its property."
    )
    properties = (
        READER_PROPERTY,
        WRITER_PROPERTY,
        INCLUDE_ZERO_RECORDS_PROPERTY,
    )
    relationships = FIXED_RELATIONSHIPS
    relationships_note = "and one per query, named after its dynamic property"
    dynamic_properties = True

    @classmethod
    def relationships_for(cls, properties, dynamic):
        return FIXED_RELATIONSHIPS + tuple(dynamic)

    @classmethod
    def validate(cls, properties, dynamic):
        if not dynamic:
            return [("record_reader", "QueryRecord needs at least one query: a property whose value is SQL")]
        try:
            schema = properties["record_reader"].known_schema()
        except RecordError as error:
            return [("record_reader", error.message)]
        for name, expression in dynamic.items():
            if name in FIXED_RELATIONSHIPS:
                return [(name, f"a query cannot be named {name!r}: that relationship is taken")]
            if expression.is_literal:
                problem = query_problem(expression.evaluate(), schema)
                if problem is not None:
                    return [(name, problem)]
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        reader, writer = context["record_reader"], context["record_writer"]
        keep_empty = context["include_zero_record_flowfiles"]

        def query(flowfile: FlowFile) -> None:
            results: list[tuple[str, FlowFile, int]] = []
            try:
                schema = reader.given_schema(flowfile)
                for name, expression in context.dynamic.items():
                    try:
                        sql = expression.evaluate(flowfile)
                    except ExpressionError as error:
                        raise RecordError(f"query {name!r}: {error}") from None
                    child, count, schema = self._query(session, flowfile, reader, writer, sql, schema, name)
                    results.append((name, child, count))
            except BaseException:
                for _, child, _ in results:
                    session.remove(child)
                raise
            for name, child, count in results:
                if count == 0 and not keep_empty:
                    session.remove(child)
                else:
                    session.transfer(child, name)
            session.transfer(flowfile, "original")

        each_flowfile(self.id, context, session, query)

    @staticmethod
    def _query(session: ProcessSession, flowfile, reader, writer, sql: str, schema, name: str):
        """The child holding `sql`'s result over `flowfile`'s records, its record count,
        and the schema the records were read with (inferred again when they widened,
        or when the query failed over a schema inferred from the first block alone: it
        may name a field that appears further on)."""
        complete = schema is not None  # given, or inferred over every record
        while True:
            child = session.create(flowfile)
            first = None
            try:
                with session.write(child) as out:
                    batches = map(plain_text, reader.batches(lambda: session.read(flowfile), schema))
                    first = next(batches, None)
                    if first is None and schema is None:  # no records, no schema: no columns to query
                        count = copy_records((), writer, out, None)
                    else:
                        source = chain([first], batches) if first is not None else iter(())
                        given = first.schema if first is not None else plain_schema(schema)
                        with QueryResult(sql, given, source) as result:
                            count = copy_records(result, writer, out, result.schema)
            except SchemaChanged:
                session.remove(child)
                schema, complete = schema_of_all(session, flowfile, reader), True
                continue
            except RecordError as error:
                session.remove(child)
                failure = error
                if not complete:  # a field further on, or values of several types (read as text)
                    try:
                        schema, complete = schema_of_all(session, flowfile, reader), True
                    except RecordError as reading:
                        failure = reading
                    else:
                        continue
                raise RecordError(
                    f"query {name!r}: {failure.message}", record=failure.record, line=failure.line
                ) from None
            except BaseException:
                session.remove(child)
                raise
            assert out.flowfile is not None  # set as the block was left without an exception
            attributes = {RECORD_COUNT: str(count), MIME_TYPE: writer.mime_type, ROUTE_ATTRIBUTE: name}
            return session.put_all_attributes(out.flowfile, attributes), count, schema
