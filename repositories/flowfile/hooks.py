"""Named fault seams of the WAL (see `repositories.seams` for the convention).

Tests (and failover drills) stop or break the log at exact crash points by passing
some of these seams as `hooks=`: keywords or a mapping (`WalHooks(before_sync=crash)`),
a `WalHooks` subclass, or an object whose methods are all seams. Each seam is called
with the path concerned; raising from it fails the operation at that point, and a
test can block in it to freeze a writer there before a SIGKILL.
"""

from __future__ import annotations

from ..seams import FaultSeams


class WalHooks(FaultSeams):
    def before_journal_write(self, path: str) -> None:
        """Group commit is about to hand the pending transactions to the file."""

    def before_sync(self, path: str) -> None:
        """The transactions were handed to the file, and are not yet durable."""

    def after_sync(self, path: str) -> None:
        """The transactions are durable; their callers have not returned yet."""

    def checkpoint_started(self, path: str) -> None:
        """`path` is the `.partial` snapshot about to be created."""

    def checkpoint_journal_prepared(self, path: str) -> None:
        """`path`, a next journal (`journal-N.partial`, header only), is written and
        synced beside the `.partial` snapshot; the journals in use are untouched."""

    def checkpoint_partial_written(self, path: str) -> None:
        """The `.partial` snapshot is complete and synced, and so is every next journal;
        `snapshot` is still the old one."""

    def checkpoint_snapshot_deleted(self, path: str) -> None:
        """The old `snapshot` is gone and `.partial` is not renamed yet (the partial-only restore case)."""

    def checkpoint_renamed(self, path: str) -> None:
        """The new `snapshot` is in place; the journals still hold the old transactions."""

    def checkpoint_journal_reset(self, path: str) -> None:
        """One journal was replaced by an empty one (header only): its next journal
        renamed over it, or, for a journal the set lacked, a new one created."""
