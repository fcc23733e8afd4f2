"""The provenance outbox's record formats: what this release writes (`arrow-ipc-zstd-1`) reads
back as the events the commit registered, a record the release before wrote
(`marshal-4`, checked in) still reads, and a damaged record is refused, not misread."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from flow.flowfile import FlowFile
from flow.provenance_outbox import FORMAT, ROWS_FORMAT, decode_events, outbox_record, reconcile, rows_record
from flow.shard import OUTBOX_QUEUE
from repositories.claims import ContentClaim, ResourceClaim
from repositories.provenance import EventBatch, EventType, ProvenanceEvent
from repositories.provenance.event_batch import row_of

SAMPLE = Path(__file__).parents[2] / "data" / "outbox-marshal-4" / "record.json"
ARROW_SAMPLE = Path(__file__).parents[2] / "data" / "outbox-arrow-ipc-zstd-1" / "record.json"
NOW = 1_795_479_787_518
CLAIM = ContentClaim(ResourceClaim("n1-3", 7, "1795479787518-bec886-0"), 1200, 100)


def events() -> list[ProvenanceEvent]:
    before = {"filename": "a.txt", "uuid": "u1"}
    after = {**before, "stage": "updated", "note": "ünïcode ✓"}
    return [
        ProvenanceEvent(
            EventType.CREATE,
            "u1",
            "generate",
            "GenerateFlowFile",
            attributes_after=before,
            content_after=CLAIM,
            size=100,
        ),
        ProvenanceEvent(
            EventType.ATTRIBUTES_MODIFIED,
            "u1",
            "update",
            "UpdateAttribute",
            attributes_before=before,
            attributes_after=after,
            content_before=CLAIM,
            content_after=CLAIM,
            size=100,
        ),
        ProvenanceEvent(
            EventType.ROUTE,
            "u1",
            "route",
            "RouteOnAttribute",
            attributes_after=after,
            relationship="matched",
            details="ok",
            event_time_ms=NOW - 5,
        ),
        ProvenanceEvent(EventType.JOIN, "u9", "merge", "MergeContent", parent_uuids=("u1", "u2"), size=200),
        ProvenanceEvent(EventType.FORK, "u1", "split", "SplitText", child_uuids=("c1", "c2")),
        ProvenanceEvent(EventType.SEND, "u1", "post", "InvokeHTTP", transit_uri="http://127.0.0.1:9/x"),
    ]


class RecordingProvenance:
    """What `reconcile` asks of a provenance repository that holds none of the events."""

    next_event_id = 0

    def __init__(self):
        self.registered = []

    def register_events(self, found):
        self.registered += found

    def events(self, start, count, skip_damaged=False):
        return []

    def event_files(self):
        return []


def stamped(events_, now: int) -> list[dict]:
    return [(e if e.event_time_ms is not None else e.with_id(None, now)).to_dict() for e in events_]


def test_a_record_of_this_release_reads_back_as_the_events_with_their_times():
    record = outbox_record(2, 17, EventBatch.from_events(events(), NOW), NOW)
    assert record.attributes["format"] == FORMAT and record.attributes["next"] == "17"
    assert record.id == f"{OUTBOX_QUEUE}/2"
    assert [e.to_dict() for e in decode_events(record.attributes)] == stamped(events(), NOW)


def test_a_record_the_previous_release_wrote_still_reads():
    sample = json.loads(SAMPLE.read_text())
    assert sample["attributes"]["format"] == "marshal-4"
    assert [e.to_dict() for e in decode_events(sample["attributes"])] == sample["events"]


def test_a_record_of_this_format_the_previous_release_compressed_still_reads():
    """The release before compressed with Arrow's zstd codec, this one with a zstd
    compressor kept per thread: either frame reads back as the same events."""
    sample = json.loads(ARROW_SAMPLE.read_text())
    assert sample["attributes"]["format"] == FORMAT
    assert [e.to_dict() for e in decode_events(sample["attributes"])] == sample["events"]
    written = outbox_record(3, 52, EventBatch.from_events(events(), NOW), NOW)
    assert written.id == sample["id"] and written.attributes["next"] == sample["attributes"]["next"]
    assert [e.to_dict() for e in decode_events(written.attributes)] == sample["events"]


def rows(events_, now: int) -> list[tuple]:
    """The rows a commit keeps: stamped with its time where the event had none."""
    return [row if row[0] is not None else (now, *row[1:]) for row in map(row_of, events_)]


def test_a_record_of_rows_reads_back_as_the_events_with_their_times():
    record = rows_record(4, 23, rows(events(), NOW), NOW)
    assert record.attributes["format"] == ROWS_FORMAT and record.attributes["next"] == "23"
    assert record.id == f"{OUTBOX_QUEUE}/4"
    assert [e.to_dict() for e in decode_events(record.attributes)] == stamped(events(), NOW)
    # Its text is the documented JSON: one array of the columns per event, in order.
    first = json.loads(record.attributes["events"])[0]
    assert (
        first[:3] == [NOW, "CREATE", "u1"]
        and first[9] is None
        and first[10] == ["n1-3", 7, "1795479787518-bec886-0", 1200, 100]
    )
    assert "ünïcode ✓" in record.attributes["events"]  # UTF-8 text, not escapes


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[[1, 2",
        "{}",
        "[7]",
        "[[1]]",
        '[[1, "CREATE", "u1", [], [], "c", null, {}, {}, null, null, null, null, null]]',
        '[[1, "NOT_A_TYPE", "u1", [], [], "c", null, {}, {}, null, null, null, null, null, 5]]',
        '[[1, "CREATE", "u1", [], [], "c", null, {}, {}, ["n1", 7], null, null, null, null, 5]]',
        '[["soon", "CREATE", "u1", [], [], "c", null, {}, {}, null, null, null, null, null, 5]]',
    ],
    ids=["empty", "cut", "object", "not-rows", "short-row", "14-columns", "type", "claim", "time"],
)
def test_a_record_of_rows_that_does_not_fit_is_refused_and_reconcile_skips_it(text, caplog):
    attributes = {**rows_record(0, 0, rows(events(), NOW), NOW).attributes, "events": text}
    with pytest.raises(ValueError):
        decode_events(attributes)
    broken = FlowFile(f"{OUTBOX_QUEUE}/0", attributes, None, OUTBOX_QUEUE, 0, NOW, NOW, 0)
    with caplog.at_level(logging.WARNING):
        assert reconcile([broken], RecordingProvenance()) == 0
    assert "cannot be decoded" in caplog.text


def test_records_made_by_many_threads_at_once_read_back_as_their_own_events():
    """Each thread compresses with a compressor of its own (one is not safe to share)."""
    from concurrent.futures import ThreadPoolExecutor

    def made(slot: int) -> tuple[int, list[dict]]:
        mine = [e for i, e in enumerate(events()) if i <= slot % len(events())]
        record = outbox_record(slot, slot, EventBatch.from_events(mine, NOW + slot), NOW + slot)
        return slot, [e.to_dict() for e in decode_events(record.attributes)]

    with ThreadPoolExecutor(8) as pool:
        for slot, decoded in pool.map(made, range(200)):
            mine = [e for i, e in enumerate(events()) if i <= slot % len(events())]
            assert decoded == stamped(mine, NOW + slot)


@pytest.mark.parametrize(
    "damage",
    [
        lambda a: {**a, "events": a["events"][: len(a["events"]) // 2]},
        lambda a: {**a, "events": a["events"][:40] + chr(ord(a["events"][40]) ^ 0x55) + a["events"][41:]},
        lambda a: {**a, "events": a["events"][:-3] + "\x00\x01\x02"},
        lambda a: {**a, "events": ""},
        lambda a: {**a, "size": str(int(a["size"]) - 1)},
        lambda a: {**a, "size": str(10**12)},
        lambda a: {**a, "size": "many"},
        lambda a: {k: v for k, v in a.items() if k != "size"},
    ],
    ids=["cut", "flipped", "tail", "empty", "size-1", "size-huge", "size-text", "no-size"],
)
def test_a_damaged_record_is_refused_and_reconcile_skips_it(damage, caplog):
    record = outbox_record(0, 0, EventBatch.from_events(events(), NOW), NOW)
    attributes = damage(record.attributes)
    try:
        decoded = decode_events(attributes)
    except ValueError:
        decoded = None
    # A flipped byte inside a string value reads as other text of the same length; it
    # must never read as events of another shape or crash the reader.
    assert decoded is None or len(decoded) == len(events())

    broken = FlowFile(record.id, attributes, None, OUTBOX_QUEUE, 0, NOW, NOW, 0)
    with caplog.at_level(logging.WARNING):
        registered = reconcile([broken], RecordingProvenance())
    assert registered == (len(decoded) if decoded is not None else 0)
    if decoded is None:
        assert "cannot be decoded" in caplog.text


def test_reconcile_registers_what_provenance_lacks_of_every_format():
    sample = json.loads(SAMPLE.read_text())
    old = FlowFile(f"{OUTBOX_QUEUE}/0", sample["attributes"], None, OUTBOX_QUEUE, 0, NOW, NOW, 0)
    new = outbox_record(1, 0, EventBatch.from_events(events(), NOW), NOW)

    small = rows_record(2, 0, rows(events()[:2], NOW + 1), NOW + 1)

    provenance = RecordingProvenance()
    assert reconcile([old, new, small], provenance) == len(sample["events"]) + len(events()) + 2
    assert [e.to_dict() for e in provenance.registered] == sample["events"] + stamped(events(), NOW) + stamped(
        events()[:2], NOW + 1
    )


class CountingReads:
    """A real provenance repository that counts the events `reconcile` reads from it."""

    def __init__(self, repository):
        self.repository = repository
        self.read = 0

    def __getattr__(self, name):
        return getattr(self.repository, name)

    def events(self, start, count, skip_damaged=False):
        found = self.repository.events(start, count, skip_damaged=skip_damaged)
        self.read += len(found)
        return found


def history(count: int) -> list[ProvenanceEvent]:
    return [
        ProvenanceEvent(EventType.ROUTE, f"h{i}", "route", "RouteOnAttribute", relationship="matched")
        for i in range(count)
    ]


def open_provenance(path, **limits):
    from repositories.provenance import ProvenanceConfig, ProvenanceRepository, RolloverPolicy

    return ProvenanceRepository(
        ProvenanceConfig(
            containers=(str(path / "p0"),),
            journals_per_container=1,
            rollover=RolloverPolicy(max_age_s=600.0),
            rollover_check_interval_s=None,
            age_off_interval_s=None,
            max_age_s=None,
            max_bytes=limits.get("max_bytes"),
            index_heap_bytes=15_000_000,
            compression_threads=1,
        )
    )


@pytest.fixture
def provenance(tmp_path):
    repository = open_provenance(tmp_path)
    yield repository
    repository.close()


def test_a_slot_idle_since_early_in_a_long_history_is_found_without_reading_the_history(provenance):
    record = outbox_record(3, provenance.next_event_id, EventBatch.from_events(events(), NOW), NOW)
    provenance.register_events(events(), NOW)
    for _ in range(5):
        provenance.register_events(history(10_000), NOW)
        provenance.sync()
    counting = CountingReads(provenance)
    assert reconcile([record], counting) == 0
    assert counting.read <= 256, f"read {counting.read} events of a history of 50,006"


def test_a_commit_whose_events_a_crash_kept_from_provenance_is_registered_once(provenance):
    provenance.register_events(history(10_000), NOW)
    provenance.sync()
    first = events()[:3]
    record = outbox_record(0, provenance.next_event_id, EventBatch.from_events(events(), NOW), NOW)
    provenance.register_events(first, NOW)  # the crash came after the commit's first three events
    provenance.register_events(history(10), NOW)  # another slot's commit, before the crash
    provenance.sync()
    assert reconcile([record], provenance) == len(events()) - 3
    provenance.sync()  # as the next recovery merges the journals first
    assert reconcile([record], provenance) == 0  # the next recovery finds them all


def test_a_small_commit_whose_queued_events_a_crash_kept_from_provenance_is_registered_once(provenance):
    """The record of a commit whose rows were queued (`register_rows_later`) is found
    from its `next`, however many other commits' rows were registered in its group."""
    provenance.register_events(history(1_000), NOW)
    record = rows_record(0, provenance.peek_next_event_id(), rows(events(), NOW), NOW)
    assert reconcile([record], provenance) == len(events())  # the crash came before its group
    provenance.sync()
    others = rows(history(100), NOW)
    provenance.register_rows_later(others[:50], lambda error: None)
    provenance.register_rows_later(rows(events(), NOW), lambda error: None)
    provenance.register_rows_later(others[50:], lambda error: None)
    provenance.sync()
    assert reconcile([record], provenance) == 0  # a later group held them: registered, not again


