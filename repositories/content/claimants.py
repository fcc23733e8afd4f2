"""Claimant counts: how many FlowFiles (and provenance-less holders) reference a resource.

A resource whose count reaches zero, and that no writer is appending to, may be
archived or destroyed. Counts live in memory; after a restart the FlowFile repository
sets them in bulk (`set_counts`) from the claims its records hold.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from repositories.claims import ContentClaim, ResourceClaim


def resource_of(claim: ContentClaim | ResourceClaim) -> ResourceClaim:
    return claim.resource if isinstance(claim, ContentClaim) else claim


def counts_of(claims: Iterable[ContentClaim]) -> dict[ResourceClaim, int]:
    """Claimant counts implied by a set of live content claims (one per reference)."""
    counts: dict[ResourceClaim, int] = {}
    for claim in claims:
        counts[claim.resource] = counts.get(claim.resource, 0) + 1
    return counts


class ClaimantCounts:
    """Thread-safe map resource -> count. `_lock` guards `_counts`; nothing else."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[ResourceClaim, int] = {}

    def get(self, resource: ResourceClaim) -> int:
        return self._counts.get(resource, 0)

    def increment(self, resource: ResourceClaim, by: int = 1) -> int:
        with self._lock:
            count = self._counts.get(resource, 0) + by
            self._counts[resource] = count
            return count

    def decrement(self, resource: ResourceClaim) -> int:
        with self._lock:
            count = self._counts.get(resource, 0)
            if count <= 0:
                raise ValueError(
                    f"claimant count of {resource.relative_path} is already 0: a claim was "
                    "released twice; the caller's bookkeeping is wrong"
                )
            count -= 1
            if count:
                self._counts[resource] = count
            else:
                del self._counts[resource]
            return count

    def set_counts(self, counts: Mapping[ResourceClaim, int]) -> None:
        with self._lock:
            self._counts = {resource: count for resource, count in counts.items() if count > 0}

    def snapshot(self) -> dict[ResourceClaim, int]:
        with self._lock:
            return dict(self._counts)
