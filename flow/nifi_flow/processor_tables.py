"""NiFi's processors that Custody also has, property by property: NiFi's property names,
defaults and allowable values (as NiFi's standard bundles declare them, 1.2x and 2.x)
against Custody's (`flow/processors`). A NiFi processor of another type is a problem
of the import; a Custody processor not listed here is a problem of the export.

Relationships keep their names: Custody's processors name them as NiFi's do."""

from __future__ import annotations

from types import MappingProxyType

from .kafka_tables import CONNECTION_SERVICE_TYPES, KAFKA_MAPPINGS
from .mapping_model import ANY_VALUE, ComponentMapping, choice, none, prop, same_choice

_STANDARD = "org.apache.nifi.processors.standard."
# The record reader and writer of NiFi's record processors (AbstractRecordProcessor and
# the others), and whether a FlowFile of no records is written.
_RECORD_SERVICES = (
    prop("record-reader", "record_reader", kind="service", nifi2="Record Reader"),
    prop("record-writer", "record_writer", kind="service", nifi2="Record Writer"),
)
_ZERO_RECORD_FLOWFILES = prop(
    "include-zero-record-flowfiles",
    "include_zero_record_flowfiles",
    "true",
    "boolean",
    nifi2="Include Zero Record FlowFiles",
)
# How EvaluateJsonPath and SplitJson write what a JsonPath selected.
_JSON_VALUES = (
    same_choice(
        "Null Value Representation",
        "null_value_representation",
        "empty string",
        "empty string",
        "the string 'null'",
    ),
    prop("Max String Length", "max_string_length", "20 MB", "size"),
)
_LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "NONE")

