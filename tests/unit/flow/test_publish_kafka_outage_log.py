"""PublishKafka's outage line: a task that delivered nothing for sure rolls back and
says why, at once when the outage begins and then at most once a minute while it
lasts, with the reason of that moment (a broker down may become a progress topic that
cannot be read back). Pure logic: the context, the session and the clock are fakes."""

from __future__ import annotations

import logging

import pytest

from flow.processors.kafka.delivery import Undelivered
from flow.processors.kafka.publish import PublishKafka
from repositories.log_limits import DEFAULT_INTERVAL_S, LimitedLog

LOGGER = "custody.test.publish_kafka_outage"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Context:
    def __init__(self, clock: Clock) -> None:
        self.limited_log = LimitedLog(logging.getLogger(LOGGER), clock=clock)
        self.yields = 0

    def yield_(self) -> None:
        self.yields += 1


class Session:
    def __init__(self) -> None:
        self.rollbacks = 0

    def rollback(self) -> None:
        self.rollbacks += 1


@pytest.fixture
def setup(caplog):
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    clock = Clock()
    return PublishKafka("publish"), Context(clock), clock, caplog


def outage_lines(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == LOGGER]


def test_an_outage_is_said_at_once_then_again_with_its_new_reason_once_a_minute(setup):
    processor, context, clock, caplog = setup
    down = Undelivered("every broker is down", discard=False)
    unreadable = Undelivered("the progress topic could not be read back within 10 s", discard=False)

    sessions = [Session() for _ in range(4)]
    processor._give_up(context, sessions[0], down)
    clock.now += 1.0
    processor._give_up(context, sessions[1], down)
    clock.now += 10.0
    processor._give_up(context, sessions[2], unreadable)
    lines = outage_lines(caplog)
    assert len(lines) == 1 and "every broker is down" in lines[0] and "nothing is lost" in lines[0], lines

    clock.now += DEFAULT_INTERVAL_S
    processor._give_up(context, sessions[3], unreadable)
    lines = outage_lines(caplog)
    assert len(lines) == 2, lines
    assert "could not be read back" in lines[1] and "2 more like it" in lines[1], lines[1]
    # Every task rolled back (its FlowFiles stay queued) and yielded.
    assert [session.rollbacks for session in sessions] == [1, 1, 1, 1]
    assert context.yields == 4


def test_a_fenced_producer_is_an_error_of_its_own_kind_not_held_back_by_the_outage(setup):
    processor, context, clock, caplog = setup
    processor._give_up(context, Session(), Undelivered("every broker is down", discard=False))
    clock.now += 1.0
    processor._give_up(context, Session(), Undelivered("fenced by a newer producer", discard=True, fenced=True))
    errors = [record for record in caplog.records if record.name == LOGGER and record.levelno == logging.ERROR]
    assert len(errors) == 1 and "fenced by a newer producer" in errors[0].getMessage()
