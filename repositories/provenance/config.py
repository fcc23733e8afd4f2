"""Configuration of a provenance repository."""

from __future__ import annotations

from dataclasses import dataclass, field

from .index import DEFAULT_SHARD_BYTES
from .policies import RolloverPolicy

DEFAULT_MAX_AGE = 24 * 3600.0  # seconds events are kept (age-off by age)
DEFAULT_MAX_BYTES = 10 * 1024**3  # bytes of event files and their TOCs kept (age-off by size)
DEFAULT_AGE_OFF_INTERVAL = 60.0  # seconds between two age-offs


@dataclass(frozen=True)
class ProvenanceConfig:
    # One directory per disk partition; journals and event files are spread over all
    # of them, the index lives in the first.
    containers: tuple[str, ...]
    journals_per_container: int = 4
    rollover: RolloverPolicy = field(default_factory=RolloverPolicy)
    block_bytes: int = 1 << 20  # uncompressed bytes per compressed block
    compression_level: int = 3
    compression_threads: int = 2
    shard_bytes: int = DEFAULT_SHARD_BYTES
    index_heap_bytes: int = 128_000_000
    # One tantivy indexing thread per writer: on the 2-core benchmark host, 2 threads
    # cost 21-37 us/event of indexing against 12-13 us with 1 (240,000 events in
    # 60,000-event commits, medians of 3): each commit makes one segment per thread,
    # and the extra segments are merged again in the background.
    index_threads: int = 1
    # Sorted runs (uuid, filename) of one level merged into one of the next (`sorted_runs`).
    run_fan_in: int = 8
    max_age_s: float | None = DEFAULT_MAX_AGE
    max_bytes: int | None = DEFAULT_MAX_BYTES  # event files and their TOCs
    # fdatasync each journal frame. Off by default as in NiFi: a process crash loses
    # nothing (the bytes are in the OS), a power cut may lose the last seconds.
    sync_journals: bool = False
    # Background timers (real time). None: no timer; the caller drives
    # `maybe_rollover()` and `age_off()` (tests, with an injected clock).
    rollover_check_interval_s: float | None = 1.0
    age_off_interval_s: float | None = DEFAULT_AGE_OFF_INTERVAL
    # Writers wait while this many rolled-over generations are not merged and
    # indexed yet, so that merging and indexing keep up with ingest.
    max_pending_rollovers: int = 4

    def __post_init__(self) -> None:
        if not self.containers:
            raise ValueError("a provenance repository needs at least one container directory")
        if self.run_fan_in < 2:
            raise ValueError("run_fan_in must be at least 2: a merge of one run is no merge")
        if self.journals_per_container < 1:
            raise ValueError("journals_per_container must be at least 1")
        object.__setattr__(self, "containers", tuple(self.containers))
