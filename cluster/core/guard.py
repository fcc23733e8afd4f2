"""Stop when deposed: a node works only while its ZooKeeper session is confirmed alive.

kazoo tells a client SUSPENDED when the connection drops and LOST once the server
says the session expired, but it keeps no expiry timer of its own: a client cut off
from the ensemble (or frozen by SIGSTOP) hears nothing, and may go on working after
the ensemble declared it dead and gave its shards away. So the guard keeps its own
timer, the way Chubby's client keeps a lease:

* every round trip the node makes (a probe, a heartbeat) proves the session was
  alive when the request was *sent*: the server measures expiry from the last
  request it received, so the session lives at least until `sent + session_timeout`;
* the **work gate** is open only while the session is CONNECTED *and* the last
  proof is younger than `gate_fraction` × timeout (default 1/4, well before 1/3);
* when it is older (or on SUSPENDED), the gate closes at once: no new work starts;
  open sessions are aborted (rolled back) once the proof is `gate_fraction` old;
* when the proof is a whole timeout old, or on LOST, the session is over: the guard
  aborts everything and is dead for good; the process may rejoin only as a new
  incarnation.

`may_work(now)` is computed from the clock at the moment of the call, not from the
last tick, so a process that wakes from SIGSTOP refuses its very next commit even
before any tick has run.

The decisions are pure (`GuardState.on_*` return the new state and instructions);
`SessionGuard` is the runner that feeds kazoo's events and a ticker in, and calls
the node's callbacks. Time is injected.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable

log = logging.getLogger(__name__)

GATE_FRACTION = 0.25      # close the gate and abort open sessions at 1/4 of the timeout
PROBE_FRACTION = 0.1      # probe the session every 1/10 of the timeout
TICK_FRACTION = 0.05


class Phase(str, enum.Enum):
    CONNECTED = "connected"
    SUSPENDED = "suspended"
    EXPIRED = "expired"  # final


class Instruction(str, enum.Enum):
    CLOSE_GATE = "close_gate"            # stop taking new work
    OPEN_GATE = "open_gate"              # the session is confirmed again: resume
    ABORT_OPEN_SESSIONS = "abort_open_sessions"  # roll back work in flight
    ABORT_ALL = "abort_all"              # the session is over: abort everything, stop


@dataclass(frozen=True)
class GuardState:
    timeout: float
    phase: Phase
    confirmed_at: float          # send time of the last successful round trip
    gate_open: bool = True
    aborted_open: bool = False
    reason: str = ""
    gate_fraction: float = GATE_FRACTION

    @classmethod
    def connected(cls, timeout: float, now: float, gate_fraction: float = GATE_FRACTION) -> "GuardState":
        return cls(timeout, Phase.CONNECTED, now, gate_fraction=gate_fraction)

    # -- queries ---------------------------------------------------------------------
    def proof_age(self, now: float) -> float:
        return now - self.confirmed_at

    def may_work(self, now: float) -> bool:
        return self.phase is Phase.CONNECTED and self.gate_open and self.proof_age(now) < self.timeout * self.gate_fraction

    def refusal(self, now: float) -> str:
        if self.phase is Phase.EXPIRED:
            return f"the session is over ({self.reason})"
        if self.phase is Phase.SUSPENDED:
            return "the ZooKeeper connection is suspended"
        return f"the session was last confirmed {self.proof_age(now):.2f}s ago"

    # -- events ----------------------------------------------------------------------
    def on_confirmed(self, sent_at: float, now: float) -> tuple["GuardState", list[Instruction]]:
        """A round trip sent at `sent_at` came back."""
        if self.phase is Phase.EXPIRED:
            return self, []
        state = replace(self, confirmed_at=max(self.confirmed_at, sent_at))
        return state._reopen_if_fresh(now)

    def on_connected(self, now: float) -> tuple["GuardState", list[Instruction]]:
        """kazoo reconnected to the same session: the server just accepted it."""
        if self.phase is Phase.EXPIRED:
            return self, []
        state = replace(self, phase=Phase.CONNECTED, confirmed_at=max(self.confirmed_at, now))
        return state._reopen_if_fresh(now)

    def on_suspended(self, now: float) -> tuple["GuardState", list[Instruction]]:
        if self.phase is not Phase.CONNECTED:
            return self, []
        state = replace(self, phase=Phase.SUSPENDED, gate_open=False, reason="connection suspended")
        return state._check_deadlines(now, [Instruction.CLOSE_GATE])

    def on_lost(self, now: float) -> tuple["GuardState", list[Instruction]]:
        if self.phase is Phase.EXPIRED:
            return self, []
        return replace(self, phase=Phase.EXPIRED, gate_open=False, reason="ZooKeeper says the session expired (LOST)"), [Instruction.ABORT_ALL]

    def on_tick(self, now: float) -> tuple["GuardState", list[Instruction]]:
        return self._check_deadlines(now, [])

    # -- internals -------------------------------------------------------------------
    def _check_deadlines(self, now: float, out: list[Instruction]) -> tuple["GuardState", list[Instruction]]:
        if self.phase is Phase.EXPIRED:
            return self, out
        age = self.proof_age(now)
        state = self
        if age >= self.timeout:
            return replace(state, phase=Phase.EXPIRED, gate_open=False,
                           reason=f"no proof of life for {age:.2f}s >= session timeout {self.timeout}s (own expiry timer)"), out + [Instruction.ABORT_ALL]
        if age >= self.timeout * self.gate_fraction:
            if state.gate_open:
                state = replace(state, gate_open=False, reason=f"unconfirmed for {age:.2f}s")
                out = out + [Instruction.CLOSE_GATE]
            if not state.aborted_open:
                state = replace(state, aborted_open=True)
                out = out + [Instruction.ABORT_OPEN_SESSIONS]
        return state, out

    def _reopen_if_fresh(self, now: float) -> tuple["GuardState", list[Instruction]]:
        state, out = self._check_deadlines(now, [])
        if state.phase is Phase.CONNECTED and not state.gate_open and state.proof_age(now) < state.timeout * state.gate_fraction:
            state = replace(state, gate_open=True, aborted_open=False, reason="")
            out = out + [Instruction.OPEN_GATE]
        return state, out


@dataclass
class GuardCallbacks:
    """What the node does on each instruction. Called on the guard's own thread,
    never on kazoo's event thread, and never concurrently."""

    close_gate: Callable[[], None] = lambda: None
    open_gate: Callable[[], None] = lambda: None
    abort_open_sessions: Callable[[], None] = lambda: None
    abort_all: Callable[[str], None] = lambda reason: None


