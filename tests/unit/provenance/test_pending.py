"""Rows of small commits registered together (`repositories.provenance.pending`), with a
recording `register`, and through a real repository: grouped, drained by readers and
`sync`, failed commit by commit, closed without losing what was queued."""

from __future__ import annotations

import threading

import pytest

from cluster.services.process import wait_until
from repositories.provenance import (
    EventType,
    ProvenanceConfig,
    ProvenanceEvent,
    ProvenanceQuery,
    ProvenanceRepository,
    RepositoryClosedError,
)
from repositories.provenance import pending as pending_module
from repositories.provenance.event_batch import check_row, row_of
from repositories.provenance.pending import PendingRows


class Registered:
    """A `register` that keeps each group; it fails a group holding a row in `refuse`,
    and waits while `hold` is clear."""

    def __init__(self):
        self.groups: list[list[tuple]] = []
        self.refuse: set[tuple] = set()
        self.hold = threading.Event()
        self.hold.set()
        self.entered = threading.Event()

    def __call__(self, rows):
        self.entered.set()
        self.hold.wait(10)
        if self.refuse & set(rows):
            raise ValueError("a row provenance cannot store")
        self.groups.append(list(rows))


class Outcomes:
    def __init__(self):
        self.seen: list[tuple[str, BaseException | None]] = []

    def done(self, name):
        return lambda error: self.seen.append((name, error))


def test_commits_queued_while_one_group_registers_are_registered_as_one_group_in_order():
    register, outcomes = Registered(), Outcomes()
    pending = PendingRows(register)
    register.hold.clear()
    pending.add([("a", 1)], outcomes.done("a"))
    assert register.entered.wait(5)  # the first group is registering, and waits
    for name in "bcde":
        pending.add([(name, 1), (name, 2)], outcomes.done(name))
    register.hold.set()
    pending.drain()
    assert register.groups == [[("a", 1)], [(n, i) for n in "bcde" for i in (1, 2)]]
    assert outcomes.seen == [(name, None) for name in "abcde"]
    pending.close()


def test_a_drain_waits_for_what_was_queued_before_it_and_does_not_wait_out_the_linger(monkeypatch):
    monkeypatch.setattr(pending_module, "LINGER_S", 60.0)  # only a drain sends the group
    register, outcomes = Registered(), Outcomes()
    pending = PendingRows(register)
    pending.add([("a", 1)], outcomes.done("a"))
    assert register.groups == []
    pending.drain(timeout=10)
    assert register.groups == [[("a", 1)]] and outcomes.seen == [("a", None)]
    pending.close()


def test_a_group_that_fails_is_registered_commit_by_commit_and_only_the_bad_commit_fails():
    register, outcomes = Registered(), Outcomes()
    register.refuse = {("bad", 1)}
    pending = PendingRows(register)
    register.hold.clear()
    pending.add([("first", 1)], outcomes.done("first"))
    assert register.entered.wait(5)
    pending.add([("a", 1)], outcomes.done("a"))
    pending.add([("bad", 1), ("bad", 2)], outcomes.done("bad"))
    pending.add([("c", 1)], outcomes.done("c"))
    register.hold.set()
    pending.drain()
    assert register.groups == [[("first", 1)], [("a", 1)], [("c", 1)]]
    assert [name for name, error in outcomes.seen if error is None] == ["first", "a", "c"]
    [(name, error)] = [(name, error) for name, error in outcomes.seen if error is not None]
    assert name == "bad" and "cannot store" in str(error)
    pending.close()


class Crash(BaseException):
    """Not an Exception, as a test's simulated crash is not."""


def test_a_registration_that_raises_what_is_not_an_exception_fails_its_commit_and_the_thread_goes_on():
    outcomes = Outcomes()
    raised = [Crash("the registration crashed")]

    def register(rows):
        if raised:
            raise raised.pop()

    pending = PendingRows(register)
    pending.add([("a", 1)], outcomes.done("a"))
    pending.drain(timeout=10)
    pending.add([("b", 1)], outcomes.done("b"))
    pending.drain(timeout=10)
    assert [(name, type(error)) for name, error in outcomes.seen] == [("a", Crash), ("b", type(None))]
    pending.close()