def test_a_slot_older_than_every_event_kept_was_registered_and_aged_off(tmp_path):
    provenance = open_provenance(tmp_path, max_bytes=1)  # age-off destroys every event file
    try:
        record = outbox_record(1, 5, EventBatch.from_events(events(), NOW), NOW)
        for _ in range(3):
            provenance.register_events(history(10), NOW)
            provenance.sync()
        assert provenance.age_off() and provenance.next_event_id > 5
        assert reconcile([record], provenance) == 0
    finally:
        provenance.close()


def test_an_adopted_shards_records_register_every_event_as_written_whatever_the_format(provenance):
    """An adopter registers every event of a dead node's outbox; an Arrow record goes
    in as the batch it was written as, and reads back as the same events as the
    formats that are decoded first."""
    provenance.register_events(history(5), NOW)  # this node's own: none of them is looked for
    sample = json.loads(SAMPLE.read_text())
    old = FlowFile(f"{OUTBOX_QUEUE}/0", sample["attributes"], None, OUTBOX_QUEUE, 0, NOW, NOW, 0)
    new = outbox_record(1, 0, EventBatch.from_events(events(), NOW), NOW)
    small = rows_record(2, 0, rows(events()[:2], NOW + 1), NOW + 1)
    expected = sample["events"] + stamped(events(), NOW) + stamped(events()[:2], NOW + 1)

    first = provenance.next_event_id
    assert reconcile([old, new, small], provenance, foreign=True) == len(expected)
    provenance.sync()
    found = provenance.events(first, len(expected) + 1)
    assert [e.with_id(None, e.event_time_ms).to_dict() for e in found] == expected


def test_an_adopted_shards_damaged_arrow_record_is_skipped_and_the_others_registered(provenance, caplog):
    good = outbox_record(0, 0, EventBatch.from_events(events(), NOW), NOW)
    text = good.attributes["events"]
    damaged = {**good.attributes, "events": text[: len(text) // 2]}
    broken = FlowFile(f"{OUTBOX_QUEUE}/1", damaged, None, OUTBOX_QUEUE, 0, NOW, NOW, 0)
    with caplog.at_level(logging.WARNING):
        assert reconcile([broken, good], provenance, foreign=True) == len(events())
    assert f"{OUTBOX_QUEUE}/1 cannot be decoded" in caplog.text
