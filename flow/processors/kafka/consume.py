"""ConsumeKafka: records from Kafka topics into FlowFiles, each record exactly once.

The positions a session read up to (`positions`) are its processor state, committed
in the same WAL transaction as the FlowFiles that carry the records. That state is the
truth: on start, after a crash, and after a session that failed, the consumer seeks to
the committed positions. Kafka's consumer group takes no part in the assignment (the
processor assigns the partitions itself, as Kafka Connect's exactly-once sinks do), and
the group's offsets are committed after the WAL commit only so that Kafka's lag tools
(`kafka-consumer-groups --describe`) show how far behind the flow is.

Records are read with `isolation.level=read_committed` (`honor_transactions`): a
producer's aborted transaction never becomes a FlowFile, and an open one holds the
partition back until it ends, as Kafka's transactional consumers do.

Partitions are found from the brokers' metadata every `metadata_refresh`: a partition
added to a topic, or a topic created that matches the pattern, is consumed from then
on (from its first record, whatever `auto_offset_reset` says: it had no position, and
its records are new); a topic deleted is dropped with its positions and one warning.
A partition seen for the first time starts at `auto_offset_reset` (its low or high
watermark, resolved to a number and committed with the first session that takes from
it, so that a crash does not move the start).

In a cluster each partition is read by one shard at a time: the node service
`ownership.PARTITIONS_SERVICE` says which (`cluster.node.kafka_ownership`), asked every
`OWNERSHIP_REFRESH_S` between two sessions; a position is committed with the take of
its partition, and is valid only while that take holds.

With a record reader and writer (record mode, `record_mode`), the messages of a
partition read in one task are records written as one FlowFile; a message the reader
cannot read goes to `parse.failure` by itself.

Lock plan: `_lock` is held by the one task that consumes at a time (a second task
yields); the consumer and `_assigned` belong to that task. `on_stopped` takes the lock
to close the consumer.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...errors import ServiceError, UnknownService
from ...processor import ProcessContext, Processor, PropertyDescriptor
from .connection import CONNECTION_PROPERTIES, BrokerErrors, client_config, validate_connection
from .demarcation import decode_demarcator
from .ownership import OWNERSHIP_REFRESH_S, PARTITIONS_SERVICE
from .positions import KafkaStateError, TopicPartition, pack, unpack, unpack_takes
from .record_mode import CONSUME_PROPERTIES, consumed, relationships, validate_record_mode
from .tasks import run_alone

if TYPE_CHECKING:
    from ...session import ProcessSession

# librdkafka's logical offsets, for a partition first assigned.
_EARLIEST, _LATEST = -2, -1
METADATA_TIMEOUT_S = 5.0  # a task waits at most this for the brokers: it holds one of the engine's threads


class ConsumeKafka(Processor):
    type_name = "ConsumeKafka"
    description = (
        "Consumes records from Kafka topics, each exactly once: the positions read are committed in the WAL "
        "with the FlowFiles. With a record reader and writer (record mode), a partition's messages become one "
        "FlowFile of records, and a message the reader cannot read goes to parse.failure."
    )
    is_source = True
    properties = CONNECTION_PROPERTIES + (
        PropertyDescriptor(
            "topics",
            "string",
            required=True,
            description="topic names, comma-separated; or a regular expression with topic_format pattern",
        ),
        PropertyDescriptor("topic_format", "choice", default="names", choices=("names", "pattern")),
        PropertyDescriptor(
            "group_id",
            "string",
            description="the consumer group the positions are reported to, for Kafka's lag tools "
            "(default: custody-<processor id>); it never decides what is read",
        ),
        PropertyDescriptor(
            "auto_offset_reset",
            "choice",
            default="latest",
            choices=("earliest", "latest"),
            description="where a partition with no committed position starts",
        ),
        PropertyDescriptor("max_poll_records", "integer", default=500, minimum=1, maximum=100_000),
        PropertyDescriptor(
            "max_wait",
            "duration",
            default=0.1,
            minimum=0,
            maximum=10,
            description="how long a task waits for records",
        ),
        PropertyDescriptor(
            "message_demarcator",
            "string",
            description="when set, the records of a partition read in one task become one FlowFile, "
            "their values joined by this (escapes such as \\n allowed)",
        ),
        *CONSUME_PROPERTIES,
        PropertyDescriptor("key_attribute_encoding", "choice", default="utf-8", choices=("utf-8", "hex", "do-not-add")),
        PropertyDescriptor("header_name_pattern", "regex", description="headers whose names match become attributes"),
        PropertyDescriptor("honor_transactions", "boolean", default=True),
        PropertyDescriptor(
            "metadata_refresh",
            "duration",
            default=10,
            minimum=0.1,
            description="how often the topics' partitions are looked up again (new partitions and topics)",
        ),
    )

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._lock = threading.Lock()
        self._consumer: Any = None
        self._errors = BrokerErrors()
        self._assigned: dict[TopicPartition, int] = {}  # partition -> where the consumer stands
        self._takes: dict[TopicPartition, tuple[int, int]] = {}  # partition -> (its take, where it began)
        self._found: list[TopicPartition] | None = None  # the topics' partitions, as last looked up
        self._present: set[str] | None = None  # the topics that exist, as last looked up
        self._refreshed = self._owned_at = float("-inf")
        self._uri = ""

    relationships_note = "and `parse.failure` in record mode (`record_reader` set)"

    @classmethod
    def relationships_for(cls, properties, dynamic):
        return relationships(cls.relationships, properties)

    @classmethod
    def validate(cls, properties, dynamic):
        problems = validate_connection(properties) + validate_record_mode(properties)
        if properties.get("topic_format") == "pattern":
            try:
                re.compile(properties["topics"])
            except re.error as error:
                problems.append(("topics", f"not a regular expression: {error}"))
        elif not _topic_names(properties["topics"]):
            problems.append(("topics", "names no topic"))
        return problems

    def on_scheduled(self, context: ProcessContext) -> None:
        self._refreshed = self._owned_at = float("-inf")
        self._assigned, self._takes, self._found, self._present = {}, {}, None, None
        self._uri = f"kafka://{context['bootstrap_servers'].split(',')[0].strip()}"

    def on_stopped(self, context: ProcessContext) -> None:
        with self._lock:
            consumer, self._consumer = self._consumer, None
            self._assigned, self._takes = {}, {}
            if consumer is not None:
                consumer.close()

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        run_alone(self._lock, context, lambda: self._consume(context, session))

    # -- one task ---------------------------------------------------------------------

    def _consume(self, context: ProcessContext, session: ProcessSession) -> None:
        state = session.get_state()
        try:
            committed, takes = unpack(state, self.id), unpack_takes(state, self.id)
        except KafkaStateError as error:
            context.limited_log.error(f"{self.id}:state", "%s", error)
            context.yield_()
            return
        consumer = self._consumer_for(context)
        if not self._refresh(context, session.shard_id, consumer, committed, takes):
            context.yield_()
            return
        if not self._assigned:
            context.yield_()
            return
        # The committed positions of the partitions as this shard holds them now (of their take).
        current = {
            tp: offset
            for tp, offset in committed.items()
            if tp in self._assigned and self._take_of(tp) == takes.get(tp, 0)
        }
        messages = consumer.consume(context["max_poll_records"], context["max_wait"])
        try:
            taken = self._take(context, session, messages)
        except BaseException:
            self._rewind(consumer, current)
            raise
        positions = {tp: offset for tp, offset in current.items() if tp in self._assigned}
        for tp, offset in self._assigned.items():
            if offset >= 0:
                positions.setdefault(tp, offset)  # a partition's resolved start, committed before it is read
        positions.update(taken)
        held = {tp: self._takes[tp][0] for tp in positions}  # every position so far is of a partition held
        # The positions of partitions not read now stay, with their takes: a topic left out
        # of one lookup, or out of the topics for a while, goes on where it was. Only a
        # deleted topic's are dropped.
        for tp, offset in committed.items():
            if tp not in positions and (self._present is None or tp.topic in self._present):
                positions[tp], held[tp] = offset, takes.get(tp, 0)
        if not taken and positions == committed and held == {tp: takes.get(tp, 0) for tp in positions}:
            context.yield_()
            return
        session.set_state(pack(positions, held))
        offsets = [(tp, offset) for tp, offset in taken.items()]
        session.commit_async(
            on_success=lambda: self._report(consumer, offsets),
            on_failure=lambda _error: self._rewind(consumer, current),
        )

    def _take_of(self, tp: TopicPartition) -> int | None:
        held = self._takes.get(tp)
        return held[0] if held is not None else None

    def _take(self, context: ProcessContext, session: ProcessSession, messages: list) -> dict[TopicPartition, int]:
        """The FlowFiles of `messages`, transferred to success; the next offset of each
        partition they came from."""
        demarcator = context.get("message_demarcator")
        headers = context.get("header_name_pattern")
        encoding = context["key_attribute_encoding"]
        taken: dict[TopicPartition, int] = {}
        groups: dict[TopicPartition, list] = {}
        for message in messages:
            if message.error() is not None:
                self._message_error(context, message)
                continue
            tp = TopicPartition(message.topic(), message.partition())
            if tp not in self._assigned:
                continue  # a record fetched before its partition was dropped
            taken[tp] = message.offset() + 1
            self._assigned[tp] = message.offset() + 1
            groups.setdefault(tp, []).append(message)
        reader, writer = context.get("record_reader"), context.get("record_writer")
        made: list[tuple] = []  # (FlowFile, content, relationship)
        for group in groups.values():
            if reader is not None:
                made += consumed(
                    session, reader, writer, group, lambda m, single: _attributes(m, encoding, headers, single)
                )
            elif demarcator:
                attributes = _attributes(group[0], encoding, headers, single=False)
                attributes["kafka.count"] = str(len(group))
                attributes["kafka.max.offset"] = str(group[-1].offset())
                content = decode_demarcator(demarcator).join(m.value() or b"" for m in group)
                made.append((session.create(attributes=attributes), content, "success"))
            else:
                for message in group:
                    attributes = _attributes(message, encoding, headers, single=True)
                    made.append((session.create(attributes=attributes), message.value() or b"", "success"))
        if made:
            written = session.write_bytes_many([m[0] for m in made], [m[1] for m in made])
            for flowfile, (_, _, relationship) in zip(written, made, strict=True):
                session.receive(flowfile, f"{self._uri}/{flowfile.attributes['kafka.topic']}")
                session.transfer(flowfile, relationship)
        if reader is not None and any(m[2] != "success" for m in made):
            context.limited_log.warning(
                f"{self.id}:parse",
                "%s: messages the record reader cannot read go to parse.failure (%d in this task)",
                self.id,
                sum(m[2] != "success" for m in made),
            )
        return taken

    def _message_error(self, context: ProcessContext, message) -> None:
        error = message.error()
        if error.code() == _partition_eof():
            return
        context.limited_log.warning(
            f"{self.id}:fetch", "%s: reading %s[%s]: %s", self.id, message.topic(), message.partition(), error.str()
        )

    # -- the consumer and its partitions ----------------------------------------------

    def _consumer_for(self, context: ProcessContext):
        if self._consumer is None:
            from confluent_kafka import Consumer

            config = client_config(context.properties, context.logger)
            config.update(
                {
                    "group.id": context.get("group_id") or f"custody-{self.id}",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "isolation.level": "read_committed" if context["honor_transactions"] else "read_uncommitted",
                    # A position that retention deleted: read from what is left.
                    "auto.offset.reset": "earliest",
                    "error_cb": self._errors,
                }
            )
            self._consumer = Consumer(config)
        return self._consumer

    def _refresh(
        self,
        context: ProcessContext,
        shard_id: str,
        consumer,
        committed: dict[TopicPartition, int],
        takes: dict[TopicPartition, int],
    ) -> bool:
        """Assign the partitions this shard holds: the topics' partitions looked up every
        `metadata_refresh`, all of them on a standalone node, those the cluster gives
        this shard (`ownership`, asked every `OWNERSHIP_REFRESH_S`) in a cluster; each
        at its committed position, or where its take began, or its reset point resolved
        to an offset. False when nothing can be consumed now."""
        now = time.monotonic()
        try:
            ownership = context.service(PARTITIONS_SERVICE)
        except UnknownService:
            ownership = None  # a standalone node: its one shard reads every partition
        except ServiceError as error:
            context.limited_log.error(f"{self.id}:ownership", "%s", error)
            self._release_all(consumer)
            return False
        metadata_due = now - self._refreshed >= context["metadata_refresh"]
        if not metadata_due and (ownership is None or now - self._owned_at < OWNERSHIP_REFRESH_S):
            return True
        if metadata_due:
            try:
                found = self._partitions(context, consumer)
            except _MetadataUnavailable as error:
                context.limited_log.warning(f"{self.id}:metadata", "%s: %s", self.id, error)
                if self._found is None:
                    return bool(self._assigned)
            else:
                self._refreshed = now
                topics = {tp.topic for tp in found}
                for topic in sorted({tp.topic for tp in self._assigned if tp.topic not in topics}):
                    context.logger.warning(
                        "%s: topic %s no longer exists; its partitions are no longer consumed", self.id, topic
                    )
                self._found = found
        found = self._found or []
        if ownership is None:
            # A standalone node's one shard reads every partition; of a node's workers,
            # each reads the partitions whose index falls to it (`flow.workers`).
            worker = context.worker
            held = {tp: (committed.get(tp), 0) for tp in found if worker.takes_partition(tp.partition)}
        else:
            try:
                held = dict(ownership.partitions(self.id, shard_id, found, committed, takes))
            except ServiceError as error:
                context.limited_log.error(f"{self.id}:ownership", "%s", error)
                self._release_all(consumer)
                return False
            self._owned_at = now
        dropped = [tp for tp in self._assigned if tp not in held or held[tp][1] != self._take_of(tp)]
        fresh = {}
        known = {tp.topic for tp in committed}
        for tp, (start, take) in held.items():
            if tp in self._assigned and self._take_of(tp) == take:
                continue
            if start is None:
                start = self._reset_point(context, consumer, tp, known_topic=tp.topic in known)
            fresh[tp] = start
            self._takes[tp] = (take, start)
        if not dropped and not fresh:
            return True
        for tp in dropped:
            if tp not in fresh:
                del self._assigned[tp]
                del self._takes[tp]
        self._assigned.update(fresh)
        from confluent_kafka import TopicPartition as KafkaPartition

        consumer.assign([KafkaPartition(tp.topic, tp.partition, offset) for tp, offset in self._assigned.items()])
        return True

    def _release_all(self, consumer) -> None:
        if self._assigned:
            self._assigned, self._takes = {}, {}
            consumer.unassign()

    def _partitions(self, context: ProcessContext, consumer) -> list[TopicPartition]:
        """The partitions of the configured topics, from the brokers' metadata. A named
        topic that does not exist is left out, with a warning a minute."""
        from confluent_kafka import KafkaException

        try:
            metadata = consumer.list_topics(timeout=METADATA_TIMEOUT_S)
        except KafkaException as error:
            if not self._assigned:
                # librdkafka queues its error_cb (a failed authentication, a TLS handshake
                # refused) for poll: with nothing assigned no task consumes, so serve it
                # here, where no record can come out (with partitions assigned, consume does).
                consumer.poll(0)
            raise _MetadataUnavailable(
                self._errors.explain(f"cannot read the topics' metadata from {context['bootstrap_servers']}")
                + f" ({error.args[0].str() if error.args else error}); retrying"
            ) from None
        if context["topic_format"] == "pattern":
            pattern = re.compile(context["topics"])
            topics = [name for name in metadata.topics if not name.startswith("__") and pattern.fullmatch(name)]
        else:
            topics = _topic_names(context["topics"])
        found = []
        unknown = _unknown_topic()
        # The topics that exist: a topic absent, or that the brokers say is unknown, was deleted.
        self._present = {
            name for name, topic in metadata.topics.items() if topic.error is None or topic.error.code() != unknown
        }
        for name in topics:
            topic = metadata.topics.get(name)
            if topic is not None and topic.error is not None and name in self._present:
                # A passing error (a leader being elected): read on what it had.
                found += [tp for tp in self._found or () if tp.topic == name]
            if topic is None or topic.error is not None:
                why = topic.error.str() if topic is not None else "not in the brokers' metadata"
                context.limited_log.warning(
                    f"{self.id}:topic:{name}", "%s: topic %s cannot be consumed: %s", self.id, name, why
                )
                continue
            found += [TopicPartition(name, partition) for partition in sorted(topic.partitions)]
        return found

    def _reset_point(self, context: ProcessContext, consumer, tp: TopicPartition, known_topic: bool) -> int:
        """Where a partition with no committed position starts: a new partition of a
        topic already consumed from its first record; any other at `auto_offset_reset`,
        as an offset (a watermark) when the broker says it, else librdkafka's logical one."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaPartition

        earliest = known_topic or context["auto_offset_reset"] == "earliest"
        try:
            low, high = consumer.get_watermark_offsets(
                KafkaPartition(tp.topic, tp.partition), timeout=METADATA_TIMEOUT_S, cached=False
            )
        except KafkaException:
            return _EARLIEST if earliest else _LATEST
        return low if earliest else high

    def _rewind(self, consumer, current: dict[TopicPartition, int]) -> None:
        """Back to the committed positions (or where a partition's take began): what the
        failed session read is read again."""
        from confluent_kafka import TopicPartition as KafkaPartition

        for tp in self._assigned:
            self._assigned[tp] = current.get(tp, self._takes[tp][1])
        consumer.assign([KafkaPartition(tp.topic, tp.partition, offset) for tp, offset in self._assigned.items()])

    def _report(self, consumer, offsets: list[tuple[TopicPartition, int]]) -> None:
        """The committed positions to the consumer group, for Kafka's lag tools (after the WAL commit)."""
        if not offsets:
            return
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaPartition

        try:
            consumer.commit(
                offsets=[KafkaPartition(tp.topic, tp.partition, offset) for tp, offset in offsets], asynchronous=True
            )
        except KafkaException:
            pass  # only the lag the tools show is behind; the WAL holds the truth


class _MetadataUnavailable(Exception):
    pass


def _topic_names(text: str) -> list[str]:
    return [name.strip() for name in str(text).split(",") if name.strip()]


def _unknown_topic() -> int:
    from confluent_kafka import KafkaError

    return KafkaError.UNKNOWN_TOPIC_OR_PART


def _partition_eof() -> int:
    from confluent_kafka import KafkaError

    return KafkaError._PARTITION_EOF


def _attributes(message, encoding: str, headers: re.Pattern | None, single: bool) -> dict[str, str]:
    attributes = {
        "kafka.topic": message.topic(),
        "kafka.partition": str(message.partition()),
        "kafka.offset": str(message.offset()),
        "kafka.timestamp": str(message.timestamp()[1]),
    }
    key = message.key()
    if single and key is not None and encoding != "do-not-add":
        attributes["kafka.key"] = key.hex() if encoding == "hex" else key.decode("utf-8", "replace")
    if headers is not None:
        for name, value in _headers(message.headers()):
            if headers.fullmatch(name):
                attributes[name] = (value or b"").decode("utf-8", "replace")
    return attributes


def _headers(headers) -> Iterable[tuple[str, bytes | None]]:
    return headers or ()
