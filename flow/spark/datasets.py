"""A Parquet dataset that batches are committed into exactly once (PutParquet's).

    dataset = ParquetDataset(storage, "/data/events")
    committed = dataset.committed()              # FlowFile id -> the manifest that holds it
    dataset.commit(manifest, staged_manifest)    # the atomic step: the manifest's rename
    dataset.roll_forward(manifest)               # data files from staging into place
    dataset.forget(manifest)                     # once the FlowFiles it holds left their queue

Layout of the dataset directory (readers skip `_` names):

    <column>=<value>/part-<batch>-<n>.parquet    the data, partitioned by a column
    part-<batch>-<n>.parquet                     (unpartitioned)
    _custody/batches/<batch>.json                the manifests of batches not yet forgotten
                                                 (`manifest_format`)

Committing by the manifest's rename, then moving the files, makes a batch all or
nothing even when the writer dies between the two: the next reader of the manifest
finishes the move. A manifest stays until every FlowFile it lists has been seen
leaving its queue (`forget`), so a batch whose session commit failed after the
manifest's rename is recognised when its FlowFiles come back, in any grouping, and
is not written twice. Manifests older than `retention` are deleted whatever they hold.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from repositories.storage import StorageFileExists, StorageFileNotFound, join, parent

from .manifest_format import BatchManifest, ManifestError

log = logging.getLogger(__name__)

MANIFESTS = "_custody/batches"
DEFAULT_RETENTION_S = 7 * 24 * 3600.0


@dataclass
class ParquetDataset:
    storage: object  # repositories.storage.Storage
    root: str
    retention_s: float = DEFAULT_RETENTION_S
    _cache: dict[str, BatchManifest] = field(default_factory=dict)  # manifest path -> manifest

    @property
    def manifests(self) -> str:
        return join(self.root, MANIFESTS)

    def manifest_path(self, batch: str) -> str:
        return join(self.manifests, f"{batch}.json")

    def committed(self) -> dict[str, BatchManifest]:
        """Each FlowFile id in a manifest of the dataset -> that manifest."""
        try:
            entries = self.storage.list(self.manifests)
        except StorageFileNotFound:
            return {}
        now = time.time()
        found: dict[str, BatchManifest] = {}
        present = set()
        for entry in entries:
            if entry.is_dir or not entry.name.endswith(".json"):
                continue
            if now - entry.modified > self.retention_s:
                log.info("deleting batch manifest %s: older than the retention (%.0f s)", entry.path, self.retention_s)
                self._delete(entry.path)
                continue
            present.add(entry.path)
            manifest = self._cache.get(entry.path)
            if manifest is None:
                try:
                    manifest = BatchManifest.decode(self.storage.read(entry.path), entry.path)
                except StorageFileNotFound:
                    continue  # forgotten meanwhile by another writer of the dataset
                except ManifestError as error:
                    log.error("%s; move it away to let the dataset's writers go on", error)
                    raise
                self._cache[entry.path] = manifest
            for flowfile in manifest.flowfiles:
                found[flowfile] = manifest
        for gone in set(self._cache) - present:
            del self._cache[gone]
        return found

    def commit(self, manifest: BatchManifest, staged_manifest: str) -> BatchManifest:
        """Make the batch committed: rename its manifest (written at `staged_manifest`)
        into the dataset. If that batch is committed already (an earlier attempt got
        this far), that attempt's manifest stands and is returned."""
        self.storage.mkdir(self.manifests, parents=True, exist_ok=True)
        target = self.manifest_path(manifest.batch)
        try:
            self.storage.rename(staged_manifest, target)
        except StorageFileExists:
            return BatchManifest.decode(self.storage.read(target), target)
        self._cache[target] = manifest
        return manifest

    def roll_forward(self, manifest: BatchManifest) -> int:
        """Move every data file of the batch still in staging into place; returns how
        many moved. A file already in place stays (another attempt moved it)."""
        moved = 0
        for staged, final in manifest.files:
            if self.storage.exists(final):
                continue
            self.storage.mkdir(parent(final), parents=True, exist_ok=True)
            try:
                self.storage.rename(staged, final)
                moved += 1
            except StorageFileExists:
                pass
            except StorageFileNotFound:
                if not self.storage.exists(final):
                    raise
        return moved

    def forget(self, manifest: BatchManifest) -> None:
        self._delete(self.manifest_path(manifest.batch))

    def _delete(self, path: str) -> None:
        self._cache.pop(path, None)
        try:
            self.storage.delete(path)
        except StorageFileNotFound:
            pass
