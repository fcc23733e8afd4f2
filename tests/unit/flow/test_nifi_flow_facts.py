"""The mapping tables against NiFi's own declarations: property names (NiFi 1.x's, and
NiFi 2's where its migrateProperties renamed them), defaults and allowable values as the
PropertyDescriptors of NiFi's standard, update-attribute, Kafka, record-serialization
and Parquet bundles give them (rel/nifi-1.28.1 and 2.x). A flow definition keys
`properties` by these names, so a name wrong here is a property the import cannot read."""

from __future__ import annotations

import json

import pytest

from flow.nifi_flow import NiFiFlowError, export_nifi_flow, import_nifi_flow
from flow.nifi_flow.processor_tables import processor_mapping
from flow.nifi_flow.service_tables import service_mapping

from .nifi_flows import nifi_document

_STANDARD = "org.apache.nifi.processors.standard."
_PUBSUB = "org.apache.nifi.processors.kafka.pubsub."
_KAFKA2 = "org.apache.nifi.kafka.processors."

# (NiFi class, NiFi 1.x name, NiFi 2 name or None when 1.x only, NiFi's default)
PROCESSOR_FACTS = [
    (_STANDARD + "GenerateFlowFile", "generate-ff-custom-text", "Custom Text", None),
    (_STANDARD + "GenerateFlowFile", "character-set", "Character Set", "UTF-8"),
    (_STANDARD + "FetchFile", "Log level when file not found", "File not Found Log Level", "ERROR"),
    (_STANDARD + "ListFile", "et-node-identifier", "Entity Tracking Node Identifier", "${hostname()}"),
    (_STANDARD + "ListFile", "max-listing-time", "Max Directory Listing Time", "3 mins"),
    (_STANDARD + "ListenHTTP", "HTTP Headers to receive as Attributes (Regex)", "HTTP Headers for Attributes", None),
    (_STANDARD + "ListenHTTP", "Authorized DN Pattern", "Authorized Subject DN Pattern", ".*"),
    (_STANDARD + "ListenHTTP", "Max Data to Receive per Second", None, None),
    (_STANDARD + "MergeContent", "Header File", "Header", None),
    (_STANDARD + "MergeContent", "Maximum number of Bins", "Maximum Number of Bins", "5"),
    (_STANDARD + "ReplaceText", "Regular Expression", "Search Value", "(?s)(^.*$)"),
    (_STANDARD + "ConvertRecord", "record-reader", "Record Reader", None),
    (_STANDARD + "ConvertRecord", "include-zero-record-flowfiles", "Include Zero Record FlowFiles", "true"),
    (_STANDARD + "QueryRecord", "dbf-default-precision", "Default Decimal Precision", "10"),
    (_STANDARD + "SplitRecord", "Record Reader", "Record Reader", None),
    (_STANDARD + "UpdateRecord", "replacement-value-strategy", "Replacement Value Strategy", "literal-value"),
    (_STANDARD + "ValidateRecord", "coerce-types", "Force Types From Reader Schema", "false"),
    (_STANDARD + "MergeRecord", "Attribute Strategy", "Attribute Strategy", "Keep Only Common Attributes"),
    (_STANDARD + "MergeRecord", "max.bin.count", "Maximum Number of Bins", "10"),
    (_STANDARD + "LogAttribute", "attributes-to-log-regex", "Attributes to Log Regular Expression", ".*"),
    (_STANDARD + "InvokeHTTP", "Remote URL", "HTTP URL", None),
    (_STANDARD + "InvokeHTTP", "Read Timeout", "Socket Read Timeout", "15 secs"),
    (_STANDARD + "InvokeHTTP", "Always Output Response", "Response Generation Required", "false"),
    (_STANDARD + "InvokeHTTP", "Proxy Type", None, "http"),
    (_STANDARD + "UnpackContent", "allow-stored-entries-wdd", "Allow Stored Entries With Data Descriptor", "false"),
    (
        "org.apache.nifi.processors.attributes.UpdateAttribute",
        "canonical-value-lookup-cache-size",
        "Cache Value Lookup Cache Size",
        "100",
    ),
    ("org.apache.nifi.processors.stateless.ExecuteStateless", "Dataflow File", None, None),
    (
        "org.apache.nifi.processors.stateless.ExecuteStateless",
        "Dataflow Specification Strategy",
        None,
        "Use Local File",
    ),
    ("org.apache.nifi.processors.stateless.ExecuteStateless", "Max Input FlowFile Size", None, "1 MB"),
    (_PUBSUB + "PublishKafka_2_6", "acks", None, "all"),
    (_PUBSUB + "ConsumeKafkaRecord_2_6", "Commit Offsets", None, "true"),
    (_KAFKA2 + "ConsumeKafka", "Topics", "Topics", None),
    (_KAFKA2 + "ConsumeKafka", "Processing Strategy", "Processing Strategy", "FLOW_FILE"),
    (_KAFKA2 + "PublishKafka", "Transactions Enabled", "Transactions Enabled", "true"),
]

SERVICE_FACTS = [
    ("org.apache.nifi.json.JsonTreeReader", "schema-access-strategy", "Schema Access Strategy", "infer-schema"),
    ("org.apache.nifi.json.JsonTreeReader", "schema-inference-cache", "Schema Inference Cache", None),
    ("org.apache.nifi.json.JsonRecordSetWriter", "suppress-nulls", "Suppress Null Values", "never-suppress"),
    ("org.apache.nifi.json.JsonRecordSetWriter", "schema-cache", "Schema Cache", None),
    ("org.apache.nifi.csv.CSVReader", "Skip Header Line", "Treat First Line as Header", "false"),
    ("org.apache.nifi.csv.CSVReader", "csvutils-character-set", "Character Set", "UTF-8"),
    ("org.apache.nifi.avro.AvroRecordSetWriter", "compression-format", "Compression Format", "NONE"),
    ("org.apache.nifi.parquet.ParquetRecordSetWriter", "compression-type", "Compression Type", "UNCOMPRESSED"),
    ("org.apache.nifi.parquet.ParquetReader", "avro-read-compatibility", "Avro Read Compatibility", "true"),
]


