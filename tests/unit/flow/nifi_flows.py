"""The NiFi flow definitions of tests/data/nifi_flows, and what makes two Custody flows
equal: the same processors, properties, scheduling, connections, ports, parameters and
services once each is loaded as Custody loads it (ids of connections aside, which the
import does not keep)."""

from __future__ import annotations

import re
from pathlib import Path

from flow.controller_service import ControllerService
from flow.expression import Expression
from flow.loading import parse_flow, standard_registry

NIFI_FLOWS = Path(__file__).resolve().parents[2] / "data" / "nifi_flows"


def nifi_document(name: str) -> bytes:
    return (NIFI_FLOWS / name).read_bytes()


def _value(value):
    if isinstance(value, Expression):
        return ("expression", value.text)
    if isinstance(value, re.Pattern):
        return ("regex", value.pattern)
    if isinstance(value, ControllerService):
        return ("service", value.id)
    return value


def essence(flow: dict, parameters: dict | None = None, registry=None) -> dict:
    """What a Custody flow does, comparable with ==."""
    definition = parse_flow(flow, registry=registry or standard_registry(), parameters=parameters)
    return {
        "processors": {
            processor.id: (
                processor.type,
                {name: _value(value) for name, value in processor.properties.items()},
                {name: _value(value) for name, value in processor.dynamic.items()},
                processor.scheduling,
                frozenset(processor.auto_terminate),
            )
            for processor in definition.processors.values()
        },
        "connections": sorted(
            (
                c.source,
                c.relationships,
                c.destination,
                c.prioritizers,
                c.back_pressure_count,
                c.back_pressure_size,
                c.expiration_ms,
                c.swap_threshold,
                c.swap_batch,
            )
            for c in definition.connections
        ),
        "ports": {port.id: port.kind for port in definition.ports.values()},
        "parameters": definition.parameters,
        "services": {
            service.id: (type(service).__name__, {name: _value(value) for name, value in service.config.items()})
            for service in definition.services.values()
        },
    }
