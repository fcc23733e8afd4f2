"""The content repository (NiFi's design): where FlowFile content lives, as resource claims.

* `store.ContentStore` - what the flow engine and the nodes ask of any content
  repository; `store.ClaimWriter`, the writer of one claim.
* `format` - the on-storage layout, documented at its top; `checksum_format` - the
  byte layout of the checksum file beside every resource file.
* `repository.ContentRepository` - claims over one `ResourceIO`, composed of one object
  per job: `writing`, `syncing`, `reading`, `recovery`, `collection`, `repair`, over
  the shared bookkeeping of `resources` (whose docstring holds the lock plan).
  `checksums` cuts and reads the CRC of every block of a claim; reads check them
  (`ContentCorrupted` when they fail), and `verification` checks a whole resource.
* `exporting` - a claim copied into a local file (`ContentStore.export_to`, NiFi's
  exportTo): checked in a reused buffer, then copied by the kernel.
* `hooks.ContentHooks` - the repository's named fault seams.
* `resource_io` - how resource files are touched: local directories, or any `Storage`.
* `filesystem.open_filesystem_content_repository` - the local-disk repository.
* `replication.hdfs_content` and `replication.replicating_content` build on it.
"""

from .archive import ArchivePolicy, Usage
from .collection import CollectReport
from .config import LOCAL_PACKED_RESOURCE_SIZE, ContentRepositoryConfig
from .errors import (
    ContentCorrupted,
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
from .hooks import ContentHooks
from .reading import ClaimReader
from .recovery import RecoveryReport, ResourceInfo
from .repository import ContentRepository
from .store import ClaimWriter, ContentStore
from .verification import ResourceCheck
from .writing import ContentWriter

__all__ = [
    "LOCAL_PACKED_RESOURCE_SIZE",
    "ArchivePolicy",
    "ClaimReader",
    "ClaimWriter",
    "CollectReport",
    "ContentCorrupted",
    "ContentHooks",
    "ContentNotFound",
    "ContentRepository",
    "ContentRepositoryConfig",
    "ContentRepositoryError",
    "ContentRepositoryFull",
    "ContentStorageFull",
    "ContentStore",
    "ContentTruncated",
    "ContentUnavailable",
    "ContentWriteFailed",
    "ContentWriter",
    "RecoveryReport",
    "ReplicaDiverged",
    "RepositoryClosed",
    "ResourceCheck",
    "ResourceInfo",
    "UnsafeContentPath",
    "Usage",
    "open_filesystem_content_repository",
]
