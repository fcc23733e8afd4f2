"""Named fault seams of the provenance repository (see `repositories.seams`).

Tests stop or break the repository at these points (a crash test blocks in one and
SIGKILLs the process). Every seam is called with keyword arguments only, once per
rollover or indexed event file, never per event. The module constants name the seams
for tests that choose one at run time: `ProvenanceHooks({MERGE_BEFORE_COMMIT: crash})`.
"""

from __future__ import annotations

from ..seams import FaultSeams


class ProvenanceHooks(FaultSeams):
    def merge_journals_read(self, *, first_id: int) -> None:
        """The journals of a generation have been read; nothing of the merge is on disk yet."""

    def merge_before_commit(self, *, path: str) -> None:
        """`.prov.partial` and `.toc.partial` are written and fsynced; the commit rename is next."""

    def merge_before_journal_delete(self, *, first_id: int) -> None:
        """The event file is committed; its journals are not deleted yet."""

    def index_before_manifest(self, *, first_id: int) -> None:
        """The index commit of an event file is done; the shard manifest does not list it yet."""


MERGE_JOURNALS_READ = ProvenanceHooks.merge_journals_read.__name__
MERGE_BEFORE_COMMIT = ProvenanceHooks.merge_before_commit.__name__
MERGE_BEFORE_JOURNAL_DELETE = ProvenanceHooks.merge_before_journal_delete.__name__
INDEX_BEFORE_MANIFEST = ProvenanceHooks.index_before_manifest.__name__

SEAMS = (MERGE_JOURNALS_READ, MERGE_BEFORE_COMMIT, MERGE_BEFORE_JOURNAL_DELETE, INDEX_BEFORE_MANIFEST)
assert frozenset(SEAMS) == ProvenanceHooks.seam_names()
