"""`FlowFileTransformMultipleOutput`, as NiFi's Python API has it since it added the
class: `transform(context, flowFile)` returns any number of `FlowFileTransformResult`s
(a list, or any iterable). Each result is a FlowFile of its own, made from the input
(its attributes, with the result's added, and the result's contents when given), sent
to the result's relationship; the input goes to `original`. No result at all sends the
input to `original` alone. Should transform raise, or return what is not a result, the
input goes to `failure` and none of what it returned is kept."""

from __future__ import annotations

from abc import ABC, abstractmethod

from .flowfiletransform import FlowFileTransformResult

__all__ = ["FlowFileTransformMultipleOutput", "FlowFileTransformResult"]


class FlowFileTransformMultipleOutput(ABC):
    identifier: str | None = None
    logger = None

    def __init__(self, **kwargs):  # noqa: B027 - processors call it with their own keyword arguments
        pass

    @abstractmethod
    def transform(self, context, flowFile):
        """The `FlowFileTransformResult`s for `flowFile` (an `InputFlowFile`)."""
