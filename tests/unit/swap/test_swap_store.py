"""Swap files: round trip, summary without records, damage on disk, fault seams."""

from __future__ import annotations

import pytest

from repositories.claims import ContentClaim, ResourceClaim
from repositories.flowfile import FlowFileRecord
from repositories.swap import CorruptSwapFileError, SwapFileMissingError, SwapStore, SwapWriteError
from repositories.swap import format as fmt

R1 = ResourceClaim("c", 1, "r1")
R2 = ResourceClaim("c", 7, "r2")


def records(n=5, queue="q"):
    out = []
    for i in range(n):
        claim = ContentClaim(R1 if i % 2 else R2, i * 10, 10) if i % 3 else None
        out.append(
            FlowFileRecord(
                f"id-{i}",
                {"filename": f"f{i}", "ünï": "cödé\0nul", "i": str(i)},
                claim,
                queue,
                10 if claim else 0,
                1000 + i,
                500 + i,
                7 if i == 4 else 0,
            )
        )
    return out


def test_round_trip_keeps_every_field(local_store):
    store = SwapStore(local_store.storage, f"{local_store.root}/swap")
    store.prepare()
    batch = records(7)
    summary = store.write("q", batch)
    assert (summary.count, summary.size, summary.oldest_entry, summary.newest_entry) == (7, 40, 1000, 1006)
    again, loaded = store.read(summary.location)
    assert [tuple(r) for r in loaded] == [tuple(r) for r in batch]
    assert again == summary
    assert store.locations() == [summary.location]


def test_summary_carries_claimant_counts_and_ends(local_store):
    store = SwapStore(local_store.storage, f"{local_store.root}/swap")
    store.prepare()
    summary = store.write("q", records(7))
    read = store.read_summary(summary.location)
    expected = {}
    for record in records(7):
        if record.content_claim:
            count, end = expected.get(record.content_claim.resource, (0, 0))
            expected[record.content_claim.resource] = (count + 1, max(end, record.content_claim.offset + 10))
    assert read.resources == expected == summary.resources


def test_summary_is_read_without_the_records(local_store):
    store = SwapStore(local_store.storage, f"{local_store.root}/swap")
    store.prepare()
    summary = store.write("q", records(3))
    data = local_store.storage.read(summary.location)
    _, records_offset = fmt.unpack_summary(data, summary.location)
    # Destroy the records part: the summary still reads, the records do not.
    with open(summary.location, "r+b") as handle:
        handle.seek(records_offset + 8)
        handle.write(b"\xff" * 8)
    assert store.read_summary(summary.location).count == 3
    with pytest.raises(CorruptSwapFileError, match="records CRC"):
        store.read(summary.location)


def test_every_truncation_and_bit_flip_is_detected(local_store):
    store = SwapStore(local_store.storage, f"{local_store.root}/swap")
    store.prepare()
    summary = store.write("q", records(4))
    original = local_store.storage.read(summary.location)
    for cut in range(len(original)):
        with pytest.raises(CorruptSwapFileError):
            summary_, offset = fmt.unpack_summary(original[:cut], "x")
            fmt.unpack_records(original[:cut], offset, "x", "q", summary_.count)
    for position in range(len(original)):
        damaged = bytearray(original)
        damaged[position] ^= 0x10
        with pytest.raises(CorruptSwapFileError):
            summary_, offset = fmt.unpack_summary(bytes(damaged), "x")
            fmt.unpack_records(bytes(damaged), offset, "x", "q", summary_.count)


def test_missing_file_is_named(local_store):
    store = SwapStore(local_store.storage, f"{local_store.root}/swap")
    store.prepare()
    with pytest.raises(SwapFileMissingError, match="gone.swap"):
        store.read_summary(f"{local_store.root}/swap/gone.swap")


def test_sync_comes_before_the_write_returns_and_a_failed_write_leaves_no_file(local_store):
    calls = []

    class Hooks:
        def before_swap_sync(self, path):
            calls.append(("before", path))

        def after_swap_sync(self, path):
            calls.append(("after", path))

    store = SwapStore(local_store.storage, f"{local_store.root}/swap", hooks=Hooks())
    store.prepare()
    summary = store.write("q", records(2))
    assert calls == [("before", summary.location), ("after", summary.location)]

    class Failing:
        def before_swap_sync(self, path):
            from repositories.storage import StorageFull

            raise StorageFull("no space left", path)

    failing = SwapStore(local_store.storage, f"{local_store.root}/swap", hooks=Failing())
    with pytest.raises(SwapWriteError, match="stay in memory"):
        failing.write("q", records(2))
    assert store.locations() == [summary.location]


def test_queue_names_are_made_safe_for_file_names(local_store):
    store = SwapStore(local_store.storage, f"{local_store.root}/swap")
    store.prepare()
    summary = store.write("a/b c/../d", records(1, "a/b c/../d"))
    assert summary.location.rsplit("/", 1)[0] == f"{local_store.root}/swap"
    assert store.read(summary.location)[1][0].queue == "a/b c/../d"
