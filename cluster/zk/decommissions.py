"""`decommissioned/<node>`: the nodes an operator said are gone for good.

    /custody/<cluster>/decommissioned/<node>   persistent, JSON `core.decommission.Decommission`

The znode's existence is the mark: a node whose name has one refuses to join, and a
live one that sees it appear leaves (`cluster.failover.decommission`). `connect`
deletes it. Its value says when and by whom it was asked, and what the leader did
(`cluster.failover.kept`, by compare-and-set); a value that does not parse still marks
the node. The parent is created by the first record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError

from ..core.decommission import Decommission
from ..errors import UnreadableZnode
from .kazoo_errors import translates_kazoo
from .znodes import VersionedZnodes

if TYPE_CHECKING:
    from kazoo.client import KazooClient

DECOMMISSIONED = "decommissioned"


def decommissioned_path(layout) -> str:
    return f"{layout.root}/{DECOMMISSIONED}"


def record_path(layout, node: str) -> str:
    return f"{decommissioned_path(layout)}/{node}"


@translates_kazoo
class DecommissionRecords:
    def __init__(self, client: KazooClient, layout):
        self.client, self.layout = client, layout
        self.parent = decommissioned_path(layout)
        self.znodes: VersionedZnodes[Decommission] = VersionedZnodes(
            client,
            "decommission",
            self.parent,
            lambda node: record_path(layout, node),
            Decommission.from_json,
            Decommission.to_json,
            lambda record: False,
        )

    def read(self, node: str) -> tuple[Decommission, int] | None:
        return self.znodes.read(node)

    def mark(self, node: str) -> Decommission | None:
        """The node's record, or None when it has none; a record that does not parse still
        marks it (read as asked at an unknown time)."""
        try:
            entry = self.read(node)
        except UnreadableZnode:
            return Decommission(node, 0.0, "(unreadable record)")
        return entry[0] if entry is not None else None

    def all(self, *, strict: bool = False) -> dict[str, tuple[Decommission, int]]:
        return self.znodes.all(strict=strict)

    def names(self) -> frozenset[str]:
        """The decommissioned nodes, by name only (one round trip)."""
        try:
            return frozenset(self.client.get_children(self.parent))
        except NoNodeError:
            return frozenset()

    def create(self, record: Decommission) -> bool:
        """Write the node's record; False when it has one already."""
        return self.znodes.create(record.node, record)

    def update(
        self, node: str, change: Callable[[Decommission], Decommission], expected_version: int | None = None
    ) -> tuple[Decommission, int] | None:
        """Compare-and-set (`VersionedZnodes.update`); `OwnershipConflict` on a lost race."""
        return self.znodes.update(node, change, expected_version=expected_version)

    def delete(self, node: str) -> bool:
        """Delete the node's record, whatever its version; False when it had none."""
        try:
            self.client.delete(record_path(self.layout, node))
        except NoNodeError:
            return False
        return True

    def watch(self, node: str, on_change: Callable[[Decommission | None], bool | None]) -> None:
        """kazoo DataWatch on the node's record: `on_change(record)` while it exists (one
        that does not parse as `mark` reads it), `on_change(None)` while not; first at
        once, then on each change. Returning False ends the watch."""

        def watch(data, stat, event=None):
            if stat is None:
                return on_change(None)
            try:
                record = Decommission.from_json(data)
            except (ValueError, KeyError, TypeError):
                record = Decommission(node, 0.0, "(unreadable record)")
            return on_change(record)

        self.client.DataWatch(record_path(self.layout, node), watch)

    def watch_names(self, on_change: Callable[[list[str]], bool | None]) -> None:
        """kazoo ChildrenWatch on `decommissioned/` (created here if missing, as a
        ChildrenWatch needs its znode); returning False ends it."""
        self.client.ensure_path(self.parent)
        self.client.ChildrenWatch(self.parent, on_change)
