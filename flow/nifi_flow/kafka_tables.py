"""NiFi's Kafka processors against Custody's ConsumeKafka and PublishKafka
(`flow/processors/kafka`), property by property, as NiFi's Kafka bundles declare them.

NiFi 1.x (`nifi-kafka-2-6-nar`): ConsumeKafka_2_6, ConsumeKafkaRecord_2_6,
PublishKafka_2_6, PublishKafkaRecord_2_6 hold the connection settings themselves
(`bootstrap.servers`, `security.protocol`, ...).

NiFi 2 (`nifi-kafka-nar`): ConsumeKafka and PublishKafka
(`org.apache.nifi.kafka.processors`) name a Kafka Connection Service, the controller
service Kafka3ConnectionService, which holds them. Custody's processors have no such
service: the service's settings become the properties of each processor that names
it, and a setting Custody lacks is a problem at the service's own property. The
processors' record mode and demarcation follow NiFi 2's Processing Strategy and
Publish Strategy through NiFi's dependsOn: a Message Demarcator left over from
another strategy is ignored, as NiFi ignores it."""

from __future__ import annotations

from types import MappingProxyType

from .mapping_model import ANY_VALUE, ComponentMapping, choice, connection, none, prop, same_choice

_KAFKA = "org.apache.nifi.processors.kafka.pubsub."
_KAFKA2 = "org.apache.nifi.kafka.processors."
KAFKA3_CONNECTION_SERVICE = "org.apache.nifi.kafka.service.Kafka3ConnectionService"
_CONNECTION_API = ("org.apache.nifi.kafka.service.api.KafkaConnectionService", "nifi-kafka-service-api-nar")

_SASL_NOTE = "Kerberos (GSSAPI) is not mapped; the default matters only with a SASL security protocol"
_SSL_NOTE = "Custody's Kafka processors take ssl_* file paths instead"

