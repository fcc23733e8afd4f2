"""Archive age-off decisions, pure: what to delete, given the archive and the usage.

Two rules, as in NiFi: an archived resource older than the retention period goes;
then, while the container's usage is above the maximum fraction, the oldest archived
resources go until the usage would be back under it. The repository measures, calls
`select_for_age_off`, and deletes what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from .format import DEFAULT_ARCHIVE_MAX_USAGE, DEFAULT_ARCHIVE_RETENTION_S


@dataclass(frozen=True, slots=True)
class ArchivePolicy:
    enabled: bool = True
    max_retention_s: float = DEFAULT_ARCHIVE_RETENTION_S
    # Fraction of the container's device; None disables the usage rule (and the
    # refusal of writes above it), e.g. on HDFS where the device is not ours to watch.
    max_usage: float | None = DEFAULT_ARCHIVE_MAX_USAGE


@dataclass(frozen=True, slots=True)
class Usage:
    used: int
    total: int

    @property
    def fraction(self) -> float:
        return self.used / self.total if self.total else 0.0


@dataclass(frozen=True, slots=True)
class ArchivedResource:
    key: object  # the ResourceClaim; opaque here
    archived_at: float
    size: int


def select_for_age_off(
    archived: list[ArchivedResource], now: float, policy: ArchivePolicy, usage: Usage | None
) -> list[ArchivedResource]:
    oldest_first = sorted(archived, key=lambda entry: entry.archived_at)
    chosen = [entry for entry in oldest_first if now - entry.archived_at >= policy.max_retention_s]
    if usage is None or policy.max_usage is None or not usage.total:
        return chosen
    used = usage.used - sum(entry.size for entry in chosen)
    limit = policy.max_usage * usage.total
    for entry in oldest_first[len(chosen) :]:
        if used <= limit:
            break
        chosen.append(entry)
        used -= entry.size
    return chosen
