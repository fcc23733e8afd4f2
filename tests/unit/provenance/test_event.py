import pyarrow as pa
import pytest

from repositories.provenance import EventBatch, EventType, InvalidEventError, ProvenanceEvent
from repositories.provenance.event_batch import BODY_SCHEMA, EventRow, event_of_row, row_of, to_events

from .conftest import claim, event


@pytest.mark.parametrize("kind", list(EventType))
def test_every_event_type_round_trips_through_the_stored_columns(kind):
    original = event(
        kind,
        parent_uuids=("p1", "p2") if kind is EventType.JOIN else (),
        attributes_before={"filename": "old", "k": "v"},
        content_before=claim(1),
        content_after=claim(2),
        details="why",
        size=42,
        event_time_ms=5,
    )
    batch = EventBatch.from_events([original], now_ms=999).with_ids(77)
    (back,) = to_events(batch)
    assert back.event_id == 77
    assert back == original.with_id(77, 5)


def test_events_without_time_are_stamped_and_mixed_claims_survive():
    events = [event(content_after=claim(3)), event(content_after=None)]
    rows = to_events(EventBatch.from_events(events, now_ms=1234).with_ids(1))
    assert [r.event_time_ms for r in rows] == [1234, 1234]
    assert rows[0].content_after == claim(3) and rows[1].content_after is None
    assert [r.event_id for r in rows] == [1, 2]


@pytest.mark.parametrize(
    "kind, fields",
    [
        ("FORK", {"child_uuids": ()}),
        ("CLONE", {"child_uuids": ()}),
        ("JOIN", {"parent_uuids": ()}),
        ("SEND", {"transit_uri": None}),
        ("RECEIVE", {"transit_uri": ""}),
        ("ROUTE", {"relationship": None}),
        ("CREATE", {"component_id": ""}),
        ("BOGUS", {}),
    ],
)
def test_event_rules_are_enforced(kind, fields):
    with pytest.raises(InvalidEventError):
        ProvenanceEvent(kind, "u1", "c1", **fields) if kind == "BOGUS" else event(kind, **fields)


def test_filename_comes_from_attributes_after_then_before():
    assert event(attributes_before={"filename": "a"}, attributes_after={"filename": "b"}).filename == "b"
    assert event(attributes_before={"filename": "a"}, attributes_after={}).filename == "a"


def test_bulk_columns_are_checked_like_events():
    good = EventBatch.from_events([event("ROUTE")], now_ms=1).record_batch
    EventBatch.from_arrow(good)
    bad = good.set_column(BODY_SCHEMA.get_field_index("relationship"), "relationship", pa.array([None], pa.string()))
    with pytest.raises(InvalidEventError, match="relationship"):
        EventBatch.from_arrow(bad)
    with pytest.raises(InvalidEventError, match="schema"):
        EventBatch.from_arrow(pa.record_batch({"x": [1]}))


def test_to_dict_is_json_ready():
    import json

    d = event("SEND", content_after=claim(4)).to_dict()
    assert json.loads(json.dumps(d))["content_after"]["offset"] == 40


def test_an_event_row_names_the_stored_columns_and_changes_no_byte_of_a_batch():
    content = claim(1)
    events = [
        ProvenanceEvent(
            EventType.SEND,
            "u1",
            "p",
            "PutFile",
            transit_uri="file:/x",
            attributes_before={"a": "1"},
            attributes_after={"a": "2"},
            content_before=content,
            content_after=content,
            size=20,
        ),
        ProvenanceEvent(EventType.JOIN, "u2", "m", "MergeContent", 1234, parent_uuids=("a", "b")),
    ]
    rows = [row_of(event) for event in events]
    assert EventRow._fields == tuple(BODY_SCHEMA.names)
    assert rows[1].parent_uuids == ("a", "b") and rows[0].transit_uri == "file:/x" and rows[0].time_ms is None
    assert [event_of_row(row) for row in rows] == events
    # A row is the tuple of its values: the batch (the bytes the outbox and journals
    # store) is the same as that of the plain tuples.
    assert (
        EventBatch.from_rows(rows, 999).to_message()
        == EventBatch.from_rows([tuple(row) for row in rows], 999).to_message()
    )
    assert EventBatch.from_rows(rows, 999).record_batch.column("time_ms").to_pylist() == [999, 1234]


