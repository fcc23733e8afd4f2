"""How a content repository behaves: `ContentRepositoryConfig`."""

from __future__ import annotations

from dataclasses import dataclass, field

from .archive import ArchivePolicy
from .checksum_format import DEFAULT_CHECKSUM_BLOCK_SIZE, MAX_BLOCK_SIZE
from .errors import ContentRepositoryError
from .format import DEFAULT_MAX_APPENDABLE_CLAIM_SIZE

# The standalone node's `packed_resource_size`: its 1 MB claims share a resource file 16
# at a time, so a commit of one seldom creates a file (and never fsyncs its directory
# for it), and collection archives a file per 16 MB instead of one per claim. The cost:
# a resource is archived only when none of its claims is referenced any more, so one
# FlowFile held in a queue keeps up to 16 MB more on disk (its neighbours) than its own.
# Its reads and its exports copy from an offset as a small claim's do; Spark reads a
# standalone node's content through the node in any case (`flow.spark.by_reference`).
LOCAL_PACKED_RESOURCE_SIZE = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ContentRepositoryConfig:
    max_appendable_claim_size: int = DEFAULT_MAX_APPENDABLE_CLAIM_SIZE
    # Large claims (each at least max_appendable_claim_size) share a resource until it
    # holds this many bytes: fewer files to create and close (on HDFS each is a NameNode
    # round trip and a new write pipeline). None: a large claim fills its resource alone,
    # which is what lets Spark read it in place (`flow.spark.by_reference`). Every
    # replica of a replicating repository must use the same value.
    packed_resource_size: int | None = None
    # Small claims (each under max_appendable_claim_size) share a resource until it
    # holds this many bytes. None: max_appendable_claim_size, NiFi's one threshold for
    # both. Larger, it makes fewer files of small claims without letting large claims
    # share theirs. Every replica of a replicating repository must use the same value.
    shared_resource_size: int | None = None
    # True: a claim returned by close() is durable. False: durable after sync().
    sync_on_close: bool = True
    # HDFS cannot read the last block of a file still open for writing, so there a
    # sync also closes every resource nobody is writing: a synced claim is readable.
    close_resources_on_sync: bool = False
    # Close retired resources' files on background threads instead of in the writer's
    # or the syncer's thread. A reader of such a resource waits for its close.
    close_in_background: bool = False
    write_buffer_size: int = 256 * 1024
    archive: ArchivePolicy = field(default_factory=ArchivePolicy)
    usage_check_interval_s: float = 1.0
    # Claims are checksummed in blocks of this many bytes (see `checksum_format`). Every
    # replica of a replicating repository must use the same size.
    checksum_block_size: int = DEFAULT_CHECKSUM_BLOCK_SIZE

    def __post_init__(self) -> None:
        if self.packed_resource_size is not None and self.packed_resource_size <= self.max_appendable_claim_size:
            raise ContentRepositoryError(
                f"packed_resource_size {self.packed_resource_size} must be larger than max_appendable_claim_size "
                f"{self.max_appendable_claim_size} (or None: a large claim fills its resource alone)"
            )
        if self.shared_resource_size is not None and self.shared_resource_size < self.max_appendable_claim_size:
            raise ContentRepositoryError(
                f"shared_resource_size {self.shared_resource_size} must be at least max_appendable_claim_size "
                f"{self.max_appendable_claim_size} (or None: the same)"
            )
        if not 0 < self.checksum_block_size <= MAX_BLOCK_SIZE:
            raise ContentRepositoryError(
                f"checksum_block_size {self.checksum_block_size} must be 1 .. {MAX_BLOCK_SIZE} bytes"
            )
