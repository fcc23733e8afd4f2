"""`SessionGuard`: the runner of `cluster.core.guard` over a kazoo session.

It feeds kazoo's state changes (SUSPENDED, LOST, CONNECTED), a ticker, and the
round trips that prove the session alive (its own probes, and the heartbeats
`Membership` reports) into the pure `GuardState`, and carries out the instructions
that come back by calling the node's `GuardCallbacks`, on a thread of its own.
Each decision that yields instructions gets a step id, `<subject>:guard-<n>`
(`cluster.core.story`), in its log lines and in the reason a death is given.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kazoo.protocol.states import KazooState

from ..core.guard import GATE_FRACTION, PROBE_FRACTION, TICK_FRACTION, GuardState, Instruction, Phase
from ..core.story import step_id, tag
from ..errors import SessionExpiredError, WorkGateClosed
from .kazoo_errors import translates_kazoo

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)


@dataclass
class GuardCallbacks:
    """What the node does on each instruction. Called on the guard's own thread,
    never on kazoo's event thread, and never concurrently."""

    close_gate: Callable[[], None] = lambda: None
    open_gate: Callable[[], None] = lambda: None
    abort_open_sessions: Callable[[], None] = lambda: None
    abort_all: Callable[[str], None] = lambda reason: None


@translates_kazoo
class SessionGuard:
    """The runner. Lock plan: `_lock` guards `_state` (short critical sections only);
    callbacks run on the guard thread outside the lock, in the order decided."""

    def __init__(
        self,
        client: KazooClient,
        probe_path: str,
        timeout: float,
        callbacks: GuardCallbacks,
        *,
        clock=time.monotonic,
        gate_fraction: float = GATE_FRACTION,
        name: str = "session-guard",
        subject: str = "",
        granted_timeout: Callable[[], float | None] | None = None,
    ):
        self.client, self.probe_path, self.timeout, self.callbacks = client, probe_path, timeout, callbacks
        # The session timeout the server granted at the client's latest connect, read as
        # each (re)connect is reported (`GuardState.on_granted`); None: not checked.
        self._granted = granted_timeout or (lambda: None)
        self.subject = subject or probe_path.rsplit("/", 1)[-1]  # the incarnation, whose znode it probes
        self._clock = clock
        self._lock = threading.Lock()
        self._state = GuardState.connected(timeout, clock(), gate_fraction)
        self._decisions = 0
        self._pending: list[tuple[Instruction, str, str]] = []
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._last_probe = 0.0

    # -- public ---------------------------------------------------------------------
    def start(self) -> None:
        def listener(state):
            now = self._clock()
            if state == KazooState.SUSPENDED:
                self._feed(lambda s: s.on_suspended(now))
            elif state == KazooState.LOST:
                self._feed(lambda s: s.on_lost(now))
            elif state == KazooState.CONNECTED:
                granted = self._granted()
                self._feed(lambda s: s.on_connected(now, granted))

        self._listener = listener
        self.client.add_listener(listener)
        # A reconnect between the client's first connect and now was reported to nobody.
        granted = self._granted()
        self._feed(lambda s: s.on_granted(granted))
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        try:
            self.client.remove_listener(self._listener)
        except Exception:  # noqa: BLE001 - already removed or never added
            pass
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    @property
    def state(self) -> GuardState:
        with self._lock:
            return self._state

    def may_work(self) -> bool:
        with self._lock:
            return self._state.may_work(self._clock())

    def check(self) -> None:
        """Raise `WorkGateClosed` (or `SessionExpiredError` when over) unless work may go on."""
        with self._lock:
            now = self._clock()
            if self._state.may_work(now):
                return
            if self._state.phase is Phase.EXPIRED or self._state.proof_age(now) >= self.timeout:
                raise SessionExpiredError(None, self._state.refusal(now))
            raise WorkGateClosed(self._state.refusal(now))

    def confirmed(self, sent_at: float) -> None:
        """Another round trip (a heartbeat) that succeeded, sent at `sent_at` (guard clock)."""
        self._feed(lambda s: s.on_confirmed(sent_at, self._clock()))

    @property
    def expired(self) -> bool:
        return self.state.phase is Phase.EXPIRED

    # -- internals ---------------------------------------------------------------------
    def _feed(self, event) -> None:
        with self._lock:
            before = self._state
            self._state, instructions = event(self._state)
            reason = self._state.reason
            step = ""
            if instructions:
                self._decisions += 1
                step = step_id(self.subject, f"guard-{self._decisions}")
            self._pending.extend((instruction, reason, step) for instruction in instructions)
        if before.phase != self._state.phase:
            log.info(
                "%ssession guard: %s -> %s%s",
                f"{tag(step)} " if step else "",
                before.phase.value,
                self._state.phase.value,
                f" ({self._state.reason})" if self._state.reason else "",
            )
        if instructions:
            self._wake.set()

    def _run(self) -> None:
        tick = self.timeout * TICK_FRACTION
        while not self._stopped.is_set():
            self._wake.wait(tick)
            self._wake.clear()
            now = self._clock()
            self._feed(lambda s, now=now: s.on_tick(now))
            if now - self._last_probe >= self.timeout * PROBE_FRACTION and self.state.phase is not Phase.EXPIRED:
                self._last_probe = now
                self._probe(now)
            with self._lock:
                pending, self._pending = self._pending, []
            for instruction, reason, step in pending:
                self._carry_out(instruction, reason, step)

    def _probe(self, sent_at: float) -> None:
        try:
            result = self.client.exists_async(self.probe_path)
        except Exception:  # noqa: BLE001 - not connected: the deadlines decide
            return

        def done(async_result):
            try:
                async_result.get(block=False)
            except Exception:  # noqa: BLE001 - a failed probe proves nothing
                return
            self.confirmed(sent_at)

        result.rawlink(done)

    def _carry_out(self, instruction: Instruction, reason: str, step: str) -> None:
        try:
            if instruction is Instruction.CLOSE_GATE:
                log.warning("%s work gate closed: %s", tag(step), reason or "session not confirmed")
                self.callbacks.close_gate()
            elif instruction is Instruction.OPEN_GATE:
                log.info("%s work gate open again: session confirmed", tag(step))
                self.callbacks.open_gate()
            elif instruction is Instruction.ABORT_OPEN_SESSIONS:
                log.warning("%s aborting open sessions: %s", tag(step), reason)
                self.callbacks.abort_open_sessions()
            elif instruction is Instruction.ABORT_ALL:
                log.error("%s session over, aborting everything: %s", tag(step), reason)
                self.callbacks.abort_all(f"{tag(step)} {reason}")
        except Exception:  # noqa: BLE001 - one failing callback must not stop the guard
            log.exception("session guard callback %s failed", instruction.value)