def test_maps_shared_by_rows_are_stored_as_maps_equal_but_apart_are():
    """A batch converts each map object once and repeats it (`_maps_columns`): what is
    stored reads back as the same maps given as distinct copies, in no more bytes,
    whichever way the rows share them (a SEND and a DROP of one FlowFile: one map four
    times)."""
    sent, changed, empty = {"a": "1", "b": "2"}, {"a": "1", "b": "3"}, {}
    shapes = [
        [(empty, sent), (sent, changed), (changed, changed), (changed, changed)],
        [(sent, sent), (sent, sent)],
        [(empty, sent), (empty, changed)],
        [(sent, changed)],
    ]
    for shape in shapes:
        rows = [
            EventRow(None, "SEND", f"u{i}", (), (), "p", "PutFile", b, a, None, None, "file:/x", None, None, 1)
            for i, (b, a) in enumerate(shape)
        ]
        apart = [row._replace(attributes_before=dict(row[7]), attributes_after=dict(row[8])) for row in rows]
        batch, copies = EventBatch.from_rows(rows, 999), EventBatch.from_rows(apart, 999)
        message = batch.to_message()
        assert EventBatch.from_message(message).record_batch.equals(copies.record_batch)
        assert len(message) <= len(copies.to_message())
        columns = batch.record_batch
        assert [dict(m) for m in columns.column("attributes_before").to_pylist()] == [b for b, _ in shape]
        assert [dict(m) for m in columns.column("attributes_after").to_pylist()] == [a for _, a in shape]


def _rows_of_every_shape(count: int) -> list[EventRow]:
    """Rows that differ in every way a column can: claims or none, shared or not, maps
    shared, empty, equal and apart, or a mapping that is not a dict, lists of uuids,
    times given or not, optional texts."""
    import types

    shared = {"filename": "f", "path": "./"}
    rows = []
    for i in range(count):
        kind = ("SEND", "JOIN", "ROUTE", "FORK", "DROP", "ATTRIBUTES_MODIFIED")[i % 6]
        before = (shared, {}, types.MappingProxyType({"a": str(i)}), {"k": "v", "n": str(i)})[i % 4]
        after = shared if i % 3 == 0 else {**before, "step": str(i)}
        content = claim(i) if i % 5 else None
        rows.append(
            EventRow(
                None if i % 2 else 1000 + i,
                kind,
                f"u{i}",
                ("p1", f"p{i}") if kind == "JOIN" else (),
                (f"c{i}",) if kind == "FORK" else (),
                f"comp-{i % 3}",
                "Processor",
                before,
                after,
                content,
                content if i % 4 else claim(i + 1),
                "file:/x" if kind == "SEND" else None,
                "why" if i % 7 == 0 else None,
                "success" if kind == "ROUTE" else None,
                i * 10,
            )
        )
    return rows


@pytest.mark.parametrize("count", [1, 2, 7, 32, 33, 200])
def test_a_batch_of_a_few_rows_holds_the_columns_that_many_rows_make(count):
    """A few rows are converted as one struct column, many column by column: either
    way the batch holds the same values, which read back as the events they were."""
    from repositories.provenance.event_batch import FEW_ROWS, _columns_of_rows, _few_rows

    rows = _rows_of_every_shape(count)
    columns = _columns_of_rows(rows, 999)
    if count <= FEW_ROWS * 2:
        assert _few_rows(rows, 999).equals(columns)
    batch = EventBatch.from_rows(rows, 999)
    assert batch.record_batch.equals(columns)
    assert batch.record_batch.schema.equals(BODY_SCHEMA)
    back = EventBatch.from_message(batch.to_message())
    expected = [event_of_row(row._replace(time_ms=999 if row.time_ms is None else row.time_ms)) for row in rows]
    assert to_events(back.record_batch) == expected
    stored = batch.with_ids(41)
    assert stored.column("id").to_pylist() == list(range(41, 41 + count))
    assert [event.event_id for event in to_events(stored)] == list(range(41, 41 + count))


def test_a_generation_of_small_batches_is_merged_as_one_chunk_in_id_order():
    """Commits of one FlowFile each register one-event batches: the merge combines
    them (each step after it pays per chunk) and orders them by id, whatever order
    the journals gave them in; large batches stay as they are."""
    from repositories.provenance.event_batch import SMALL_BATCH_ROWS, concat_sorted

    rows = _rows_of_every_shape(40)
    small = [EventBatch.from_rows([row], 999).with_ids(100 + i) for i, row in enumerate(rows)]
    merged = concat_sorted(small[::-1] + [EventBatch.from_rows([], 999).with_ids(0)])
    assert merged.column("id").num_chunks == 1
    assert merged.column("id").to_pylist() == list(range(100, 140))
    assert merged.to_batches()[0].equals(EventBatch.from_rows(rows, 999).with_ids(100))
    large = [EventBatch.from_rows(rows * (SMALL_BATCH_ROWS // 40 + 1), 999).with_ids(i * 1000) for i in (1, 0)]
    merged = concat_sorted(large)
    assert merged.column("id").num_chunks == 2 and merged.column("id")[0].as_py() == 0
