"""ConsumeKafka's state layout: positions written and read back, and every state that
does not fit refused whole (a position skipped would re-read a partition)."""

from __future__ import annotations

import pytest

from flow.processors.kafka.connection import client_config, describe_settings, validate_connection
from flow.processors.kafka.positions import KafkaStateError, TopicPartition, pack, unpack


def test_positions_round_trip_in_the_documented_layout():
    positions = {
        TopicPartition("orders.v1", 0): 0,
        TopicPartition("orders.v1", 11): 12345,
        TopicPartition("a-b_c", 3): 7,
    }
    state = pack(positions)
    assert state == {"kafka.layout": "1", "next:0:orders.v1": "0", "next:11:orders.v1": "12345", "next:3:a-b_c": "7"}
    assert unpack(state, "consume") == positions
    assert unpack({}, "consume") == {}


@pytest.mark.parametrize(
    "state, problem",
    [
        ({"kafka.layout": "2", "next:0:t": "1"}, "layout '2'"),
        ({"next:0:t": "1"}, "layout None"),
        ({"kafka.layout": "1", "taken:0:t": "1"}, "unknown entry"),
        ({"kafka.layout": "1", "next:0:t": "-1"}, "does not parse"),
        ({"kafka.layout": "1", "next:0:t": "01"}, "does not parse"),
        ({"kafka.layout": "1", "next:x:t": "1"}, "does not parse"),
        ({"kafka.layout": "1", "next:0:t/x": "1"}, "does not parse"),
        ({"kafka.layout": "1", "next:0:": "1"}, "does not parse"),
    ],
)
def test_a_state_that_does_not_fit_is_refused_whole(state, problem):
    with pytest.raises(KafkaStateError, match="consume: its committed Kafka positions cannot be read") as error:
        unpack(state, "consume")
    assert problem in str(error.value)


def test_a_position_kafka_could_not_have_is_never_written():
    with pytest.raises(ValueError):
        pack({TopicPartition("t", 0): -2})
    with pytest.raises(ValueError):
        pack({TopicPartition("bad:name", 0): 1})


def test_secrets_reach_librdkafka_and_never_a_log_line():
    properties = {
        "bootstrap_servers": "127.0.0.1:9092",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "flow",
        "sasl_password": "s3cret",
        "ssl_ca_location": "/etc/ca.pem",
    }
    config = client_config(properties, logger=None)
    assert config["sasl.password"] == "s3cret" and config["ssl.ca.location"] == "/etc/ca.pem"
    shown = describe_settings(config)
    assert "s3cret" not in shown and "sasl.password=****" in shown and "sasl.username=flow" in shown


def test_settings_of_another_protocol_are_left_out_and_sasl_needs_its_credentials():
    config = client_config({"bootstrap_servers": "b:1", "sasl_username": "u", "ssl_ca_location": "/ca"}, None)
    assert set(config) == {"bootstrap.servers", "reconnect.backoff.ms"}
    assert validate_connection({"security_protocol": "SASL_PLAINTEXT", "sasl_username": "u"}) == [
        ("sasl_password", "required with security_protocol SASL_PLAINTEXT")
    ]


def test_a_demarcated_content_splits_into_its_records_and_a_final_demarcator_ends_the_last():
    from flow.processors.kafka.demarcation import decode_demarcator, split_records

    newline = decode_demarcator("\\n")
    assert newline == b"\n" and decode_demarcator("||") == b"||"
    assert split_records(b'{"a": 1}\n{"a": 2}\n', newline) == [b'{"a": 1}', b'{"a": 2}']
    assert split_records(b"x\n\ny", newline) == [b"x", b"", b"y"]  # an empty record inside is a record
    assert split_records(b"", newline) == [] and split_records(b"one", newline) == [b"one"]


def test_positions_carry_the_take_of_their_partition_in_a_cluster():
    from flow.processors.kafka.positions import unpack_takes

    positions = {TopicPartition("t", 0): 10, TopicPartition("t", 1): 20}
    state = pack(positions, {TopicPartition("t", 0): 3, TopicPartition("t", 1): 0, TopicPartition("u", 0): 5})
    assert state == {"kafka.layout": "1", "next:0:t": "10", "next:1:t": "20", "take:0:t": "3"}
    assert unpack(state, "consume") == positions
    assert unpack_takes(state, "consume") == {TopicPartition("t", 0): 3}
    with pytest.raises(KafkaStateError):
        unpack_takes({"kafka.layout": "1", "take:0:t": "x"}, "consume")


def test_librdkafkas_own_lines_are_written_once_a_minute_a_kind():
    import logging

    from flow.processors.kafka.connection import LibrdkafkaLog

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger("test.librdkafka")
    logger.addHandler(Keep())
    log = LibrdkafkaLog(logger)
    for _ in range(5):
        log.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#consumer-1", "Connect to 127.0.0.1:1 failed")
    log.log(logging.ERROR, "%s [%s] %s", "AUTH", "rdkafka#consumer-1", "SASL authentication failed")
    assert records == [
        "FAIL [rdkafka#consumer-1] Connect to 127.0.0.1:1 failed",
        "AUTH [rdkafka#consumer-1] SASL authentication failed",
    ]