@pytest.mark.parametrize("nifi_type, name, nifi2, default", PROCESSOR_FACTS + SERVICE_FACTS)
def test_each_property_has_nifis_names_and_default(nifi_type, name, nifi2, default):
    mapping = processor_mapping(nifi_type) or service_mapping(nifi_type)
    assert mapping is not None, nifi_type
    by_name = mapping.by_nifi_name()
    assert name in by_name, (nifi_type, name)
    assert by_name[name].nifi_default == default
    if nifi2 is not None:
        assert by_name[nifi2] is by_name[name]


def test_allowable_values_are_nifis():
    # AvroRecordSetWriter's CodecType: BZIP2, DEFLATE, NONE, SNAPPY, LZO (no XZ, no ZSTANDARD)
    avro = service_mapping("org.apache.nifi.avro.AvroRecordSetWriter").by_nifi_name()["compression-format"]
    assert set(avro.choices) <= {"BZIP2", "DEFLATE", "NONE", "SNAPPY", "LZO"}
    # NiFi 2's Kafka3ConnectionService defaults to SSL, NiFi 1.x's processors to PLAINTEXT
    consume2 = processor_mapping(_KAFKA2 + "ConsumeKafka").by_nifi_name()["Kafka Connection Service"]
    (service,) = consume2.services
    assert service.by_nifi_name()["security.protocol"].nifi_default == "SSL"
    assert (
        processor_mapping(_PUBSUB + "ConsumeKafka_2_6").by_nifi_name()["security.protocol"].nifi_default == "PLAINTEXT"
    )
    # NiFi 2's ConsumeKafka names its relationship "parse failure", NiFi 1.x's "parse.failure"
    assert processor_mapping(_KAFKA2 + "ConsumeKafka").custody_relationship("parse failure") == "parse.failure"


def test_a_nifi_2_document_with_the_renamed_properties_imports_as_the_1x_one():
    document = json.loads(nifi_document("every_processor.json"))
    renamed = {
        "GenerateFlowFile": {"character-set": "Character Set"},
        "ListenHTTP": {
            "HTTP Headers to receive as Attributes (Regex)": "HTTP Headers for Attributes",
            "max-thread-pool-size": "Maximum Thread Pool Size",
            "client-authentication": "Client Authentication",
            "Authorized DN Pattern": "Authorized Subject DN Pattern",
        },
        "MergeContent": {"Header File": "Header", "Maximum number of Bins": "Maximum Number of Bins"},
        "InvokeHTTP": {
            "Remote URL": "HTTP URL",
            "Read Timeout": "Socket Read Timeout",
            "Content-Type": "Request Content-Type",
        },
        "MergeRecord": {"min-records": "Minimum Number of Records", "max-bin-age": "Max Bin Age"},
    }
    for processor in document["flowContents"]["processors"]:
        names = renamed.get(processor["type"].rpartition(".")[2], {})
        processor["properties"] = {names.get(key, key): value for key, value in processor["properties"].items()}
    assert import_nifi_flow(json.dumps(document)).flow == import_nifi_flow(nifi_document("every_processor.json")).flow


def test_the_export_writes_nifi_1x_names_and_leaves_out_nifi_2s_own_properties():
    flow = import_nifi_flow(nifi_document("every_processor.json")).flow
    document = export_nifi_flow(flow)
    processors = {p["name"]: p for p in document["flowContents"]["processors"]}
    merge = processors["Merge"]["properties"]
    assert "Header File" in merge and "Header" not in merge
    assert "FlowFile Insertion Strategy" not in merge and "Bin Termination Check" not in merge
    assert "Request Header Maximum Size" not in processors["Listen"]["properties"]


def test_a_property_set_by_both_its_names_to_different_values_is_a_problem():
    document = json.loads(nifi_document("every_processor.json"))
    (invoke,) = [p for p in document["flowContents"]["processors"] if p["name"] == "Invoke"]
    invoke["properties"]["HTTP URL"] = "http://127.0.0.1:9/elsewhere"
    with pytest.raises(NiFiFlowError) as caught:
        import_nifi_flow(json.dumps(document))
    (problem,) = caught.value.problems
    assert problem.path.endswith('.properties."Remote URL"') and "set twice" in problem.message
    invoke["properties"]["HTTP URL"] = invoke["properties"]["Remote URL"]  # the same value twice is one setting
    import_nifi_flow(json.dumps(document))


def test_execute_statelesss_timeout_auto_terminated_is_dropped():
    # NiFi 1.x's ExecuteStateless always has REL_TIMEOUT ("timeout"); Custody's has no dataflow timeout
    document = json.loads(nifi_document("every_processor.json"))
    (stateless,) = [p for p in document["flowContents"]["processors"] if p["name"] == "Stateless"]
    stateless["autoTerminatedRelationships"].append("timeout")
    imported = import_nifi_flow(json.dumps(document))
    assert "timeout" not in next(p for p in imported.flow["processors"] if p["id"] == "Stateless")["auto_terminate"]
    assert "    auto-terminated 'timeout' -> dropped: Custody's never routes to it" in imported.report
