"""Pages of a query: offset and limit over the index's hits, newest first, pinned by
`max_event_id`; totals; and the query's names for times and event types."""

from __future__ import annotations

import pytest

from repositories.provenance import EventType, ProvenanceQuery
from repositories.provenance.query import NIFI_EVENT_TYPES, parse_event_type, parse_time

from .conftest import event


def every_page(repo, query: ProvenanceQuery) -> tuple[list[int], list[int]]:
    """Follow `offset + hits` from the first page to the last: the ids, and each page's size."""
    ids, sizes, offset, pinned = [], [], 0, None
    while True:
        result = repo.query(ProvenanceQuery(**{**query_fields(query), "offset": offset, "max_event_id": pinned}))
        pinned = pinned if pinned is not None else result.newest_hit_id
        ids += [e.event_id for e in result.events]
        sizes.append(len(result.events))
        offset += result.hits
        if result.hits < query.limit:
            return ids, sizes


def query_fields(query: ProvenanceQuery) -> dict:
    return {name: getattr(query, name) for name in ProvenanceQuery.__slots__}


def test_pages_cover_every_hit_once_newest_first_with_the_total(open_repo):
    repo = open_repo(shard_bytes=1)  # a shard per file: pages merge across shards
    for _ in range(3):
        repo.register_events([event("CREATE", component_id="gen") for _ in range(7)] + [event("DROP")])
        repo.sync()
    ids, sizes = every_page(repo, ProvenanceQuery(component_id="gen", limit=5))
    expected = [i for i in range(24, 0, -1) if i % 8]
    assert ids == expected and sizes == [5, 5, 5, 5, 1]
    first = repo.query(ProvenanceQuery(component_id="gen", limit=5))
    assert (first.total, first.hits, first.newest_hit_id, first.last_hit_id) == (21, 5, 23, 19)
    assert repo.query(ProvenanceQuery(component_id="gen", limit=5, offset=21)).events == []


def test_a_pinned_listing_does_not_shift_when_new_events_are_indexed(open_repo):
    repo = open_repo()
    repo.register_events([event("CREATE", component_id="gen") for _ in range(10)])
    repo.sync()
    first = repo.query(ProvenanceQuery(component_id="gen", limit=4))
    repo.register_events([event("CREATE", component_id="gen") for _ in range(6)])
    repo.sync()
    pinned = ProvenanceQuery(component_id="gen", limit=4, offset=4, max_event_id=first.newest_hit_id)
    second = repo.query(pinned)
    assert [e.event_id for e in first.events] == [10, 9, 8, 7]
    assert [e.event_id for e in second.events] == [6, 5, 4, 3] and second.total == 10
    unpinned = repo.query(ProvenanceQuery(component_id="gen", limit=4, offset=4))
    assert [e.event_id for e in unpinned.events] == [12, 11, 10, 9] and unpinned.total == 16


def test_a_cursor_below_a_shard_skips_it(open_repo):
    repo = open_repo(shard_bytes=1)
    for _ in range(3):
        repo.register_events([event("CREATE") for _ in range(5)])
        repo.sync()
    result = repo.query(ProvenanceQuery(max_event_id=7, limit=100))
    assert [e.event_id for e in result.events] == [7, 6, 5, 4, 3, 2, 1]
    assert (result.shards_searched, result.shards_skipped) == (2, 1)


def test_pages_of_a_uuid_count_hits_that_name_another_uuid_with_its_key(open_repo, clock):
    # Keys keep the first 8 and last 12 hex digits: these two uuids share one.
    a = "0f8fad5b-0000-4000-8000-70867728950e"
    b = "0f8fad5b-1111-4111-9111-70867728950e"
    repo = open_repo()
    t0 = int(clock() * 1000)
    kinds = [a, b, a, b, b, a, a, b, a]
    repo.register_events([event("CREATE", uuid, event_time_ms=t0) for uuid in kinds])
    repo.sync()
    ids, sizes = every_page(repo, ProvenanceQuery(flowfile_uuid=a, limit=2))
    assert ids == [9, 7, 6, 3, 1]
    assert sum(sizes) == 5 and all(size <= 2 for size in sizes)
    # The first page asks again for more, and says how far it got: ids 9, 8, 7.
    first = repo.query(ProvenanceQuery(flowfile_uuid=a, limit=2))
    assert [e.event_id for e in first.events] == [9, 7] and (first.hits, first.last_hit_id) == (3, 7)


def test_event_type_names_are_nifis_in_any_case():
    assert parse_event_type("send") == "SEND"
    assert parse_event_type(" Content_Modified ") == "CONTENT_MODIFIED"
    assert parse_event_type("FETCH") == "FETCH"  # NiFi's; never recorded here, so it matches nothing
    assert {kind.value for kind in EventType} < set(NIFI_EVENT_TYPES)
    with pytest.raises(ValueError, match="'SENT' is not a provenance event type; NiFi's are CREATE, RECEIVE"):
        parse_event_type("SENT")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1700000000000", 1_700_000_000_000),
        ("2024-01-01T00:00:00Z", 1_704_067_200_000),
        ("2024-01-01T01:00:00+01:00", 1_704_067_200_000),
        ("2024-01-01T00:00:00.250", 1_704_067_200_250),  # no zone: UTC
        ("2h", 1_000_000_000 - 7_200_000),
    ],
)
def test_time_forms(text, expected):
    assert parse_time(text, now=1_000_000.0) == expected


@pytest.mark.parametrize("text", ["yesterday", "-5", "12:00", "1e12", ""])
def test_times_that_are_refused(text):
    with pytest.raises(ValueError, match="cannot read time"):
        parse_time(text, now=0.0)


def test_time_bounds_beyond_the_index_range_are_no_bounds_not_errors():
    from repositories.provenance.query import parse_time

    assert parse_time("9169374356767302843484", strict=True) == (1 << 63) - 1
    assert parse_time("0191-01-29T11:54:11.094238Z", strict=True) < 0
    assert parse_time("0001-01-01T00:00:00+01:00", strict=True) < parse_time("0191-01-29T11:54:11Z", strict=True)