PROCESSOR_MAPPINGS: tuple[ComponentMapping, ...] = (
    ComponentMapping(
        "GenerateFlowFile",
        (_STANDARD + "GenerateFlowFile",),
        "nifi-standard-nar",
        (
            prop("File Size", "file_size", "0B", "size"),
            prop("Batch Size", "batch_size", "1", "integer"),
            none("Data Format", "Text", "Binary", note="Custody's generated content is random bytes"),
            prop("Unique FlowFiles", "unique_flowfiles", "false", "boolean"),
            prop("generate-ff-custom-text", "custom_text", nifi2="Custom Text"),
            none("character-set", "UTF-8", nifi2="Character Set"),
            none("mime-type", nifi2="Mime Type"),
        ),
        note="each dynamic property becomes an attribute, as in NiFi",
    ),
    ComponentMapping(
        "ListFile",
        (_STANDARD + "ListFile",),
        "nifi-standard-nar",
        (
            prop("Input Directory", "input_directory"),
            none(
                "listing-strategy",
                "timestamps",
                "entities",
                note="Custody records each file it lists",
                nifi2="Listing Strategy",
            ),
            prop("Recurse Subdirectories", "recurse", "true", "boolean"),
            none("record-writer", nifi2="Record Writer"),
            none("Input Directory Location", "Local"),
            prop("File Filter", "file_filter", "[^\\.].*"),
            none("Path Filter"),
            none("Include File Attributes", "true", ANY_VALUE),
            prop("Minimum File Age", "minimum_file_age", "0 sec", "duration"),
            none("Maximum File Age"),
            none("Minimum File Size", "0 B"),
            none("Maximum File Size"),
            none("Ignore Hidden Files", "true"),
            none(
                "target-system-timestamp-precision", "auto-detect", ANY_VALUE, nifi2="Target System Timestamp Precision"
            ),
            none("et-state-cache", nifi2="Entity Tracking State Cache"),
            none("et-time-window", "3 hours", ANY_VALUE, nifi2="Entity Tracking Time Window"),
            none("et-initial-listing-target", "all", nifi2="Entity Tracking Initial Listing Target"),
            none("et-node-identifier", "${hostname()}", ANY_VALUE, nifi2="Entity Tracking Node Identifier"),
            none("track-performance", "false", ANY_VALUE, nifi2="Track Performance"),
            none("max-performance-metrics", "100000", ANY_VALUE, nifi2="Maximum Number of Files to Track"),
            none("max-operation-time", "10 secs", ANY_VALUE, nifi2="Max Disk Operation Time"),
            none("max-listing-time", "3 mins", ANY_VALUE, nifi2="Max Directory Listing Time"),
        ),
    ),
    ComponentMapping(
        "FetchFile",
        (_STANDARD + "FetchFile",),
        "nifi-standard-nar",
        (
            prop("File to Fetch", "file", "${absolute.path}/${filename}", defaults_agree=True),
            choice(
                "Completion Strategy",
                "completion_strategy",
                "None",
                {"None": "none", "Move File": "move", "Delete File": "delete"},
            ),
            prop("Move Destination Directory", "move_destination_directory"),
            none("Move Conflict Strategy", "Rename"),
            none("Log level when file not found", "ERROR", *_LOG_LEVELS, nifi2="File not Found Log Level"),
            none("Log level when permission denied", "ERROR", *_LOG_LEVELS, nifi2="Permission Denied Log Level"),
        ),
    ),
    ComponentMapping(
        "GetFile",
        (_STANDARD + "GetFile",),
        "nifi-standard-nar",
        (
            prop("Input Directory", "input_directory"),
            prop("File Filter", "file_filter", "[^\\.].*"),
            none("Path Filter"),
            prop("Batch Size", "batch_size", "10", "integer"),
            prop("Keep Source File", "keep_source_file", "false", "boolean"),
            prop("Recurse Subdirectories", "recurse", "true", "boolean"),
            none(
                "Polling Interval",
                "0 sec",
                "30 sec",
                note="use the processor's run schedule; NiFi 2's default is 30 sec",
            ),
            none("Ignore Hidden Files", "true"),
            prop("Minimum File Age", "minimum_file_age", "0 sec", "duration"),
            none("Maximum File Age"),
            none("Minimum File Size", "0 B"),
            none("Maximum File Size"),
        ),
    ),
    ComponentMapping(
        "ListenHTTP",
        (_STANDARD + "ListenHTTP",),
        "nifi-standard-nar",
        (
            prop("Base Path", "base_path", "contentListener"),
            prop("Listening Port", "port", None, "integer"),
            none("health-check-port", nifi2="Listening Port for Health Check Requests"),
            none("Max Data to Receive per Second", note="NiFi 1.x's (NiFi 2 removed it)"),
            none("SSL Context Service", note="Custody's ListenHTTP takes tls_cert and tls_key files instead"),
            none("HTTP Protocols", "HTTP_1_1", ANY_VALUE),
            none("client-authentication", "AUTO", nifi2="Client Authentication"),
            none("Authorized DN Pattern", ".*", nifi2="Authorized Subject DN Pattern"),
            none("authorized-issuer-dn-pattern", ".*", nifi2="Authorized Issuer DN Pattern"),
            none("Max Unconfirmed Flowfile Time", "60 secs", ANY_VALUE),
            prop(
                "HTTP Headers to receive as Attributes (Regex)",
                "header_attributes",
                nifi2="HTTP Headers for Attributes",
            ),
            none("Request Header Maximum Size", "8 KB", nifi2_only=True),
            none("Return Code", "200"),
            none("multipart-request-max-size", "1 MB", ANY_VALUE, nifi2="Multipart Request Max Size"),
            none("multipart-read-buffer-size", "512 KB", ANY_VALUE, nifi2="Multipart Read Buffer Size"),
            none("max-thread-pool-size", "200", ANY_VALUE, nifi2="Maximum Thread Pool Size"),
            none("record-reader", nifi2="Record Reader"),
            none("record-writer", nifi2="Record Writer"),
        ),
    ),
    ComponentMapping(
        "UpdateAttribute",
        ("org.apache.nifi.processors.attributes.UpdateAttribute",),
        "nifi-update-attribute-nar",
        (
            prop("Delete Attributes Expression", "delete_attributes"),
            none("Store State", "Do not store state"),
            none("Stateful Variables Initial Value"),
            none("canonical-value-lookup-cache-size", "100", ANY_VALUE, nifi2="Cache Value Lookup Cache Size"),
        ),
        note="each dynamic property sets an attribute, as in NiFi (the advanced rules UI is not mapped)",
    ),
    ComponentMapping(
        "RouteOnAttribute",
        (_STANDARD + "RouteOnAttribute",),
        "nifi-standard-nar",
        (
            choice(
                "Routing Strategy",
                "routing_strategy",
                "Route to Property name",
                {
                    "Route to Property name": "route_to_property_name",
                    "Route to 'match' if all match": "route_to_matched_if_all_match",
                    "Route to 'match' if any matches": "route_to_matched_if_any_matches",
                },
            ),
        ),
        note="each dynamic property is a route, as in NiFi",
    ),
    ComponentMapping(
        "SplitText",
        (_STANDARD + "SplitText",),
        "nifi-standard-nar",
        (
            prop("Line Split Count", "line_split_count", None, "integer"),
            none("Maximum Fragment Size"),
            prop("Header Line Count", "header_line_count", "0", "integer"),
            none("Header Line Marker Characters"),
            prop("Remove Trailing Newlines", "remove_trailing_newlines", "true", "boolean"),
        ),
    ),
    ComponentMapping(
        "MergeContent",
        (_STANDARD + "MergeContent",),
        "nifi-standard-nar",
        (
            none("Merge Strategy", "Bin-Packing Algorithm"),
            choice(
                "Merge Format",
                "merge_format",
                "Binary Concatenation",
                {"Binary Concatenation": "binary_concatenation", "FlowFile Stream, v3": "flowfile_stream_v3"},
            ),
            none("Attribute Strategy", "Keep Only Common Attributes"),
            prop("Correlation Attribute Name", "correlation_attribute"),
            none(
                "mergecontent-metadata-strategy", "Do Not Merge Uncommon Metadata", ANY_VALUE, nifi2="Metadata Strategy"
            ),
            prop("Minimum Number of Entries", "min_entries", "1", "integer"),
            prop("Maximum Number of Entries", "max_entries", "1000", "integer"),
            none("Minimum Group Size", "0 B"),
            none("Maximum Group Size"),
            prop("Max Bin Age", "max_bin_age", None, "duration"),
            none("Maximum number of Bins", "5", ANY_VALUE, nifi2="Maximum Number of Bins"),
            none(
                "Delimiter Strategy",
                "Do Not Use Delimiters",
                "Text",
                note="with Text, Header, Footer and Demarcator are Custody's header, footer and delimiter",
            ),
            prop("Header File", "header", nifi2="Header"),
            prop("Footer File", "footer", nifi2="Footer"),
            prop("Demarcator File", "delimiter", nifi2="Demarcator"),
            none("Compression Level", "1", ANY_VALUE),
            none("Keep Path", "false", ANY_VALUE),
            none("Tar Modified Time", "${file.lastModifiedTime}", ANY_VALUE),
            none("Bin Termination Check", nifi2_only=True),
            none("FlowFile Insertion Strategy", "Last in Bin", nifi2_only=True),
        ),
    ),
    ComponentMapping(
        "ReplaceText",
        (_STANDARD + "ReplaceText",),
        "nifi-standard-nar",
        (
            prop("Regular Expression", "search_value", "(?s)(^.*$)", nifi2="Search Value"),
            prop("Replacement Value", "replacement_value", "$1"),
            none("Text to Prepend", note="NiFi reads it with the Surround strategy only, which is not mapped"),
            none("Text to Append", note="NiFi reads it with the Surround strategy only, which is not mapped"),
            none("Character Set", "UTF-8"),
            prop("Maximum Buffer Size", "maximum_buffer_size", "1 MB", "size"),
            choice(
                "Replacement Strategy",
                "replacement_strategy",
                "Regex Replace",
                {
                    "Regex Replace": "regex_replace",
                    "Literal Replace": "literal_replace",
                    "Prepend": "prepend",
                    "Append": "append",
                    "Always Replace": "always_replace",
                },
            ),
            choice(
                "Evaluation Mode",
                "evaluation_mode",
                "Line-by-Line",
                {"Entire text": "entire_text", "Line-by-Line": "line_by_line"},
            ),
            none("Line-by-Line Evaluation Mode", "All"),
        ),
    ),
    ComponentMapping(
        "CompressContent",
        (_STANDARD + "CompressContent",),
        "nifi-standard-nar",
        (
            same_choice("Mode", "mode", "compress", "compress", "decompress"),
            choice(
                "Compression Format",
                "compression_format",
                "use mime.type attribute",
                {
                    "use mime.type attribute": "use-mime-type-attribute",
                    "gzip": "gzip",
                    "zstd": "zstd",
                    "lz4-framed": "lz4-framed",
                    "snappy framed": "snappy-framed",
                    "bzip2": "bzip2",
                    "xz-lzma2": "xz-lzma2",
                },
            ),
            prop("Compression Level", "compression_level", "1", "integer"),
            prop("Update Filename", "update_filename", "false", "boolean"),
        ),
    ),
    ComponentMapping(
        "EvaluateJsonPath",
        (_STANDARD + "EvaluateJsonPath",),
        "nifi-standard-nar",
        (
            same_choice("Destination", "destination", "flowfile-content", "flowfile-content", "flowfile-attribute"),
            same_choice("Return Type", "return_type", "auto-detect", "auto-detect", "json", "scalar"),
            same_choice("Path Not Found Behavior", "path_not_found_behavior", "ignore", "ignore", "warn", "skip"),
            *_JSON_VALUES,
        ),
        note="each dynamic property is a JsonPath, as in NiFi",
    ),
    ComponentMapping(
        "ConvertRecord",
        (_STANDARD + "ConvertRecord",),
        "nifi-standard-nar",
        (
            *_RECORD_SERVICES,
            _ZERO_RECORD_FLOWFILES,
        ),
    ),
    ComponentMapping(
        "QueryRecord",
        (_STANDARD + "QueryRecord",),
        "nifi-standard-nar",
        (
            *_RECORD_SERVICES,
            _ZERO_RECORD_FLOWFILES,
            none("cache-schema", "true", ANY_VALUE, note="NiFi 1.x's (NiFi 2 removed it)"),
            none("dbf-default-precision", "10", ANY_VALUE, nifi2="Default Decimal Precision"),
            none("dbf-default-scale", "0", ANY_VALUE, nifi2="Default Decimal Scale"),
        ),
        note="each dynamic property is a SQL query and a relationship, as in NiFi",
    ),
    ComponentMapping(
        "ValidateRecord",
        (_STANDARD + "ValidateRecord",),
        "nifi-standard-nar",
        (
            *_RECORD_SERVICES,
            prop(
                "invalid-record-writer",
                "invalid_record_writer",
                kind="service",
                nifi2="Record Writer for Invalid Records",
            ),
            same_choice(
                "schema-access-strategy",
                "schema_access_strategy",
                "reader-schema",
                "reader-schema",
                "schema-text-property",
                nifi2="Schema Access Strategy",
            ),
            none("schema-registry", nifi2="Schema Registry"),
            none("schema-name", "${schema.name}", nifi2="Schema Name"),
            none("schema-version", nifi2="Schema Version"),
            none("schema-branch", nifi2="Schema Branch"),
            prop("schema-text", "schema_text", "${avro.schema}", nifi2="Schema Text"),
            prop("allow-extra-fields", "allow_extra_fields", "true", "boolean", nifi2="Allow Extra Fields"),
            prop("strict-type-checking", "strict_type_checking", "true", "boolean", nifi2="Strict Type Checking"),
            none("coerce-types", "false", nifi2="Force Types From Reader Schema"),
            none("validation-details-attribute-name", nifi2="Validation Details Attribute Name"),
            none("maximum-validation-details-length", "1024", ANY_VALUE, nifi2="Maximum Validation Details Length"),
        ),
    ),
    ComponentMapping(
        "SplitRecord",
        (_STANDARD + "SplitRecord",),
        "nifi-standard-nar",
        (
            prop("Record Reader", "record_reader", kind="service"),
            prop("Record Writer", "record_writer", kind="service"),
            prop("Records Per Split", "records_per_split", None, "integer"),
        ),
    ),
    ComponentMapping(
        "PartitionRecord",
        (_STANDARD + "PartitionRecord",),
        "nifi-standard-nar",
        (*_RECORD_SERVICES,),
        note="each dynamic property is a RecordPath to partition by, as in NiFi",
    ),
    ComponentMapping(
        "UpdateRecord",
        (_STANDARD + "UpdateRecord",),
        "nifi-standard-nar",
        (
            *_RECORD_SERVICES,
            none("include-zero-record-flowfiles", "true", nifi2="Include Zero Record FlowFiles"),
            same_choice(
                "replacement-value-strategy",
                "replacement_value_strategy",
                "literal-value",
                "literal-value",
                "record-path-value",
                nifi2="Replacement Value Strategy",
            ),
        ),
        note="each dynamic property is a RecordPath and its new value, as in NiFi",
    ),
    ComponentMapping(
        "RemoveRecordField",
        (_STANDARD + "RemoveRecordField",),
        "nifi-standard-nar",
        (
            *_RECORD_SERVICES,
            none("include-zero-record-flowfiles", "true", nifi2="Include Zero Record FlowFiles"),
        ),
        note="each dynamic property is a RecordPath to remove, as in NiFi",
    ),
    ComponentMapping(
        "MergeRecord",
        (_STANDARD + "MergeRecord",),
        "nifi-standard-nar",
        (
            *_RECORD_SERVICES,
            none("merge-strategy", "Bin-Packing Algorithm", nifi2="Merge Strategy"),
            prop("correlation-attribute-name", "correlation_attribute", nifi2="Correlation Attribute Name"),
            none("Attribute Strategy", "Keep Only Common Attributes"),
            prop("min-records", "min_records", "1", "integer", nifi2="Minimum Number of Records"),
            prop("max-records", "max_records", "1000", "integer", nifi2="Maximum Number of Records"),
            prop("min-bin-size", "min_bin_size", "0 B", "size", nifi2="Minimum Bin Size"),
            prop("max-bin-size", "max_bin_size", None, "size", nifi2="Maximum Bin Size"),
            prop("max-bin-age", "max_bin_age", None, "duration", nifi2="Max Bin Age"),
            none("max.bin.count", "10", ANY_VALUE, nifi2="Maximum Number of Bins"),
        ),
    ),
    ComponentMapping(
        "LogAttribute",
        (_STANDARD + "LogAttribute",),
        "nifi-standard-nar",
        (
            choice("Log Level", "log_level", "info", {"debug": "debug", "info": "info", "warn": "warning"}),
            prop("Log Payload", "log_payload", "false", "boolean"),
            none("Attributes to Log"),
            prop(
                "attributes-to-log-regex",
                "attributes_to_log",
                ".*",
                defaults_agree=True,
                nifi2="Attributes to Log Regular Expression",
            ),
            none("Attributes to Ignore"),
            none("attributes-to-ignore-regex", nifi2="Attributes to Ignore Regular Expression"),
            none("Log FlowFile Properties", "true", ANY_VALUE),
            none("Output Format", "Line per Attribute", ANY_VALUE),
            none("Log prefix", None, ANY_VALUE, nifi2="Log Prefix"),
            none("character-set", "UTF-8", ANY_VALUE, nifi2="Character Set"),
        ),
    ),
    ComponentMapping(
        "PutFile",
        (_STANDARD + "PutFile",),
        "nifi-standard-nar",
        (
            prop("Directory", "directory"),
            same_choice("Conflict Resolution Strategy", "conflict_resolution", "fail", "replace", "ignore", "fail"),
            prop("Create Missing Directories", "create_missing_directories", "true", "boolean"),
            none("Maximum File Count"),
            none("Last Modified Time"),
            none("Permissions"),
            none("Owner"),
            none("Group"),
        ),
        note="the file is named after the filename attribute, as in NiFi (file_name: ${filename})",
        implied=MappingProxyType({"file_name": "${filename}"}),
    ),
    ComponentMapping(
        "ExecuteStateless",
        ("org.apache.nifi.processors.stateless.ExecuteStateless",),
        "nifi-stateless-processor-nar",
        (
            none("Dataflow Specification Strategy", "Use Local File"),
            prop("Dataflow File", "flow"),
            none("Registry URL"),
            none("Communications Timeout", "15 secs", ANY_VALUE),
            none("Registry SSL Context Service"),
            none("Registry Bucket"),
            none("Flow Name"),
            none("Flow Version"),
            prop("Input Port", "input_port"),
            none("Failure Ports"),
            none("Dataflow Timeout", "60 sec", ANY_VALUE),
            none("Content Storage Strategy", "Store Content on Disk", ANY_VALUE),
            none("Max Ingest FlowFiles"),
            none("Max Ingest Data Size"),
            none("NAR Directory", "./lib", ANY_VALUE),
            none("additional-nar-directories"),
            none("Work Directory", "./work", ANY_VALUE),
            none("Krb5 Conf File"),
            none("Max Input FlowFile Size", "1 MB", ANY_VALUE),
            none("Stateless SSL Context Service"),
            none("Status Task Interval", None, ANY_VALUE),
        ),
        note="the file it names must be a Custody flow: import the NiFi flow it runs, and name that file",
        unused_relationships=("timeout",),
    ),
)


