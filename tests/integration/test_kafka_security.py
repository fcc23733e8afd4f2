"""ConsumeKafka through Kafka's security settings, against the real broker with SASL
over TLS and in clear (`kafka_secure_broker`): each SASL mechanism the processor
offers takes the records a client of the same listener wrote; a wrong password, and
a CA that did not sign the broker's certificate, are each one clear warning naming the
cause, nothing taken, and no password in any log line."""

from __future__ import annotations

import logging
import secrets
import uuid

import pytest

from cluster.services.install import java_binary
from cluster.services.kafka_security import certificate_authority, keytool_binary

from .test_flow_sources import Node
from .test_kafka_consume import consumer_of, drain

pytestmark = [pytest.mark.kafka]

METADATA_WARNING = "cannot read the topics' metadata"


def client_config(broker, mechanism: str, protocol: str = "SASL_SSL") -> dict[str, str]:
    """confluent-kafka's settings for a client of the broker's SASL listener `protocol`."""
    config = {
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.username": broker.username,
        "sasl.password": broker.password,
    }
    if protocol == "SASL_SSL":
        return {
            **config,
            "bootstrap.servers": broker.sasl_ssl_bootstrap_servers,
            "ssl.ca.location": str(broker.ca_location),
        }
    return {**config, "bootstrap.servers": broker.sasl_plaintext_bootstrap_servers}


def topic_with_records(config: dict[str, str], values: list[str]) -> str:
    """A new topic, written through the secure listener `config` names."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"secure-{uuid.uuid4().hex[:12]}"
    admin = AdminClient(config)  # held: a client collected while its request is out fails the request
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    producer = Producer(config)
    for value in values:
        producer.produce(topic, value.encode())
    assert producer.flush(30) == 0
    return topic


def secure_consumer(broker, topic: str, config: dict[str, str], **overrides):
    """ConsumeKafka with the connection properties of `config` (overridden by `overrides`)."""
    properties = {
        "bootstrap_servers": config["bootstrap.servers"],
        "security_protocol": config["security.protocol"],
        "sasl_mechanism": config["sasl.mechanism"],
        "sasl_username": config["sasl.username"],
        "sasl_password": config["sasl.password"],
    }
    if "ssl.ca.location" in config:
        properties["ssl_ca_location"] = str(config["ssl.ca.location"])
    return consumer_of(broker, topic, **{**properties, **overrides})


@pytest.mark.parametrize(
    ("mechanism", "protocol"),
    [
        ("PLAIN", "SASL_SSL"),
        ("SCRAM-SHA-256", "SASL_SSL"),
        ("SCRAM-SHA-512", "SASL_SSL"),
        ("SCRAM-SHA-256", "SASL_PLAINTEXT"),
    ],
)
def test_consume_kafka_authenticates_with_each_sasl_mechanism(kafka_secure_broker, tmp_path, mechanism, protocol):
    config = client_config(kafka_secure_broker, mechanism, protocol)
    values = [f"{mechanism}-{i}" for i in range(3)]
    topic = topic_with_records(config, values)
    node = Node(tmp_path, ["out"])
    consume, context = secure_consumer(kafka_secure_broker, topic, config)
    try:
        assert drain(node, consume, context, 3, timeout=30) == sorted(value.encode() for value in values)
    finally:
        consume.on_stopped(context)


def _refused(broker, tmp_path, caplog, config: dict[str, str], **overrides) -> list[str]:
    """Two tasks of a ConsumeKafka the broker refuses: nothing is taken, no exception
    leaves on_trigger, and the lines that say why (the processor's own warning); no
    log line holds a password."""
    node = Node(tmp_path, ["out"])
    consume, context = secure_consumer(broker, "anything", config, **overrides)
    try:
        with caplog.at_level(logging.DEBUG):
            node.trigger(consume, context, outgoing={"success": "out"})
            node.trigger(consume, context, outgoing={"success": "out"})
    finally:
        consume.on_stopped(context)
    assert node.queues["out"].count == 0 and context.yielded
    passwords = {broker.password, config["sasl.password"], overrides.get("sasl_password", broker.password)}
    for record in caplog.records:
        text = f"{record.getMessage()} {record.exc_text or ''}"
        assert not any(password in text for password in passwords), text
    return [record.getMessage() for record in caplog.records if METADATA_WARNING in record.getMessage()]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_a_wrong_password_is_one_warning_naming_the_failed_authentication(
    kafka_secure_broker, tmp_path, caplog, mechanism
):
    config = client_config(kafka_secure_broker, mechanism)
    wrong = f"wrong-{secrets.token_hex(8)}"
    lines = _refused(kafka_secure_broker, tmp_path, caplog, config, sasl_password=wrong)
    assert len(lines) == 1, lines
    assert "SASL authentication error" in lines[0] and "Authentication failed" in lines[0], lines
    assert kafka_secure_broker.sasl_ssl_bootstrap_servers in lines[0]


def test_a_ca_that_did_not_sign_the_brokers_certificate_is_one_warning_naming_the_tls_failure(
    kafka_secure_broker, tmp_path, caplog
):
    keytool = keytool_binary(java_binary())
    (tmp_path / "other").mkdir()
    _, other_ca = certificate_authority(keytool, tmp_path / "other", "other-ca", secrets.token_hex(8))
    config = client_config(kafka_secure_broker, "SCRAM-SHA-256")
    lines = _refused(kafka_secure_broker, tmp_path, caplog, config, ssl_ca_location=str(other_ca))
    assert len(lines) == 1, lines
    # librdkafka words the failure "SSL handshake failed: ... certificate verify failed" on
    # the first attempt and "... certificate verify failed (after N ms in state
    # SSL_HANDSHAKE)" on those after it: which one is last depends on how many it made.
    assert "certificate verify failed" in lines[0], lines
    assert "SSL handshake failed" in lines[0] or "in state SSL_HANDSHAKE" in lines[0], lines
