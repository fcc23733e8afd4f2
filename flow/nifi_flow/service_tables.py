"""NiFi's record readers and writers that Custody has as flow services
(`flow/records/catalog.py`), property by property. Another controller service type is
a problem of the import."""

from __future__ import annotations

from .mapping_model import ANY_VALUE, ComponentMapping, PropertyMapping, choice, none, prop, same_choice

_SERIALIZATION = "nifi-record-serialization-services-nar"
_READER_API = ("org.apache.nifi.serialization.RecordReaderFactory", "nifi-standard-services-api-nar")
_WRITER_API = ("org.apache.nifi.serialization.RecordSetWriterFactory", "nifi-standard-services-api-nar")
# SchemaAccessUtils: NiFi 2 renamed each (`schema-text` is `Schema Text`).
_SCHEMA_REGISTRY = (
    none("schema-registry", nifi2="Schema Registry"),
    none("schema-name", "${schema.name}", nifi2="Schema Name"),
    none("schema-version", nifi2="Schema Version"),
    none("schema-branch", nifi2="Schema Branch"),
)
_SCHEMA_REFERENCE_READER = none("Schema Reference Reader", nifi2_only=True)
_SCHEMA_TEXT = prop("schema-text", "schema_text", "${avro.schema}", nifi2="Schema Text")
# What a writer writes the schema by (SchemaRegistryRecordSetWriter): Custody's writers
# take the record schema as read.
_INHERIT_SCHEMA = none("Schema Write Strategy", "no-schema", ANY_VALUE)
_WRITER_SCHEMA = (
    none("schema-access-strategy", "inherit-record-schema", nifi2="Schema Access Strategy"),
    none("schema-text", "${avro.schema}", nifi2="Schema Text"),
    *_SCHEMA_REGISTRY,
    none("schema-cache", nifi2="Schema Cache"),
    none("schema-protocol-version", "1", ANY_VALUE, note="NiFi 1.x's (NiFi 2 removed it)"),
    none("Schema Reference Writer", nifi2_only=True),
)
_TEXT_FORMATS = (
    none("Date Format"),
    none("Time Format"),
    none("Timestamp Format"),
)


def _reader_strategy(default: str, *values: str, **extra) -> PropertyMapping:
    return same_choice(
        "schema-access-strategy", "schema_access_strategy", default, *values, nifi2="Schema Access Strategy", **extra
    )


