"""Flow definitions parsed against the standard processors: what a node and a test call.

    from flow.loading import load_flow, standard_registry
    definition = load_flow("flow.yaml", {"data_dir": "/data"})      # standard registry
    definition = load_flow("flow.yaml", registry=my_registry)        # or one of the caller's

`flow.definition` parses against whatever registry it is given and knows no processor;
`flow.processors` lists the standard ones; this module composes the two, and is the
only module of `flow` that imports both, so that neither depends on the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from . import definition
from .definition import FlowDefinition
from .processors import STANDARD_PROCESSORS
from .registry import ENTRY_POINT_GROUP, ProcessorRegistry

if TYPE_CHECKING:
    from .processor import Processor


def standard_registry(*, entry_points: Callable[..., Iterable] | None = None) -> ProcessorRegistry:
    """A new registry of the standard processors and of every processor that installed
    distributions declare as `custody.processors` entry points. Raises
    `ProcessorRegistryError` naming each broken or duplicate entry point.
    `entry_points` replaces `importlib.metadata.entry_points` (for tests)."""
    registry = ProcessorRegistry(STANDARD_PROCESSORS)
    registry.load_entry_points(ENTRY_POINT_GROUP, entry_points=entry_points)
    return registry


def load_flow(
    path: str, parameters: dict | None = None, *, registry: Mapping[str, type[Processor]] | None = None
) -> FlowDefinition:
    """`flow.definition.load_flow` against `registry`, by default `standard_registry()`."""
    return definition.load_flow(path, parameters, registry=standard_registry() if registry is None else registry)


def parse_flow(
    data,
    *,
    source: str = "<flow>",
    parameters: dict | None = None,
    registry: Mapping[str, type[Processor]] | None = None,
) -> FlowDefinition:
    """`flow.definition.parse_flow` against `registry`, by default `standard_registry()`."""
    return definition.parse_flow(
        data, source=source, parameters=parameters, registry=standard_registry() if registry is None else registry
    )
