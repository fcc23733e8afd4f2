"""`MultipleFlowFileSource`, as NiFi's Python API has it since it added the class:
`create(context)` returns any number of `FlowFileSourceResult`s (a list, any iterable,
or None), each a new FlowFile, all committed together."""

from __future__ import annotations

from abc import ABC, abstractmethod

from .flowfilesource import FlowFileSourceResult

__all__ = ["FlowFileSourceResult", "MultipleFlowFileSource"]


class MultipleFlowFileSource(ABC):
    identifier: str | None = None
    logger = None

    def __init__(self, **kwargs):  # noqa: B027 - processors call it with their own keyword arguments
        pass

    @abstractmethod
    def create(self, context):
        """The `FlowFileSourceResult`s of this run, or None."""
