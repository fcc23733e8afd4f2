"""Kafka's wire encoding as `wire` writes and reads it, byte by byte against the
protocol's definitions, and the decision of which hanging transactions get which
marker (`hanging.markers_for`). The requests against a real broker are in
tests/integration/test_kafka_hanging.py."""

from __future__ import annotations

import struct

import pytest

from flow.processors.kafka import hanging, sasl, wire


@pytest.mark.parametrize(
    "value, encoded",
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (2**31, b"\x80\x80\x80\x80\x08"),
    ],
)
def test_unsigned_varints_are_seven_bits_a_byte_low_group_first(value, encoded):
    assert wire.uvarint(value) == encoded
    assert wire.Reader(encoded).uvarint() == value


def test_compact_strings_and_arrays_carry_their_length_plus_one():
    written = (
        wire.Writer()
        .compact_string("ab")
        .compact_string(None)
        .compact_array([1, 2], wire.Writer.int32)
        .string("id")
        .no_tags()
        .done()
    )
    assert written == b"\x03ab" + b"\x00" + b"\x03" + struct.pack(">ii", 1, 2) + b"\x00\x02id" + b"\x00"
    reader = wire.Reader(written)
    assert reader.compact_string() == "ab" and reader.compact_string() is None
    assert reader.compact_array(wire.Reader.int32) == [1, 2]


def test_tagged_fields_read_are_skipped_whatever_they_hold():
    reader = wire.Reader(b"\x02" + b"\x00\x03abc" + b"\x05\x01z" + struct.pack(">h", 7))
    reader.tags()
    assert reader.int16() == 7


def test_a_truncated_answer_is_one_clear_error():
    with pytest.raises(wire.WireError, match="ends after 3 bytes"):
        wire.Reader(b"\x00\x00\x01", "the answer").int32()


class Answering:
    """A connection that records the request and answers with fixed bytes."""

    def __init__(self, answer: bytes):
        self.answer = answer
        self.asked: list[tuple[tuple[int, int], bytes]] = []

    def request(self, api, body):
        self.asked.append((api, body))
        return wire.Reader(self.answer)


def describe_answer(error: int, state: str, partitions: list[int]) -> bytes:
    return (
        wire.Writer()
        .int32(0)
        .compact_array(
            [None],
            lambda w, _: (
                w.int16(error)
                .compact_string("tid")
                .compact_string(state)
                .int32(60_000)
                .int64(1_700_000_000_000)
                .int64(42)
                .int16(3)
                .compact_array(
                    [("out", partitions)],
                    lambda w, t: w.compact_string(t[0]).compact_array(t[1], wire.Writer.int32).no_tags(),
                )
                .no_tags()
            ),
        )
        .no_tags()
        .done()
    )


def test_describe_transactions_asks_for_one_id_and_reads_its_state():
    connection = Answering(describe_answer(0, "PrepareCommit", [0, 2]))
    state = wire.describe_transaction(connection, "tid")  # type: ignore[arg-type]
    assert connection.asked == [((65, 0), b"\x02\x04tid\x00")]
    assert state == wire.TransactionState(
        "tid", "PrepareCommit", 60_000, 1_700_000_000_000, 42, 3, frozenset({("out", 0), ("out", 2)})
    )


def test_an_id_its_coordinator_does_not_know_has_no_state_and_another_error_raises():
    assert wire.describe_transaction(Answering(describe_answer(105, "", [])), "tid") is None  # type: ignore[arg-type]
    with pytest.raises(wire.WireError, match="error 15"):
        wire.describe_transaction(Answering(describe_answer(15, "", [])), "tid")  # type: ignore[arg-type]


def list_answer(error: int, listed: list[tuple[str, int, str]]) -> bytes:
    return (
        wire.Writer()
        .int32(0)
        .int16(error)
        .compact_array([], wire.Writer.compact_string)
        .compact_array(listed, lambda w, t: w.compact_string(t[0]).int64(t[1]).compact_string(t[2]).no_tags())
        .no_tags()
        .done()
    )


def test_list_transactions_asks_by_producer_id_in_every_state_and_reads_each_id():
    connection = Answering(list_answer(0, [("a", 42, "CompleteCommit"), ("b", 7, "Ongoing")]))
    listed = wire.list_transactions(connection, {42, 7})  # type: ignore[arg-type]
    # No state filter (an empty compact array), then the producer ids, sorted.
    assert connection.asked == [((66, 0), b"\x01" + b"\x03" + struct.pack(">qq", 7, 42) + b"\x00")]
    assert listed == [wire.ListedTransaction("a", 42, "CompleteCommit"), wire.ListedTransaction("b", 7, "Ongoing")]
    with pytest.raises(wire.WireError, match=r"producer ids \[7\]: error 29"):
        wire.list_transactions(Answering(list_answer(29, [])), [7])  # type: ignore[arg-type]


