"""Hedged reads (`replication.hedged_reads.first_answer`): a read that does not answer
is asked again beside it, and the first answer wins. Pure logic on the real worker
pool, with attempts held on events (the real thing on HDFS, a frozen DataNode:
tests/integration/test_hdfs_hedged_reads.py)."""

from __future__ import annotations

import threading

import pytest

from replication.deadline import DeadlineRunner
from replication.hedged_reads import HedgeCounts, first_answer

AFTER = 0.02  # short, so that a held attempt is hedged at once; no test waits on it
PATIENCE = 10.0  # the longest any test waits for an event that must come


class Attempts:
    """The first attempt (`first`) does what `plan[0]` says; the hedges (`again`) what
    `plan[1]`, `plan[2]`, ... say, numbered in the order they begin. Each announces
    itself (`begun`), then answers, fails, or holds until released."""

    def __init__(self, plan: list[tuple[str, object]]):
        self.plan = plan  # per attempt: ("answer", value), ("fail", error), ("hold", value)
        self.started: list[int] = []
        self.released = [threading.Event() for _ in plan]
        self.begun = [threading.Event() for _ in plan]
        self._hedges = 0
        self._lock = threading.Lock()

    def first(self):
        return self._attempt(0)

    def again(self):
        with self._lock:
            self._hedges += 1
            number = self._hedges
        return self._attempt(number)

    def _attempt(self, number: int):
        with self._lock:
            self.started.append(number)
        self.begun[number].set()
        kind, value = self.plan[number]
        if kind == "hold":
            assert self.released[number].wait(PATIENCE), f"attempt {number} was never released"
            kind = "answer"
        if kind == "fail":
            raise value  # type: ignore[misc]
        return value

    def release_all(self) -> None:
        for event in self.released:
            event.set()


def answer_of(runner, plan: Attempts, **options):
    return first_answer(runner, plan.first, plan.again, **options)


@pytest.fixture
def runner():
    return DeadlineRunner("test-hedged", max_workers=16)


def test_an_attempt_that_answers_in_time_is_the_only_one(runner):
    attempts = Attempts([("answer", b"first")])
    counts = HedgeCounts()
    after = PATIENCE  # no hedge can be due before it answers
    assert answer_of(runner, attempts, after=after, counts=counts) == b"first"
    assert attempts.started == [0]
    assert (counts.hedged, counts.won) == (0, 0)


def test_a_held_attempt_is_hedged_and_the_hedge_answers(runner):
    attempts = Attempts([("hold", b"first"), ("answer", b"second")])
    counts = HedgeCounts()
    try:
        assert answer_of(runner, attempts, after=AFTER, counts=counts) == b"second"
        assert sorted(attempts.started) == [0, 1]
        assert not attempts.released[0].is_set(), "the first attempt is still held: the hedge answered"
        assert (counts.hedged, counts.won) == (1, 1)
    finally:
        attempts.release_all()


def test_the_first_attempt_answering_after_a_hedge_began_wins_if_first(runner):
    # The hedge is held; releasing the first attempt once the hedge began gives its answer.
    attempts = Attempts([("hold", b"first"), ("hold", b"second")])
    counts = HedgeCounts()
    result: list[bytes] = []
    caller = threading.Thread(
        target=lambda: result.append(answer_of(runner, attempts, after=AFTER, attempts=2, counts=counts))
    )
    caller.start()
    try:
        assert attempts.begun[1].wait(PATIENCE)
        attempts.released[0].set()
        caller.join(PATIENCE)
        assert result == [b"first"]
        assert (counts.hedged, counts.won) == (1, 0)
    finally:
        attempts.release_all()
        caller.join(PATIENCE)


def test_an_error_before_any_hedge_is_raised_at_once(runner):
    attempts = Attempts([("fail", FileNotFoundError("/x")), ("answer", b"never")])
    with pytest.raises(FileNotFoundError):
        answer_of(runner, attempts, after=PATIENCE)
    assert attempts.started == [0], "a read that failed is not asked again"


def test_a_failed_hedge_leaves_the_others_to_answer(runner):
    attempts = Attempts([("hold", b"first"), ("fail", OSError("refused")), ("answer", b"third")])
    try:
        assert answer_of(runner, attempts, after=AFTER) == b"third"
        assert sorted(attempts.started) == [0, 1, 2]
    finally:
        attempts.release_all()


def test_no_more_than_the_attempts_are_started_and_the_first_answer_wins(runner):
    attempts = Attempts([("hold", b"a"), ("hold", b"b"), ("hold", b"c"), ("answer", b"never")])
    result: list[bytes] = []
    caller = threading.Thread(target=lambda: result.append(answer_of(runner, attempts, after=AFTER, attempts=3)))
    caller.start()
    try:
        assert attempts.begun[2].wait(PATIENCE)
        attempts.released[1].set()
        caller.join(PATIENCE)
        assert result == [b"b"]
        assert sorted(attempts.started) == [0, 1, 2], "a fourth attempt was started"
    finally:
        attempts.release_all()
        caller.join(PATIENCE)


def test_when_every_attempt_fails_the_first_error_is_raised(runner):
    first_error, hedge_error = OSError("first"), OSError("hedge")
    first_begun, first_released, hedged = threading.Event(), threading.Event(), threading.Event()
    result: list[BaseException] = []

    def first():
        first_begun.set()
        assert first_released.wait(PATIENCE)
        raise first_error

    def again():
        hedged.set()
        raise hedge_error

    def call():
        try:
            first_answer(runner, first, again, after=AFTER, attempts=2)
        except OSError as error:
            result.append(error)

    caller = threading.Thread(target=call)
    caller.start()
    try:
        assert hedged.wait(PATIENCE), "the held attempt was not hedged"
        first_released.set()
        caller.join(PATIENCE)
        assert result == [first_error]
    finally:
        first_released.set()
        caller.join(PATIENCE)


class OneWorker(DeadlineRunner):
    """A runner of one worker that tells when a second call was asked of it."""

    def __init__(self):
        super().__init__("test-hedged-one", max_workers=1)
        self.asked_again = threading.Event()
        self.asked = 0

    def start(self, function, on_done=None):
        self.asked += 1
        if self.asked == 2:
            self.asked_again.set()
        return super().start(function, on_done)


def test_a_hedge_the_workers_cannot_take_leaves_the_first_attempt_to_answer():
    runner = OneWorker()
    attempts = Attempts([("hold", b"first"), ("answer", b"never")])
    result: list[bytes] = []
    caller = threading.Thread(target=lambda: result.append(answer_of(runner, attempts, after=AFTER)))
    caller.start()
    try:
        assert runner.asked_again.wait(PATIENCE), "no hedge was asked for"
        attempts.released[0].set()
        caller.join(PATIENCE)
        assert result == [b"first"]
        assert attempts.started == [0], "the hedge ran although every worker was taken"
        assert runner.asked == 2, "a refused hedge is not asked for again"
    finally:
        attempts.release_all()
        caller.join(PATIENCE)
