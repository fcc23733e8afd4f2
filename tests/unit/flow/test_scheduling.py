"""When a processor may run: the engine's pure scheduling decision."""

from flow.scheduling import ScheduleDecision, ScheduleState, decide


def state(**changes):
    values = dict(
        running_tasks=0,
        concurrent_tasks=1,
        not_before=0.0,
        is_source=False,
        has_input=True,
        next_penalty_s=None,
        outputs_full=False,
    )
    values.update(changes)
    return ScheduleState(**values)


def test_runs_with_input():
    assert decide(state(), 10.0) == ScheduleDecision(True)


def test_concurrent_tasks_limit():
    assert not decide(state(running_tasks=1), 10.0).run
    assert decide(state(running_tasks=1, concurrent_tasks=2), 10.0).run


def test_back_pressure_stops_the_source_of_a_full_connection():
    assert decide(state(outputs_full=True, is_source=True), 10.0) == ScheduleDecision(False)


def test_yield_and_run_schedule_wake_it_later():
    assert decide(state(not_before=12.5), 10.0) == ScheduleDecision(False, 12.5)
    assert decide(state(not_before=12.5), 12.5).run


def test_sources_run_without_input_others_wait_for_it_or_a_penalty():
    assert decide(state(is_source=True, has_input=False), 1.0).run
    assert decide(state(has_input=False), 1.0) == ScheduleDecision(False, None)
    assert decide(state(has_input=False, next_penalty_s=4.0), 1.0) == ScheduleDecision(False, 4.0)
