"""Named fault seams of the content repository (see `repositories.seams` for the convention).

A test passes some of these seams as `hooks=` to `ContentRepository` (keywords, a
mapping, a subclass, or an object whose methods are all seams); raising from one
fails the operation there, as a crash at that point would stop it.
"""

from __future__ import annotations

from ..seams import FaultSeams


class ContentHooks(FaultSeams):
    def between_repair_renames(self, checksum_path: str, resource_path: str) -> None:
        """A repair renamed the new checksum file into place; the resource file beside
        it is still the old one."""
