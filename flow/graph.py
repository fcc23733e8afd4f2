"""`FlowGraph`: a validated flow definition made concrete - processor instances, one
`FlowFileQueue` per connection, and who reads from and writes to which queue."""

from __future__ import annotations

import time
from collections.abc import Callable

from .definition import FlowDefinition
from .flowfile_ages import FlowFileAges, monotonic_ms
from .queue import FlowFileQueue


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class FlowGraph:
    def __init__(
        self,
        definition: FlowDefinition,
        *,
        clock_ms: Callable[[], int] = wall_clock_ms,
        in_memory: bool = False,
        processors: dict | None = None,
        monotonic_clock_ms: Callable[[], int] = monotonic_ms,
    ):
        self.definition = definition
        self.queues: dict[str, FlowFileQueue] = {}
        # One age per FlowFile across every queue, so that moving on to a connection that
        # expires keeps its age (`flow.flowfile_ages`); none needed when nothing expires.
        ages = (
            FlowFileAges(wall_ms=clock_ms, monotonic_ms=monotonic_clock_ms)
            if any(connection.expiration_ms for connection in definition.connections)
            else None
        )
        for connection in definition.connections:
            threshold, batch = connection.swap_threshold, connection.swap_batch
            if in_memory:
                threshold = batch = 1 << 62  # stateless: nothing swaps, it is one transaction
            self.queues[connection.id] = FlowFileQueue(
                connection.id,
                prioritizers=connection.prioritizers,
                back_pressure_count=connection.back_pressure_count,
                back_pressure_size=connection.back_pressure_size,
                swap_threshold=threshold,
                swap_batch=batch,
                expiration_ms=connection.expiration_ms,
                clock_ms=clock_ms,
                ages=ages,
                source=connection.source,
                destination=connection.destination,
            )
        self.processors = (
            processors
            if processors is not None
            else {pid: definition_.create() for pid, definition_ in definition.processors.items()}
        )
        self.incoming: dict[str, list[FlowFileQueue]] = {pid: [] for pid in definition.processors}
        self.outgoing: dict[str, dict[str, list[FlowFileQueue]]] = {pid: {} for pid in definition.processors}
        self.into_port: dict[str, list[FlowFileQueue]] = {pid: [] for pid in definition.ports}
        self.out_of_port: dict[str, list[FlowFileQueue]] = {pid: [] for pid in definition.ports}
        for connection in definition.connections:
            queue = self.queues[connection.id]
            if connection.destination in self.incoming:
                self.incoming[connection.destination].append(queue)
            else:
                self.into_port[connection.destination].append(queue)
            if connection.source in self.outgoing:
                for relationship in connection.relationships:
                    self.outgoing[connection.source].setdefault(relationship, []).append(queue)
            else:
                self.out_of_port[connection.source].append(queue)

    def upstream_order(self) -> list[str]:
        """Processor ids, sources first (a topological order where there are no cycles)."""
        definition = self.definition
        remaining = list(definition.processors)
        order: list[str] = []
        placed: set[str] = set()
        while remaining:
            progress = False
            for pid in list(remaining):
                feeders = {c.source for c in definition.incoming(pid)} - set(definition.ports) - {pid}
                if feeders <= placed:
                    order.append(pid)
                    placed.add(pid)
                    remaining.remove(pid)
                    progress = True
            if not progress:  # a cycle: take the rest in definition order
                order += remaining
                break
        return order