class SessionGuard:
    """The runner. Lock plan: `_lock` guards `_state` (short critical sections only);
    callbacks run on the guard thread outside the lock, in the order decided."""

    def __init__(self, client, probe_path: str, timeout: float, callbacks: GuardCallbacks, *,
                 clock=time.monotonic, gate_fraction: float = GATE_FRACTION, name: str = "session-guard"):
        self.client, self.probe_path, self.timeout, self.callbacks = client, probe_path, timeout, callbacks
        self._clock = clock
        self._lock = threading.Lock()
        self._state = GuardState.connected(timeout, clock(), gate_fraction)
        self._pending: list[tuple[Instruction, str]] = []
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._last_probe = 0.0

    # -- public ---------------------------------------------------------------------
    def start(self) -> None:
        from kazoo.protocol.states import KazooState

        def listener(state):
            now = self._clock()
            if state == KazooState.SUSPENDED:
                self._feed(lambda s: s.on_suspended(now))
            elif state == KazooState.LOST:
                self._feed(lambda s: s.on_lost(now))
            elif state == KazooState.CONNECTED:
                self._feed(lambda s: s.on_connected(now))

        self._listener = listener
        self.client.add_listener(listener)
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
        from .errors import SessionExpiredError, WorkGateClosed

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

    def wait_expired(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else self._clock() + timeout
        while not self.expired:
            remaining = None if deadline is None else deadline - self._clock()
            if remaining is not None and remaining <= 0:
                return False
            self._stopped.wait(min(0.05, remaining) if remaining is not None else 0.05)
        return True

    # -- internals ---------------------------------------------------------------------
    def _feed(self, event) -> None:
        with self._lock:
            before = self._state
            self._state, instructions = event(self._state)
            reason = self._state.reason
            self._pending.extend((instruction, reason) for instruction in instructions)
        if before.phase != self._state.phase:
            log.info("session guard: %s -> %s%s", before.phase.value, self._state.phase.value,
                     f" ({self._state.reason})" if self._state.reason else "")
        if instructions:
            self._wake.set()

    def _run(self) -> None:
        tick = self.timeout * TICK_FRACTION
        while not self._stopped.is_set():
            self._wake.wait(tick)
            self._wake.clear()
            now = self._clock()
            self._feed(lambda s: s.on_tick(now))
            if now - self._last_probe >= self.timeout * PROBE_FRACTION and self.state.phase is not Phase.EXPIRED:
                self._last_probe = now
                self._probe(now)
            with self._lock:
                pending, self._pending = self._pending, []
            for instruction, reason in pending:
                self._carry_out(instruction, reason)

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

    def _carry_out(self, instruction: Instruction, reason: str) -> None:
        try:
            if instruction is Instruction.CLOSE_GATE:
                log.warning("work gate closed: %s", reason or "session not confirmed")
                self.callbacks.close_gate()
            elif instruction is Instruction.OPEN_GATE:
                log.info("work gate open again: session confirmed")
                self.callbacks.open_gate()
            elif instruction is Instruction.ABORT_OPEN_SESSIONS:
                log.warning("aborting open sessions: %s", reason)
                self.callbacks.abort_open_sessions()
            elif instruction is Instruction.ABORT_ALL:
                log.error("session over, aborting everything: %s", reason)
                self.callbacks.abort_all(reason)
        except Exception:  # noqa: BLE001 - one failing callback must not stop the guard
            log.exception("session guard callback %s failed", instruction.value)
