"""Named fault seams of the swap store (see `repositories.flowfile.hooks` for the idea).

A test passes an object with some of these methods as `hooks=`; raising from one fails
the operation there, blocking in one freezes the writer before a SIGKILL.
"""

from __future__ import annotations


class SwapHooks:
    def before_swap_sync(self, path: str) -> None:
        """The swap file's bytes were handed to storage and are not durable yet."""

    def after_swap_sync(self, path: str) -> None:
        """The swap file is durable; the WAL does not know it yet."""


def call_hook(hooks, name: str, path: str) -> None:
    method = getattr(hooks, name, None)
    if method is not None:
        method(path)
