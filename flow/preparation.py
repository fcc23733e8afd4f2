"""Making ready, while a clustered node recovers the WAL of a shard it is about to run
(one it adopts, or its home shard as it starts), what the shard's first tasks would
otherwise wait for once it runs (`Processor.prepare_adopted`).

Each processor that overrides `prepare_adopted` is called on a daemon thread of its
own, with a context built as the engine builds its own. A preparation that fails is
logged and forgotten: the processor's first task does the same work itself. If the
shard never runs here (its adoption ended first), `release` gives back what was made.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .graph import FlowGraph
from .processor import ProcessContext, Processor
from .services import ServiceRegistry

log = logging.getLogger(__name__)


def preparing(graph: FlowGraph) -> list[Processor]:
    """The processors of `graph` that make something ready for an adopted shard."""
    return [
        processor
        for processor in graph.processors.values()
        if type(processor).prepare_adopted is not Processor.prepare_adopted
    ]


class Preparation:
    """The preparations started for one shard."""

    def __init__(self, graph: FlowGraph, shard_id: str, admit: Callable[[], None], services: ServiceRegistry | None):
        self.shard_id = shard_id
        self.processors = preparing(graph)
        self._threads = []
        for processor in self.processors:
            definition = graph.definition.processors[processor.id]
            context = ProcessContext(
                processor.id,
                definition.properties,
                definition.dynamic,
                has_incoming=bool(graph.incoming[processor.id]),
                services=services,
            )
            thread = threading.Thread(
                target=self._prepare,
                args=(processor, context, admit),
                name=f"prepare-{shard_id}-{processor.id}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def _prepare(self, processor: Processor, context: ProcessContext, admit: Callable[[], None]) -> None:
        try:
            processor.prepare_adopted(context, self.shard_id, admit)
        except Exception as error:  # noqa: BLE001 - its first task does the work instead
            log.info(
                "%s: preparing for shard %s failed (its first task does it): %s", processor.id, self.shard_id, error
            )

    def wait(self, timeout: float) -> bool:
        """True when every preparation ended within `timeout` seconds (for tests)."""
        for thread in self._threads:
            thread.join(timeout)
        return not any(thread.is_alive() for thread in self._threads)

    def release(self) -> None:
        """The shard never ran here: each processor gives up what it made."""
        for processor in self.processors:
            try:
                processor.release_prepared()
            except Exception:  # noqa: BLE001
                log.exception("%s: releasing what was prepared for shard %s failed", processor.id, self.shard_id)
