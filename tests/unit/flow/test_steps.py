"""The step timer that PublishKafka's new producer and a shard's adoption say their
steps with (pure logic: a clock of our own)."""

from __future__ import annotations

from flow.steps import Steps


def clock_of(moments: list[float]):
    ticks = iter(moments)
    return lambda: next(ticks)


def test_fast_steps_say_nothing():
    steps = Steps(clock_of([10.0, 10.2, 10.9]))
    steps.done("init_transactions")
    steps.done("read back")
    assert abs(steps.total() - 0.9) < 1e-9
    assert steps.slow() is None


def test_slow_steps_name_each_step_and_its_share():
    steps = Steps(clock_of([0.0, 0.05, 1.25, 1.5]))
    steps.done("made")
    steps.done("init_transactions")
    steps.done("read back")
    assert steps.slow() == "1.50 s: made 0.05 s, init_transactions 1.20 s, read back 0.25 s"
    assert steps.slow(threshold=2.0) is None
