import threading

import pytest

from repositories.claims import ContentClaim, ResourceClaim
from repositories.content.claimants import ClaimantCounts, counts_of

A = ResourceClaim("c", 1, "a")
B = ResourceClaim("c", 2, "b")


def test_increment_decrement_and_zero_is_forgotten():
    counts = ClaimantCounts()
    assert counts.increment(A) == 1
    assert counts.increment(A, 2) == 3
    assert counts.decrement(A) == 2
    counts.decrement(A)
    counts.decrement(A)
    assert counts.get(A) == 0
    assert counts.snapshot() == {}


def test_decrement_below_zero_is_a_caller_bug():
    with pytest.raises(ValueError, match="released twice"):
        ClaimantCounts().decrement(A)


def test_bulk_set_from_live_claims():
    live = [ContentClaim(A, 0, 1), ContentClaim(A, 1, 1), ContentClaim(B, 0, 5)]
    counts = ClaimantCounts()
    counts.increment(ResourceClaim("c", 3, "stale"))
    counts.set_counts(counts_of(live))
    assert counts.snapshot() == {A: 2, B: 1}


def test_concurrent_increments_are_not_lost():
    counts = ClaimantCounts()

    def bump():
        for _ in range(10_000):
            counts.increment(A)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counts.get(A) == 40_000
