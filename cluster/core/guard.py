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
  incarnation;
* the timer is only sound if ZooKeeper expires the session no sooner than `timeout`.
  The servers grant a session timeout at every connect, and may grant a re-established
  session less (an ensemble reconfigured with a lower maxSessionTimeout): a grant below
  `timeout` ends the session for this node at once (`on_granted`), as a short grant at
  the first connect stops the node from starting (`granted_timeout` says which grant).

`may_work(now)` is computed from the clock at the moment of the call, not from the
last tick, so a process that wakes from SIGSTOP refuses its very next commit even
before any tick has run.

The decisions here are pure (`GuardState.on_*` return the new state and
instructions); `cluster.zk.session.SessionGuard` is the runner that feeds kazoo's
events and a ticker in, and calls the node's callbacks. Time is an argument.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

GATE_FRACTION = 0.25  # close the gate and abort open sessions at 1/4 of the timeout
PROBE_FRACTION = 0.1  # probe the session every 1/10 of the timeout
TICK_FRACTION = 0.05


class Phase(str, enum.Enum):
    CONNECTED = "connected"
    SUSPENDED = "suspended"
    EXPIRED = "expired"  # final


class Instruction(str, enum.Enum):
    CLOSE_GATE = "close_gate"  # stop taking new work
    OPEN_GATE = "open_gate"  # the session is confirmed again: resume
    ABORT_OPEN_SESSIONS = "abort_open_sessions"  # roll back work in flight
    ABORT_ALL = "abort_all"  # the session is over: abort everything, stop


@dataclass(frozen=True)
class GuardState:
    timeout: float
    phase: Phase
    confirmed_at: float  # send time of the last successful round trip
    gate_open: bool = True
    aborted_open: bool = False
    reason: str = ""
    gate_fraction: float = GATE_FRACTION
    granted_timeout: float | None = None  # the grant below `timeout` that ended the session

    @classmethod
    def connected(cls, timeout: float, now: float, gate_fraction: float = GATE_FRACTION) -> GuardState:
        return cls(timeout, Phase.CONNECTED, now, gate_fraction=gate_fraction)

    # -- queries ---------------------------------------------------------------------
    def proof_age(self, now: float) -> float:
        return now - self.confirmed_at

    def may_work(self, now: float) -> bool:
        return (
            self.phase is Phase.CONNECTED and self.gate_open and self.proof_age(now) < self.timeout * self.gate_fraction
        )

    def refusal(self, now: float) -> str:
        if self.phase is Phase.EXPIRED:
            return f"the session is over ({self.reason})"
        if self.phase is Phase.SUSPENDED:
            return "the ZooKeeper connection is suspended"
        return f"the session was last confirmed {self.proof_age(now):.2f}s ago"

    # -- events ----------------------------------------------------------------------
    def on_confirmed(self, sent_at: float, now: float) -> tuple[GuardState, list[Instruction]]:
        """A round trip sent at `sent_at` came back."""
        if self.phase is Phase.EXPIRED:
            return self, []
        state = replace(self, confirmed_at=max(self.confirmed_at, sent_at))
        return state._reopen_if_fresh(now)

    def on_granted(self, granted: float | None) -> tuple[GuardState, list[Instruction]]:
        """ZooKeeper granted the session `granted` seconds at its latest connect (None: not
        known). Less than `timeout`: the ensemble would declare the node dead before this
        timer does, and the node would work on meanwhile; the session is over for it."""
        if granted is None or granted >= self.timeout or self.phase is Phase.EXPIRED:
            return self, []
        reason = (
            f"ZooKeeper granted the session {granted:g}s at its last connect, less than the {self.timeout:g}s "
            "session timeout this node times its own expiry by"
        )
        return replace(self, phase=Phase.EXPIRED, gate_open=False, granted_timeout=granted, reason=reason), [
            Instruction.ABORT_ALL
        ]

    def on_connected(self, now: float, granted: float | None = None) -> tuple[GuardState, list[Instruction]]:
        """kazoo reconnected to the same session: the server just accepted it, granting
        `granted` seconds (see `on_granted`)."""
        if self.phase is Phase.EXPIRED:
            return self, []
        refused, out = self.on_granted(granted)
        if out:
            return refused, out
        state = replace(self, phase=Phase.CONNECTED, confirmed_at=max(self.confirmed_at, now))
        return state._reopen_if_fresh(now)

    def on_suspended(self, now: float) -> tuple[GuardState, list[Instruction]]:
        if self.phase is not Phase.CONNECTED:
            return self, []
        state = replace(self, phase=Phase.SUSPENDED, gate_open=False, reason="connection suspended")
        return state._check_deadlines(now, [Instruction.CLOSE_GATE])

    def on_lost(self, now: float) -> tuple[GuardState, list[Instruction]]:
        if self.phase is Phase.EXPIRED:
            return self, []
        return replace(
            self, phase=Phase.EXPIRED, gate_open=False, reason="ZooKeeper says the session expired (LOST)"
        ), [Instruction.ABORT_ALL]

    def on_tick(self, now: float) -> tuple[GuardState, list[Instruction]]:
        return self._check_deadlines(now, [])

    # -- internals -------------------------------------------------------------------
    def _check_deadlines(self, now: float, out: list[Instruction]) -> tuple[GuardState, list[Instruction]]:
        if self.phase is Phase.EXPIRED:
            return self, out
        age = self.proof_age(now)
        state = self
        if age >= self.timeout:
            return replace(
                state,
                phase=Phase.EXPIRED,
                gate_open=False,
                reason=f"no proof of life for {age:.2f}s >= session timeout {self.timeout}s (own expiry timer)",
            ), out + [Instruction.ABORT_ALL]
        if age >= self.timeout * self.gate_fraction:
            if state.gate_open:
                state = replace(state, gate_open=False, reason=f"unconfirmed for {age:.2f}s")
                out = out + [Instruction.CLOSE_GATE]
            if not state.aborted_open:
                state = replace(state, aborted_open=True)
                out = out + [Instruction.ABORT_OPEN_SESSIONS]
        return state, out

    def _reopen_if_fresh(self, now: float) -> tuple[GuardState, list[Instruction]]:
        state, out = self._check_deadlines(now, [])
        if (
            state.phase is Phase.CONNECTED
            and not state.gate_open
            and state.proof_age(now) < state.timeout * state.gate_fraction
        ):
            state = replace(state, gate_open=True, aborted_open=False, reason="")
            out = out + [Instruction.OPEN_GATE]
        return state, out
