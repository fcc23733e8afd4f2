"""The standard processors, by type name, and `register_processor` for others."""

from __future__ import annotations

from ..processor import Processor
from .attributes import LogAttribute, RouteOnAttribute, UpdateAttribute
from .files import FetchFile, GetFile, ListFile, PutFile
from .generate import GenerateFlowFile
from .http import ListenHTTP
from .merge import MergeContent
from .stateless import ExecuteStateless
from .text import ReplaceText, SplitText

PROCESSOR_TYPES: dict[str, type[Processor]] = {
    cls.type_name: cls
    for cls in (GenerateFlowFile, ListFile, FetchFile, GetFile, ListenHTTP, UpdateAttribute, RouteOnAttribute,
                SplitText, MergeContent, ReplaceText, LogAttribute, PutFile, ExecuteStateless)
}


def register_processor(cls: type[Processor]) -> type[Processor]:
    """Make a processor type available to flow definitions (usable as a decorator)."""
    if not cls.type_name:
        raise ValueError(f"{cls.__name__} has no type_name")
    PROCESSOR_TYPES[cls.type_name] = cls
    return cls


__all__ = ["PROCESSOR_TYPES", "register_processor"] + sorted(PROCESSOR_TYPES)
