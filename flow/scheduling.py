"""When a processor may run: a pure decision the traditional engine asks before each task."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ScheduleState:
    running_tasks: int
    concurrent_tasks: int
    not_before: float  # max of yield end, bored back-off end, last start + run schedule
    is_source: bool
    has_input: bool
    next_penalty_s: float | None  # when a penalized FlowFile of its input becomes available
    outputs_full: bool  # back-pressure on at least one outgoing connection


@dataclass(frozen=True, slots=True)
class ScheduleDecision:
    run: bool
    wake_at: float | None = None  # re-check then (None: wait for an event)


def decide(state: ScheduleState, now: float) -> ScheduleDecision:
    if state.running_tasks >= state.concurrent_tasks:
        return ScheduleDecision(False)
    if state.outputs_full:
        return ScheduleDecision(False)  # a poll of the downstream queue wakes the engine
    if now < state.not_before:
        return ScheduleDecision(False, state.not_before)
    if state.is_source or state.has_input:
        return ScheduleDecision(True)
    return ScheduleDecision(False, state.next_penalty_s)
