"""Named fault seams of the provenance repository (see `repositories.seams`).

Tests stop or break the repository at these points (a crash test blocks in one and
SIGKILLs the process, or raises in one and treats the repository as dead). They are
the crash points of a rollover, a merge and an indexing, in the order each runs; the
states they leave on disk are the cases `recovery` must finish. Every seam is called
with keyword arguments only, at most once per journal, rollover or event file, never
per event. The module constants name the seams for tests that choose one at run time:
`ProvenanceHooks({MERGE_BEFORE_COMMIT: crash})`.
"""

from __future__ import annotations

from ..seams import FaultSeams


class ProvenanceHooks(FaultSeams):
    def rollover_before_merge_queue(self, *, first_id: int) -> None:
        """A new generation takes the writers; the rolled-over one (starting at `first_id`)
        is drained and its journals closed, and it is not queued for the merge yet."""

    def merge_journals_read(self, *, first_id: int) -> None:
        """The journals of a generation have been read; nothing of the merge is on disk yet."""

    def merge_before_commit(self, *, path: str) -> None:
        """`.prov.partial` and `.toc.partial` are written and fsynced; the commit renames are next."""

    def merge_toc_committed(self, *, path: str) -> None:
        """The TOC is renamed into place; the event file `path` is still `.prov.partial`."""

    def merge_before_journal_delete(self, *, first_id: int) -> None:
        """The event file is committed; its journals are not deleted yet."""

    def merge_journal_deleted(self, *, first_id: int, path: str) -> None:
        """One journal of a merged generation (its event file committed, or it held no
        event) is deleted, the next ones not yet; after the last one, every journal is
        gone and the file is not queued for indexing."""

    def index_before_commit(self, *, first_id: int) -> None:
        """An event file's documents are added to the shard's writer, not committed."""

    def index_before_manifest(self, *, first_id: int) -> None:
        """The index commit of an event file is done; the shard manifest does not list it yet."""


ROLLOVER_BEFORE_MERGE_QUEUE = ProvenanceHooks.rollover_before_merge_queue.__name__
MERGE_JOURNALS_READ = ProvenanceHooks.merge_journals_read.__name__
MERGE_BEFORE_COMMIT = ProvenanceHooks.merge_before_commit.__name__
MERGE_TOC_COMMITTED = ProvenanceHooks.merge_toc_committed.__name__
MERGE_BEFORE_JOURNAL_DELETE = ProvenanceHooks.merge_before_journal_delete.__name__
MERGE_JOURNAL_DELETED = ProvenanceHooks.merge_journal_deleted.__name__
INDEX_BEFORE_COMMIT = ProvenanceHooks.index_before_commit.__name__
INDEX_BEFORE_MANIFEST = ProvenanceHooks.index_before_manifest.__name__

# In the order a rollover, its merge and its indexing reach them.
SEAMS = (
    ROLLOVER_BEFORE_MERGE_QUEUE,
    MERGE_JOURNALS_READ,
    MERGE_BEFORE_COMMIT,
    MERGE_TOC_COMMITTED,
    MERGE_BEFORE_JOURNAL_DELETE,
    MERGE_JOURNAL_DELETED,
    INDEX_BEFORE_COMMIT,
    INDEX_BEFORE_MANIFEST,
)
assert frozenset(SEAMS) == ProvenanceHooks.seam_names()


class RunMergeHooks(FaultSeams):
    """The crash points of a merge of sorted runs (`index.ShardedIndex`), which runs on
    the repository's runs thread after an event file is claimed (or on the caller's
    thread, from `index_table` alone), once per merge."""

    def runs_merged(self, *, name: str) -> None:
        """The merged run `name` is written whole; the manifest still lists its inputs."""

    def runs_swapped(self, *, name: str) -> None:
        """The manifest lists the merged run `name` instead of its inputs; they are not
        deleted yet."""
