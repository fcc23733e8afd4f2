"""NiFi 2's Kafka processors imported without I/O (tests/data/nifi_flows/kafka_nifi2.json,
a NiFi 2 flow definition: ConsumeKafka and PublishKafka naming one Kafka3ConnectionService):
the service's settings become each processor's, NiFi's dependsOn decides what is in
force, and a setting Custody lacks is a problem at the service's own property."""

from __future__ import annotations

import json

import pytest

from flow.nifi_flow import NiFiFlowError, import_nifi_flow

from .nifi_flows import essence, nifi_document

_SERVICE = "flowContents.controllerServices[0]"


def _document() -> dict:
    return json.loads(nifi_document("kafka_nifi2.json"))


def _import(document: dict):
    return import_nifi_flow(json.dumps(document))


def _processors(flow: dict) -> dict:
    return {processor["id"]: processor for processor in flow["processors"]}


def _problems(document: dict) -> dict[str, str]:
    with pytest.raises(NiFiFlowError) as caught:
        _import(document)
    return {problem.path: problem.message for problem in caught.value.problems}


def test_the_connection_services_settings_become_each_processors_own():
    imported = import_nifi_flow(nifi_document("kafka_nifi2.json"))
    processors = _processors(imported.flow)
    connection = {
        "bootstrap_servers": "127.0.0.1:9092",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "custody",
        "sasl_password": "#{kafka_password}",
    }
    assert processors["Consume"]["properties"] == {
        **connection,
        "honor_transactions": "false",  # the service's isolation.level read_uncommitted
        "group_id": "custody-group",
        "topics": "events",
        "auto_offset_reset": "earliest",
        "header_name_pattern": "trace-.*",
        "record_reader": "JSON in",
        "record_writer": "JSON out",
        "key_attribute_encoding": "hex",
    }
    assert processors["Publish"]["properties"] == {
        **connection,
        "topic": "out-${kafka.topic}",
        "transactional_id_prefix": "custody-tx",
        "record_reader": "JSON in",
        "record_writer": "JSON out",
        "message_key_field": "id",
        "attributes_as_headers": "trace-.*",
    }
    # the connection service is no Custody service; the record services are
    assert [service["id"] for service in imported.flow["services"]] == ["JSON in", "JSON out"]
    # NiFi 2's "parse failure" is Custody's parse.failure
    assert processors["Consume"]["auto_terminate"] == ["parse.failure"]
    assert imported.unset_parameters == {"kafka_password": "sensitive"}
    loaded = essence(imported.flow, parameters={"kafka_password": "secret"})["processors"]
    assert loaded["Consume"][1]["honor_transactions"] is False
    assert loaded["Consume"][1]["max_poll_records"] == 500  # the service's max.poll.records


def test_a_setting_nifi_ignores_under_its_dependsOn_is_not_carried():
    report = import_nifi_flow(nifi_document("kafka_nifi2.json")).report
    # Processing Strategy RECORD: NiFi ignores the Message Demarcator left from DEMARCATOR
    assert "    Message Demarcator: '\\\\n' -> dropped: NiFi ignores it with these settings" in report
    document = _document()
    consume = document["flowContents"]["processors"][0]["properties"]
    consume["Processing Strategy"] = "DEMARCATOR"
    properties = _processors(_import(document).flow)["Consume"]["properties"]
    assert properties["message_demarcator"] == "\\n"
    assert "record_reader" not in properties and "record_writer" not in properties


def test_a_security_setting_custody_lacks_is_listed_at_the_services_property():
    document = _document()
    kafka = document["flowContents"]["controllerServices"][0]["properties"]
    kafka["SSL Context Service"] = "5b0d7c9e-0000-4000-8000-000000000001"
    kafka["sasl.mechanism"] = "OAUTHBEARER"
    kafka["ssl.endpoint.identification.algorithm"] = ""  # a dynamic Kafka client setting
    problems = _problems(document)
    assert set(problems) == {
        f'{_SERVICE}.properties."SSL Context Service"',
        f'{_SERVICE}.properties."sasl.mechanism"',
        f'{_SERVICE}.properties."ssl.endpoint.identification.algorithm"',
    }
    assert "ssl_* file paths" in problems[f'{_SERVICE}.properties."SSL Context Service"']
    assert "'OAUTHBEARER' has no Custody equivalent" in problems[f'{_SERVICE}.properties."sasl.mechanism"']


def test_a_connection_service_custody_cannot_read_or_the_document_lacks_is_a_problem():
    document = _document()
    document["flowContents"]["controllerServices"][0]["type"] = (
        "org.apache.nifi.kafka.service.aws.AmazonMSKConnectionService"
    )
    document["flowContents"]["processors"][1]["properties"]["Kafka Connection Service"] = "not-in-the-document"
    with pytest.raises(NiFiFlowError) as caught:
        _import(document)
    problems = [(problem.path, problem.message) for problem in caught.value.problems]
    assert any(path == f"{_SERVICE}.type" and "Kafka3ConnectionService" in message for path, message in problems)
    assert any(
        path == 'flowContents.processors[1].properties."Kafka Connection Service"'
        and "which the document does not hold" in message
        for path, message in problems
    )


def test_nifi_2s_publish_settings_custody_does_otherwise_are_problems():
    document = _document()
    publish = document["flowContents"]["processors"][1]["properties"]
    publish["acks"] = "1"
    publish["Transactions Enabled"] = "false"  # at least once; its transactional id prefix is not in force
    problems = _problems(document)
    assert set(problems) == {"flowContents.processors[1].properties.acks"}
    publish["acks"] = "all"
    properties = _processors(_import(document).flow)["Publish"]["properties"]
    assert properties["delivery_guarantee"] == "at_least_once"
    assert "transactional_id_prefix" not in properties
