"""How a Kafka processor reaches its brokers: the connection properties ConsumeKafka and
PublishKafka share, and the librdkafka configuration built from them.

The properties follow Kafka's client settings (`bootstrap.servers`, `security.protocol`,
`sasl.mechanism`, the SSL locations) under the flow's snake_case names. A secret (the
SASL password, a key's password) comes into the flow through a parameter (`#{...}`) and
never appears in a log line or an error message: `describe_settings` shows what a
connection uses with the secrets masked, and librdkafka's own log goes to the
processor's logger, which never prints configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from repositories.log_limits import LimitedLog

from ...processor import PropertyDescriptor

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

# Property name -> librdkafka setting, for the properties copied as they are.
_SETTINGS = {
    "bootstrap_servers": "bootstrap.servers",
    "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism",
    "sasl_username": "sasl.username",
    "sasl_password": "sasl.password",
    "ssl_ca_location": "ssl.ca.location",
    "ssl_certificate_location": "ssl.certificate.location",
    "ssl_key_location": "ssl.key.location",
    "ssl_key_password": "ssl.key.password",
}
SECRET_SETTINGS = frozenset({"sasl.password", "ssl.key.password"})
# librdkafka spaces a client's connection attempts by half its first reconnect backoff
# (100 ms by default): a new client learns the brokers on its bootstrap connection,
# closes it, and then waits those 50 ms to connect to a broker it learned, on every
# new producer's and reader's path after a failover. 10 ms brings the wait to
# librdkafka's floor (11 ms); the backoff still doubles, to its 10 s most, while a
# broker refuses.
_FIXED = {"reconnect.backoff.ms": 10}

CONNECTION_PROPERTIES = (
    PropertyDescriptor(
        "bootstrap_servers",
        "string",
        required=True,
        description="host:port of one or more brokers, comma-separated (Kafka's bootstrap.servers)",
    ),
    PropertyDescriptor(
        "security_protocol",
        "choice",
        default="PLAINTEXT",
        choices=SECURITY_PROTOCOLS,
        description="how the client talks to the brokers: in clear, over TLS, with SASL, or SASL over TLS",
    ),
    PropertyDescriptor(
        "sasl_mechanism",
        "choice",
        default="PLAIN",
        choices=SASL_MECHANISMS,
        description="the SASL mechanism, with security_protocol SASL_PLAINTEXT or SASL_SSL",
    ),
    PropertyDescriptor("sasl_username", "string", description="the SASL user name"),
    PropertyDescriptor(
        "sasl_password", "string", description="the SASL password: give it as a parameter (#{...}); it is never logged"
    ),
    PropertyDescriptor("ssl_ca_location", "string", description="a PEM file of the CA certificates to trust"),
    PropertyDescriptor("ssl_certificate_location", "string", description="the client's PEM certificate (mutual TLS)"),
    PropertyDescriptor("ssl_key_location", "string", description="the client's PEM private key (mutual TLS)"),
    PropertyDescriptor("ssl_key_password", "string", description="the private key's password, as a parameter"),
)


def validate_connection(properties: Mapping) -> list[tuple[str, str]]:
    """The problems of a connection's settings, for `Processor.validate`: SASL without
    its user name or password."""
    problems = []
    if properties.get("security_protocol", "PLAINTEXT").startswith("SASL_"):
        for name in ("sasl_username", "sasl_password"):
            if not properties.get(name):
                problems.append((name, f"required with security_protocol {properties['security_protocol']}"))
    return problems


class LibrdkafkaLog:
    """Where librdkafka's own log lines go: `logger`, at most one line a minute of each
    kind (its facility: a refused connection, a failed authentication), with a count of
    the rest. librdkafka logs each failed connection attempt, several a second while a
    broker is down or refuses the credentials; the processor says the same once."""

    def __init__(self, logger: logging.Logger):
        self._limited = LimitedLog(logger)

    def log(self, level: int, message: str, *args: object) -> None:  # confluent-kafka's call
        facility = str(args[0]) if args else "librdkafka"
        self._limited.log(level, f"librdkafka:{facility}", message, *args)


def client_config(properties: Mapping, logger: logging.Logger | None) -> dict[str, object]:
    """librdkafka's configuration for `properties` (a processor's converted properties):
    the connection settings that apply, and where librdkafka logs (`LibrdkafkaLog`)."""
    protocol = properties.get("security_protocol") or "PLAINTEXT"
    config: dict[str, object] = dict(_FIXED) if logger is None else {**_FIXED, "logger": LibrdkafkaLog(logger)}
    for name, setting in _SETTINGS.items():
        value = properties.get(name)
        if value in (None, ""):
            continue
        if name.startswith("sasl_") and not protocol.startswith("SASL_"):
            continue
        if name.startswith("ssl_") and protocol not in ("SSL", "SASL_SSL"):
            continue
        config[setting] = value
    return config


def describe_settings(config: Mapping[str, object]) -> str:
    """`config` as one line for a log or an error, secrets masked."""
    shown = []
    for key in sorted(config):
        if key == "logger" or key.endswith("_cb"):
            continue
        value = "****" if key in SECRET_SETTINGS else config[key]
        shown.append(f"{key}={value}")
    return ", ".join(shown)


class BrokerErrors:
    """The last error librdkafka reported for a client (its `error_cb`: a broker that
    refuses connections, failed authentication), so that a processor's own error names
    the cause rather than only a timeout. Thread-safe: librdkafka calls it from its
    threads, and a plain attribute write is atomic."""

    def __init__(self) -> None:
        self.last: str | None = None

    def __call__(self, error) -> None:  # librdkafka's error_cb(KafkaError)
        self.last = error.str() if hasattr(error, "str") else str(error)

    def explain(self, what: str) -> str:
        """`what` failed, with the broker's last complaint when there was one."""
        return f"{what}: {self.last}" if self.last else what
