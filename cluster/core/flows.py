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
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass


@dataclass(frozen=True)
class FlowSnapshot:
    document: dict

    @property
    def encoded(self) -> bytes:
        return json.dumps(self.document, sort_keys=True, separators=(",", ":"), default=str).encode()

    @property
    def version(self) -> str:
        return hashlib.sha256(self.encoded).hexdigest()[:16]

    @classmethod
    def decode(cls, data: bytes) -> "FlowSnapshot":
        """From the bytes `encoded` wrote; ValueError when they are not a JSON object."""
        document = json.loads(data.decode())
        if not isinstance(document, dict):
            raise ValueError(f"a flow document is a JSON object, not {type(document).__name__}")
        return cls(document)