PROCESSOR_MAPPINGS += (
    ComponentMapping(
        "UnpackContent",
        (_STANDARD + "UnpackContent",),
        "nifi-standard-nar",
        (
            choice(
                "Packaging Format",
                "packaging_format",
                "use mime.type attribute",
                {"use mime.type attribute": "use_mime_type", "flowfile-stream-v3": "flowfile_stream_v3"},
            ),
            none("File Filter", ".*"),
            none("Password"),
            none("Filename Character Set", "UTF-8", nifi2_only=True, note="NiFi's default is the JVM's charset"),
            none("allow-stored-entries-wdd", "false", nifi2="Allow Stored Entries With Data Descriptor"),
        ),
        note="Custody unpacks NiFi's FlowFile Stream v3 only (tar and zip are not mapped)",
    ),
    ComponentMapping(
        "InvokeHTTP",
        (_STANDARD + "InvokeHTTP",),
        "nifi-standard-nar",
        (
            same_choice(
                "HTTP Method", "http_method", "GET", "POST", "PUT", "PATCH", "GET", "DELETE", "HEAD", "OPTIONS"
            ),
            prop("Remote URL", "url", nifi2="HTTP URL"),
            prop("Content-Type", "content_type", "${mime.type}", nifi2="Request Content-Type"),
            prop("Connection Timeout", "connection_timeout", "5 secs", "duration"),
            prop("Read Timeout", "socket_read_timeout", "15 secs", "duration", nifi2="Socket Read Timeout"),
            prop("Socket Write Timeout", "socket_write_timeout", "15 secs", "duration"),
            prop("Attributes to Send", "request_header_attributes_pattern", nifi2="Request Header Attributes Pattern"),
            choice(
                "Always Output Response",
                "response_generation",
                "false",
                {"false": "success", "true": "always"},
                note="NiFi sends a 2xx answer's body to Response unless its body is ignored",
                nifi2="Response Generation Required",
            ),
            none("ignore-response-content", "false", nifi2="Response Body Ignored"),
            none("Put Response Body In Attribute", nifi2="Response Body Attribute Name"),
            none("Max Length To Put In Attribute", "256", ANY_VALUE, nifi2="Response Body Attribute Size"),
            none("disable-http2", "False", ANY_VALUE, nifi2="HTTP/2 Disabled"),
            none("SSL Context Service", note="Custody's InvokeHTTP takes tls_ca_cert instead"),
            none("idle-timeout", "5 mins", ANY_VALUE, nifi2="Socket Idle Timeout"),
            none("max-idle-connections", "5", ANY_VALUE, nifi2="Socket Idle Connections"),
            none("proxy-configuration-service", nifi2="Proxy Configuration Service"),
            none("Proxy Host", note="NiFi 1.x's (NiFi 2 moved it into a proxy configuration service)"),
            none("Proxy Port"),
            none("Proxy Type", "http", ANY_VALUE, note="it matters only with a Proxy Host"),
            none("invokehttp-proxy-user"),
            none("invokehttp-proxy-password"),
            none("oauth2-access-token-provider", nifi2="Request OAuth2 Access Token Provider"),
            none("OAuth2 Access Token Refresh Strategy", "ON_TOKEN_EXPIRATION", ANY_VALUE, nifi2_only=True),
            none("Basic Authentication Username", nifi2="Request Username"),
            none("Basic Authentication Password", nifi2="Request Password"),
            none("Digest Authentication", "false", nifi2="Request Digest Authentication Enabled"),
            none('Penalize on "No Retry"', "false", nifi2="Request Failure Penalization Enabled"),
            none("send-message-body", "true", nifi2="Request Body Enabled"),
            none("form-body-form-name", nifi2="Request Multipart Form-Data Name"),
            none("set-form-filename", "true", ANY_VALUE, nifi2="Request Multipart Form-Data Filename Enabled"),
            none("Use Chunked Encoding", "false", ANY_VALUE, nifi2="Request Chunked Transfer-Encoding Enabled"),
            none("Content-Encoding", "DISABLED", nifi2="Request Content-Encoding"),
            none("Include Date Header", "True", ANY_VALUE, nifi2="Request Date Header Enabled"),
            none("Useragent", nifi2="Request User-Agent"),
            none("use-etag", "false", nifi2="Response Cache Enabled"),
            none("etag-max-cache-size", "10MB", ANY_VALUE, nifi2="Response Cache Size"),
            none("cookie-strategy", "DISABLED", nifi2="Response Cookie Strategy"),
            none("flow-file-naming-strategy", "RANDOM", ANY_VALUE, nifi2="Response FlowFile Naming Strategy"),
            none("Add Response Headers to Request", "false", nifi2="Response Header Request Attributes Enabled"),
            none("Response Header Request Attributes Prefix", nifi2_only=True),
            none(
                "Follow Redirects",
                "True",
                "False",
                note="Custody follows no redirect: a 3xx answer goes to no_retry",
                nifi2="Response Redirects Enabled",
            ),
        ),
        note="each dynamic property is a request header, as in NiFi; Custody sends POST or PUT only",
        relationships=MappingProxyType(
            {
                "Original": "original",
                "Response": "response",
                "Retry": "retry",
                "No Retry": "no_retry",
                "Failure": "failure",
            }
        ),
    ),
)