# NiFi 1.x: KafkaClientComponent, in each processor.
_KAFKA_CONNECTION = (
    prop("bootstrap.servers", "bootstrap_servers", "localhost:9092"),
    same_choice(
        "security.protocol", "security_protocol", "PLAINTEXT", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"
    ),
    choice(
        "sasl.mechanism",
        "sasl_mechanism",
        "GSSAPI",
        {name: name for name in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")},
        default_ignorable=True,
        note=_SASL_NOTE,
    ),
    prop("sasl.username", "sasl_username"),
    prop("sasl.password", "sasl_password"),
    none("ssl.context.service", note=_SSL_NOTE),
    none("sasl.kerberos.service.name"),
    none("kerberos-credentials-service"),
    none("kerberos-user-service"),
    none("sasl.kerberos.principal"),
    none("sasl.kerberos.keytab"),
    none("sasl.token.auth", "false"),
    none("aws.profile.name"),
    none("Communications Timeout", "60 secs", ANY_VALUE),
    none("message-header-encoding", "UTF-8"),
)


def _kafka3_connection(side: str) -> ComponentMapping:
    """NiFi 2's Kafka3ConnectionService, as the settings of a Custody processor:
    `side` "consume" carries isolation.level and max.poll.records, which only a
    consumer reads."""
    consume = side == "consume"
    return ComponentMapping(
        "ConsumeKafka" if consume else "PublishKafka",
        (KAFKA3_CONNECTION_SERVICE,),
        "nifi-kafka-3-service-nar",
        (
            prop("bootstrap.servers", "bootstrap_servers"),
            # NiFi 2 defaults to SSL (1.x: PLAINTEXT)
            same_choice(
                "security.protocol", "security_protocol", "SSL", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"
            ),
            choice(
                "sasl.mechanism",
                "sasl_mechanism",
                "GSSAPI",
                {name: name for name in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")},
                default_ignorable=True,
                note=_SASL_NOTE + " (AWS_MSK_IAM and OAUTHBEARER are not mapped either)",
            ),
            prop("sasl.username", "sasl_username"),
            prop("sasl.password", "sasl_password"),
            none("oauth2-access-token-provider-service"),
            none("kerberos-user-service"),
            none("sasl.kerberos.service.name"),
            none("SSL Context Service", note=_SSL_NOTE),
            choice(
                "isolation.level",
                "honor_transactions",
                "read_committed",
                {"read_committed": "true", "read_uncommitted": "false"},
            )
            if consume
            else none("isolation.level", "read_committed", ANY_VALUE),
            prop("max.poll.records", "max_poll_records", "10000", "integer")
            if consume
            else none("max.poll.records", "10000", ANY_VALUE),
            none("default.api.timeout.ms", "60 sec", ANY_VALUE),
            none("max.block.ms", "5 sec", ANY_VALUE),
            none("ack.wait.time", "5 sec", ANY_VALUE),
        ),
        note="its settings go into each processor that names it",
        apis=(_CONNECTION_API,),
    )


_PROCESSING = "Processing Strategy"
_PUBLISH_STRATEGY = "Publish Strategy"

KAFKA_MAPPINGS: tuple[ComponentMapping, ...] = (
    ComponentMapping(
        "ConsumeKafka",
        (_KAFKA + "ConsumeKafka_2_6", _KAFKA + "ConsumeKafkaRecord_2_6"),
        "nifi-kafka-2-6-nar",
        _KAFKA_CONNECTION
        + (
            prop("topic", "topics"),
            same_choice("topic_type", "topic_format", "names", "names", "pattern"),
            prop("group.id", "group_id"),
            same_choice("auto.offset.reset", "auto_offset_reset", "latest", "earliest", "latest"),
            same_choice("key-attribute-encoding", "key_attribute_encoding", "utf-8", "utf-8", "hex", "do-not-add"),
            prop("message-demarcator", "message_demarcator"),
            prop("honor-transactions", "honor_transactions", "true", "boolean"),
            prop("max.poll.records", "max_poll_records", "10000", "integer"),
            none("Commit Offsets", "true", note="Custody commits each position read with its FlowFiles"),
            none("max-uncommit-offset-wait", "1 secs", ANY_VALUE),
            prop("header-name-regex", "header_name_pattern"),
            none("separate-by-key", "false"),
            prop("record-reader", "record_reader", kind="service"),
            prop("record-writer", "record_writer", kind="service"),
            none("output-strategy", "USE_VALUE"),
            none("key-format", "byte-array", ANY_VALUE, note="it matters only with another output-strategy"),
            none("key-record-reader"),
        ),
        note="NiFi 1.x's; NiFi 2's ConsumeKafka is the next",
    ),
    ComponentMapping(
        "PublishKafka",
        (_KAFKA + "PublishKafka_2_6", _KAFKA + "PublishKafkaRecord_2_6"),
        "nifi-kafka-2-6-nar",
        _KAFKA_CONNECTION
        + (
            prop("topic", "topic"),
            choice(
                "use-transactions", "delivery_guarantee", "true", {"true": "exactly_once", "false": "at_least_once"}
            ),
            prop("transactional-id-prefix", "transactional_id_prefix"),
            none("acks", "all", note="Custody waits for every in-sync replica (all)"),
            prop("kafka-key", "key"),
            none("key-attribute-encoding", "utf-8", ANY_VALUE),
            prop("message-demarcator", "message_demarcator"),
            none("max.request.size", "1 MB", ANY_VALUE),
            none("partitioner.class", "org.apache.kafka.clients.producer.internals.DefaultPartitioner", ANY_VALUE),
            prop("partition", "partition"),
            none("compression.type", "none"),
            prop("attribute-name-regex", "attributes_as_headers"),
            none("ack.wait.time", "5 secs", ANY_VALUE),
            none("max.block.ms", "5 sec", ANY_VALUE),
            none("Failure Strategy", "Route to Failure"),
            prop("record-reader", "record_reader", kind="service"),
            prop("record-writer", "record_writer", kind="service"),
            prop("message-key-field", "message_key_field"),
            none("publish-strategy", "USE_VALUE"),
            none("record-key-writer"),
            none("Record Metadata Strategy", "Use Configured Values"),
        ),
        note="NiFi 1.x's; NiFi 2's PublishKafka is the next",
    ),
    ComponentMapping(
        "ConsumeKafka",
        (_KAFKA2 + "ConsumeKafka",),
        "nifi-kafka-nar",
        (
            connection("Kafka Connection Service", _kafka3_connection("consume")),
            prop("Group ID", "group_id"),
            same_choice("Topic Format", "topic_format", "names", "names", "pattern"),
            prop("Topics", "topics"),
            same_choice("auto.offset.reset", "auto_offset_reset", "latest", "earliest", "latest"),
            none("Commit Offsets", "true", note="Custody commits each position read with its FlowFiles"),
            none("Max Uncommitted Size"),
            none("Max Uncommitted Time", "100 millis", ANY_VALUE),
            none("Header Format", "string"),
            none("Header Encoding", "UTF-8"),
            prop("Header Name Pattern", "header_name_pattern"),
            none(
                _PROCESSING,
                "FLOW_FILE",
                "DEMARCATOR",
                "RECORD",
                note="Custody demarcates when message_demarcator is set and reads records when record_reader is",
            ),
            none("Header Name Prefix", depends_on=(_PROCESSING, ("FLOW_FILE",))),
            prop("Record Reader", "record_reader", kind="service", depends_on=(_PROCESSING, ("RECORD",))),
            prop("Record Writer", "record_writer", kind="service", depends_on=(_PROCESSING, ("RECORD",))),
            none("Output Strategy", "USE_VALUE", depends_on=(_PROCESSING, ("RECORD",))),
            none("Schema Conflict Resolution", "CREATE_NEW_FLOWFILE", depends_on=(_PROCESSING, ("RECORD",))),
            same_choice("Key Attribute Encoding", "key_attribute_encoding", "utf-8", "utf-8", "hex", "do-not-add"),
            none("Key Format", "byte-array", depends_on=("Output Strategy", ("USE_WRAPPER", "INJECT_METADATA"))),
            none("Key Record Reader", depends_on=("Key Format", ("record",))),
            prop("Message Demarcator", "message_demarcator", depends_on=(_PROCESSING, ("DEMARCATOR",))),
            none("Separate By Key", "false", depends_on=("Message Demarcator", ())),
        ),
        note="NiFi 2's: the settings of its Kafka Connection Service (Kafka3ConnectionService) become its own",
        relationships=MappingProxyType({"parse failure": "parse.failure"}),
    ),
    ComponentMapping(
        "PublishKafka",
        (_KAFKA2 + "PublishKafka",),
        "nifi-kafka-nar",
        (
            connection("Kafka Connection Service", _kafka3_connection("publish")),
            prop("Topic Name", "topic"),
            none("Failure Strategy", "Route to Failure"),
            none("acks", "all", note="Custody waits for every in-sync replica (all)"),
            none("compression.type", "none"),
            none("max.request.size", "1 MB", ANY_VALUE),
            choice(
                "Transactions Enabled",
                "delivery_guarantee",
                "true",
                {"true": "exactly_once", "false": "at_least_once"},
            ),
            prop("Transactional ID Prefix", "transactional_id_prefix", depends_on=("Transactions Enabled", ("true",))),
            none("partitioner.class", "org.apache.kafka.clients.producer.internals.DefaultPartitioner", ANY_VALUE),
            prop("partition", "partition"),
            prop("Message Demarcator", "message_demarcator"),
            prop("Record Reader", "record_reader", kind="service"),
            prop("Record Writer", "record_writer", kind="service"),
            none(_PUBLISH_STRATEGY, "USE_VALUE", depends_on=("Record Reader", ())),
            prop("Message Key Field", "message_key_field", depends_on=(_PUBLISH_STRATEGY, ("USE_VALUE",))),
            prop("FlowFile Attribute Header Pattern", "attributes_as_headers"),
            none("Header Encoding", "UTF-8"),
            prop("Kafka Key", "key"),
            none("Kafka Key Attribute Encoding", "utf-8", ANY_VALUE),
            none("Record Key Writer"),
            none("Record Metadata Strategy", "FROM_PROPERTIES", depends_on=(_PUBLISH_STRATEGY, ("USE_WRAPPER",))),
        ),
        note="NiFi 2's: the settings of its Kafka Connection Service (Kafka3ConnectionService) become its own",
    ),
)

# The controller services whose settings a processor takes as its own: not Custody services.
CONNECTION_SERVICE_TYPES = frozenset({KAFKA3_CONNECTION_SERVICE})
