"""The content repository (NiFi's design): where FlowFile content lives, as resource claims.

* `format` - the on-storage layout, documented at its top.
* `repository.ContentRepository` - claims, streaming writers and readers, claimant
  counts, archive and age-off, recovery; one class over a `ResourceIO`.
* `filesystem.open_filesystem_content_repository` - the local-disk repository.
* `replication.hdfs_content` and `replication.replicating_content` build on it.
"""

from .archive import ArchivePolicy, Usage
from .errors import (
    ContentNotFound,
    ContentRepositoryError,
    ContentRepositoryFull,
    ContentStorageFull,
    ContentTruncated,
    ContentUnavailable,
    ContentWriteFailed,
    ReplicaDiverged,
    RepositoryClosed,
    UnsafeContentPath,
)
from .filesystem import open_filesystem_content_repository
from .repository import (
    ClaimReader,
    CollectReport,
    ContentRepository,
    ContentRepositoryConfig,
    ContentWriter,
    RecoveryReport,
    ResourceInfo,
)

__all__ = [
    "ArchivePolicy",
    "ClaimReader",
    "CollectReport",
    "ContentNotFound",
    "ContentRepository",
    "ContentRepositoryConfig",
    "ContentRepositoryError",
    "ContentRepositoryFull",
    "ContentStorageFull",
    "ContentTruncated",
    "ContentUnavailable",
    "ContentWriteFailed",
    "ContentWriter",
    "RecoveryReport",
    "ReplicaDiverged",
    "RepositoryClosed",
    "ResourceInfo",
    "UnsafeContentPath",
    "Usage",
    "open_filesystem_content_repository",
]
