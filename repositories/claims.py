"""Resource claims and content claims: where a FlowFile's bytes live (NiFi's content model).

A `ResourceClaim` names one file in the content repository that holds the content of
many FlowFiles, appended one after another. A `ContentClaim` is a slice of it. Both
are immutable values; the FlowFile WAL, swap files and the content repository share
them, so this module sits at the root of `repositories` and imports nothing.

Ids are validated at construction: a claim read from a FlowFile record, a swap file or
the API can never name a path outside its container.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SECTIONS_PER_CONTAINER = 1024

# Matched whole (`fullmatch`): `$` would also match before a trailing newline, and an id
# ending in one would name another file than the one its record was written for.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")


class InvalidClaimError(ValueError):
    """A claim field would escape its container or is otherwise malformed."""


def _check_name(kind: str, value: str) -> None:
    if not isinstance(value, str) or not _SAFE_NAME.fullmatch(value) or ".." in value:
        raise InvalidClaimError(
            f"invalid {kind} {value!r} in a content claim: only letters, digits, '_', '-' "
            "and '.' are allowed (no '/', no '..', no absolute path); the record that "
            "carries it is corrupt or was forged"
        )


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    container: str
    section: int
    id: str
    # Hashed once: every commit counts claimants by resource, many times per FlowFile.
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_name("container", self.container)
        _check_name("resource id", self.id)
        if not isinstance(self.section, int) or not 0 <= self.section < SECTIONS_PER_CONTAINER:
            raise InvalidClaimError(
                f"invalid section {self.section!r} in a content claim: must be 0..{SECTIONS_PER_CONTAINER - 1}"
            )
        object.__setattr__(self, "_hash", hash((self.container, self.section, self.id)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def relative_path(self) -> str:
        """Path of the resource file under the repository root: container/section/id."""
        return f"{self.container}/{self.section}/{self.id}"


@dataclass(frozen=True, slots=True)
class ContentClaim:
    resource: ResourceClaim
    offset: int
    length: int

    def __post_init__(self) -> None:
        if self.offset < 0 or self.length < 0:
            raise InvalidClaimError(
                f"invalid content claim {self.resource.relative_path}@{self.offset}+{self.length}: "
                "offset and length must not be negative"
            )
