"""The few Kafka requests Custody speaks itself, on Kafka's own wire protocol.

librdkafka has no client for a transaction's state at its coordinator
(DescribeTransactions), a partition's open transactions (DescribeProducers) or the
markers that end them (WriteTxnMarkers): Kafka's Java admin client and its
`kafka-transactions.sh` tool do. PublishKafka needs all three to finish a transaction
its coordinator decided but whose markers never reached a partition (`hanging`), so
this module speaks them, with FindCoordinator to find the coordinator. Partition
leaders come from librdkafka's metadata.

Every request here is a flexible version (Kafka 3.0 and later answer each of them):

    frame            int32 size of what follows, then the header and the body
    request header   v2: int16 api key, int16 api version, int32 correlation id,
                     client id as a STRING (int16 length, UTF-8), tagged fields
    response header  v1: int32 correlation id, tagged fields

and these primitives, big-endian:

    INT8..INT64        signed, two's complement
    UNSIGNED_VARINT    7 bits a byte, least significant group first, the high bit set
                       on every byte but the last
    COMPACT_STRING     UNSIGNED_VARINT length + 1, then UTF-8; a nullable one is 0 for null
    COMPACT_ARRAY      UNSIGNED_VARINT count + 1, then the elements; 0 for null
    TAGGED_FIELDS      UNSIGNED_VARINT count, then per field UNSIGNED_VARINT tag,
                       UNSIGNED_VARINT size and the bytes. This module writes none and
                       skips those it reads.

The message layouts are Kafka's (its `common/message/*.json` definitions), field by
field in the functions below. A connection is plain TCP or TLS (`ssl.SSLContext`),
then authenticated by `sasl` when the brokers ask for SASL.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple, TypeVar

T = TypeVar("T")

CLIENT_ID = "custody"

# API keys and the versions used
FIND_COORDINATOR = (10, 4)
DESCRIBE_PRODUCERS = (61, 0)
DESCRIBE_TRANSACTIONS = (65, 0)
LIST_TRANSACTIONS = (66, 0)
WRITE_TXN_MARKERS = (27, 1)
INIT_PRODUCER_ID = (22, 2)
TRANSACTION_COORDINATOR = 1  # FindCoordinator's key type for a transactional id

# Error codes read here (Kafka's `Errors`)
NONE = 0
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
RETRIABLE = frozenset({COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, 6, 7})
# 6 NOT_LEADER_OR_FOLLOWER, 7 REQUEST_TIMED_OUT
TRANSACTIONAL_ID_NOT_FOUND = 105
CONCURRENT_TRANSACTIONS = 51


class WireError(Exception):
    """A broker that cannot be reached, a frame that does not parse, an error code.
    `code` is the broker's error code, if it answered one; `later` says that asking
    again later may succeed (no broker to connect to, a coordinator still loading)."""

    def __init__(self, message: str, code: int | None = None, later: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.later = later or code in RETRIABLE


class Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def done(self) -> bytes:
        return b"".join(self.parts)

    def _packed(self, layout: str, value: int) -> Writer:
        self.parts.append(struct.pack(layout, value))
        return self

    def int8(self, value: int) -> Writer:
        return self._packed(">b", value)

    def int16(self, value: int) -> Writer:
        return self._packed(">h", value)

    def int32(self, value: int) -> Writer:
        return self._packed(">i", value)

    def int64(self, value: int) -> Writer:
        return self._packed(">q", value)

    def boolean(self, value: bool) -> Writer:
        return self.int8(1 if value else 0)

    def uvarint(self, value: int) -> Writer:
        self.parts.append(uvarint(value))
        return self

    def string(self, value: str | None) -> Writer:
        """The old STRING / NULLABLE_STRING: int16 length (-1 for null), UTF-8."""
        if value is None:
            return self.int16(-1)
        data = value.encode("utf-8")
        self.int16(len(data))
        self.parts.append(data)
        return self

    def compact_string(self, value: str | None) -> Writer:
        if value is None:
            return self.uvarint(0)
        data = value.encode("utf-8")
        self.uvarint(len(data) + 1)
        self.parts.append(data)
        return self

    def compact_bytes(self, value: bytes | None) -> Writer:
        if value is None:
            return self.uvarint(0)
        self.uvarint(len(value) + 1)
        self.parts.append(value)
        return self

    def compact_array(self, items: Iterable[T], write: Callable[[Writer, T], object]) -> Writer:
        items = list(items)
        self.uvarint(len(items) + 1)
        for item in items:
            write(self, item)
        return self

    def no_tags(self) -> Writer:
        return self.uvarint(0)


def uvarint(value: int) -> bytes:
    if value < 0:
        raise ValueError(f"an unsigned varint cannot hold {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class Reader:
    def __init__(self, data: bytes, what: str = "a response") -> None:
        self.data = data
        self.at = 0
        self.what = what

    def _take(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise WireError(f"{self.what} ends after {len(self.data)} bytes, inside a field")
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def int8(self) -> int:
        return int(struct.unpack(">b", self._take(1))[0])

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise WireError(f"{self.what} holds a varint longer than 64 bits")

    def compact_string(self) -> str | None:
        size = self.uvarint()
        if size == 0:
            return None
        return self._take(size - 1).decode("utf-8", errors="replace")

    def string(self) -> str | None:
        """The old STRING / NULLABLE_STRING: int16 length, -1 for null."""
        size = self.int16()
        return None if size < 0 else self._take(size).decode("utf-8", errors="replace")

    def compact_bytes(self) -> bytes:
        size = self.uvarint()
        return self._take(size - 1) if size else b""

    def compact_array(self, read: Callable[[Reader], T]) -> list[T]:
        count = self.uvarint()
        return [read(self) for _ in range(max(count - 1, 0))]

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())


class Connection:
    """One broker: requests sent in turn, each answered before the next."""

    def __init__(self, host: str, port: int, tls: ssl.SSLContext | None, timeout: float) -> None:
        self.address = f"{host}:{port}"
        self.timeout = timeout
        try:
            raw = socket.create_connection((host, port), timeout=timeout)
            self.sock = tls.wrap_socket(raw, server_hostname=host) if tls is not None else raw
        except (OSError, ssl.SSLError) as error:
            raise WireError(f"cannot connect to the broker at {self.address}: {error}", later=True) from None
        self.correlation = 0

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def request(self, api: tuple[int, int], body: bytes, flexible: bool = True) -> Reader:
        """`body` sent as request `api` (key, version); the answer after its header.
        `flexible` False: the request header v1 and response header v0 of a version
        that predates tagged fields (SaslHandshake)."""
        key, version = api
        self.correlation += 1
        header = Writer().int16(key).int16(version).int32(self.correlation).string(CLIENT_ID)
        if flexible:
            header.no_tags()
        payload = header.done() + body
        try:
            self.sock.sendall(struct.pack(">i", len(payload)) + payload)
            size = struct.unpack(">i", self._read(4))[0]
            reader = Reader(self._read(size), f"the broker's answer to request {key} v{version}")
        except (OSError, ssl.SSLError) as error:
            raise WireError(f"the broker at {self.address} did not answer request {key}: {error}") from None
        if reader.int32() != self.correlation:
            raise WireError(f"the broker at {self.address} answered another request than {key}")
        if flexible:
            reader.tags()
        return reader

    def _read(self, size: int) -> bytes:
        chunks = []
        while size:
            chunk = self.sock.recv(min(size, 1 << 16))
            if not chunk:
                raise OSError("the connection was closed")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)


# -- the requests --------------------------------------------------------------------


class Coordinator(NamedTuple):
    node_id: int
    host: str
    port: int


def find_transaction_coordinator(connection: Connection, transactional_id: str) -> Coordinator:
    """FindCoordinator v4: key type INT8, coordinator keys COMPACT_ARRAY of
    COMPACT_STRING. Answer: throttle INT32, then per key: key, node id INT32, host,
    port INT32, error INT16, error message (nullable)."""
    body = (
        Writer().int8(TRANSACTION_COORDINATOR).compact_array([transactional_id], Writer.compact_string).no_tags().done()
    )
    reader = connection.request(FIND_COORDINATOR, body)
    reader.int32()

    def coordinator(r: Reader) -> tuple[int, Coordinator, str | None]:
        r.compact_string()
        node, host, port = r.int32(), r.compact_string() or "", r.int32()
        error, message = r.int16(), r.compact_string()
        r.tags()
        return error, Coordinator(node, host, port), message

    found = reader.compact_array(coordinator)
    if len(found) != 1:
        raise WireError(f"FindCoordinator answered {len(found)} coordinators for one transactional id")
    error, where, message = found[0]
    if error != NONE:
        raise WireError(f"no transaction coordinator for {transactional_id}: error {error} ({message})", error)
    return where


class TransactionState(NamedTuple):
    """A transactional id at its coordinator (DescribeTransactions)."""

    transactional_id: str
    state: str  # Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence
    timeout_ms: int
    start_ms: int
    producer_id: int
    producer_epoch: int
    partitions: frozenset[tuple[str, int]]  # those still without a marker while it prepares


def describe_transaction(connection: Connection, transactional_id: str) -> TransactionState | None:
    """DescribeTransactions v0: transactional ids COMPACT_ARRAY of COMPACT_STRING.
    Answer: throttle INT32, then per id: error INT16, id, state, timeout INT32, start
    INT64, producer id INT64, producer epoch INT16, topics COMPACT_ARRAY (topic,
    partitions COMPACT_ARRAY of INT32). None when the coordinator knows no such id."""
    body = Writer().compact_array([transactional_id], Writer.compact_string).no_tags().done()
    reader = connection.request(DESCRIBE_TRANSACTIONS, body)
    reader.int32()

    def topic(r: Reader) -> list[tuple[str, int]]:
        name = r.compact_string() or ""
        partitions = r.compact_array(Reader.int32)
        r.tags()
        return [(name, p) for p in partitions]

    def state(r: Reader) -> tuple[int, TransactionState]:
        error = r.int16()
        tid, text = r.compact_string() or "", r.compact_string() or ""
        timeout, start, pid, epoch = r.int32(), r.int64(), r.int64(), r.int16()
        partitions = frozenset(p for t in r.compact_array(topic) for p in t)
        r.tags()
        return error, TransactionState(tid, text, timeout, start, pid, epoch, partitions)

    found = reader.compact_array(state)
    if len(found) != 1:
        raise WireError(f"DescribeTransactions answered {len(found)} states for one transactional id")
    error, described = found[0]
    if error == TRANSACTIONAL_ID_NOT_FOUND:
        return None
    if error != NONE:
        raise WireError(f"describing transactional id {transactional_id}: error {error}", error)
    return described


class ListedTransaction(NamedTuple):
    """A transactional id as the broker coordinating it lists it (ListTransactions)."""

    transactional_id: str
    producer_id: int
    state: str


def list_transactions(connection: Connection, producer_ids: Iterable[int]) -> list[ListedTransaction]:
    """ListTransactions v0: state filters COMPACT_ARRAY of COMPACT_STRING (none: every
    state), producer id filters COMPACT_ARRAY of INT64. Answer: throttle INT32, error
    INT16, unknown state filters COMPACT_ARRAY of COMPACT_STRING, transaction states
    COMPACT_ARRAY (transactional id, producer id INT64, state). Only the ids this broker
    coordinates: ask every broker."""
    ids = sorted(producer_ids)
    body = Writer().compact_array([], Writer.compact_string).compact_array(ids, Writer.int64)
    reader = connection.request(LIST_TRANSACTIONS, body.no_tags().done())
    reader.int32()
    error = reader.int16()
    reader.compact_array(Reader.compact_string)

    def listed(r: Reader) -> ListedTransaction:
        tid, pid, state = r.compact_string() or "", r.int64(), r.compact_string() or ""
        r.tags()
        return ListedTransaction(tid, pid, state)

    found = reader.compact_array(listed)
    if error != NONE:
        raise WireError(f"listing the transactions of producer ids {ids}: error {error}", error)
    return found


class ActiveProducer(NamedTuple):
    """A producer as a partition knows it (DescribeProducers)."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    last_sequence: int
    coordinator_epoch: int  # of the last marker it wrote here
    transaction_start: int  # the offset of its transaction open here; -1 when none


