"""The standard processors: the one place they are listed.

`flow.loading.standard_registry()` registers these and the processors that installed
distributions declare as `custody.processors` entry points (see `flow.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..processor import Processor
from .attributes import LogAttribute, RouteOnAttribute, UpdateAttribute
from .attributes_json import AttributesToJSON
from .compress import CompressContent
from .content_codecs import CryptographicHashContent, EncodeContent
from .content_regex import ExtractText, RouteOnContent
from .duplicate import DuplicateFlowFile
from .files import FetchFile, GetFile, ListFile, PutFile
from .generate import GenerateFlowFile
from .http import ListenHTTP
from .http_client import InvokeHTTP
from .json_flatten import FlattenJson
from .json_path import EvaluateJsonPath
from .json_split import SplitJson
from .kafka import ConsumeKafka, PublishKafka
from .log_message import LogMessage
from .merge import MergeContent
from .merge_record import MergeRecord
from .parquet import PutParquet
from .query_record import QueryRecord
from .record_splits import PartitionRecord, SplitRecord
from .records import ConvertRecord
from .spark import ExecuteSparkSQL, SparkTransform
from .stateless import ExecuteStateless
from .text import ReplaceText, SplitText
from .unpack import UnpackContent
from .update_record import RemoveRecordField, UpdateRecord
from .validate_record import ValidateRecord

STANDARD_PROCESSORS: tuple[type[Processor], ...] = (
    GenerateFlowFile,
    ListFile,
    FetchFile,
    GetFile,
    ListenHTTP,
    ConsumeKafka,
    UpdateAttribute,
    RouteOnAttribute,
    AttributesToJSON,
    ExtractText,
    RouteOnContent,
    DuplicateFlowFile,
    SplitText,
    MergeContent,
    UnpackContent,
    ReplaceText,
    CompressContent,
    EvaluateJsonPath,
    SplitJson,
    FlattenJson,
    CryptographicHashContent,
    EncodeContent,
    ConvertRecord,
    QueryRecord,
    ValidateRecord,
    SplitRecord,
    PartitionRecord,
    UpdateRecord,
    RemoveRecordField,
    MergeRecord,
    LogAttribute,
    LogMessage,
    PutFile,
    ExecuteStateless,
    ExecuteSparkSQL,
    SparkTransform,
    PutParquet,
    PublishKafka,
    InvokeHTTP,
)

# The standard processors by type name, read-only: a registry to extend is built, not patched.
PROCESSOR_TYPES: Mapping[str, type[Processor]] = MappingProxyType({cls.type_name: cls for cls in STANDARD_PROCESSORS})

__all__ = ["PROCESSOR_TYPES", "STANDARD_PROCESSORS"] + sorted(PROCESSOR_TYPES)
