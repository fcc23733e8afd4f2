"""Stop when deposed: the session guard's decisions on a fake clock."""

import pytest

from cluster.core.guard import GuardState, Phase
from cluster.core.guard import Instruction as I

T = 4.0


def fresh(now=0.0):
    return GuardState.connected(T, now)


def test_connected_and_confirmed_may_work():
    state = fresh()
    assert state.may_work(0.5)
    state, out = state.on_confirmed(0.5, 0.6)
    assert out == [] and state.may_work(1.4)


def test_suspended_closes_the_gate_at_once_and_aborts_open_sessions_before_a_third():
    state, out = fresh().on_confirmed(0.0, 0.0)
    state, out = state.on_suspended(0.1)
    assert out == [I.CLOSE_GATE] and not state.may_work(0.1)
    state, out = state.on_tick(0.9)
    assert out == []
    state, out = state.on_tick(1.0)  # 1/4 of the timeout since the last proof
    assert out == [I.ABORT_OPEN_SESSIONS]
    assert 1.0 < T / 3
    state, out = state.on_tick(2.0)
    assert out == []  # once only


def test_reconnected_to_the_same_session_reopens_the_gate():
    state, _ = fresh().on_suspended(0.1)
    state, out = state.on_tick(1.2)
    assert out == [I.ABORT_OPEN_SESSIONS]
    state, out = state.on_connected(2.0)
    assert out == [I.OPEN_GATE] and state.may_work(2.1) and state.phase is Phase.CONNECTED


def test_own_expiry_timer_declares_the_session_over_without_any_word_from_kazoo():
    state, _ = fresh().on_suspended(0.5)
    state, _ = state.on_tick(1.5)
    state, out = state.on_tick(T)
    assert out == [I.ABORT_ALL] and state.phase is Phase.EXPIRED
    # Final: a later reconnection (kazoo's new session) reopens nothing.
    assert state.on_connected(T + 1)[1] == [] and not state.on_connected(T + 1)[0].may_work(T + 1)
    assert state.on_confirmed(T + 1, T + 1)[1] == []


def test_silence_while_connected_closes_the_gate_too():
    # No SUSPENDED arrives (a frozen process, a half-open socket): only the clock knows.
    state = fresh()
    state, out = state.on_tick(0.99)
    assert out == [] and state.may_work(0.99)
    state, out = state.on_tick(1.0)
    assert out == [I.CLOSE_GATE, I.ABORT_OPEN_SESSIONS]
    state, out = state.on_confirmed(1.1, 1.2)  # the probe came back
    assert out == [I.OPEN_GATE] and state.may_work(1.2)


def test_a_process_woken_from_sigstop_refuses_work_before_any_tick():
    # The gate is a function of the clock at the moment of asking, not of the last tick.
    state = fresh(100.0)
    assert state.may_work(100.2)
    assert not state.may_work(100.0 + 30.0)
    assert "last confirmed 30.00s ago" in state.refusal(130.0)


def test_lost_aborts_everything_once():
    state, out = fresh().on_lost(0.3)
    assert out == [I.ABORT_ALL] and state.phase is Phase.EXPIRED
    assert state.on_lost(0.4)[1] == [] and state.on_tick(10)[1] == []


def test_a_late_confirmation_of_an_old_request_does_not_move_the_proof_back():
    state, _ = fresh().on_confirmed(0.8, 0.9)
    state, _ = state.on_confirmed(0.2, 1.0)
    assert state.confirmed_at == 0.8


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.3])
def test_gate_fraction_is_configurable_and_below_a_third(fraction):
    state = GuardState.connected(T, 0.0, fraction)
    assert state.may_work(T * fraction - 0.01) and not state.may_work(T * fraction)


def test_a_reconnect_granted_less_than_the_timeout_ends_the_session_at_once():
    state, _ = fresh().on_suspended(0.1)
    state, out = state.on_connected(0.5, granted=T / 2)  # an ensemble reconfigured with a lower maximum
    assert out == [I.ABORT_ALL] and state.phase is Phase.EXPIRED and not state.may_work(0.5)
    assert state.granted_timeout == T / 2 and "granted the session 2s" in state.reason
    assert state.on_connected(0.6, granted=T) == (state, [])  # over for good


def test_a_reconnect_granted_the_timeout_or_more_reopens_the_gate():
    for granted in (T, T * 2, None):  # None: a client whose grant is not known
        state, _ = fresh().on_suspended(0.1)
        state, out = state.on_connected(0.5, granted=granted)
        assert out == [I.OPEN_GATE] and state.granted_timeout is None


def test_a_short_grant_found_when_the_guard_starts_ends_the_session():
    state, out = fresh().on_granted(1.0)
    assert out == [I.ABORT_ALL] and state.granted_timeout == 1.0
    assert fresh().on_granted(T) == (fresh(), [])
