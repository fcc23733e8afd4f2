"""MergeRecord: FlowFiles of records joined bin by bin (schema and correlation value),
within the record and size bounds; bins that are not ready wait in their queue."""

from __future__ import annotations

import json

import pytest

from tests.unit.flow.test_unreadable_content import CORRUPTED, Bench

SERVICES = (
    {"id": "in", "type": "JsonTreeReader"},
    {"id": "out", "type": "JsonRecordSetWriter", "properties": {"output_grouping": "one-line-per-object"}},
)


def bench(**properties) -> Bench:
    return Bench(
        "MergeRecord",
        {"record_reader": "in", "record_writer": "out", **properties},
        relationships=("merged", "original", "failure"),
        flow_services=SERVICES,
    )


def lines(*ids, field="id") -> bytes:
    return b"".join(json.dumps({field: value}).encode() + b"\n" for value in ids)


def records(data: bytes) -> list:
    return [json.loads(line) for line in data.splitlines()]


def merged_ids(drained) -> list[list]:
    return [[json.loads(line)["id"] for line in data.splitlines()] for _, data, _ in drained]


def test_a_bin_merges_once_it_holds_min_records_and_takes_at_most_max_records():
    merge = bench(min_records=5, max_records=6)
    merge.add(lines(1, 2), lines(3, 4))
    merge.run_once()
    assert merge.drain("merged") == [] and merge.incoming.count == 2  # 4 records: the bin waits
    merge.add(lines(5, 6), lines(7, 8))
    merge.run_once()
    [merged] = merge.drain("merged")
    assert merged_ids([merged]) == [[1, 2, 3, 4, 5, 6]]
    assert merged[0]["merge.count"] == "3" and merged[0]["record.count"] == "6"
    assert len(merge.drain("original")) == 3 and merge.incoming.count == 1  # 7, 8 wait for the next bin


def test_bins_by_schema_and_correlation_value():
    merge = bench(min_records=2, correlation_attribute="g")
    merge.add(lines(1), lines(2), g="a")
    merge.add(lines(3), g="b")
    merge.add(lines("x", field="other"), lines("y", field="other"), g="a")
    merge.run_once()
    drained = merge.drain("merged")
    assert sorted((attributes["g"], json.dumps(records(data))) for attributes, data, _ in drained) == [
        ("a", json.dumps([{"id": 1}, {"id": 2}])),
        ("a", json.dumps([{"other": "x"}, {"other": "y"}])),
    ]
    assert merge.incoming.count == 1  # b's bin has one record


def test_max_bin_age_merges_a_small_bin_and_max_bin_size_bounds_one():
    merge = bench(min_records=100, max_bin_age="0 sec", max_bin_size="20 B")
    merge.add(lines(1), lines(2), lines(3))  # 10 bytes each
    merge.run_once()
    assert merged_ids(merge.drain("merged")) == [[1, 2]]
    merge.run_once()
    assert merged_ids(merge.drain("merged")) == [[3]]


def test_a_member_that_cannot_be_read_goes_to_failure_and_the_bin_merges_without_it():
    merge = bench(min_records=2)
    good, bad, damaged, other = merge.add(lines(1), b'{"id": \n', lines(2), lines(3))
    merge.damage(damaged, CORRUPTED)
    merge.run_once()
    failed = {attributes["i"]: attributes for attributes, _, _ in merge.drain("failure")}
    assert set(failed) == {"1", "2"}
    assert "record.error.message" in failed["1"] and failed["2"]["content.error"].startswith("ContentCorrupted")
    assert merged_ids(merge.drain("merged")) == [[1, 3]]


@pytest.mark.parametrize("counted", [False, True])
def test_a_member_whose_later_records_widen_its_schema_is_binned_by_all_of_them(monkeypatch, counted):
    """Its first records would put it in the integers' bin; read whole, it holds a float.
    Uncounted, it is read whole before binning; with `record.count` only its first
    records are, so the merge finds it out, puts it back, and it is merged next time in
    a bin of its own schema."""
    monkeypatch.setattr("flow.records.json_format.BLOCK_SIZE", 64)
    monkeypatch.setattr("flow.records.json_format._READ_SIZE", 16)
    merge = bench(min_records=1, max_records=100)
    widening = lines(1, 2, 3, 4, 5, 6) + b'{"id": 6.5}\n'
    merge.add(lines(7), **({"record.count": "1"} if counted else {}))
    merge.add(widening, **({"record.count": "7"} if counted else {}))
    merge.run_once()
    first = merged_ids(merge.drain("merged"))
    if counted:  # found out while merging: put back, the bin merged without it
        assert first == [[7]] and merge.incoming.count == 1
    merge.run_once()
    merged = first + merged_ids(merge.drain("merged"))
    assert sorted(merged) == [[1, 2, 3, 4, 5, 6, 6.5], [7]]
    assert merge.drain("failure") == [] and merge.incoming.count == 0


def test_a_member_whose_field_holds_values_of_several_types_is_merged_as_each_was():
    merge = bench(min_records=2)
    merge.add(b'{"id": 1, "code": 7}\n{"id": 2, "code": "seven"}\n', b'{"id": 3, "code": 7}\n{"id": 4, "code": "x"}\n')
    merge.run_once()
    [(attributes, data, _)] = merge.drain("merged")
    assert records(data) == [
        {"id": 1, "code": 7},
        {"id": 2, "code": "seven"},
        {"id": 3, "code": 7},
        {"id": 4, "code": "x"},
    ]
    assert attributes["record.count"] == "4" and merge.drain("failure") == []