def test_close_registers_what_is_queued_and_then_refuses(monkeypatch):
    monkeypatch.setattr(pending_module, "LINGER_S", 60.0)
    register, outcomes = Registered(), Outcomes()
    pending = PendingRows(register)
    pending.add([("a", 1)], outcomes.done("a"))
    pending.close()
    assert register.groups == [[("a", 1)]] and outcomes.seen == [("a", None)]
    with pytest.raises(RepositoryClosedError):
        pending.add([("b", 1)], outcomes.done("b"))
    pending.drain()  # nothing left: returns at once


def test_add_waits_while_too_many_commits_wait(monkeypatch):
    monkeypatch.setattr(pending_module, "MAX_PENDING", 2)
    register, outcomes = Registered(), Outcomes()
    pending = PendingRows(register)
    register.hold.clear()
    pending.add([("a", 1)], outcomes.done("a"))
    assert register.entered.wait(5)  # "a" is registering; two more fill the queue
    pending.add([("b", 1)], outcomes.done("b"))
    pending.add([("c", 1)], outcomes.done("c"))
    third = threading.Thread(target=pending.add, args=([("d", 1)], outcomes.done("d")))
    third.start()
    third.join(0.3)
    assert third.is_alive(), "a third commit was queued beyond the limit"
    register.hold.set()
    third.join(10)
    assert not third.is_alive()
    pending.drain()
    assert [name for name, _ in outcomes.seen] == ["a", "b", "c", "d"]
    pending.close()


def test_a_drain_from_a_callback_of_the_registering_thread_returns_at_once():
    pending = PendingRows(Registered())
    drained = threading.Event()

    def done(error):
        pending.drain()  # would wait for itself
        drained.set()

    pending.add([("a", 1)], done)
    assert drained.wait(10)
    pending.close()


def _event(i: int) -> ProvenanceEvent:
    return ProvenanceEvent(EventType.CREATE, f"uuid-{i}", "gen", "GenerateFlowFile", event_time_ms=1_000 + i)


def test_rows_queued_in_a_repository_are_seen_by_sync_and_get_ids_in_their_order(tmp_path):
    repository = ProvenanceRepository(
        ProvenanceConfig(containers=(str(tmp_path),), rollover_check_interval_s=None, age_off_interval_s=None)
    )
    try:
        registered = []
        first = repository.peek_next_event_id()
        for i in range(40):
            repository.register_rows_later([row_of(_event(i))], registered.append)
        assert repository.next_event_id == first + 40  # waits for the queued rows
        repository.sync()
        found = repository.events(first, 100)
        assert [event.flowfile_uuid for event in found] == [f"uuid-{i}" for i in range(40)]
        assert [event.event_id for event in found] == list(range(first, first + 40))
        assert registered == [None] * 40
        assert len(repository.query(ProvenanceQuery(flowfile_uuid="uuid-7")).events) == 1
        repository.register_rows_later([row_of(_event(40))], registered.append)
    finally:
        repository.close()  # registers the last one first
    reopened = ProvenanceRepository(
        ProvenanceConfig(containers=(str(tmp_path),), rollover_check_interval_s=None, age_off_interval_s=None)
    )
    try:
        assert reopened.next_event_id == first + 41
        with pytest.raises(RepositoryClosedError):
            repository.register_rows_later([row_of(_event(41))], registered.append)
    finally:
        reopened.close()


def test_rows_that_provenance_cannot_store_are_refused_before_they_are_queued():
    good = row_of(_event(1))
    check_row(good)
    check_row((None, *good[1:]))  # no time yet: the commit's
    bad = {
        "a transit URI that is a number": good._replace(transit_uri=12345),
        "an attribute value that is not text": good._replace(attributes_after={"a": 1}),
        "an attribute name that is not text": good._replace(attributes_before={2: "b"}),
        "a parent uuid that is not text": good._replace(parent_uuids=("p", None)),
        "a size that is text": good._replace(size="5"),
        "a size that is a bool": good._replace(size=True),
        "a claim that is a tuple": good._replace(content_after=("c", 0, "r", 0, 1)),
        "a time that is text": good._replace(time_ms="now"),
        "a short row": tuple(good[:14]),
    }
    for why, row in bad.items():
        with pytest.raises(TypeError):
            check_row(row)
            pytest.fail(f"{why} passed")


def test_a_lone_commit_is_registered_once_its_linger_has_passed():
    register, outcomes = Registered(), Outcomes()
    pending = PendingRows(register)
    pending.add([("a", 1)], outcomes.done("a"))
    wait_until(lambda: outcomes.seen == [("a", None)], 5, "the linger to pass and the group to register")
    pending.close()
