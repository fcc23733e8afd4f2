"""The stateless engine, after NiFi's stateless execution design: a whole flow as one
transaction, in memory.

    flow = StatelessFlow(load_flow("sub.yaml"))         # flow.loading.load_flow
    result = flow.trigger([({"filename": "a"}, b"data")])   # into the input port(s)
    if result.success:
        result.outputs                  # [(port, attributes, content bytes)]
        result.acknowledge()            # the outputs are safe: every held on_success runs, once
        # or result.fail(error)         # they could not be kept: every held on_failure runs
    else:
        result.failure                  # which processor or failure port, and why

Each trigger gets fresh in-memory repositories (queues, content, provenance). Source
processors run once; then every processor with input runs until nothing is queued.
Every `commit_async` callback is held. If a processor raises or a FlowFile reaches a
failure port, the trigger fails: everything is dropped, and every held `on_failure`
runs with the error (as NiFi's stateless execution calls commitAsync's failure
callback), so an acknowledging source offers its data again or tells its client.
A successful result settles once: `acknowledge()` - at once by default, or after the
caller's own commit, as ExecuteStateless does - makes the processor states the trigger
left the flow's, then runs the held `on_success`; `fail(error)` runs the held
`on_failure` and keeps the states from before the trigger. The flow is not triggered
again until the last successful result is settled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .commit import HeldCommitter
from .definition import FlowDefinition, load_flow
from .errors import FlowDefinitionError, FlowError
from .flowfile import FlowFile
from .graph import FlowGraph, wall_clock_ms
from .memory_content import InMemoryContentRepository
from .processor import ProcessContext
from .services import ServiceRegistry
from .session import ProcessSession
from .shard import QueueShard

if TYPE_CHECKING:
    from repositories.content import ContentStore

log = logging.getLogger(__name__)

MAX_ROUNDS = 100_000


class StatelessFlowFailed(FlowError):
    """A stateless trigger failed (a processor raised, or data reached a failure port):
    what every held `on_failure` is called with. Nothing of the trigger was kept."""


@dataclass
class StatelessResult:
    success: bool
    outputs: list = field(default_factory=list)  # (port, attributes, content)
    failure: str | None = None
    provenance_events: list = field(default_factory=list)
    states: dict = field(default_factory=dict)  # processor id -> the state acknowledging commits
    _callbacks: list = field(default_factory=list, repr=False)
    _failure_callbacks: list = field(default_factory=list, repr=False)
    _settle: Callable[[StatelessResult, bool], None] | None = field(default=None, repr=False)
    _settled: bool = False

    @property
    def settled(self) -> bool:
        """Acknowledged or failed (a failed trigger's result is settled from the start)."""
        return self._settled or not self.success

    def acknowledge(self) -> None:
        """The caller keeps the outputs: the flow's processor states become those this
        trigger left, then the held on_success callbacks run. Once; a no-op when settled."""
        if self.settled:
            return
        self._settled = True
        if self._settle is not None:
            self._settle(self, True)
        for callback in self._callbacks:
            callback()

    def fail(self, error: BaseException) -> None:
        """The caller could not keep the outputs (its own commit failed): the held
        on_failure callbacks run with `error`, and the flow keeps its processor states
        from before this trigger. Once; a no-op when settled."""
        if self.settled:
            return
        self._settled = True
        if self._settle is not None:
            self._settle(self, False)
        _run_failure_callbacks(self._failure_callbacks, error)


def _run_failure_callbacks(callbacks, error: BaseException) -> None:
    for callback in callbacks:
        try:
            callback(error)
        except Exception:  # noqa: BLE001 - the others must still hear of the failure
            log.exception("an on_failure callback raised (the failure was: %s)", error)


class StatelessFlowLoader:
    """How an engine loads the stateless flows its processors embed (`ExecuteStateless`,
    through `ProcessContext.load_stateless_flow`): parsed against the processor types of
    the embedding flow, sharing its services and its clock."""

    def __init__(
        self,
        registry: Mapping[str, type] | None,
        *,
        services: ServiceRegistry | None = None,
        clock_ms: Callable[[], int] = wall_clock_ms,
    ):
        self.registry = registry
        self.services = services
        self.clock_ms = clock_ms

    def __call__(self, path: str) -> StatelessFlow:
        if self.registry is None:
            raise FlowDefinitionError(
                "cannot load an embedded flow: the embedding flow was not parsed against a "
                "processor registry (build it with flow.definition.parse_flow)",
                source=path,
            )
        return StatelessFlow(load_flow(path, registry=self.registry), services=self.services, clock_ms=self.clock_ms)


class StatelessFlow:
    """A flow definition run by the stateless engine (see the module docstring).
    `services` are the node's shared services, given to every processor's context."""

    def __init__(
        self,
        definition: FlowDefinition,
        *,
        clock_ms: Callable[[], int] = wall_clock_ms,
        services: ServiceRegistry | None = None,
    ):
        self.definition = definition
        self._clock_ms = clock_ms
        self.graph = FlowGraph(definition, clock_ms=clock_ms, in_memory=True)
        self._order = self.graph.upstream_order()
        self._contexts = {}
        flows = StatelessFlowLoader(definition.registry, services=services, clock_ms=clock_ms)
        for pid in self._order:
            processor_definition = definition.processors[pid]
            self._contexts[pid] = ProcessContext(
                pid,
                processor_definition.properties,
                processor_definition.dynamic,
                stateless=True,
                has_incoming=bool(self.graph.incoming[pid]),
                clock_ms=clock_ms,
                services=services,
                stateless_flows=flows,
            )
        self._scheduled = False
        # Processor state lives across triggers and changes only when a result is acknowledged.
        self._states: dict[str, dict[str, str]] = {}
        self._pending: StatelessResult | None = None

    def _schedule(self) -> None:
        if not self._scheduled:
            for pid in self._order:
                self.graph.processors[pid].on_scheduled(self._contexts[pid])
            self._scheduled = True

    def close(self) -> None:
        if self._scheduled:
            for pid in self._order:
                try:
                    self.graph.processors[pid].on_stopped(self._contexts[pid])
                except Exception:  # noqa: BLE001
                    log.exception("%s: on_stopped failed", pid)
            self._scheduled = False

    @property
    def states(self) -> dict[str, dict[str, str]]:
        """The processor states as of the last acknowledged trigger (copies)."""
        return {pid: dict(state) for pid, state in self._states.items()}

    def restore_states(self, states: Mapping[str, Mapping[str, str]]) -> None:
        """Start from `states` (what `states` gave, kept durably by the caller) instead."""
        self._check_settled()
        self._states = {pid: dict(state) for pid, state in states.items()}

    def _check_settled(self) -> None:
        if self._pending is not None and not self._pending.settled:
            raise FlowError(
                f"stateless flow {self.definition.name!r}: the last successful trigger's result was "
                "neither acknowledged nor failed; call result.acknowledge() once its outputs are kept, "
                "or result.fail(error), before triggering again"
            )

    def _settle(self, result: StatelessResult, acknowledged: bool) -> None:
        if acknowledged:
            self._states = {pid: dict(state) for pid, state in result.states.items()}
        if self._pending is result:
            self._pending = None

    def trigger(self, inputs: Iterable[tuple[dict, bytes]] = (), *, input_port: str | None = None) -> StatelessResult:
        self._check_settled()
        self._schedule()
        # Fresh queues for every trigger: a failed trigger leaves nothing behind.
        graph = self.graph = FlowGraph(
            self.definition, clock_ms=self._clock_ms, in_memory=True, processors=self.graph.processors
        )
        content = InMemoryContentRepository()
        shard = QueueShard("stateless", graph.queues.values())
        for component, state in self._states.items():
            shard.set_state_committed(component, state)
        committer = HeldCommitter(shard, content)
        try:
            self._feed(inputs, input_port, shard, committer, content)
            self._run(shard, committer, content)
        except Exception as error:  # noqa: BLE001 - any failure fails the whole transaction
            return self._failed(committer, str(error), error)
        for port in self.definition.ports_of("failure"):
            reached = sum(queue.count for queue in graph.into_port[port])
            if reached:
                return self._failed(committer, f"{reached} FlowFile(s) reached failure port {port!r}")
        outputs = []
        for port in self.definition.ports_of("output"):
            for queue in graph.into_port[port]:
                flowfiles, _ = queue.poll(1 << 62)
                for flowfile in flowfiles:
                    data = content.read(flowfile.content_claim) if flowfile.content_claim is not None else b""
                    outputs.append((port, dict(flowfile.attributes), data))
        states = {pid: state for pid in self._order if (state := shard.get_state(pid))}
        result = StatelessResult(
            True,
            outputs,
            provenance_events=committer.events,
            states=states,
            _callbacks=list(committer.held_callbacks),
            _failure_callbacks=list(committer.held_failure_callbacks),
            _settle=self._settle,
        )
        self._pending = result
        return result

    def _failed(self, committer: HeldCommitter, failure: str, cause: BaseException | None = None) -> StatelessResult:
        error = StatelessFlowFailed(
            f"stateless flow {self.definition.name!r} failed, nothing of the trigger was kept: {failure}"
        )
        error.__cause__ = cause
        _run_failure_callbacks(committer.held_failure_callbacks, error)
        return StatelessResult(False, failure=failure)

    def _session(self, pid: str, shard, committer, content: ContentStore) -> ProcessSession:
        definition = self.definition.processors[pid]
        return ProcessSession(
            component_id=pid,
            component_type=definition.type,
            committer=committer,
            content=content,
            shard=shard,
            incoming=self.graph.incoming[pid],
            outgoing=self.graph.outgoing[pid],
            auto_terminated=definition.auto_terminate,
            clock_ms=self._clock_ms,
            penalty_ms=0,
        )

    def _feed(self, inputs, input_port, shard, committer, content: ContentStore) -> None:
        inputs = list(inputs)
        if not inputs:
            return
        ports = [input_port] if input_port else self.definition.ports_of("input")
        if not ports:
            raise ValueError(f"flow {self.definition.name!r} has no input port to feed")
        queues = [q for port in ports for q in self.graph.out_of_port[port]]
        now = self._clock_ms()
        arrivals = []
        for attributes, data in inputs:
            flowfile = FlowFile.new(now, attributes)
            if data:
                claim = content.write_bytes(data)
                flowfile = flowfile.with_content(claim, len(data))
            for index, queue in enumerate(queues):
                if index and flowfile.content_claim is not None:
                    content.increment(flowfile.content_claim)
                arrivals.append((queue, flowfile.in_queue(queue.id)))
        for queue, flowfile in arrivals:
            queue.put(flowfile)

    def _run(self, shard, committer, content: ContentStore) -> None:
        graph = self.graph
        sources = [pid for pid in self._order if graph.processors[pid].is_source and not graph.incoming[pid]]
        for pid in sources:
            self._trigger_once(pid, shard, committer, content)
        for _ in range(MAX_ROUNDS):
            progressed = False
            for pid in self._order:
                if any(queue.has_available() for queue in graph.incoming[pid]):
                    before = sum(queue.count for queue in graph.incoming[pid])
                    self._trigger_once(pid, shard, committer, content)
                    after = sum(queue.count for queue in graph.incoming[pid])
                    progressed = progressed or after != before
            if not progressed:
                stuck = [pid for pid in self._order if any(q.count for q in graph.incoming[pid])]
                if stuck:
                    raise RuntimeError(
                        f"processors {stuck} did not consume their input (penalized or "
                        "refused); the stateless transaction cannot finish"
                    )
                return
        raise RuntimeError(f"the flow did not settle after {MAX_ROUNDS} rounds (a loop?)")

    def _trigger_once(self, pid: str, shard, committer, content: ContentStore) -> None:
        session = self._session(pid, shard, committer, content)
        try:
            self.graph.processors[pid].on_trigger(self._contexts[pid], session)
            if not session.is_closed:
                session.commit()
        except Exception as error:
            session.rollback()
            raise RuntimeError(f"processor {pid!r} failed: {error}") from error
