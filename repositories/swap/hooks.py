"""Named fault seams of the swap store (see `repositories.seams` for the convention).

A test passes some of these seams as `hooks=` (keywords, a mapping, a subclass, or an
object whose methods are all seams); raising from one fails the operation there,
blocking in one freezes the writer before a SIGKILL.
"""

from __future__ import annotations

from ..seams import FaultSeams


class SwapHooks(FaultSeams):
    def before_swap_sync(self, path: str) -> None:
        """The swap file's bytes were handed to storage and are not durable yet."""

    def after_swap_sync(self, path: str) -> None:
        """The swap file is durable; the WAL does not know it yet."""
