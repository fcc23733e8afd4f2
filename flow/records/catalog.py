"""The record reader and writer services a flow can configure, by type name."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..controller_service import ControllerService
from .avro_format import AvroReader, AvroRecordSetWriter
from .csv_format import CSVReader, CSVRecordSetWriter
from .json_format import JsonRecordSetWriter, JsonTreeReader
from .parquet_format import ParquetReader, ParquetRecordSetWriter

RECORD_SERVICES: tuple[type[ControllerService], ...] = (
    JsonTreeReader,
    JsonRecordSetWriter,
    CSVReader,
    CSVRecordSetWriter,
    ParquetReader,
    ParquetRecordSetWriter,
    AvroReader,
    AvroRecordSetWriter,
)

RECORD_SERVICE_TYPES: Mapping[str, type[ControllerService]] = MappingProxyType(
    {cls.type_name: cls for cls in RECORD_SERVICES}
)
