"""The flow a shard was written under: a snapshot of the flow document, and its version.

Every node runs the flow file it was started with, and two nodes' files may differ
(a rolling upgrade, a mistake). A shard's FlowFiles sit in the queues of the flow
that wrote them, so an adopter must run an adopted shard with that flow, not its own:
a queue it does not know would strand them. So a node's home shard records the
flow it runs: the version (a hash) in the shard znode, for operators
(`custody cluster status`), and the document itself beside the shard's WAL on HDFS
(`flow.json`), for its adopters.

The document is the flow as written, before parameters: an adopter substitutes its
own node's parameters (directories, names), which describe where it runs. The
version is the first 16 hex digits of the SHA-256 of the document's canonical JSON
(keys sorted, no spaces): the same flow gives the same version on every node,
whatever the file's format (YAML or JSON) or layout.

`flow.json` is written whole or not at all (a temporary name in the shard
directory, synced, then renamed), so a shard of this release has it or lacks it.
A shard written by an earlier release, which created `flow.json` in place, may
hold one that is empty or cut short: its owner died between the create and the
sync. `flow_without_its_file` decides what an adopter runs such a shard with (and a
shard whose `flow.json` is missing): a pure decision, see there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FlowSnapshot:
    document: dict[str, Any]

    @property
    def encoded(self) -> bytes:
        return json.dumps(self.document, sort_keys=True, separators=(",", ":"), default=str).encode()

    @property
    def version(self) -> str:
        return hashlib.sha256(self.encoded).hexdigest()[:16]

    @classmethod
    def decode(cls, data: bytes) -> FlowSnapshot:
        """From the bytes `encoded` wrote; `UnreadableFlow` (a ValueError) when they are
        not a JSON object: empty, cut short, or not what `encoded` writes."""
        if not data:
            raise UnreadableFlow(
                "it is empty (created in place by a writer that died before its sync, or emptied since)"
            )
        try:
            document = json.loads(data.decode())
        except UnicodeDecodeError as error:
            raise UnreadableFlow(f"it is not UTF-8 ({error.reason} at byte {error.start} of {len(data)})") from None
        except json.JSONDecodeError as error:
            raise UnreadableFlow(
                f"it is not whole JSON ({error.msg} at byte {error.pos} of {len(data)}: cut short, or damaged)"
            ) from None
        if not isinstance(document, dict):
            raise UnreadableFlow(f"a flow document is a JSON object, not {type(document).__name__}")
        return cls(document)


class UnreadableFlow(ValueError):
    """A stored flow document that does not decode; the message says how."""


@dataclass(frozen=True)
class FlowChoice:
    """The flow an adopter runs a shard with whose `flow.json` it cannot use.

    `version`: the version to run (this node's own, or one it has run before);
    `note`: what happened, for the log and the failover plan's notes (None: nothing
    unusual, as for a shard of a release before shards recorded their flow);
    `warning`: the shard's FlowFiles run under a flow that may not be the one they were
    written under."""

    version: str
    note: str | None = None
    warning: bool = False


def flow_without_its_file(
    *, problem: str | None, recorded: str | None, own: str, known: Collection[str], queued: Callable[[], int]
) -> FlowChoice:
    """What an adopted shard runs with when its `flow.json` is missing (`problem` None)
    or unreadable (`problem` says how).

    * The version its znode records (`recorded`), if this node runs it or has run it
      (`known`): the same document, so the stored copy is not needed.
    * Nothing recorded and no file: a shard of a release before shards recorded their
      flow; it runs with this node's flow, as it always did.
    * Otherwise it depends on what the shard holds: `queued()` counts the FlowFiles
      its WAL holds in queues (called only here). None: nothing of it was ever committed
      (its owner died before it had written anything), so it is adopted empty with
      this node's flow, drains at once and retires. Some: it runs with this node's
      flow, with a warning. That keeps them: the queue shard refuses to start (and
      the shard is held for an operator, nothing dropped) if this flow lacks a queue
      they are in; otherwise they drain through this node's processors of the same
      names. Retiring the shard instead would delete them with its directory.
    """
    what = "flow.json is missing" if problem is None else f"flow.json is unreadable: {problem}"
    if recorded is not None and (recorded == own or recorded in known):
        if problem is None:
            return FlowChoice(recorded)
        return FlowChoice(
            recorded, f"{what}; it runs with flow version {recorded}, the one its znode records, which this node knows"
        )
    if recorded is None and problem is None:
        return FlowChoice(own)
    written = f"flow version {recorded}" if recorded is not None else "a flow whose version it never recorded"
    count = queued()
    if not count:
        return FlowChoice(
            own,
            f"{what}, and its WAL holds no FlowFile (nothing of it was ever committed): adopted "
            f"empty with this node's flow version {own}",
        )
    return FlowChoice(
        own,
        f"{what}; it was written under {written}, which this node does not know, and holds "
        f"{count} FlowFiles: they run with this node's flow version {own} (if it lacks a queue "
        "they are in, the shard is held for an operator and nothing is dropped)",
        warning=True,
    )
