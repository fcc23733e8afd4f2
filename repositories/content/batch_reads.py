"""Reading many small claims at once: one open and one checked read per run of claims.

Small claims are packed into shared resource files, so the claims a processor reads
together (a MergeContent bundle, an adopter draining a dead node's queue) mostly lie
side by side in a few files. Reading each alone opens its resource file and its
checksum file, parses the checksum records and checks the same 64 KB block again for
every claim in it. `read_many` instead groups the claims into spans: claims of one
resource whose bytes lie at most `MAX_GAP` apart. Each span is read as one claim
through the store's own `open_read` (so every byte is checked exactly as a single
read checks it, and a store that fails over between replicas does so here too), and
each claim's bytes are cut from it.

A span that cannot be read (a damaged block, a missing file, storage down) is read
again claim by claim: a claim whose own bytes are intact is still returned (the
damage was in bytes between claims), and otherwise the error names the claim at
fault, as a single read's would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import BinaryIO

from repositories.claims import ContentClaim, ResourceClaim

from .errors import ContentRepositoryError

MAX_GAP = 64 << 10  # bytes of other claims a span reads through to join two claims
MAX_SPAN = 16 << 20  # bytes of one span (larger claims are read alone)


def spans(
    claims: Sequence[ContentClaim], max_gap: int = MAX_GAP, max_span: int = MAX_SPAN
) -> list[tuple[ContentClaim, list[int]]]:
    """The spans to read for `claims`: (a claim covering the span, the indices in
    `claims` of the claims inside it). Claims of one resource whose bytes are at most
    `max_gap` apart share a span, unless it would grow past `max_span`. Pure."""
    by_resource: dict[ResourceClaim, list[int]] = {}
    for index, claim in enumerate(claims):
        by_resource.setdefault(claim.resource, []).append(index)
    result = []
    for resource, indices in by_resource.items():
        indices.sort(key=lambda i: claims[i].offset)
        start = end = None
        members: list[int] = []
        for index in indices:
            claim = claims[index]
            claim_end = claim.offset + claim.length
            if members and claim.offset - end <= max_gap and max(end, claim_end) - start <= max_span:
                end = max(end, claim_end)
                members.append(index)
                continue
            if members:
                result.append((ContentClaim(resource, start, end - start), members))
            start, end, members = claim.offset, claim_end, [index]
        result.append((ContentClaim(resource, start, end - start), members))
    return result


def read_many(open_read: Callable[[ContentClaim], BinaryIO], claims: Sequence[ContentClaim]) -> list[bytes]:
    """The bytes of each of `claims`, in order, read span by span through `open_read`
    (see the module docstring). Raises what `open_read` raises for the first claim,
    in the order of `claims`, that cannot be read."""
    found: list[bytes | None] = [None] * len(claims)
    failed: list[int] = []
    for span, members in spans(claims):
        try:
            with open_read(span) as stream:
                data = stream.read()
        except ContentRepositoryError:
            failed += members
            continue
        for index in members:
            claim = claims[index]
            start = claim.offset - span.offset
            found[index] = data[start : start + claim.length]
    for index in sorted(failed):
        with open_read(claims[index]) as stream:
            found[index] = stream.read()
    return found  # type: ignore[return-value]
