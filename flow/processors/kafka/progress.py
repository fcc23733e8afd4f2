"""PublishKafka's progress record: which FlowFiles a committed Kafka transaction holds.

PublishKafka delivers a batch as one Kafka transaction, then commits its session in
the WAL. A crash between the two leaves records in Kafka whose FlowFiles are still
queued in the WAL; sent again, they would be in the topic twice. So every transaction
also writes one progress record, in the same transaction, to the progress topic
(`cleanup.policy=compact`): committed with the records or aborted with them.
It names the FlowFiles this transaction delivers and those of earlier committed
transactions whose WAL commit is not yet known to be durable (`PendingDeliveries`). The
next producer with the same transactional id reads the last one back (read_committed,
after `init_transactions` has fenced the old producer, so nothing can follow it) and
routes those FlowFiles to success without sending them again. This is Kafka Streams'
way of keeping its progress inside the transaction (the consumer offsets it commits
with `send_offsets_to_transaction`), kept in a topic of our own because a sink has no
input offsets to commit.

Layout version 1:

    key    the producer's transactional id, UTF-8
    value  UTF-8 JSON, one object: {"v": 1, "flowfiles": [<id>, ...]}
           "v"          the layout version, the integer 1
           "flowfiles"  the FlowFile ids, each a non-empty string of at most
                        MAX_ID_LENGTH characters, sorted, no duplicates

A value of another version, or one that does not parse to that shape, is refused with
`ProgressRecordError`, never read in part: an id skipped would be delivered twice.

Placement: the progress topic Custody creates has `PARTITIONS` (16) partitions, and a
transactional id's records all go to one of them, `partition(id, count)`: the CRC-32 of
the id, modulo 16, when the topic has at least 16 partitions; partition 0 otherwise.
A reader waits for every transaction open before the record it needs (read_committed
stops at the last stable offset), and a dead node's stays open until its shard's
adopter aborts it: spread over 16 partitions, one shard's adopter rarely waits for
another's. The modulus is fixed, not the topic's partition count, so that partitions
added to the topic move no id; a topic of fewer than 16 (earlier releases created
it with one, and wrote every record to partition 0) keeps everything in partition 0,
and once one grows to 16 an id found nowhere in its own partition is looked for in
partition 0 (`read_back`): its newer records are all in its own.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator

from ...errors import FlowError

VERSION = 1
MAX_ID_LENGTH = 128
# librdkafka's and the broker's default largest record (message.max.bytes), which
# PublishKafka's producer sets explicitly: some 25,000 FlowFile ids.
MAX_RECORD_BYTES = 1_000_000
FIRST_WINDOW = 64  # records in the first window read back from the end of the topic
PARTITIONS = 16  # of the progress topic Custody creates; the modulus of `partition`


class ProgressRecordError(FlowError):
    """A progress record that does not fit the layout, or a set of ids too large for one."""


def key(transactional_id: str) -> bytes:
    return transactional_id.encode("utf-8")


def partition(transactional_id: str, count: int) -> int:
    """The partition of the progress topic, of `count` partitions, that holds the
    records of `transactional_id` (see Placement above)."""
    return zlib.crc32(key(transactional_id)) % PARTITIONS if count >= PARTITIONS else 0


def pack(flowfile_ids: Iterable[str], limit: int = MAX_RECORD_BYTES) -> bytes:
    """The value of the progress record naming `flowfile_ids`. Raises
    `ProgressRecordError` when it would be larger than `limit` bytes."""
    ids = sorted(set(flowfile_ids))
    value = json.dumps({"v": VERSION, "flowfiles": ids}, separators=(",", ":")).encode("utf-8")
    if len(value) > limit:
        raise ProgressRecordError(
            f"the progress record of {len(ids)} FlowFile ids is {len(value)} bytes, more than the {limit} a "
            "record may hold: lower batch_size, and let the incoming queue drain once (the ids of FlowFiles "
            "that crashes left undecided are forgotten when the queue holds nothing else)"
        )
    return value


def unpack(value: bytes | None, source: str) -> frozenset[str]:
    """The FlowFile ids of a progress record's value; `source` says where it was read
    (topic, offset) for the error. Raises `ProgressRecordError`."""
    if value is None:
        raise ProgressRecordError(f"{source}: the progress record has no value")
    try:
        document = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ProgressRecordError(f"{source}: the progress record is not UTF-8 JSON ({error})") from None
    if not isinstance(document, dict) or "v" not in document:
        raise ProgressRecordError(f"{source}: the progress record is not an object with a version 'v'")
    version = document["v"]
    if version != VERSION or isinstance(version, bool):
        raise ProgressRecordError(
            f"{source}: the progress record has layout version {version!r}; this release reads version {VERSION}"
        )
    if set(document) != {"v", "flowfiles"}:
        raise ProgressRecordError(f"{source}: the progress record holds {sorted(document)}, not v and flowfiles")
    ids = document["flowfiles"]
    if not isinstance(ids, list) or not all(isinstance(i, str) and 0 < len(i) <= MAX_ID_LENGTH for i in ids):
        raise ProgressRecordError(f"{source}: the progress record's flowfiles is not a list of FlowFile ids")
    found = frozenset(ids)
    if len(found) != len(ids):
        raise ProgressRecordError(f"{source}: the progress record names a FlowFile twice")
    return found


def windows(low: int, high: int, first: int = FIRST_WINDOW) -> Iterator[tuple[int, int]]:
    """The ranges of offsets [start, end) in which to look for a key's last record, from
    the end of a partition (`high`, exclusive) back to its beginning (`low`), each twice
    as long as the one before: a producer that wrote recently is found in a few dozen
    records, one that wrote long ago in a number of reads that grows with the log's
    logarithm, not its length."""
    if first < 1:
        raise ValueError(f"a window holds at least one record, not {first}")
    end, size = high, first
    while end > low:
        start = max(low, end - size)
        yield start, end
        end, size = start, size * 2


class PendingDeliveries:
    """The FlowFiles a committed Kafka transaction holds whose WAL commit is not known to
    be durable: each is routed to success without being sent again when it comes back,
    and each progress record names them all. Pure bookkeeping, owned by the one task
    that publishes (no lock of its own).

    An id enters when its Kafka transaction commits (`kafka_committed`), or when the
    progress topic is read back after a new producer's `init_transactions`
    (`recovered`), and leaves when its WAL commit succeeds (`wal_committed`). One read
    back may name FlowFiles whose WAL commit did happen before a crash: they never
    come back, and are forgotten (`keep_only`) once a task's batch holds every
    FlowFile its incoming queues hold, which none of them is."""

    def __init__(self) -> None:
        self._ids: set[str] = set()

    def __contains__(self, flowfile_id: str) -> bool:
        return flowfile_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def ids(self) -> frozenset[str]:
        return frozenset(self._ids)

    def recovered(self, ids: Iterable[str]) -> None:
        """The last progress record of this transactional id, read back: it names every
        id this set could hold (each record names the whole set), so it replaces it."""
        self._ids = set(ids)

    def record_for(self, delivering: Iterable[str]) -> frozenset[str]:
        """The ids the progress record of a transaction delivering `delivering` names."""
        return frozenset(self._ids.union(delivering))

    def kafka_committed(self, ids: Iterable[str]) -> None:
        self._ids.update(ids)

    def wal_committed(self, ids: Iterable[str]) -> None:
        self._ids.difference_update(ids)

    def keep_only(self, ids: Iterable[str]) -> None:
        """Forget every id but `ids`: the batch that holds all the incoming queues hold."""
        self._ids.intersection_update(ids)
