"""A compose drill reads only what is new in a container's log (`cluster.drills.log_cursor`)."""

from __future__ import annotations

from cluster.drills.log_cursor import LogCursor, parse_stamp


def test_a_docker_timestamp_is_read_to_the_nanosecond():
    assert parse_stamp("1970-01-01T00:00:01.000000002Z") == (1, 2)
    assert parse_stamp("2026-12-05T00:16:38.5Z") == (1796429798, 500_000_000)  # trailing zeros trimmed
    assert parse_stamp("2026-12-05T00:16:38Z") == (1796429798, 0)


def test_what_is_not_a_timestamp_is_none():
    for text in ["", '{"event":', "2026-12-05 00:16:38Z", "2026-12-05T00:16:38.12a Z", "2026-13-05T00:16:38Z"]:
        assert parse_stamp(text) is None, text


def log(*lines: tuple[str, str]) -> str:
    return "".join(f"{stamp} {body}\n" for stamp, body in lines)


def test_each_line_is_taken_once_across_reads_that_overlap_by_a_second():
    cursor = LogCursor()
    assert cursor.since() == 0
    first = log(("1970-01-01T00:00:05.1Z", "a"), ("1970-01-01T00:00:06.2Z", "b"), ("1970-01-01T00:00:06.2Z", "c"))
    assert cursor.take(first) == ["a", "b", "c"]
    assert cursor.since() == 6
    # The engine answers from second 6 on, inclusive: b and c again, then what is new,
    # one of them at the very timestamp of the newest line taken.
    again = log(
        ("1970-01-01T00:00:06.2Z", "b"),
        ("1970-01-01T00:00:06.2Z", "c"),
        ("1970-01-01T00:00:06.2Z", "d"),
        ("1970-01-01T00:00:06.3Z", "e"),
    )
    assert cursor.take(again) == ["d", "e"]
    assert cursor.take(log(("1970-01-01T00:00:06.3Z", "e"))) == []
    assert cursor.take(log(("1970-01-01T00:00:06.1Z", "older"), ("1970-01-01T00:00:07Z", "f"))) == ["f"]


def test_a_line_without_a_timestamp_is_skipped_and_bodies_keep_their_spaces():
    cursor = LogCursor()
    text = 'garbage\n1970-01-01T00:00:01Z {"event": "joined", "node": "n1"}\n'
    assert cursor.take(text) == ['{"event": "joined", "node": "n1"}']
