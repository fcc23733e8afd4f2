"""A node's events: what `custody node --events` (and the drills' ledger node) print,
one JSON object per line on stdout, so that a test or a drill waits on conditions
instead of sleeping:

    {"event": "joined", "at": 1764326400.25, "pid": 4242, "incarnation": "n1-7", "epoch": 7, ...}

The kinds are `NodeEvent`, a `StrEnum`: its values are the strings on the wire, so the
lines are byte for byte what they were when kinds were plain strings, and a reader of
the JSON compares them to the same values. In-process code names them by member.
Without `--events`, the same events are log lines (`log_events`).
"""

from __future__ import annotations

import enum
import json
import logging
import os
import sys
import threading
import time

from ..core.story import tag

log = logging.getLogger(__name__)


class NodeEvent(enum.StrEnum):
    # an incarnation's life (`lifecycle.run_incarnations`)
    STARTING = "starting"  # a new incarnation is about to start
    START_FAILED = "start-failed"  # it could not (`fatal`: on its configuration, for good)
    CONNECTED = "connected"  # its ZooKeeper client connected
    JOINED = "joined"  # it is a member: incarnation, epoch, session id
    DEAD = "dead"  # it ended (`decided_at`, `stopped_at`); the node may join again
    OFFLOADED = "offloaded"  # it ended on an operator's offload, and no new one starts
    # failover, as the member's timeline reports it (`lifecycle.report_timeline`)
    ADOPTED = "adopted"  # a shard of a dead incarnation is adopted (its `step`)
    RETIRED = "retired"  # a shard drained and retired
    LEADER = "leader"  # this incarnation leads the cluster
    NOT_LEADER = "not-leader"  # ... and no longer does
    # a shard's runtime (the flow node's `flow_runtime`, the drills' `ledger_runtime`)
    RECOVERED = "recovered"  # its WAL is recovered and its queues run
    PAUSED = "paused"  # the work gate closed (ZooKeeper not confirmed)
    RESUMED = "resumed"  # the work gate opened again
    STORAGE_DOWN = "storage-down"  # HDFS refused a write; the runtime waits for it
    STORAGE_UP = "storage-up"  # HDFS took a write again
    FIRST_OUTPUT = "first-output"  # an adopted shard delivered its first FlowFile (its `step`)
    REJECTED_WRITE = "rejected write"  # a commit the WAL or HDFS refused (a zombie's, once fenced)
    FENCED = "fenced"  # a newer owner has the shard: this runtime stopped
    REFUSED = "refused"  # the ledger's gate refused a commit: the session is over
    SOURCES_HANDED_OVER = "sources-handed-over"  # an adopted shard's sources moved to the home shard
    # the drills' ledger node (`cluster.drills.ledger_node`)
    FREEZING = "freezing"  # it stops itself (SIGSTOP) inside a sync, to thaw as a zombie
    THAWED = "thawed"  # ... and was continued
    ALLOWED = "allowed"  # its home shard may admit `count` more records


class JsonEvents:
    """Events as JSON lines on a stream (stdout by default)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self._lock = threading.Lock()

    def __call__(self, kind: NodeEvent, **fields) -> None:
        line = json.dumps({"event": kind, "at": time.time(), "pid": os.getpid(), **fields})
        with self._lock:
            self.stream.write(line + "\n")
            self.stream.flush()


def log_events(kind: NodeEvent, **fields) -> None:
    """Events as log lines (the default for an operator's node); an event that belongs
    to a failover's story starts with its step id, `[n1-7:failover/...]`."""
    step = fields.pop("step", None)
    log.info(
        "%s%s %s", f"{tag(step)} " if step else "", kind, " ".join(f"{key}={value}" for key, value in fields.items())
    )
