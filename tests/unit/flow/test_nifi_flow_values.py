"""NiFi's notation read and written, and the mapping tables checked against the Custody
processors and services they name: every Custody property a table maps to exists, every
Custody value a choice maps to is one the property takes."""

from __future__ import annotations

import pytest

from flow.loading import standard_registry
from flow.nifi_flow.conversions import to_custody, to_nifi
from flow.nifi_flow.mapping_model import choice, none, prop
from flow.nifi_flow.problems import json_path
from flow.nifi_flow.processor_tables import PROCESSOR_MAPPINGS
from flow.nifi_flow.service_tables import SERVICE_MAPPINGS
from flow.nifi_flow.values import duration_text, nifi_duration_s, nifi_size_bytes, size_text
from flow.records.catalog import RECORD_SERVICE_TYPES


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("5 sec", 5),
        ("5 secs", 5),
        ("1 min", 60),
        ("30 mins", 1800),
        ("100 millis", 0.1),
        ("2 hours", 7200),
        ("1 day", 86400),
        ("1 week", 604800),
        ("250 ms", 0.25),
        ("0 sec", 0),
    ],
)
def test_nifi_durations_read_as_nifi_reads_them(text, seconds):
    assert nifi_duration_s(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["5", "five sec", "5 fortnights", "", "-1 sec"])
def test_a_duration_nifi_would_refuse_is_refused(text):
    with pytest.raises(ValueError, match="NiFi time period"):
        nifi_duration_s(text)


@pytest.mark.parametrize(
    "text, size", [("0B", 0), ("0 B", 0), ("1 KB", 1024), ("10 MB", 10 * 1024**2), ("1 gb", 1024**3)]
)
def test_nifi_data_sizes_are_binary_multiples(text, size):
    assert nifi_size_bytes(text) == size


def test_written_durations_and_sizes_read_back_the_same_in_both_tools():
    for seconds in (0, 0.25, 1, 90, 60, 3600, 7200, 86400):
        assert nifi_duration_s(duration_text(seconds)) == pytest.approx(seconds)
    for size in (0, 1, 1000, 1024, 10 * 1024**2, 3 * 1024**3 + 1):
        assert nifi_size_bytes(size_text(size)) == size


def test_values_convert_by_kind_and_keep_parameter_references():
    assert to_custody(prop("Batch Size", "batch_size", "1", "integer"), "10") == 10
    assert to_custody(prop("Keep Source File", "keep", "false", "boolean"), "true") is True
    # Custody reads each of NiFi's units itself: the text is carried as it is
    assert to_custody(prop("Max Bin Age", "age", None, "duration"), "5000 micros") == "5000 micros"
    assert to_custody(prop("Max Bin Age", "age", None, "duration"), "2 mins") == "2 mins"
    assert to_custody(prop("Batch Size", "batch_size", "1", "integer"), "#{batch}") == "#{batch}"
    strategy = choice("Completion Strategy", "completion", "None", {"None": "none", "Delete File": "delete"})
    assert to_custody(strategy, "Delete File") == "delete"
    with pytest.raises(ValueError, match="'Move File' has no Custody equivalent"):
        to_custody(strategy, "Move File")
    assert to_nifi(strategy, "delete") == "Delete File"
    assert to_nifi(prop("Max Bin Age", "age", None, "duration"), 90) == "90 sec"
    assert to_nifi(prop("Size", "size", None, "size"), "10 MB") == "10 MB"
    assert to_nifi(prop("Flag", "flag", None, "boolean"), True) == "true"
    assert none("Polling Interval", "0 sec").accepts("0 sec") and not none("Polling Interval", "0 sec").accepts("5 sec")


def test_json_paths_quote_what_is_not_a_plain_name():
    assert json_path("flowContents", "processGroups", 0, "processors", 2, "properties", "Keep Source File") == (
        'flowContents.processGroups[0].processors[2].properties."Keep Source File"'
    )


def _check_tables(mappings, types):
    for mapping in mappings:
        cls = types[mapping.custody_type]
        for property_mapping in mapping.properties:
            if property_mapping.kind == "connection":
                # a connection service's settings are the processor's own properties
                _check_tables(
                    property_mapping.services, {service.custody_type: cls for service in property_mapping.services}
                )
                continue
            if property_mapping.custody is None:
                assert property_mapping.kind == "none", property_mapping
                continue
            descriptor = cls.descriptor(property_mapping.custody)
            assert descriptor is not None, (mapping.custody_type, property_mapping.custody)
            if property_mapping.kind == "choice":
                for value in property_mapping.choices.values():
                    descriptor.convert(value)  # raises when Custody does not take it
            if property_mapping.kind == "service":
                assert descriptor.kind == "service", property_mapping


def test_processor_tables_name_real_custody_properties_and_values():
    registry = standard_registry()
    _check_tables(PROCESSOR_MAPPINGS, registry)
    mapped = {mapping.custody_type for mapping in PROCESSOR_MAPPINGS}
    # every standard processor NiFi also has is mapped: only the Spark ones are Custody's own
    assert set(registry) - mapped == {"ExecuteSparkSQL", "SparkTransform", "PutParquet"}


def test_service_tables_cover_every_record_service():
    _check_tables(SERVICE_MAPPINGS, RECORD_SERVICE_TYPES)
    assert {mapping.custody_type for mapping in SERVICE_MAPPINGS} == set(RECORD_SERVICE_TYPES)
