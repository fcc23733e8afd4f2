"""Controller services, in NiFi's sense: configured once in a flow, by id, and shared by
every processor that names them (a record reader, a record writer).

    services:
      - id: json-in
        type: JsonTreeReader
      - id: parquet-out
        type: ParquetRecordSetWriter
        properties: {compression: zstd}
    processors:
      - id: convert
        type: ConvertRecord
        properties: {record_reader: json-in, record_writer: parquet-out}

A service type declares its properties with the processors' `PropertyDescriptor`
(converted and checked the same way when the flow is loaded) and its `kind`, what a
processor's property of kind "service" asks for (`PropertyDescriptor.service_kind`).
The parser builds each service once and puts the instance itself in the properties
of the processors that name it: a processor never looks a service up while it runs,
and a flow that names a service it lacks, or one of the wrong kind, is refused at
load with the processor and the property named.

These services hold configuration, not resources: they are shared by many tasks on
many threads at once, so whatever they do per call keeps its state in the call.
(A service that holds a connection or a JVM is a node service:
`flow.services.ServiceRegistry`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from .processor import PropertyDescriptor, find_descriptor

RECORD_READER = "record reader"
RECORD_WRITER = "record writer"


class ControllerService:
    """A configured service of a flow. Subclasses set `type_name`, `kind`, `description`
    and `properties`, and read their converted `properties` (every declared name is a
    key, None when unset and without a default)."""

    type_name: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    description: ClassVar[str] = ""
    properties: ClassVar[tuple[PropertyDescriptor, ...]] = ()

    def __init__(self, service_id: str, properties: Mapping[str, object]):
        self.id = service_id
        self.config: dict[str, Any] = dict(properties)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        assert isinstance(other, ControllerService)
        return other.id == self.id and other.config == self.config

    def __hash__(self) -> int:
        return hash((type(self), self.id))

    @classmethod
    def descriptor(cls, name: str) -> PropertyDescriptor | None:
        return find_descriptor(cls.properties, name)

    @classmethod
    def validate(cls, properties: Mapping[str, object]) -> list[tuple[str, str]]:
        """Cross-property problems as (property, message); empty when valid."""
        return []