SERVICE_MAPPINGS: tuple[ComponentMapping, ...] = (
    ComponentMapping(
        "JsonTreeReader",
        ("org.apache.nifi.json.JsonTreeReader",),
        _SERIALIZATION,
        (
            _reader_strategy("infer-schema", "infer-schema", "schema-text-property"),
            _SCHEMA_TEXT,
            *_SCHEMA_REGISTRY,
            _SCHEMA_REFERENCE_READER,
            none("schema-inference-cache", nifi2="Schema Inference Cache"),
            none("starting-field-strategy", "ROOT_NODE", nifi2="Starting Field Strategy"),
            none("starting-field-name", nifi2="Starting Field Name"),
            none("schema-application-strategy", "SELECTED_PART", nifi2="Schema Application Strategy"),
            none("Max String Length", "20 MB", ANY_VALUE),
            none("Allow Comments", "false", ANY_VALUE, note="NiFi 1.x's (NiFi 2 removed it)"),
            none("Parsing Strategy", "STANDARD", nifi2_only=True),
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
            *_WRITER_SCHEMA,
            prop("Pretty Print JSON", "pretty_print", "false", "boolean"),
            same_choice(
                "suppress-nulls",
                "suppress_null_values",
                "never-suppress",
                "never-suppress",
                "always-suppress",
                nifi2="Suppress Null Values",
            ),
            choice(
                "output-grouping",
                "output_grouping",
                "output-array",
                {"output-array": "array", "output-oneline": "one-line-per-object"},
                nifi2="Output Grouping",
            ),
            none("compression-format", "none", nifi2="Compression Format"),
            none("compression-level", "1", ANY_VALUE, nifi2="Compression Level"),
            none("Allow Scientific Notation", "true", ANY_VALUE, note="NiFi 2's default is false"),
            none("Serialized JSON Input Handling", "ENABLED", nifi2_only=True),
            none("Timestamp Representation", "AUTO", nifi2_only=True),
        )
        + _TEXT_FORMATS,
        apis=(_WRITER_API,),
    ),
    ComponentMapping(
        "CSVReader",
        ("org.apache.nifi.csv.CSVReader",),
        _SERIALIZATION,
        (
            _reader_strategy("infer-schema", "infer-schema", "schema-text-property"),
            _SCHEMA_TEXT,
            *_SCHEMA_REGISTRY,
            _SCHEMA_REFERENCE_READER,
            none("csv-reader-csv-parser", "commons-csv", ANY_VALUE, nifi2="CSV Parser"),
            none("CSV Format", "custom"),
            prop("Value Separator", "value_separator", ","),
            none("Record Separator", "\\n", ANY_VALUE),
            # NiFi's CSVReader reads the first line as the header whatever this says when it
            # infers the schema (or derives it from the header): only a given schema heeds it
            prop(
                "Skip Header Line",
                "treat_first_line_as_header",
                "false",
                "boolean",
                nifi2="Treat First Line as Header",
                depends_on=("schema-access-strategy", ("schema-text-property",)),
            ),
            none("ignore-csv-header", "false", ANY_VALUE, nifi2="Ignore CSV Header Column Names"),
            prop("Quote Character", "quote_character", '"'),
            prop("Escape Character", "escape_character", "\\"),
            none("Comment Marker"),
            prop("Null String", "null_string", defaults_agree=True),
            none("Trim Fields", "true", ANY_VALUE),
            none("csvutils-character-set", "UTF-8", nifi2="Character Set"),
            none("csvutils-allow-duplicate-header-names", "true", ANY_VALUE, nifi2="Allow Duplicate Header Names"),
            none("Trim double quote", "true", ANY_VALUE, nifi2="Trim Double Quote"),
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
            *_WRITER_SCHEMA,
            none("CSV Format", "custom"),
            prop("Value Separator", "value_separator", ","),
            prop("Include Header Line", "include_header_line", "true", "boolean"),
            prop("Quote Character", "quote_character", '"'),
            prop("Escape Character", "escape_character", "\\"),
            none("Comment Marker"),
            prop("Null String", "null_string", defaults_agree=True),
            prop("Trim Fields", "trim_fields", "true", "boolean"),
            choice(
                "Quote Mode",
                "quote_mode",
                "MINIMAL",
                {"MINIMAL": "minimal", "ALL": "all", "NON_NUMERIC": "non_numeric"},
                note="NONE (escape instead of quoting) is not written by Custody",
            ),
            none("Record Separator", "\\n"),
            none("Include Trailing Delimiter", "false"),
            none("csvutils-character-set", "UTF-8", nifi2="Character Set"),
            none("csv-writer", "commons-csv", ANY_VALUE, nifi2_only=True),
        )
        + _TEXT_FORMATS,
        apis=(_WRITER_API,),
    ),
    ComponentMapping(
        "ParquetReader",
        ("org.apache.nifi.parquet.ParquetReader",),
        "nifi-parquet-nar",
        (
            none("avro-read-compatibility", "true", ANY_VALUE, nifi2="Avro Read Compatibility"),
            none("avro-add-list-element-records", "true", ANY_VALUE, nifi2="Avro Add List Element Records"),
        ),
        apis=(_READER_API,),
    ),
    ComponentMapping(
        "ParquetRecordSetWriter",
        ("org.apache.nifi.parquet.ParquetRecordSetWriter",),
        "nifi-parquet-nar",
        (
            _INHERIT_SCHEMA,
            *_WRITER_SCHEMA,
            choice(
                "compression-type",
                "compression_type",
                "UNCOMPRESSED",
                {"UNCOMPRESSED": "none", "SNAPPY": "snappy", "GZIP": "gzip", "LZ4": "lz4", "ZSTD": "zstd"},
                nifi2="Compression Type",
            ),
            none("row-group-size", note="NiFi's is bytes, Custody's row_group_size is rows", nifi2="Row Group Size"),
            none("page-size", nifi2="Page Size"),
            none("dictionary-page-size", nifi2="Dictionary Page Size"),
            none("max-padding-size", nifi2="Max Padding Size"),
            none("enable-dictionary-encoding", nifi2="Enable Dictionary Encoding"),
            none("enable-validation", nifi2="Enable Validation"),
            none("writer-version", nifi2="Writer Version"),
            none("avro-write-old-list-structure", "true", ANY_VALUE, nifi2="Avro Write Old List Structure"),
            none("avro-add-list-element-records", "true", ANY_VALUE, nifi2="Avro Add List Element Records"),
            none("int96-fields", nifi2="INT96 Fields"),
            none("cache-size", "1000", ANY_VALUE, nifi2="Cache Size"),
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
                nifi2="Schema Access Strategy",
            ),
            _SCHEMA_TEXT,
            *_SCHEMA_REGISTRY,
            _SCHEMA_REFERENCE_READER,
            none("cache-size", "1000", ANY_VALUE, nifi2="Cache Size"),
            none("Fast Reader Enabled", "true", ANY_VALUE, nifi2_only=True),
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
            *_WRITER_SCHEMA,
            choice(
                "compression-format",
                "compression_format",
                "NONE",
                {"NONE": "none", "DEFLATE": "deflate", "BZIP2": "bzip2", "SNAPPY": "snappy"},
                note="NiFi's LZO is not mapped; Custody's xz and zstandard are not NiFi's",
                nifi2="Compression Format",
            ),
            none("encoder-pool-size", "32", ANY_VALUE, nifi2="Encoder Pool Size"),
            none("cache-size", "1000", ANY_VALUE, nifi2="Cache Size"),
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
