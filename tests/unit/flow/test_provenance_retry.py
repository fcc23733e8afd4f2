"""Small commits whose provenance failed to register: kept, registered again once
provenance takes them, their outbox slots then free; past a bound, commits with
events are refused before their commit point and nothing is lost."""

from __future__ import annotations

import logging

import pytest

from flow.errors import CommitError, ProvenanceFailing
from flow.flowfile import FlowFile
from flow.provenance_retry import KeptRows, RowsRetry
from flow.shard import OUTBOX_QUEUE

from .test_session import Recorder, durable_env


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def kept(slot: int) -> KeptRows:
    return KeptRows("p", slot, [])


# -- the pure bookkeeping ------------------------------------------------------------


def test_kept_commits_are_due_again_only_once_the_interval_has_passed():
    clock = Clock()
    retry = RowsRetry(every_s=1.0, clock=clock)
    assert retry.failed(kept(0), retried=False) is True
    assert retry.failed(kept(1), retried=False) is False  # the same outage
    assert retry.waiting == 2 and retry.due() == []
    clock.now += 1.0
    assert [k.slot for k in retry.due()] == [0, 1]
    assert retry.due() == [] and retry.waiting == 2  # handed back, not registered yet
    assert retry.failed(kept(1), retried=True) is False  # still failing: kept again, not counted twice
    assert retry.waiting == 2
    assert retry.registered() is None  # slot 0 registered; slot 1 still waits
    clock.now += 0.5
    assert retry.due() == []
    clock.now += 0.5
    assert [k.slot for k in retry.due()] == [1]
    clock.now += 2.0
    assert retry.registered() == pytest.approx(4.0)  # the last one: seconds since the first failure
    assert retry.waiting == 0 and retry.due() == []
    assert retry.failed(kept(2), retried=False) is True  # a new outage


def test_full_once_as_many_commits_wait_as_the_bound():
    retry = RowsRetry(kept_at_most=2, clock=Clock())
    retry.failed(kept(0), retried=False)
    assert not retry.full
    retry.failed(kept(1), retried=False)
    assert retry.full
    retry.registered()
    assert not retry.full


# -- the committer -------------------------------------------------------------------


class FlakyProvenance(Recorder):
    """Registers rows (the committer's `provenance`) unless `broken`, when it tells
    each commit its rows failed, as the real repository's registering thread does."""

    def __init__(self):
        super().__init__()
        self.broken = False
        self.rows: list = []
        self.outbox: list[str] = []  # the outbox record of each WAL transaction

    def update(self, updates, sync=True):
        self.outbox += [
            u.record.id for u in updates if getattr(u, "record", None) and u.record.id.startswith(OUTBOX_QUEUE)
        ]
        super().update(updates, sync)

    def register_rows_later(self, rows, done):
        if self.broken:
            done(OSError("No space left on device"))
            return
        self.rows += rows
        done(None)


def committing(kept_at_most=10):
    provenance, clock = FlakyProvenance(), Clock()
    env = durable_env(provenance)
    env.committer.provenance_retry = RowsRetry(kept_at_most=kept_at_most, every_s=1.0, clock=clock)
    return env, provenance, clock


def commit(env) -> tuple:
    """A session that takes a queued FlowFile, writes it, and commits."""
    env.incoming.put(FlowFile.new(env.clock()).in_queue(env.incoming.id))
    session = env.session()
    flowfile = session.write_bytes(session.get(), b"out")
    session.transfer(flowfile, "success")
    session.commit()
    return session, flowfile


def slot_of(record_id: str) -> int:
    return int(record_id.rsplit("/", 1)[1])


def test_events_provenance_failed_are_registered_again_and_their_slots_freed(caplog):
    env, provenance, clock = committing()
    commit(env)
    rows_per_commit = len(provenance.rows)
    assert rows_per_commit > 0 and [slot_of(r) for r in provenance.outbox] == [0]
    provenance.broken = True
    with caplog.at_level(logging.WARNING, logger="flow.commit"):
        for _ in range(3):
            commit(env)  # each stands; provenance fails its rows
        # Slot 0 came back once its commit's rows were registered; each failed commit
        # keeps the slot it took (its record is all that holds its events).
        assert [slot_of(r) for r in provenance.outbox] == [0, 0, 1, 2]
        assert env.committer.provenance_retry.waiting == 3
        provenance.broken = False
        commit(env)  # too early to try again: the next slot is a new one
        assert slot_of(provenance.outbox[-1]) == 3 and len(provenance.rows) == 2 * rows_per_commit
        clock.now += 1.0
        commit(env)  # hands the kept rows to provenance first
    assert env.committer.provenance_retry.waiting == 0
    assert len(provenance.rows) == 6 * rows_per_commit  # each commit's events once
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    assert "provenance did not register a commit's events" in messages[0] and "No space left" in messages[0]
    assert "registered every kept commit's events" in messages[1]
    # Every slot is free again: the next commits take the lowest ones again.
    before = len(provenance.outbox)
    commit(env)
    commit(env)
    assert {slot_of(r) for r in provenance.outbox[before:]} <= {0, 1, 2, 3}


def test_past_the_bound_commits_with_events_are_refused_and_nothing_is_lost():
    env, provenance, clock = committing(kept_at_most=2)
    provenance.broken = True
    commit(env)
    commit(env)
    assert env.committer.provenance_retry.full
    written = len(provenance.outbox)
    with pytest.raises(CommitError) as refused:
        commit(env)
    assert isinstance(refused.value.__cause__, ProvenanceFailing)
    assert "has not registered the events of 2 commits" in str(refused.value.__cause__)
    assert len(provenance.outbox) == written  # refused before the WAL: no slot, no record
    assert env.incoming.has_available()  # the FlowFile is back in its queue
    clock.now += 1.0
    with pytest.raises(CommitError):  # the kept rows tried again, failing again: still refused
        retake(env)
    assert env.incoming.has_available()
    provenance.broken = False
    clock.now += 1.0
    retake(env)  # the kept rows are registered, then this commit goes through
    assert env.committer.provenance_retry.waiting == 0
    assert not env.incoming.has_available()
    rows_per_commit = len(provenance.rows) // 3
    assert len(provenance.rows) == 3 * rows_per_commit > 0  # the two kept commits and this one, each once


def retake(env) -> None:
    """The session retried: it takes the FlowFile a refused commit put back."""
    session = env.session()
    session.transfer(session.write_bytes(session.get(), b"out"), "success")
    session.commit()
