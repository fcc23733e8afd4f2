"""A hanging transaction made on purpose: records of a transactional producer written
to a partition that its coordinator never heard of, so that no marker will ever end
them there. That is what a broker leaves behind when, restarted, it drops a
transaction's markers; making it by killing the broker depends on luck, so the test
writes the records itself: a Produce request (v9, Kafka's record batch v2) with the
producer's id and epoch, while the broker's check that a transactional write belongs
to a transaction its coordinator knows (`transaction.partition.verification.enable`,
KIP-890) is turned off for the moment of the write.
"""

from __future__ import annotations

import functools
import struct
import time
from collections.abc import Sequence

from cluster.services.kafka import NODE_ID, KafkaBroker
from cluster.services.process import wait_until
from flow.processors.kafka import wire

PRODUCE = (0, 9)
VERIFICATION = "transaction.partition.verification.enable"
TRANSACTIONAL = 0x10  # the record batch's attributes bit
INVALID_TXN_STATE = 48


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _varint(value: int) -> bytes:
    return wire.uvarint((value << 1) ^ (value >> 63))


def record_batch(producer_id: int, epoch: int, sequence: int, records: Sequence[tuple[bytes | None, bytes]]) -> bytes:
    """Kafka's record batch v2 of `records` (key, value), transactional, from `sequence`."""
    now = int(time.time() * 1000)
    body = b""
    for delta, (key, value) in enumerate(records):
        inner = (
            b"\x00"
            + _varint(0)
            + _varint(delta)
            + (_varint(-1) if key is None else _varint(len(key)) + key)
            + _varint(len(value))
            + value
            + _varint(0)
        )
        body += _varint(len(inner)) + inner
    after_crc = struct.pack(
        ">hiqqqhii", TRANSACTIONAL, len(records) - 1, now, now, producer_id, epoch, sequence, len(records)
    )
    after_crc += body
    after_length = struct.pack(">ibI", -1, 2, crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def _verification(broker: KafkaBroker, enabled: bool) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    entry = ConfigEntry(VERIFICATION, str(enabled).lower(), incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.BROKER, str(NODE_ID), incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(30)


def leave_open(
    broker: KafkaBroker,
    transactional_id: str,
    topic: str,
    partition: int,
    records: Sequence[tuple[bytes | None, bytes]],
) -> wire.TransactionState:
    """Write `records` to `topic`[`partition`] in the name of `transactional_id`'s
    producer (its id and epoch at the coordinator now), as a transaction that the
    coordinator does not know the partition to be in. Returns the coordinator's state."""
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with wire.Connection(host, int(port), None, 30) as connection:
        state = wire.describe_transaction(connection, transactional_id)
        assert state is not None, f"the coordinator knows no {transactional_id}"
        # a partition just made may have no leader loaded yet (NOT_LEADER_OR_FOLLOWER)
        ask = functools.partial(wire.describe_producers, connection, {topic: [partition]})
        known = [
            p.last_sequence
            for p in wire.retried(ask, time.monotonic() + 30)
            if (p.producer_id, p.producer_epoch) == (state.producer_id, state.producer_epoch)
        ]
        sequence = known[0] + 1 if known else 0  # the producer's next, where it wrote before
        body = (
            wire.Writer()
            .compact_string(transactional_id)
            .int16(-1)
            .int32(30_000)
            .compact_array(
                [topic],
                lambda w, name: (
                    w.compact_string(name)
                    .compact_array(
                        [partition],
                        lambda w, index: (
                            w.int32(index)
                            .compact_bytes(record_batch(state.producer_id, state.producer_epoch, sequence, records))
                            .no_tags()
                        ),
                    )
                    .no_tags()
                ),
            )
            .no_tags()
            .done()
        )
        # The setting reaches the broker through its metadata a moment after the change:
        # a write refused as outside any transaction (INVALID_TXN_STATE) is made again.
        _verification(broker, False)

        def answered() -> tuple[int] | None:  # None while the broker still checks transactional writes
            code = _produced(connection.request(PRODUCE, body))
            return None if code == INVALID_TXN_STATE else (code,)

        try:
            (error,) = wait_until(answered, 30, "the broker to stop checking transactional writes", interval=0.05)
        finally:
            _verification(broker, True)
        assert error == wire.NONE, f"the broker refused the open transaction's records: error {error}"
    return state


def _produced(reader: wire.Reader) -> int:
    """The error code of the one partition a Produce v9 answer holds."""
    codes: list[int] = []

    def partition(r: wire.Reader) -> None:
        r.int32()
        codes.append(r.int16())
        r.int64()
        r.int64()
        r.int64()
        r.compact_array(lambda r: (r.int32(), r.compact_string(), r.tags()))
        r.compact_string()
        r.tags()

    def topic(r: wire.Reader) -> None:
        r.compact_string()
        r.compact_array(partition)
        r.tags()

    reader.compact_array(topic)
    assert len(codes) == 1, f"a Produce answer for one partition held {len(codes)}"
    return codes[0]
