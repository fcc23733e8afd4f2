"""Named fault seams of the provenance repository.

Tests stop or break the repository at these points (a crash test blocks in one and
SIGKILLs the process); production passes no handlers and each seam costs one dict
lookup per rollover, never per event.
"""

from __future__ import annotations

from typing import Callable

# The journals of a generation have been read; nothing of the merge is on disk yet.
MERGE_JOURNALS_READ = "merge.journals_read"
# `.prov.partial` and `.toc.partial` are written and fsynced; the commit rename is next.
MERGE_BEFORE_COMMIT = "merge.before_commit"
# The event file is committed; its journals are not deleted yet.
MERGE_BEFORE_JOURNAL_DELETE = "merge.before_journal_delete"
# The index commit of an event file is done; the shard manifest does not list it yet.
INDEX_BEFORE_MANIFEST = "index.before_manifest"

SEAMS = (MERGE_JOURNALS_READ, MERGE_BEFORE_COMMIT, MERGE_BEFORE_JOURNAL_DELETE, INDEX_BEFORE_MANIFEST)


class Hooks:
    def __init__(self, handlers: dict[str, Callable[..., None]] | None = None):
        handlers = dict(handlers or {})
        unknown = set(handlers) - set(SEAMS)
        if unknown:
            raise ValueError(f"unknown provenance fault seams {sorted(unknown)}; known: {SEAMS}")
        self._handlers = handlers

    def fire(self, seam: str, **context) -> None:
        handler = self._handlers.get(seam)
        if handler is not None:
            handler(**context)
