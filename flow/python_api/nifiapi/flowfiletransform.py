"""`FlowFileTransform` and `FlowFileTransformResult`, as NiFi 2's Python API has them.

A subclass implements `transform(context, flowFile)` and returns a
`FlowFileTransformResult(relationship, attributes=None, contents=None)`: the FlowFile
goes to `relationship` with those attributes added and, when `contents` is given (bytes,
or text written as UTF-8), that content. Custody's adapter
(`flow.python_extensions.adapter`) runs it inside a session."""

from __future__ import annotations

from abc import ABC, abstractmethod


class FlowFileTransform(ABC):
    # Set by the framework once the processor is made, as NiFi's is.
    identifier: str | None = None
    logger = None

    def __init__(self, **kwargs):  # noqa: B027 - processors call it with their own keyword arguments
        pass

    @abstractmethod
    def transform(self, context, flowFile):
        """A `FlowFileTransformResult` for `flowFile` (an `InputFlowFile`)."""


def as_bytes(contents):
    return contents.encode("utf-8") if isinstance(contents, str) else contents


class _Result:
    """A relationship, attributes to add and contents (text written as UTF-8): what
    both `FlowFileTransformResult` and `FlowFileSourceResult` hold."""

    def __init__(self, relationship, attributes=None, contents=None):
        self.relationship = relationship
        self.attributes = attributes
        self.contents = as_bytes(contents)

    def getRelationship(self):
        return self.relationship

    def getContents(self):
        return self.contents

    def getAttributes(self):
        return self.attributes


class FlowFileTransformResult(_Result):
    pass
