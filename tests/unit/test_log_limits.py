"""`LimitedLog`: one line per kind per interval, with a count of the lines held back."""

from __future__ import annotations

import logging

import pytest

from repositories.log_limits import MAX_KINDS, LimitedLog


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def captured(caplog):
    caplog.set_level(logging.DEBUG, logger="test.limited")
    return caplog


def lines(caplog):
    return [record.getMessage() for record in caplog.records if record.name == "test.limited"]


def test_the_first_line_of_a_kind_is_written_and_repeats_are_counted_until_the_interval_passes(captured):
    clock = Clock()
    limited = LimitedLog(logging.getLogger("test.limited"), 60.0, clock=clock)
    assert limited.warning("swap", "cannot read %s", "a.swap")
    for _ in range(41):
        clock.now += 1.0
        assert not limited.warning("swap", "cannot read %s", "a.swap")
    assert limited.held_back("swap") == 41
    clock.now += 20.0
    assert limited.warning("swap", "cannot read %s", "a.swap")
    assert lines(captured) == ["cannot read a.swap", "cannot read a.swap (41 more like it in the last 61 s)"]
    assert limited.held_back("swap") == 0


def test_kinds_are_limited_each_on_its_own(captured):
    clock = Clock()
    limited = LimitedLog(logging.getLogger("test.limited"), 10.0, clock=clock)
    assert limited.error("a", "one")
    assert limited.error("b", "two")
    assert not limited.error("a", "one")
    assert lines(captured) == ["one", "two"]
    assert [record.levelno for record in captured.records] == [logging.ERROR, logging.ERROR]


def test_the_kinds_remembered_are_bounded_and_the_oldest_is_forgotten_first(captured):
    clock = Clock()
    limited = LimitedLog(logging.getLogger("test.limited"), 10.0, clock=clock)
    for kind in range(MAX_KINDS + 1):
        assert limited.info(str(kind), "line %s", kind)
    assert len(limited._kinds) == MAX_KINDS
    assert limited.info("0", "again")  # forgotten, so written at once
    assert not limited.info(str(MAX_KINDS), "again")


def test_an_interval_must_be_positive():
    with pytest.raises(ValueError):
        LimitedLog(logging.getLogger("test.limited"), 0)