def test_write_txn_markers_sends_one_entry_per_marker_and_reads_each_partitions_error():
    answer = (
        wire.Writer()
        .compact_array(
            [None],
            lambda w, _: (
                w.int64(42)
                .compact_array(
                    [None],
                    lambda w, _: (
                        w.compact_string("out")
                        .compact_array([(0, 0), (2, 47)], lambda w, p: w.int32(p[0]).int16(p[1]).no_tags())
                        .no_tags()
                    ),
                )
                .no_tags()
            ),
        )
        .no_tags()
        .done()
    )
    connection = Answering(answer)
    markers = [wire.Marker("out", 0, 42, 3, 5, True), wire.Marker("out", 2, 42, 3, -1, True)]
    assert wire.write_txn_markers(connection, markers) == {("out", 0): 0, ("out", 2): 47}  # type: ignore[arg-type]
    [(api, body)] = connection.asked
    first = (
        struct.pack(">qhb", 42, 3, 1)
        + b"\x02\x04out\x02"
        + struct.pack(">i", 0)
        + b"\x00"
        + struct.pack(">i", 5)
        + b"\x00"
    )
    assert api == (27, 1) and body.startswith(b"\x03" + first)


def state(name: str, producer_id: int = 42, epoch: int = 3) -> wire.TransactionState:
    return wire.TransactionState("tid", name, 60_000, 0, producer_id, epoch, frozenset())


OPEN = [
    wire.ActiveProducer("out", 0, 42, 3, 11, 7, 100),  # the last transaction's, left open
    wire.ActiveProducer("out", 1, 42, 2, 11, 7, 90),  # an earlier epoch: a decision no longer known
    wire.ActiveProducer("out", 2, 99, 3, 11, 7, 80),  # another producer's
    wire.ActiveProducer("out", 3, 42, 3, 11, 7, -1),  # no transaction open there
]


@pytest.mark.parametrize("name, commit", [("CompleteCommit", True), ("CompleteAbort", False)])
def test_a_decided_transaction_left_open_gets_its_decision_at_its_epoch_and_the_partitions_coordinator_epoch(
    name, commit
):
    assert hanging.markers_for(state(name), OPEN) == [wire.Marker("out", 0, 42, 3, 7, commit)]


@pytest.mark.parametrize("name", ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "Dead"])
def test_no_marker_while_the_decision_is_not_known(name):
    assert hanging.markers_for(state(name), OPEN) == []
    assert hanging.markers_for(None, OPEN) == []


@pytest.mark.parametrize("producer_id, epoch", [(42, 4), (43, 0)])
def test_after_a_fence_no_partition_is_asked_since_no_open_transaction_can_match_its_decision(producer_id, epoch):
    """A fence's abort completes at the epoch it bumped (or a new producer id once the
    epoch ran out); the partitions' open transactions hold the fenced epoch or earlier."""
    fenced, after = state("Ongoing"), state("CompleteAbort", producer_id, epoch)
    assert hanging._moved_on(fenced, after)
    assert hanging.markers_for(after, OPEN) == []
    assert not hanging._moved_on(fenced, state("CompleteAbort"))  # not moved on: the partitions are asked


def test_the_connection_settings_follow_librdkafkas_and_an_unspoken_mechanism_is_refused_clearly():
    plain = hanging.brokers({"bootstrap.servers": "x:1"}, 5)
    assert plain.tls is None and plain.credentials is None
    scram = hanging.brokers(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "scram-sha-512",
            "sasl.username": "u",
            "sasl.password": "p",
        },
        5,
    )
    assert scram.tls is None and scram.credentials == sasl.Credentials("SCRAM-SHA-512", "u", "p")
    with pytest.raises(hanging.Unsupported, match="GSSAPI"):
        hanging.brokers({"security.protocol": "SASL_SSL"}, 5)


# RFC 7677's example exchange, SCRAM-SHA-256: user "user", password "pencil".
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha_256_gives_rfc_7677s_messages_and_checks_the_servers_signature():
    scram = sasl.Scram("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    assert scram.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert scram.final(SERVER_FIRST) == CLIENT_FINAL
    scram.verify(SERVER_FINAL)
    with pytest.raises(wire.WireError, match="signature is wrong"):
        scram.verify(b"v=" + b"A" * 44)


def test_scram_refuses_a_challenge_whose_nonce_is_not_its_own_and_escapes_the_user_name():
    scram = sasl.Scram("SCRAM-SHA-512", "a=b,c", "pw", nonce="abc")
    assert scram.first() == b"n,,n=a=3Db=2Cc,r=abc"
    with pytest.raises(wire.WireError, match="RFC 5802"):
        scram.final(b"r=other,s=c2FsdA==,i=4096")
