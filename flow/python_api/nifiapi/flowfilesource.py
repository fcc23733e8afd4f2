"""`FlowFileSource` and `FlowFileSourceResult`, as NiFi 2's Python API has them.

A subclass implements `create(context)` and returns a
`FlowFileSourceResult(relationship, attributes=None, contents=None)` for a new FlowFile,
or None for none this time (`context.yield_resources()` first, to wait a yield period)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from .flowfiletransform import _Result


class FlowFileSource(ABC):
    identifier: str | None = None
    logger = None

    def __init__(self, **kwargs):  # noqa: B027 - processors call it with their own keyword arguments
        pass

    @abstractmethod
    def create(self, context):
        """A `FlowFileSourceResult`, or None."""


class FlowFileSourceResult(_Result):
    pass