# Attributes and content: NiFi's standard processors Custody has of these kinds.
PROCESSOR_MAPPINGS += (
    ComponentMapping(
        "AttributesToJSON",
        (_STANDARD + "AttributesToJSON",),
        "nifi-standard-nar",
        (
            prop("Attributes List", "attributes_list"),
            prop(
                "attributes-to-json-regex",
                "attributes_regex",
                note="a Python regular expression, matched against whole names as NiFi's Java one is",
            ),
            same_choice("Destination", "destination", "flowfile-attribute", "flowfile-attribute", "flowfile-content"),
            prop("Include Core Attributes", "include_core_attributes", "true", "boolean"),
            prop("Null Value", "null_value", "false", "boolean"),
            choice(
                "JSON Handling Strategy",
                "json_handling_strategy",
                "ESCAPED",
                {"ESCAPED": "escaped", "NESTED": "nested"},
            ),
            prop("Pretty Print", "pretty_print", "false", "boolean", depends_on=("Destination", ("flowfile-content",))),
        ),
    ),
    ComponentMapping(
        "LogMessage",
        (_STANDARD + "LogMessage",),
        "nifi-standard-nar",
        (
            prop("log-level", "log_level", "info"),
            prop("log-prefix", "log_prefix"),
            prop("log-message", "log_message"),
        ),
        note="logs under the processor's logger, flow.processor.<id>; trace is Python's level 5",
    ),
    ComponentMapping(
        "DuplicateFlowFile",
        (_STANDARD + "DuplicateFlowFile",),
        "nifi-standard-nar",
        (prop("Number of Copies", "number_of_copies", "100"),),
        note="at most 10,000 copies of a FlowFile",
    ),
    ComponentMapping(
        "ExtractText",
        (_STANDARD + "ExtractText",),
        "nifi-standard-nar",
        (
            prop("Character Set", "character_set", "UTF-8"),
            prop("Maximum Buffer Size", "maximum_buffer_size", "1 MB", "size"),
            prop("Maximum Capture Group Length", "maximum_capture_group_length", "1024", "integer"),
            none("Enable Canonical Equivalence", "false", note="Python's re has no canonical equivalence"),
            prop("Enable Case-insensitive Matching", "case_insensitive", "false", "boolean"),
            prop("Permit Whitespace and Comments in Pattern", "comments", "false", "boolean"),
            prop("Enable DOTALL Mode", "dotall", "false", "boolean"),
            prop("Enable Literal Parsing of the Pattern", "literal", "false", "boolean"),
            prop("Enable Multiline Mode", "multiline", "false", "boolean"),
            prop("Enable Unicode-aware Case Folding", "unicode_case", "false", "boolean"),
            none(
                "Enable Unicode Predefined Character Classes",
                "false",
                note="Python's Unicode \\w, \\d, \\s and \\b differ from Java's UNICODE_CHARACTER_CLASS",
            ),
            prop("Enable Unix Lines Mode", "unix_lines", "false", "boolean"),
            prop("Include Capture Group 0", "include_capture_group_0", "true", "boolean"),
            prop(
                "extract-text-enable-repeating-capture-group",
                "repeating_capture_group",
                "false",
                "boolean",
                nifi2="Enable repeating capture group",
            ),
            prop(
                "extract-text-enable-named-groups",
                "named_groups",
                "false",
                "boolean",
                nifi2="Enable named group support",
            ),
        ),
        note="each dynamic property is an attribute and its pattern, as in NiFi; patterns are Python's re, with "
        "Java's named groups (?<name>...) read as Python's",
    ),
    ComponentMapping(
        "RouteOnContent",
        (_STANDARD + "RouteOnContent",),
        "nifi-standard-nar",
        (
            choice(
                "Match Requirement",
                "match_requirement",
                "content must match exactly",
                {
                    "content must match exactly": "content_must_match_exactly",
                    "content must contain match": "content_must_contain_match",
                },
            ),
            prop("Character Set", "character_set", "UTF-8"),
            prop("Content Buffer Size", "content_buffer_size", "1 MB", "size"),
        ),
        note="each dynamic property is a route and its pattern, as in NiFi; patterns are Python's re",
    ),
)
# JSON and content codecs.
PROCESSOR_MAPPINGS += (
    ComponentMapping(
        "SplitJson",
        (_STANDARD + "SplitJson",),
        "nifi-standard-nar",
        (
            prop("JsonPath Expression", "json_path_expression"),
            *_JSON_VALUES,
        ),
        note="fragment.index counts from 0, as NiFi's SplitJson does",
    ),
    ComponentMapping(
        "FlattenJson",
        (_STANDARD + "FlattenJson",),
        "nifi-standard-nar",
        (
            prop("flatten-json-separator", "separator", "."),
            same_choice(
                "flatten-mode",
                "flatten_mode",
                "keep arrays",
                "normal",
                "keep arrays",
                "dot notation",
                "keep primitive arrays",
            ),
            prop("ignore-reserved-characters", "ignore_reserved_characters", "false", "boolean"),
            same_choice("flatten-json-return-type", "return_type", "flatten", "flatten", "unflatten"),
            prop("flatten-json-character-set", "character_set", "UTF-8"),
            prop("flatten-json-pretty-print-json", "pretty_print", "false", "boolean"),
        ),
    ),
    ComponentMapping(
        "CryptographicHashContent",
        (_STANDARD + "CryptographicHashContent",),
        "nifi-standard-nar",
        (
            prop("fail_when_empty", "fail_when_empty", "false", "boolean"),
            same_choice(
                "hash_algorithm",
                "hash_algorithm",
                "SHA-256",
                "MD5",
                "SHA-1",
                "SHA-224",
                "SHA-256",
                "SHA-384",
                "SHA-512",
                "SHA-512/224",
                "SHA-512/256",
                "SHA3-224",
                "SHA3-256",
                "SHA3-384",
                "SHA3-512",
                "BLAKE2-160",
                "BLAKE2-256",
                "BLAKE2-384",
                "BLAKE2-512",
            ),
        ),
        note="MD2 is not mapped: Python's hashlib has no MD2; the attribute is content_<algorithm>, as in NiFi",
    ),
    ComponentMapping(
        "EncodeContent",
        (_STANDARD + "EncodeContent",),
        "nifi-standard-nar",
        (
            same_choice("Mode", "mode", "Encode", "Encode", "Decode"),
            same_choice("Encoding", "encoding", "base64", "base64", "base32", "hex"),
            same_choice(
                "Line Output Mode",
                "line_output_mode",
                "SINGLE_LINE",
                "SINGLE_LINE",
                "MULTIPLE_LINES",
                depends_on=("Mode", ("Encode",)),
            ),
            prop(
                "Encoded Line Length",
                "encoded_line_length",
                "76",
                depends_on=("Line Output Mode", ("MULTIPLE_LINES",)),
            ),
        ),
    ),
)
PROCESSOR_MAPPINGS += KAFKA_MAPPINGS

__all__ = ["CONNECTION_SERVICE_TYPES", "PROCESSOR_MAPPINGS", "processor_mapping", "processor_mapping_of"]


def processor_mapping(nifi_type: str) -> ComponentMapping | None:
    """The mapping of NiFi's processor class `nifi_type`, or None."""
    for mapping in PROCESSOR_MAPPINGS:
        if nifi_type in mapping.nifi_types:
            return mapping
    return None


def processor_mapping_of(custody_type: str) -> ComponentMapping | None:
    for mapping in PROCESSOR_MAPPINGS:
        if mapping.custody_type == custody_type:
            return mapping
    return None