def describe_producers(connection: Connection, partitions: Mapping[str, Iterable[int]]) -> list[ActiveProducer]:
    """DescribeProducers v0: topics COMPACT_ARRAY (name, partition indexes COMPACT_ARRAY
    of INT32). Answer: throttle INT32, topics (name, partitions (index INT32, error
    INT16, error message, active producers (producer id INT64, epoch INT32, last
    sequence INT32, last timestamp INT64, coordinator epoch INT32, current transaction's
    start offset INT64, -1 when none))). A partition's error raises."""
    body = (
        Writer()
        .compact_array(
            sorted((t, sorted(ps)) for t, ps in partitions.items()),
            lambda w, item: w.compact_string(item[0]).compact_array(item[1], Writer.int32).no_tags(),
        )
        .no_tags()
        .done()
    )
    reader = connection.request(DESCRIBE_PRODUCERS, body)
    reader.int32()
    found: list[ActiveProducer] = []

    def topic(r: Reader) -> None:
        name = r.compact_string() or ""

        def partition(r: Reader) -> None:
            index, error, message = r.int32(), r.int16(), r.compact_string()

            def producer(r: Reader) -> None:
                pid, epoch, sequence = r.int64(), r.int32(), r.int32()
                r.int64()
                coordinator_epoch, start = r.int32(), r.int64()
                r.tags()
                found.append(ActiveProducer(name, index, pid, epoch, sequence, coordinator_epoch, start))

            r.compact_array(producer)
            r.tags()
            if error != NONE:
                raise WireError(f"describing the producers of {name}[{index}]: error {error} ({message})", error)

        r.compact_array(partition)
        r.tags()

    reader.compact_array(topic)
    return found


