"""NiFi's record readers and writers that Custody has as flow services
(`flow/records/catalog.py`), property by property. Another controller service type is
a problem of the import."""

from __future__ import annotations

from .mapping_model import ANY_VALUE, ComponentMapping, choice, none, prop, same_choice

_SERIALIZATION = "nifi-record-serialization-services-nar"
_READER_API = ("org.apache.nifi.serialization.RecordReaderFactory", "nifi-standard-services-api-nar")
_WRITER_API = ("org.apache.nifi.serialization.RecordSetWriterFactory", "nifi-standard-services-api-nar")
# What a writer writes the schema by: Custody's writers take the record schema as read.
_INHERIT_SCHEMA = none("Schema Write Strategy", "no-schema", ANY_VALUE)
_WRITER_SCHEMA = none("schema-access-strategy", "inherit-record-schema")
_TEXT_FORMATS = (
    none("Date Format"),
    none("Time Format"),
    none("Timestamp Format"),
    none("schema-cache"),
    none("schema-protocol-version", "1", ANY_VALUE),
)

SERVICE_MAPPINGS: tuple[ComponentMapping, ...] = (
    ComponentMapping(
        "JsonTreeReader",
        ("org.apache.nifi.json.JsonTreeReader",),
        _SERIALIZATION,
        (
            same_choice(
                "schema-access-strategy",
                "schema_access_strategy",
                "infer-schema",
                "infer-schema",
                "schema-text-property",
            ),
            prop("schema-text", "schema_text", "${avro.schema}"),
            none("schema-registry"),
            none("schema-name", "${schema.name}"),
            none("schema-version"),
            none("schema-branch"),
            none("schema-inference-cache"),
            none("starting-field-strategy", "ROOT_NODE"),
            none("starting-field-name"),
            none("schema-application-strategy", "SELECTED_PART"),
            none("Max String Length", "20 MB", ANY_VALUE),
            none("Allow Comments", "false", ANY_VALUE),
        )
        + _TEXT_FORMATS,
        apis=(_READER_API,),
    ),
    ComponentMapping(
        "JsonRecordSetWriter",
        ("org.apache.nifi.json.JsonRecordSetWriter",),
        _SERIALIZATION,
        (
            _INHERIT_SCHEMA,
            _WRITER_SCHEMA,
            none("schema-registry"),
            none("schema-name", "${schema.name}"),
            none("schema-text", "${avro.schema}"),
            prop("Pretty Print JSON", "pretty_print", "false", "boolean"),
            same_choice(
                "suppress-nulls", "suppress_null_values", "never-suppress", "never-suppress", "always-suppress"
            ),
            choice(
                "output-grouping",
                "output_grouping",
                "output-array",
                {"output-array": "array", "output-oneline": "one-line-per-object"},
            ),
            none("compression-format", "none"),
            none("compression-level", "1", ANY_VALUE),
            none("Allow Scientific Notation", "false", ANY_VALUE),
        )
        + _TEXT_FORMATS,
        apis=(_WRITER_API,),
    ),
    ComponentMapping(
        "CSVReader",
        ("org.apache.nifi.csv.CSVReader",),
        _SERIALIZATION,
        (
            same_choice(
                "schema-access-strategy",
                "schema_access_strategy",
                "infer-schema",
                "infer-schema",
                "schema-text-property",
            ),
            prop("schema-text", "schema_text", "${avro.schema}"),
            none("schema-registry"),
            none("schema-name", "${schema.name}"),
            none("csv-reader-csv-parser", "commons-csv", ANY_VALUE),
            none("CSV Format", "custom"),
            prop("Value Separator", "value_separator", ","),
            none("Record Separator", "\\n", ANY_VALUE),
            prop("Skip Header Line", "treat_first_line_as_header", "false", "boolean"),
            none("ignore-csv-header", "false", ANY_VALUE),
            prop("Quote Character", "quote_character", '"'),
            prop("Escape Character", "escape_character", "\\"),
            none("Comment Marker"),
            prop("Null String", "null_string"),
            none("Trim Fields", "true", ANY_VALUE),
            none("csvutils-character-set", "UTF-8"),
            none("csvutils-allow-duplicate-header-names", "true", ANY_VALUE),
            none("Trim double quote", "true", ANY_VALUE),
        )
        + _TEXT_FORMATS,
        apis=(_READER_API,),
    ),
    ComponentMapping(
        "CSVRecordSetWriter",
        ("org.apache.nifi.csv.CSVRecordSetWriter",),
        _SERIALIZATION,
        (
            _INHERIT_SCHEMA,
            _WRITER_SCHEMA,
            none("schema-registry"),
            none("schema-name", "${schema.name}"),
            none("schema-text", "${avro.schema}"),
            none("CSV Format", "custom"),
            prop("Value Separator", "value_separator", ","),
            prop("Include Header Line", "include_header_line", "true", "boolean"),
            prop("Quote Character", "quote_character", '"'),
            none("Escape Character", "\\", ANY_VALUE),
            none("Comment Marker"),
            prop("Null String", "null_string"),
            none("Trim Fields", "true", ANY_VALUE),
            none("Quote Mode", "MINIMAL"),
            none("Record Separator", "\\n"),
            none("Include Trailing Delimiter", "false"),
            none("csvutils-character-set", "UTF-8"),
        )
        + _TEXT_FORMATS,
        apis=(_WRITER_API,),
    ),
    ComponentMapping(
        "ParquetReader",
        ("org.apache.nifi.parquet.ParquetReader",),
        "nifi-parquet-nar",
        (
            none("avro-read-compatibility", "true", ANY_VALUE),
            none("avro-add-list-element-records", "true", ANY_VALUE),
        ),
        apis=(_READER_API,),
    ),
    ComponentMapping(
        "ParquetRecordSetWriter",
        ("org.apache.nifi.parquet.ParquetRecordSetWriter",),
        "nifi-parquet-nar",
        (
            _INHERIT_SCHEMA,
            _WRITER_SCHEMA,
            none("schema-registry"),
            none("schema-name", "${schema.name}"),
            none("schema-text", "${avro.schema}"),
            choice(
                "compression-type",
                "compression_type",
                "UNCOMPRESSED",
                {"UNCOMPRESSED": "none", "SNAPPY": "snappy", "GZIP": "gzip", "LZ4": "lz4", "ZSTD": "zstd"},
            ),
            none("row-group-size", note="NiFi's is bytes, Custody's row_group_size is rows"),
            none("page-size"),
            none("dictionary-page-size"),
            none("max-padding-size"),
            none("enable-dictionary-encoding"),
            none("enable-validation"),
            none("writer-version"),
            none("avro-write-old-list-structure", "true", ANY_VALUE),
            none("avro-add-list-element-records", "true", ANY_VALUE),
            none("int96-fields"),
            none("cache-size", "1000", ANY_VALUE),
        ),
        apis=(_WRITER_API,),
    ),
    ComponentMapping(
        "AvroReader",
        ("org.apache.nifi.avro.AvroReader",),
        _SERIALIZATION,
        (
            choice(
                "schema-access-strategy",
                "schema_access_strategy",
                "embedded-avro-schema",
                {"embedded-avro-schema": "infer-schema", "schema-text-property": "schema-text-property"},
            ),
            prop("schema-text", "schema_text", "${avro.schema}"),
            none("schema-registry"),
            none("schema-name", "${schema.name}"),
            none("cache-size", "1000", ANY_VALUE),
        ),
        apis=(_READER_API,),
    ),
    ComponentMapping(
        "AvroRecordSetWriter",
        ("org.apache.nifi.avro.AvroRecordSetWriter",),
        _SERIALIZATION,
        (
            choice(
                "Schema Write Strategy",
                "schema_write_strategy",
                "avro-embedded",
                {"avro-embedded": "embed-avro-schema", "no-schema": "no-schema"},
            ),
            _WRITER_SCHEMA,
            none("schema-registry"),
            none("schema-name", "${schema.name}"),
            none("schema-text", "${avro.schema}"),
            choice(
                "compression-format",
                "compression_format",
                "NONE",
                {
                    "NONE": "none",
                    "DEFLATE": "deflate",
                    "BZIP2": "bzip2",
                    "XZ": "xz",
                    "ZSTANDARD": "zstandard",
                    "SNAPPY": "snappy",
                },
            ),
            none("encoder-pool-size", "32", ANY_VALUE),
            none("cache-size", "1000", ANY_VALUE),
        ),
        apis=(_WRITER_API,),
    ),
)


def service_mapping(nifi_type: str) -> ComponentMapping | None:
    for mapping in SERVICE_MAPPINGS:
        if nifi_type in mapping.nifi_types:
            return mapping
    return None


def service_mapping_of(custody_type: str) -> ComponentMapping | None:
    for mapping in SERVICE_MAPPINGS:
        if mapping.custody_type == custody_type:
            return mapping
    return None
