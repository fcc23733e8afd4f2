"""`RecordTransform` and `RecordTransformResult`, as NiFi 2's Python API has them.

A subclass implements `transform(context, record, schema, attributemap)` for one record
(a dict) and returns `RecordTransformResult(record=None, schema=None,
relationship='success', partition=None)`: the record (None drops it) is written to a
FlowFile of `relationship`, one FlowFile per distinct `partition` (a dict whose items
also become the FlowFile's attributes). The framework adds the `Record Reader` and
`Record Writer` properties; `schema` is the schema the reader gave (a
`pyarrow.Schema` in Custody, where NiFi passes its Java RecordSchema)."""

from __future__ import annotations

from abc import ABC, abstractmethod


class RecordTransform(ABC):
    identifier: str | None = None
    logger = None

    def __init__(self, **kwargs):  # noqa: B027 - processors call it with their own keyword arguments
        pass

    @abstractmethod
    def transform(self, context, record, schema, attributemap):
        """A `RecordTransformResult` for `record`."""


class RecordTransformResult:
    def __init__(self, record=None, schema=None, relationship="success", partition=None):
        self.record = record
        self.schema = schema
        self.relationship = relationship
        self.partition = partition

    def getRecord(self):
        return self.record

    def getSchema(self):
        return self.schema

    def getRelationship(self):
        return self.relationship

    def getPartition(self):
        return self.partition
