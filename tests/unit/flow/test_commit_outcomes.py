"""What the durable committer counts: each commit once, by outcome, and the duration
of each commit that stood (the admin API publishes them per shard)."""

from __future__ import annotations

import pytest

from flow.commit_outcome import COMMITTED, FAILED, REFUSED, UNKNOWN
from flow.errors import CommitError
from repositories.flowfile import WriteAheadLogPoisonedError

from .test_commit_gate import commit_one_with_content, gated_env


def outcome_of(env) -> str:
    counted = {outcome: count for outcome, count in env.committer.outcomes.snapshot().items() if count}
    assert list(counted.values()) == [1], counted  # one commit, counted once
    return next(iter(counted))


def test_a_commit_that_stood_is_counted_and_timed():
    env, _ = gated_env()
    commit_one_with_content(env).commit()
    assert outcome_of(env) == COMMITTED
    timed = env.committer.durations.snapshot()
    assert timed.count == 1 and timed.sum > 0


@pytest.mark.parametrize("refuse_at", [1, 2])
def test_a_commit_the_gate_refused_is_counted_refused_even_after_the_content_sync(refuse_at):
    env, _ = gated_env({"refuse_at": refuse_at})
    with pytest.raises(CommitError):
        commit_one_with_content(env).commit()
    assert outcome_of(env) == REFUSED
    assert env.committer.durations.snapshot().count == 0  # only commits that stood are timed


def test_a_failed_content_sync_or_a_refused_wal_write_is_counted_failed():
    env, recorder = gated_env()

    def sync():
        raise OSError("no space left on device")

    recorder.sync = sync
    with pytest.raises(CommitError):
        commit_one_with_content(env).commit()
    assert outcome_of(env) == FAILED

    env, recorder = gated_env()

    def refuse(updates, sync=True):
        raise WriteAheadLogPoisonedError("/wal", OSError("the roll failed"))

    recorder.update = refuse
    with pytest.raises(CommitError):
        commit_one_with_content(env).commit()
    assert outcome_of(env) == FAILED


def test_a_wal_write_of_unknown_outcome_is_counted_unknown():
    env, recorder = gated_env()
    recorder.fail_wal = True  # an OSError from the WAL says nothing of what it holds
    with pytest.raises(CommitError) as raised:
        commit_one_with_content(env).commit()
    assert raised.value.wal_written
    assert outcome_of(env) == UNKNOWN