class Marker(NamedTuple):
    """A transaction marker to write on a partition."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool


def write_txn_markers(connection: Connection, markers: Iterable[Marker]) -> dict[tuple[str, int], int]:
    """WriteTxnMarkers v1, one entry per marker: producer id INT64, epoch INT16, result
    BOOLEAN (true: COMMIT), topics COMPACT_ARRAY (name, partition indexes), coordinator
    epoch INT32. Answer: per entry, producer id, topics (name, partitions (index, error
    INT16)). Returns each partition's error code."""

    def entry(w: Writer, marker: Marker) -> None:
        w.int64(marker.producer_id).int16(marker.producer_epoch).boolean(marker.commit)
        w.compact_array(
            [(marker.topic, [marker.partition])],
            lambda w, item: w.compact_string(item[0]).compact_array(item[1], Writer.int32).no_tags(),
        )
        w.int32(marker.coordinator_epoch).no_tags()

    reader = connection.request(WRITE_TXN_MARKERS, Writer().compact_array(markers, entry).no_tags().done())
    errors: dict[tuple[str, int], int] = {}

    def result(r: Reader) -> None:
        r.int64()

        def topic(r: Reader) -> None:
            name = r.compact_string() or ""

            def partition(r: Reader) -> None:
                index, error = r.int32(), r.int16()
                r.tags()
                errors[(name, index)] = error

            r.compact_array(partition)
            r.tags()

        r.compact_array(topic)
        r.tags()

    reader.compact_array(result)
    return errors


def init_producer_id(connection: Connection, transactional_id: str, transaction_timeout_ms: int) -> int:
    """InitProducerId v2: transactional id COMPACT_NULLABLE_STRING, transaction timeout
    INT32. Answer: throttle INT32, error INT16, producer id INT64, epoch INT16. Its
    coordinator bumps the id's epoch, fencing every producer of it, and aborts a
    transaction the id left open (answering CONCURRENT_TRANSACTIONS until that is
    done). Returns the error code."""
    body = Writer().compact_string(transactional_id).int32(transaction_timeout_ms).no_tags().done()
    reader = connection.request(INIT_PRODUCER_ID, body)
    reader.int32()
    return reader.int16()


def retried(ask: Callable[[], T], deadline: float, step: float = 0.1) -> T:
    """`ask()`, again while it raises a `WireError` carrying a retriable code (a
    coordinator still loading its log), until `deadline` (monotonic)."""
    while True:
        try:
            return ask()
        except WireError as error:
            if error.code not in RETRIABLE or time.monotonic() > deadline:
                raise
        time.sleep(step)
