"""Records of many small messages (`flow.records.messages`): the messages read at once,
one per line, give what reading each by itself gives; a message that cannot be read is
left out with its error and the others go on; schemas that do not fit start a new set;
and each record written as a document of its own reads back as that record."""

from __future__ import annotations

import contextlib
import io
import json
import random

import pyarrow as pa
import pytest

from flow.records.messages import MessageFailure, MessageRecords, read_messages

from .test_formats import service

GOOD = [
    '{"id": 1, "name": "a"}',
    '{"id": 2, "name": "\u00e9t\u00e9", "tags": ["x"]}',
    '{"id": 3.5}',  # a float where integers were: the set widens
    "{}",
    '  {"id": 4, "name": null}  \r\n',
]
BAD = ["not json", "[1, 2]", '{"id": ', "7", '{"id": 1} trailing']
ODD = ['{"id": "text"}', '{"id": 5,\n "name": "two lines"}', "", '{"where": {"city": "Oslo"}}']


def _alone(reader, values, schema=None):
    """What read_messages gives when no message is read with another."""

    class OneByOne(type(reader)):  # type: ignore[misc]
        reads_lines = False

    return read_messages(OneByOne(reader.id, reader.config), values, schema)


def _by_message(found, values):
    """Each message's record (nulls left out; a blank message has none), and the
    failures; how the messages are grouped into sets may differ."""
    records, failures = {}, []
    for item in found:
        if isinstance(item, MessageFailure):
            failures.append(item.at)
            continue
        holding = [index for index in item.indexes if values[index].strip()]
        rows = item.table.to_pylist()
        assert len(rows) == len(holding)
        for index, row in zip(holding, rows, strict=True):
            records[index] = {key: value for key, value in row.items() if value is not None}
    return records, failures


@pytest.mark.parametrize("seed", range(40))
def test_messages_read_together_give_what_each_read_by_itself_gives(seed):
    rng = random.Random(seed)
    values = [rng.choice(GOOD + BAD + ODD).encode() for _ in range(rng.randrange(1, 30))]
    reader = service("JsonTreeReader")
    together, alone = read_messages(reader, values, None), _alone(reader, values)
    assert _by_message(together, values) == _by_message(alone, values), values
    for found in (together, alone):  # every message once, each set in the messages' order
        indexes = [i for item in found for i in (item.indexes if isinstance(item, MessageRecords) else (item.at,))]
        assert sorted(indexes) == list(range(len(values)))
        assert all(list(item.indexes) == sorted(item.indexes) for item in found if isinstance(item, MessageRecords))


def test_an_unreadable_message_is_left_out_with_its_error_and_the_rest_is_one_set():
    reader = service("JsonTreeReader")
    values = [b'{"id": 1}', b"not json", b'{"id": 2, "extra": true}', b"[1]", b'{"id": 3}']
    found = read_messages(reader, values, None)
    assert [type(item) for item in found] == [MessageRecords, MessageFailure, MessageFailure]
    records, first, second = found
    assert records.indexes == (0, 2, 4)
    assert records.table.to_pylist() == [
        {"id": 1, "extra": None},
        {"id": 2, "extra": True},
        {"id": 3, "extra": None},
    ]
    assert (first.at, second.at) == (1, 3)
    assert "a record must be a JSON object" in second.error.message


def test_a_message_whose_types_disagree_with_the_set_before_starts_a_new_one():
    reader = service("JsonTreeReader")
    found = read_messages(reader, [b'{"id": 1}', b'{"id": "one"}', b'{"id": 2}', b'{"id": 3}'], None)
    assert [(item.indexes, item.table.schema.field("id").type) for item in found] == [
        ((0,), pa.int64()),
        ((1,), pa.string()),
        ((2, 3), pa.int64()),  # joined to the set just before it only: the sets keep the messages' order
    ]


def test_with_a_given_schema_a_message_that_does_not_fit_is_a_failure():
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    reader = service("JsonTreeReader", schema_access_strategy="schema-text-property")
    found = read_messages(reader, [b'{"id": 1, "name": "a", "x": 1}', b'{"id": "no"}', b'{"id": 3}'], schema)
    records, failure = found
    assert records.indexes == (0, 2) and records.table.schema == schema
    assert records.table.to_pylist() == [{"id": 1, "name": "a"}, {"id": 3, "name": None}]
    assert failure.at == 1 and "does not fit the schema" in failure.error.message


def test_a_format_read_message_by_message_csv():
    reader = service("CSVReader")
    values = [b"id,name\n1,a\n2,b\n", b"id,name\n3,c\n", b"id,name\n4,a,too many\n", b"id,name\n"]
    found = read_messages(reader, values, None)
    records, failure = found
    assert records.indexes == (0, 1, 3) and [row["id"] for row in records.table.to_pylist()] == [1, 2, 3]
    assert failure.at == 2


@pytest.mark.parametrize(
    ("writer", "properties", "read_back"),
    [
        ("JsonRecordSetWriter", {"output_grouping": "one-line-per-object"}, "JsonTreeReader"),
        ("JsonRecordSetWriter", {}, "JsonTreeReader"),
        ("CSVRecordSetWriter", {}, "CSVReader"),
        ("AvroRecordSetWriter", {}, "AvroReader"),
        ("ParquetRecordSetWriter", {}, "ParquetReader"),
    ],
)
def test_each_record_written_by_itself_reads_back_as_that_record(writer, properties, read_back):
    batch = pa.RecordBatch.from_pylist(
        [{"id": 1, "name": "\u00e9"}, {"id": 2, "name": None}, {"id": 3, "name": "c, d"}],
        schema=pa.schema([("id", pa.int64()), ("name", pa.string())]),
    )
    documents = service(writer, **properties).each_record(batch)
    assert len(documents) == 3
    reader = service(read_back)
    for row, document in enumerate(documents):
        opener = lambda document=document: contextlib.nullcontext(io.BytesIO(document))  # noqa: E731
        [table] = list(reader.batches(opener, None))
        assert table.to_pylist() == batch.slice(row, 1).to_pylist()
    if writer == "JsonRecordSetWriter":
        grouping = properties.get("output_grouping", "array")
        first = json.loads(documents[0])
        assert first == ([{"id": 1, "name": "\u00e9"}] if grouping == "array" else {"id": 1, "name": "\u00e9"})
        assert not documents[0].endswith(b"\n")
