"""Named fault seams of the content repository (see `repositories.seams` for the convention).

A test passes some of these seams as `hooks=` to `ContentRepository` or to
`ReplicatingContentRepository` (keywords, a mapping, a subclass, or an object whose
methods are all seams); raising from one fails the operation there, as a crash at
that point would stop it. The replicating repository's seams are the moments another
thread's seal, sync or failure could meet a write between its replicas.
"""

from __future__ import annotations

from ..seams import FaultSeams


class ContentHooks(FaultSeams):
    def between_repair_renames(self, checksum_path: str, resource_path: str) -> None:
        """A repair renamed the new checksum file into place; the resource file beside
        it is still the old one."""

    def leader_chose_resource(self, resource) -> None:
        """A replicated write: the leader chose `resource`, already open, for the claim
        and holds it; no follower's writer of it is taken yet. Runs under the lock a
        replica whose storage fails waits for (a failure on this thread here would
        wait forever)."""

    def followers_released_resource(self, resource) -> None:
        """A replicated claim was closed on every follower, which let go of `resource`;
        the leader still holds it."""
