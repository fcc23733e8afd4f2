"""ConsumeKafka's state layout: where each partition it consumes is to be read next.

ConsumeKafka keeps its positions as its processor state, which a session writes in
the same WAL transaction as the FlowFiles it creates (`ProcessSession.set_state`): the
records a session took and the position past them become durable together, so after
a crash or a takeover the consumer seeks to the committed positions and takes every
record exactly once. This is how Kafka Connect's exactly-once sinks keep their offsets
beside the data rather than in the consumer group; the group's committed offsets are
written after the WAL commit, for Kafka's lag tools only, and never read back.

A processor state is a map of text to text (one WAL record per processor, `flow.shard`).
Layout version 1, one row per entry:

    key                                   value
    "kafka.layout"                        "1"
    "next:<partition>:<topic>"            <offset>: the offset of the next record to
                                          read in that partition of that topic
    "take:<partition>:<topic>"            <take>: in a cluster, the take of the
                                          partition the position belongs to (the
                                          count of times a shard took it,
                                          `cluster.core.kafka_holds`); a position is
                                          valid only while that take holds

<partition>, <offset> and <take> are decimal ASCII digits, no sign, no leading zero. <topic>
is the topic's name as Kafka allows one (1 to 249 characters of ASCII letters, digits,
'.', '_' and '-'), so it never holds the ':' that ends <partition>. The offset is the
one after the last record a committed session took: it may name a transaction's
control record or a record not yet written, and a consumer seeks there as it is.

A state with another version, a key of no known kind, or a value that does not parse
is refused with `KafkaStateError`, never read in part: a position skipped would make
the consumer read that partition again from its reset point.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from ...errors import FlowError

LAYOUT_KEY = "kafka.layout"
VERSION = 1
_NEXT = "next:"
_TAKE = "take:"
_TOPIC = re.compile(r"[A-Za-z0-9._\-]{1,249}")
_NUMBER = re.compile(r"0|[1-9][0-9]*")


class KafkaStateError(FlowError):
    """A ConsumeKafka state that does not fit the layout (`owner` names the processor)."""

    def __init__(self, owner: str, problem: str):
        super().__init__(
            f"{owner}: its committed Kafka positions cannot be read ({problem}); it consumes nothing until "
            "the state is repaired or cleared (a cleared state reads from auto_offset_reset)"
        )


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]"


def pack(positions: Mapping[TopicPartition, int], takes: Mapping[TopicPartition, int] | None = None) -> dict[str, str]:
    """The state for `positions` (next offset by partition), with the `takes` they
    belong to (in a cluster)."""
    state = {LAYOUT_KEY: str(VERSION)}
    for (topic, partition), offset in positions.items():
        if not _TOPIC.fullmatch(topic) or partition < 0 or offset < 0:
            raise ValueError(f"no position of partition {partition} of topic {topic!r} at offset {offset}")
        state[f"{_NEXT}{partition}:{topic}"] = str(offset)
    for (topic, partition), take in (takes or {}).items():
        if (topic, partition) in positions and take > 0:
            state[f"{_TAKE}{partition}:{topic}"] = str(take)
    return state


def unpack_takes(state: Mapping[str, str], owner: str) -> dict[TopicPartition, int]:
    """The takes the positions of `state` belong to (none on a standalone node)."""
    unpack(state, owner)  # refuses a state that does not fit, whole
    return {
        TopicPartition(key[len(_TAKE) :].partition(":")[2], int(key[len(_TAKE) :].partition(":")[0])): int(value)
        for key, value in state.items()
        if key.startswith(_TAKE)
    }


def unpack(state: Mapping[str, str], owner: str) -> dict[TopicPartition, int]:
    """The positions in `state`; an empty state has none. Raises `KafkaStateError`."""
    if not state:
        return {}
    version = state.get(LAYOUT_KEY)
    if version != str(VERSION):
        raise KafkaStateError(owner, f"layout {version!r}, this release reads {VERSION}")
    positions = {}
    for key, value in state.items():
        if key == LAYOUT_KEY:
            continue
        kind = _NEXT if key.startswith(_NEXT) else _TAKE if key.startswith(_TAKE) else None
        if kind is None:
            raise KafkaStateError(owner, f"unknown entry {key[:80]!r}")
        partition, _, topic = key[len(kind) :].partition(":")
        if not _NUMBER.fullmatch(partition) or not _TOPIC.fullmatch(topic) or not _NUMBER.fullmatch(value):
            raise KafkaStateError(owner, f"entry {key[:80]!r} = {value[:40]!r} does not parse")
        if kind == _NEXT:
            positions[TopicPartition(topic, int(partition))] = int(value)
    return positions
