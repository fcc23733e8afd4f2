"""The flow definition, validated: `FlowDefinition` and the processors, connections,
ports and scheduling it holds, as frozen data classes."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .queue import DEFAULT_BACK_PRESSURE_COUNT, DEFAULT_BACK_PRESSURE_SIZE
from .swap_policy import DEFAULT_SWAP_BATCH, DEFAULT_SWAP_THRESHOLD

if TYPE_CHECKING:
    from .processor import Processor

PORT_KINDS = ("input", "output", "failure")
# Beyond these a scheduling value is a slip (a unit left out, digits too many), not a plan:
# the engine would queue that many tasks of one processor, or wait that long, unnoticed.
MAX_CONCURRENT_TASKS = 1024
MAX_SCHEDULING_S = 365 * 86400.0  # run schedule, yield and penalty durations: a year


@dataclass(frozen=True)
class SchedulingDefinition:
    run_schedule_s: float = 0.0
    concurrent_tasks: int = 1
    yield_s: float = 1.0
    penalty_s: float = 30.0
    # Rollbacks in a row of the sessions that held a FlowFile before the engine penalizes
    # it, so that the FlowFiles behind it go on (`flow.rollbacks`).
    max_rollbacks: int = 5
    # A Quartz cron expression (NiFi's CRON_DRIVEN, `flow.cron`): the processor runs at
    # its times only, instead of every run_schedule.
    cron: str | None = None


@dataclass(frozen=True)
class ProcessorDefinition:
    id: str
    type: str
    processor_class: builtins.type[Processor]  # `type` here is the field above
    properties: dict
    dynamic: dict
    scheduling: SchedulingDefinition
    auto_terminate: tuple[str, ...]
    relationships: tuple[str, ...]

    def create(self) -> Processor:
        return self.processor_class(self.id)


@dataclass(frozen=True)
class ConnectionDefinition:
    id: str
    source: str
    relationships: tuple[str, ...]
    destination: str
    prioritizers: tuple[str, ...] = ()
    back_pressure_count: int = DEFAULT_BACK_PRESSURE_COUNT
    back_pressure_size: int = DEFAULT_BACK_PRESSURE_SIZE
    swap_threshold: int = DEFAULT_SWAP_THRESHOLD
    swap_batch: int = DEFAULT_SWAP_BATCH
    expiration_ms: int = 0


@dataclass(frozen=True)
class PortDefinition:
    id: str
    kind: str


@dataclass(frozen=True)
class FlowDefinition:
    name: str
    processors: dict
    connections: tuple
    ports: dict
    parameters: dict = field(default_factory=dict)
    source: str = "<flow>"
    # The processor types it was parsed against: the stateless flows it embeds are parsed against them too.
    registry: Mapping[str, type[Processor]] | None = field(default=None, compare=False, repr=False)
    # The flow's controller services by id (`flow.controller_service`), already in the
    # properties of the processors that name them.
    services: dict = field(default_factory=dict)

    def incoming(self, component_id: str) -> list[ConnectionDefinition]:
        return [c for c in self.connections if c.destination == component_id]

    def outgoing(self, component_id: str) -> list[ConnectionDefinition]:
        return [c for c in self.connections if c.source == component_id]

    def ports_of(self, kind: str) -> list[str]:
        return [p.id for p in self.ports.values() if p.kind == kind]
