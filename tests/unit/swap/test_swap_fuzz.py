"""Fuzzing the swap-file readers on damaged files: a batch written by `SwapStore.write`
has its bytes damaged (bits flipped, bytes overwritten, zeroed, inserted or written
twice, the file cut short), in its summary or its records, then is read as a restart
reads it (`read_summary`) and as a swap-in does (`read`). One batch has a summary
small enough for the first read, one a summary past it (`SUMMARY_PROBE`).

Each read answers within 2 s and 256 MB with the summary or the batch as written, or
raises a `SwapError` that says why: never part of a batch, never a changed record.

About 150 examples; CUSTODY_LONG=1 runs twenty times as many.
"""

from __future__ import annotations

import dataclasses
import itertools
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repositories.claims import ContentClaim, ResourceClaim
from repositories.flowfile import FlowFileRecord
from repositories.storage import LocalStorage
from repositories.swap import SwapError, SwapStore
from repositories.swap import format as fmt
from repositories.swap.store import SUMMARY_PROBE
from tests.damaged_files import damaged_bytes, fuzz_settings, scratch_directory, within_bounds

from .test_swap_store import records


def many_resources(count: int) -> list:
    """A batch whose FlowFiles each have their own resource: a summary past SUMMARY_PROBE."""
    resources = [ResourceClaim("c", i % 1024, f"r{i}-" + "x" * 120) for i in range(count)]
    return [
        FlowFileRecord(f"id-{i}", {"i": str(i)}, ContentClaim(resource, 0, 1), "q", 1, 1000 + i, 900, 0)
        for i, resource in enumerate(resources)
    ]


BATCHES = {"small summary": records(7), "large summary": many_resources(500)}


@pytest.fixture(scope="module")
def store():
    with scratch_directory() as directory:
        store = SwapStore(LocalStorage(), directory)
        store.prepare()
        yield store


@pytest.fixture(scope="module")
def written(store):
    """batch name -> (its summary, its bytes, landmarks)."""
    out = {}
    for name, batch in BATCHES.items():
        summary = store.write("q", batch)
        data = store.storage.read(summary.location)
        records_at = fmt.unpack_summary(data, summary.location)[1]
        assert (records_at > SUMMARY_PROBE) == (name == "large summary")
        # the header's counts and lengths, the summary's CRC, the records' length, body and CRC
        landmarks = (8, 10, 38, 40, fmt.SUMMARY_HEADER.size, records_at - 4, records_at, records_at + 8, len(data) - 4)
        out[name] = (summary, data, landmarks)
    return out


_names = itertools.count()


def same_summary(read: fmt.SwapSummary, written: fmt.SwapSummary) -> bool:
    return dataclasses.replace(read, location=written.location) == written and read.resources == written.resources


@pytest.mark.parametrize("batch", sorted(BATCHES))
@fuzz_settings(75)
@given(data=st.data())
def test_a_damaged_swap_file_reads_whole_or_is_refused(store, written, batch, data):
    summary, original, landmarks = written[batch]
    damaged = data.draw(damaged_bytes(original, landmarks), label="damage")
    location = os.path.join(store.directory, f"damaged-{next(_names)}.swap")
    with open(location, "wb") as handle:
        handle.write(damaged.content)
    try:
        outcome, read = within_bounds(lambda: store.read_summary(location), (SwapError,))
        if outcome == "returned":
            assert same_summary(read, summary), f"summary {read} read back, {summary} written"
        outcome, read = within_bounds(lambda: store.read(location), (SwapError,))
        if outcome == "returned":
            read_summary, read_records = read
            assert same_summary(read_summary, summary)
            assert [tuple(r) for r in read_records] == [tuple(r) for r in BATCHES[batch]], "records changed"
    finally:
        os.unlink(location)
