"""The traditional engine: processors scheduled on a thread pool, as NiFi schedules them.

Each processor runs when `scheduling.decide` says so: it has input (or is a source),
its run schedule and yield have passed, fewer than `concurrent_tasks` of its tasks are
running, and no outgoing connection is under back-pressure. A task runs `on_trigger`
with a fresh `ProcessSession` over a `DurableCommitter`; a session the processor did
not commit is committed for it, and a task that raised is rolled back and the
processor yields (administrative yield). A task that did nothing backs off for the
bored-yield time (10 ms, as NiFi's default), so idle sources do not spin.

A FlowFile that makes its processor fail every time is penalized as its session rolls
back, after `max_rollbacks` rollbacks in a row (at once when the failure names it:
content that cannot be read), so that the FlowFiles behind it go on; a failing batch
is retried one FlowFile per session to find which one it is (`flow.rollbacks`).
Failures that are not a FlowFile's (storage down or full, a fenced shard) are never
counted against it. Failures that repeat with every task (a full content repository,
unreadable content a processor does not route) are logged at most once a minute
(`LimitedLog`).

A processor can be stopped and started again while the engine runs, as NiFi's are
(`stop_processor`, `start_processor`): a stopped one gets no new task, its running
tasks finish their sessions, and its `on_stopped` is called once the last one has
ended; its state (`status()`) goes RUNNING -> STOPPING -> STOPPED. The engine keeps
it in memory; whoever asks for it keeps it for the next engine, as NiFi keeps it in
its flow.json.gz (the node: `cluster.core.run_states`), and gives the processors to
start stopped (`stopped`): they are not scheduled until `start_processor`. A stopped
processor may run one task, as NiFi's Run Once (`run_once`), and stays stopped.

Each processor's statistics (`flow.processor_stats`: in, read, written, out, tasks and
their time, FlowFiles routed to failure, over five minutes and since start, and its
last bulletin) are recorded once per task from its session's counts, and shown in
`status()`.

Lock plan: `_condition` guards `_dirty` and every `_Node`'s `running`, `state`,
`not_before`, `rollbacks`; the dispatcher thread waits on it; queue arrivals and task ends notify it.
A `_Node`'s `stats` has its own lock, taken once per task.
`_control` serialises `start`, `stop_processor`, `start_processor` and `run_once`, and the
end of the last task of a processor being stopped, so that `on_scheduled` and
`on_stopped` never run twice for one start or stop, and a processor is STOPPED only once
its `on_stopped` has ended (reentrant: an executor may run a task on the thread that
submitted it).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TYPE_CHECKING

from repositories.content.errors import (
    ContentRepositoryFull,
    ContentStorageFull,
    ContentUnavailable,
    ContentWriteFailed,
    ReplicaDiverged,
    RepositoryClosed,
)
from repositories.log_limits import LimitedLog
from repositories.storage import StorageError

from .commit import CommitHooks, DurableCommitter
from .commit_gate import CommitGate
from .cron import parse_cron
from .errors import CommitError, NotAdmitted, ProcessorStateError, ServiceError, UnreadableContent
from .graph import FlowGraph, wall_clock_ms
from .processor import ProcessContext
from .processor_stats import ProcessorStats, error_bulletin, failure_bulletin
from .rollbacks import RollbackWatch, Verdict
from .scheduling import ScheduleState, decide
from .services import ServiceRegistry
from .session import ProcessSession
from .stateless import StatelessFlowLoader
from .workers import SOLE_WORKER, Worker

if TYPE_CHECKING:
    from repositories.content import ContentStore

log = logging.getLogger(__name__)

DEFAULT_THREADS = 4  # task threads of an engine (a node's `threads`)

BORED_YIELD_S = 0.010
MAX_WAIT_S = 0.05

RUNNING, STOPPING, STOPPED = "RUNNING", "STOPPING", "STOPPED"

# Failures that say nothing about the FlowFiles of the session: the node's storage or
# ownership. Never counted against them (`flow.rollbacks`): every FlowFile would be
# penalized through an outage.
_NOT_THE_FLOWFILES = (
    CommitError,
    NotAdmitted,
    ServiceError,
    StorageError,
    ContentUnavailable,
    ContentRepositoryFull,
    ContentStorageFull,
    ContentWriteFailed,
    ReplicaDiverged,
    RepositoryClosed,
)
_FULL = (ContentRepositoryFull, ContentStorageFull)
# The content storage is down or fails writes (HDFS unreachable, a pipeline that broke).
_CONTENT_OUTAGES = (ContentUnavailable, ContentWriteFailed)
# Failures of the node's storage to write: a task that met one yields from when it began.
_STORAGE_FAILURES = (CommitError, StorageError, ContentUnavailable, ContentWriteFailed)


class _Node:
    def __init__(self, processor_id, processor, definition, incoming, outgoing, context, stats):
        self.id = processor_id
        self.processor = processor
        self.definition = definition
        self.incoming = incoming
        self.outgoing = outgoing
        self.all_outgoing = [q for queues in outgoing.values() for q in queues]
        self.context = context
        self.running = 0
        self.not_before = 0.0
        self.tasks = 0
        self.failures = 0
        self.last_error: str | None = None
        self.state = RUNNING  # RUNNING, STOPPING (tasks still running) or STOPPED
        self.rollbacks = RollbackWatch(definition.scheduling.max_rollbacks)
        self.cron = parse_cron(definition.scheduling.cron) if definition.scheduling.cron else None
        self.stats: ProcessorStats = stats  # its five minutes and since start (`flow.processor_stats`)


class TraditionalEngine:
    """Runs the processors of `graph` over one shard and its repositories.

    `commit_gate` is the node's production gate on every commit (`flow.commit_gate.CommitGate`),
    `commit_hooks` the fault seams a test drives (`flow.commit.CommitHooks`), `services`
    the node's shared services (`flow.services.ServiceRegistry`), which every processor's
    context looks up and which the node, not the engine, closes."""

    def __init__(
        self,
        graph: FlowGraph,
        shard,
        content: ContentStore,
        provenance,
        *,
        threads: int = DEFAULT_THREADS,
        executor: Executor | None = None,
        clock: Callable[[], float] = time.monotonic,
        clock_ms: Callable[[], int] = wall_clock_ms,
        commit_gate: CommitGate | None = None,
        commit_hooks: CommitHooks | None = None,
        services: ServiceRegistry | None = None,
        outbox: bool = True,
        run_sources: bool = True,
        hold_sources: bool = False,
        stopped: Iterable[str] = (),
        worker: Worker = SOLE_WORKER,
    ):
        self.graph = graph
        self.worker = worker
        self.shard = shard
        self.content = content
        self.provenance = provenance
        self.services = services
        self.committer = DurableCommitter(
            shard, content, provenance, clock_ms=clock_ms, gate=commit_gate, hooks=commit_hooks, outbox=outbox
        )
        self._clock = clock
        self._clock_ms = clock_ms
        self._own_executor = executor is None
        self._executor = executor or ThreadPoolExecutor(max_workers=threads, thread_name_prefix="flow-task")
        self._condition = threading.Condition()
        self._dirty = False
        self._running = False
        self._paused = False
        self._outage_logged = False
        self._limited_log = LimitedLog(log)
        # False for a shard a clustered node adopted: it drains, it takes no new input.
        self.run_sources = run_sources
        self._dispatcher: threading.Thread | None = None
        self.nodes: dict[str, _Node] = {}
        flows = StatelessFlowLoader(graph.definition.registry, services=services, clock_ms=clock_ms)
        for pid, processor in graph.processors.items():
            definition = graph.definition.processors[pid]
            node = _Node(
                pid, processor, definition, graph.incoming[pid], graph.outgoing[pid], None, ProcessorStats(clock)
            )
            if node.cron is not None:
                node.not_before = self._next_cron(node)
            node.context = ProcessContext(
                pid,
                definition.properties,
                definition.dynamic,
                yield_callback=self._yielder(node),
                has_incoming=bool(graph.incoming[pid]),
                clock_ms=clock_ms,
                services=services,
                stateless_flows=flows,
                worker=worker,
            )
            self.nodes[pid] = node
        # The processors this engine runs: all of them, or, on a shard that only drains
        # (`run_sources=False`), all but the sources with no input. A processor that never
        # runs is never scheduled either: a ListenHTTP of an adopted shard must not bind
        # the port its node's home shard holds. Held sources (`hold_sources`) join once
        # `release_sources()` is called.
        sources = [node for node in self.nodes.values() if node.processor.is_source and not node.incoming]
        # A source that cannot split its input over a node's workers runs in worker 0 only
        # (`flow.workers`), as NiFi's primary-node-only processors do.
        sources_here = [
            node
            for node in sources
            if run_sources
            and worker.runs_in(node.processor.type_name, is_source=True, properties=node.context.properties)
        ]
        self._held = sources_here if hold_sources else []
        self._runs = [
            node for node in self.nodes.values() if node not in sources or (node in sources_here and not hold_sources)
        ]
        for node in self.nodes.values():
            if node not in self._runs and node not in self._held:
                node.state = STOPPED  # never runs on this shard
        for processor_id in stopped:
            if processor_id in self.nodes:  # one the flow no longer has is ignored
                self.nodes[processor_id].state = STOPPED  # an operator stopped it: not scheduled at start
        self._started = False
        self._control = threading.RLock()
        for queue in graph.queues.values():
            queue.add_listener(self._on_queue_change)

    @property
    def clock_ms(self) -> Callable[[], int]:
        """The engine's wall clock (ms), which its sessions stamp FlowFiles with."""
        return self._clock_ms

    def _yielder(self, node: _Node):
        def yield_() -> None:
            with self._condition:
                node.not_before = max(node.not_before, self._clock() + node.definition.scheduling.yield_s)

        return yield_

    def _on_queue_change(self, queue) -> None:
        with self._condition:
            self._dirty = True
            self._condition.notify()

    # -- lifecycle ----------------------------------------------------------------

    def start(self) -> None:
        """Schedule every processor this engine runs (`on_scheduled`), then dispatch.
        If one fails to schedule, those scheduled already are stopped again and the
        error is raised: the engine does not run half a flow."""
        scheduled = []
        with self._control:
            try:
                for node in self._runs:
                    if node.state == RUNNING:
                        node.processor.on_scheduled(node.context)
                        scheduled.append(node)
            except BaseException:
                self._stop_processors(scheduled)
                raise
            self._started = self._running = True
        self._dispatcher = threading.Thread(target=self._dispatch_loop, name="flow-dispatcher", daemon=True)
        self._dispatcher.start()

    def release_sources(self) -> None:
        """Schedule and run the sources held back at construction (`hold_sources`): a
        clustered node's new home shard holds them until it has taken over what its
        previous incarnation's sources recorded. If one fails to schedule, it stays held
        (and those released before it run) and the error is raised."""
        with self._control:
            with self._condition:
                held, self._held = self._held, []
                started = self._started
            for index, node in enumerate(held):
                if started and node.state == RUNNING:
                    try:
                        node.processor.on_scheduled(node.context)
                    except BaseException:
                        with self._condition:
                            self._held = held[index:] + self._held
                        raise
                with self._condition:
                    self._runs = self._runs + [node]
                    self._dirty = True
                    self._condition.notify()

    @property
    def sources_held(self) -> bool:
        with self._condition:
            return bool(self._held)

    def pause(self) -> None:
        """Start no new task (running ones finish or fail their commits)."""
        with self._condition:
            self._paused = True

    def resume(self) -> None:
        with self._condition:
            self._paused = False
            self._dirty = True
            self._condition.notify()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop scheduling, wait for running tasks to finish their sessions, stop processors."""
        with self._condition:
            self._running = False
            self._condition.notify_all()
        if self._dispatcher is not None:
            self._dispatcher.join(timeout)
        deadline = self._clock() + timeout
        stuck = False
        with self._condition:
            while any(node.running for node in self.nodes.values()):
                left = deadline - self._clock()
                if left <= 0:
                    log.warning(
                        "tasks still running after %g s, left behind: %s",
                        timeout,
                        [n.id for n in self.nodes.values() if n.running],
                    )
                    stuck = True
                    break
                self._condition.wait(min(left, 0.1))
        with self._control:
            with self._condition:
                started, self._started = self._started, False
                # A processor stopped through `stop_processor` had its on_stopped already.
                stopping = [node for node in self._runs if node.state != STOPPED] if started else []
                for node in stopping:
                    node.state = STOPPED
            self._stop_processors(stopping)
        if self._own_executor:
            # A task stuck in storage (a commit waiting on a dead DataNode) must not
            # hold the stop up for ever: its session can no longer commit once the
            # caller closes the WAL. (`custody node` exits without such threads.)
            self._executor.shutdown(wait=not stuck, cancel_futures=stuck)

    def _stop_processors(self, nodes: list[_Node]) -> None:
        for node in nodes:
            try:
                node.processor.on_stopped(node.context)
            except Exception:  # noqa: BLE001
                log.exception("%s: on_stopped failed", node.id)

    # -- one processor ------------------------------------------------------------

    def stop_processor(self, processor_id: str, timeout: float = 30.0) -> str:
        """Stop scheduling `processor_id`; wait up to `timeout` for its running tasks to
        end, then call its `on_stopped`. Returns its state: STOPPED, or STOPPING when
        tasks still run (the last one to end calls `on_stopped`). Stopping a stopped
        processor changes nothing."""
        node = self._node(processor_id)
        with self._condition:
            if node.state == RUNNING:
                node.state = STOPPING
            deadline = self._clock() + timeout
            while node.running and (left := deadline - self._clock()) > 0:
                self._condition.wait(min(left, 0.1))
        with self._control:
            with self._condition:
                finished = self._finish_stop_locked(node)
            if finished:
                self._stop_processors([node])
            return node.state

    def start_processor(self, processor_id: str) -> str:
        """Schedule `processor_id` again (`on_scheduled`, then tasks as usual). Starting
        a running processor changes nothing; `ProcessorStateError` while it is still
        stopping, when it never runs on this shard, or when `on_scheduled` raised (it
        stays STOPPED)."""
        node = self._node(processor_id)
        with self._control:
            with self._condition:
                state, running = node.state, node.running
                runs = node in self._runs or node in self._held
                scheduled_now = self._started and node in self._runs
            if state == RUNNING:
                return RUNNING
            if not runs:
                raise ProcessorStateError(
                    f"{processor_id} does not run on shard {self.shard.id}: an adopted "
                    "shard drains its queues without its sources"
                )
            if state == STOPPING:
                raise ProcessorStateError(
                    f"{processor_id} is still stopping: {running} of its tasks are running; "
                    "start it once they have ended"
                )
            if scheduled_now:
                try:
                    node.processor.on_scheduled(node.context)
                except Exception as error:
                    raise ProcessorStateError(
                        f"{processor_id} could not be scheduled, it stays STOPPED: {type(error).__name__}: {error}"
                    ) from error
            with self._condition:
                node.state = RUNNING
                if node.cron is not None:
                    node.not_before = self._next_cron(node)
                self._dirty = True
                self._condition.notify()
            return RUNNING

    def run_once(self, processor_id: str, timeout: float = 30.0) -> str:
        """NiFi's Run Once: one task of a STOPPED processor (`on_scheduled`, one
        `on_trigger` in a session of its own, then `on_stopped`), after which it is
        STOPPED again; nothing else schedules it meanwhile. Waits up to `timeout` for
        the task to end and returns the state: STOPPED, or STOPPING while the task still
        runs (its end calls `on_stopped`, as a stop's last task does).
        `ProcessorStateError` when the processor is not STOPPED (stop it first), does
        not run on this shard, or the engine is not running its tasks (not started,
        paused, stopping); also when `on_scheduled` raised (no task ran)."""
        node = self._node(processor_id)
        with self._control:
            with self._condition:
                state = node.state
                refusal = None
                if state != STOPPED:
                    refusal = f"{processor_id} is {state}: stop it first; Run Once runs a stopped processor"
                elif node not in self._runs:
                    refusal = f"{processor_id} does not run on shard {self.shard.id} (now)"
                elif not (self._started and self._running) or self._paused:
                    refusal = f"shard {self.shard.id} runs no task now (it is starting, paused or stopping)"
            if refusal is not None:
                raise ProcessorStateError(refusal)
            try:
                node.processor.on_scheduled(node.context)
            except Exception as error:
                raise ProcessorStateError(
                    f"{processor_id} could not be scheduled, no task ran: {type(error).__name__}: {error}"
                ) from error
            # STOPPING with one task: the dispatcher schedules nothing more, and the task's
            # end turns it STOPPED and calls on_stopped (`_finish_stop_locked`), as a stop does.
            with self._condition:
                node.state = STOPPING
                node.running += 1
                node.tasks += 1
            try:
                self._executor.submit(self._run_task, node)
            except RuntimeError as error:  # the executor was shut down: the engine stops
                with self._condition:
                    node.running -= 1
                    node.tasks -= 1
                    node.state = STOPPED
                self._stop_processors([node])
                raise ProcessorStateError(f"shard {self.shard.id} runs no task now: {error}") from None
        with self._condition:
            deadline = self._clock() + timeout
            while node.state != STOPPED and (left := deadline - self._clock()) > 0:
                self._condition.wait(min(left, 0.1))
            return node.state

    def processor_states(self) -> tuple[dict[str, str], frozenset[str]]:
        """Each processor's state (RUNNING, STOPPING, STOPPED), and the processors that
        run on this shard at all (an adopted shard never runs its sources)."""
        with self._condition:
            return (
                {node.id: node.state for node in self.nodes.values()},
                frozenset(node.id for node in self._runs + self._held),
            )

    def _node(self, processor_id: str) -> _Node:
        node = self.nodes.get(processor_id)
        if node is None:
            raise KeyError(processor_id)
        return node

    def _finish_stop_locked(self, node: _Node) -> bool:
        """STOPPING with no task left becomes STOPPED; True when `on_stopped` is due
        (it is not for a processor that was never scheduled)."""
        if node.state != STOPPING or node.running:
            return False
        node.state = STOPPED
        return self._started and node in self._runs

    # -- dispatching --------------------------------------------------------------

    def _state_of(self, node: _Node, now_ms: int) -> ScheduleState:
        has_input = False
        next_penalty = None
        for queue in node.incoming:
            if queue.has_available(now_ms):
                has_input = True
                break
            expiry = queue.next_penalty_expiration()
            if expiry is not None:
                at = self._clock() + max(0, expiry - now_ms) / 1000
                next_penalty = at if next_penalty is None else min(next_penalty, at)
            if queue.has_swapped():
                # Only swapped (or staging) FlowFiles left: polling swaps them in.
                has_input = True
                break
        outputs_full = any(queue.is_full() for queue in node.all_outgoing)
        return ScheduleState(
            node.running,
            node.definition.scheduling.concurrent_tasks,
            node.not_before,
            node.processor.is_source and not node.incoming,
            has_input,
            next_penalty,
            outputs_full,
        )

    def _dispatch_loop(self) -> None:
        condition = self._condition
        while True:
            with condition:
                if not self._running:
                    return
                self._dirty = False
                now = self._clock()
                now_ms = self._clock_ms()
                wake = now + MAX_WAIT_S
                to_run = []
                for node in self._runs if not self._paused else ():
                    if node.state != RUNNING:
                        continue
                    decision = decide(self._state_of(node, now_ms), now)
                    if decision.run:
                        node.running += 1
                        node.tasks += 1
                        schedule = node.definition.scheduling.run_schedule_s
                        if node.cron is not None:
                            node.not_before = self._next_cron(node)
                        elif schedule:
                            node.not_before = now + schedule
                        to_run.append(node)
                    elif decision.wake_at is not None:
                        wake = min(wake, decision.wake_at)
            for node in to_run:
                try:
                    self._executor.submit(self._run_task, node)
                except RuntimeError:  # executor shut down
                    with condition:
                        node.running -= 1
                    return
            with condition:
                if not self._dirty and self._running and not to_run:
                    condition.wait(max(0.0, wake - self._clock()))

    def _next_cron(self, node: _Node) -> float:
        """The engine's clock at the next time of `node`'s cron schedule (infinity: never
        again). The schedule is wall-clock time; the engine waits on a monotonic clock."""
        wall = self._clock_ms() / 1000
        fire = node.cron.next_after(wall) if node.cron is not None else None
        return math.inf if fire is None else self._clock() + (fire - wall)

    def _new_session(self, node: _Node) -> ProcessSession:
        definition = node.definition
        with self._condition:
            max_polled = node.rollbacks.polled_limit
        return ProcessSession(
            component_id=node.id,
            component_type=definition.type,
            committer=self.committer,
            content=self.content,
            shard=self.shard,
            incoming=node.incoming,
            outgoing=node.outgoing,
            auto_terminated=definition.auto_terminate,
            clock_ms=self._clock_ms,
            gate=self.committer.gate,
            penalty_ms=int(definition.scheduling.penalty_s * 1000),
            max_polled=max_polled,
        )

    def _roll_back(self, node: _Node, session: ProcessSession, error: Exception) -> None:
        """Roll back the session of a task that raised `error`, penalizing the FlowFiles
        `node.rollbacks` says hold the queue up. A session already closed (its commit
        failed and rolled it back) has nothing left to penalize."""
        held = session.polled_ids
        if session.is_closed or not held or isinstance(error, _NOT_THE_FLOWFILES):
            session.rollback()
            return
        unreadable = _unreadable_in(error)
        with self._condition:
            verdict = node.rollbacks.rolled_back(held, unreadable.flowfile.id if unreadable is not None else None)
        session.rollback(penalize=verdict.penalize)
        self._report(node, verdict, unreadable, error)

    def _report(self, node: _Node, verdict: Verdict, unreadable: UnreadableContent | None, error: Exception) -> None:
        penalty = node.definition.scheduling.penalty_s
        for flowfile_id in verdict.report:
            if unreadable is not None:
                self._limited_log.error(
                    f"{node.id}:unreadable",
                    "%s: the content of FlowFile %s cannot be read (%s) and %s does not "
                    "route it to failure: it is penalized for %.0f s so that the FlowFiles behind it go on, and "
                    "stays in its queue. Restore its content (`custody content fsck` names the damaged files) or "
                    "drop it",
                    node.id,
                    flowfile_id,
                    unreadable.reason,
                    node.definition.type,
                    penalty,
                )
            else:
                self._limited_log.error(
                    f"{node.id}:poison",
                    "%s: FlowFile %s rolled back its session %d times in a row (last: %s: %s); "
                    "it is penalized for %.0f s so that the FlowFiles behind it go on, and tried again after that. "
                    "It stays in its queue: find it there, and fix what fails on it or drop it",
                    node.id,
                    flowfile_id,
                    node.rollbacks.max_rollbacks,
                    type(error).__name__,
                    str(error).splitlines()[0][:400] if str(error) else "",
                    penalty,
                )

    def _run_task(self, node: _Node) -> None:
        began = self._clock()
        session = self._new_session(node)
        bored = False
        bulletin = None
        try:
            node.processor.on_trigger(node.context, session)
            if not session.is_closed:
                if session.touched:
                    session.commit()
                else:
                    session.rollback()
                    bored = True
        except Exception as error:  # noqa: BLE001 - any processor failure rolls back
            self._roll_back(node, session, error)
            node.failures += 1
            message = f"{type(error).__name__}: {error}"
            bulletin = error_bulletin(error, self._clock_ms(), _flowfile_of(error, session))
            if isinstance(error, CommitError):
                # The committer said it, once per run of failures (storage down, a fenced shard).
                log.debug("%s: %s; the session was rolled back", node.id, error)
            elif isinstance(error, NotAdmitted):
                # A processor asked before its side effect (`check_admitted`) and the gate
                # refused: the node was deposed, or its storage is down. Not its bug: one
                # line a minute, no traceback.
                self._limited_log.warning(
                    f"{node.id}:not-admitted",
                    "%s: %s; the session was rolled back and its FlowFiles stay queued",
                    node.id,
                    str(error).splitlines()[0][:400],
                )
            elif isinstance(error, UnreadableContent):
                pass  # `_report` said it, once per FlowFile
            elif isinstance(error, _FULL):
                # Every task that writes fails the same way until space is freed: one line a minute.
                self._limited_log.error(
                    "content-full",
                    "%s: %s; the session was rolled back, nothing is lost, and it is retried",
                    node.id,
                    str(error).splitlines()[0][:400],
                )
            elif isinstance(error, _CONTENT_OUTAGES):
                # One line per outage for the whole flow, not one per processor and attempt
                # (nor a traceback: each write names another file, so each would differ).
                if not self._outage_logged:
                    self._outage_logged = True
                    log.error(
                        "%s: %s; the session was rolled back, nothing is lost, and it is retried",
                        node.id,
                        str(error).splitlines()[0][:400],
                    )
            elif message != node.last_error:
                log.exception("%s failed; the session was rolled back and the processor yields", node.id)
            node.last_error = message
            # A task that failed on its storage may have waited out the storage's deadline
            # first (an hsync on a pipeline whose DataNode died): it yields until `yield_s`
            # after it began, not after it failed, so that wait is not followed by another.
            since = began if isinstance(error, _STORAGE_FAILURES) else self._clock()
            with self._condition:
                node.not_before = max(node.not_before, since + node.definition.scheduling.yield_s)
        else:
            node.last_error = None
            held = session.polled_ids
            if held and node.rollbacks.active:  # read without the lock: see `RollbackWatch.active`
                with self._condition:
                    if session.is_committed:
                        node.rollbacks.committed(held)
                    else:
                        node.rollbacks.ended_without_commit(held)
            if self._outage_logged and not bored:
                self._outage_logged = False
                log.warning("%s: content storage works again", node.id)
        finally:
            # One record per task, its session's counts if it committed (`session.counts`).
            counts = session.counts
            if bulletin is None and counts is not None and counts.failed is not None:
                bulletin = failure_bulletin(counts, self._clock_ms(), node.id)
            node.stats.record(counts, self._clock() - began, bulletin)
            with self._condition:
                node.running -= 1
                if bored:
                    node.not_before = max(node.not_before, self._clock() + BORED_YIELD_S)
                last = node.state == STOPPING and not node.running
                self._dirty = True
                self._condition.notify_all()  # the dispatcher, and a stop_processor waiting
            if last:
                # The last task of a processor being stopped: it or the stop that waited
                # for it, whichever takes `_control` first, turns it STOPPED and runs its
                # `on_stopped`, under `_control`. So STOPPED is never seen before its
                # `on_stopped` has ended: a start right after the stop (a hand-over's merge)
                # found a ListenHTTP whose socket was still open ("Address already in use").
                with self._control:
                    with self._condition:
                        stopped = self._finish_stop_locked(node)
                    if stopped:
                        self._stop_processors([node])

    # -- status -------------------------------------------------------------------

    def status(self) -> dict:
        return {
            "processors": {
                n.id: {
                    "type": n.definition.type,
                    "state": n.state,
                    "tasks": n.tasks,
                    "failures": n.failures,
                    "running": n.running,
                    "last_error": n.last_error,
                    **n.stats.snapshot(),
                }
                for n in self.nodes.values()
            },
            "queues": {
                q.id: {**q.summary().to_dict(), "back_pressure": q.is_full()} for q in self.graph.queues.values()
            },
        }

    def is_idle(self) -> bool:
        """No task running and no FlowFile queued anywhere."""
        with self._condition:
            if any(node.running for node in self.nodes.values()):
                return False
        return all(queue.is_empty() for queue in self.graph.queues.values())


def _flowfile_of(error: BaseException, session: ProcessSession) -> str | None:
    """The id of the FlowFile a task's `error` was about, when known: the one whose
    content could not be read, or the only one the session held."""
    unreadable = _unreadable_in(error)
    if unreadable is not None:
        return unreadable.flowfile.id
    polled = session.polled_ids
    return polled[0] if len(polled) == 1 else None


def _unreadable_in(error: BaseException | None) -> UnreadableContent | None:
    """The `UnreadableContent` that `error` is, or was raised from (`raise ... from`: a
    processor may wrap it), if any. Not one merely handled before `error` was raised."""
    for _ in range(8):
        if error is None or isinstance(error, UnreadableContent):
            return error
        error = error.__cause__
    return None
