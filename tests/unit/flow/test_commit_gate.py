"""The production commit gate: consulted at every durable commit, before the fault seams,
and with no seams at all."""

from __future__ import annotations

import logging

import pytest

from cluster.services.process import wait_until
from flow.commit import CommitHooks
from flow.errors import CommitError, NotAdmitted
from flow.flowfile import FlowFile
from flow.processor import Processor
from flow.session import ProcessSession
from repositories.seams import UnknownSeam
from tests.flow_engines import source_to_sink

from .test_session import Env, Recorder, durable_env


class Gate:
    """A CommitGate that records into the commit's own call list, and refuses on demand."""

    def __init__(self, calls, refuse_at=None, fail_raises=False):
        self.calls = calls
        self.refuse_at = refuse_at  # which admit() refuses: 1 (before the content sync) or 2 (before the WAL)
        self.fail_raises = fail_raises
        self.admits = 0
        self.failures = []

    def admit(self, component_id):
        self.admits += 1
        self.calls.append(f"gate.admit({component_id})")
        if self.admits == self.refuse_at:
            raise PermissionError("this node no longer owns the shard")

    def committed(self, component_id):
        self.calls.append(f"gate.committed({component_id})")

    def failed(self, component_id, error):
        self.calls.append(f"gate.failed({component_id})")
        self.failures.append(error)
        if self.fail_raises:
            raise RuntimeError("a broken gate")


def gated_env(gate_options=None, hooks=None):
    recorder = Recorder()
    env = durable_env(recorder)
    env.gate = Gate(recorder.calls, **(gate_options or {}))
    env.committer.gate = env.gate
    if hooks is not None:
        env.committer.hooks = CommitHooks.coerce(hooks)
    return env, recorder


def commit_one_with_content(env):
    """A session that takes a queued FlowFile and writes its content, ready to commit."""
    env.incoming.put(FlowFile.new(env.clock()).in_queue(env.incoming.id))
    session = env.session()
    flowfile = session.get()
    session.transfer(session.write_bytes(flowfile, b"out"), "success")
    return session


def test_the_gate_admits_before_the_content_sync_and_before_the_wal_and_hears_the_commit():
    env, recorder = gated_env()
    session = commit_one_with_content(env)
    session.commit()
    assert recorder.calls[:5] == [
        "gate.admit(p)",
        "content.sync",
        "content.check_durable(1)",
        "gate.admit(p)",
        "wal.update(2)",
    ]
    assert recorder.calls[5] == "gate.committed(p)"
    assert "gate.failed(p)" not in recorder.calls
    assert env.success.count == 1 and env.incoming.count == 0


@pytest.mark.parametrize("refuse_at, written", [(1, []), (2, ["content.sync", "content.check_durable(1)"])])
def test_a_refusing_gate_rolls_the_session_back_and_hears_the_failure(refuse_at, written):
    env, recorder = gated_env({"refuse_at": refuse_at})
    session = commit_one_with_content(env)
    with pytest.raises(CommitError, match="nothing was written to the WAL.*no longer owns the shard") as raised:
        session.commit()
    assert not raised.value.wal_written
    admits = ["gate.admit(p)"] * refuse_at
    assert [c for c in recorder.calls if c.startswith(("gate", "content", "wal"))] == admits[:1] + written + admits[
        1:
    ] + ["gate.failed(p)"]
    assert env.gate.failures == [raised.value.__cause__]
    assert env.incoming.count == 1 and env.success.count == 0  # back where it was
    assert not any(call.startswith("wal.update") for call in recorder.calls)


def test_a_gate_whose_failed_raises_is_only_logged(caplog):
    env, recorder = gated_env({"refuse_at": 1, "fail_raises": True})
    session = commit_one_with_content(env)
    with caplog.at_level(logging.ERROR, logger="flow.commit"), pytest.raises(CommitError, match="no longer owns"):
        session.commit()
    assert "p: the commit gate's failed() raised" in caplog.text
    assert env.incoming.count == 1


def test_at_each_point_the_gate_comes_first_then_the_seam():
    calls = []
    env, recorder = gated_env(
        hooks=CommitHooks(
            before_content_sync=lambda c: calls.append("seam.before_content_sync"),
            before_wal=lambda c: calls.append("seam.before_wal"),
            after_wal=lambda c: calls.append("seam.after_wal"),
        )
    )
    env.gate.calls = calls
    commit_one_with_content(env).commit()
    assert calls == [
        "gate.admit(p)",
        "seam.before_content_sync",
        "gate.admit(p)",
        "seam.before_wal",
        "gate.committed(p)",
        "seam.after_wal",
    ]


def test_production_code_cannot_pass_as_fault_seams():
    class Runtime:  # a gate-shaped object with other public methods, as a node's runtime has
        def before_wal(self, component_id): ...

        def status(self): ...

    with pytest.raises(UnknownSeam, match="'status' is not a fault seam"):
        CommitHooks.coerce(Runtime())
    with pytest.raises(UnknownSeam, match="'before_wall' is not a fault seam"):
        CommitHooks(before_wall=lambda c: None)


class Refusing:
    """A gate that refuses every commit (a node whose ZooKeeper session expired)."""

    def admit(self, component_id):
        raise PermissionError("this node no longer owns the shard")

    def committed(self, component_id):
        pass

    def failed(self, component_id, error):
        pass


def test_a_session_asks_the_gate_it_was_given_before_a_side_effect():
    env = Env()
    env.committer.gate = Refusing()  # not asked: the session is handed its gate
    assert (
        ProcessSession(
            component_id="p",
            component_type="x",
            committer=env.committer,
            content=env.content,
            shard=env.shard,
            clock_ms=env.clock,
        ).check_admitted()
        is None
    )
    gated = ProcessSession(
        component_id="p",
        component_type="x",
        committer=env.committer,
        content=env.content,
        shard=env.shard,
        clock_ms=env.clock,
        gate=Refusing(),
    )
    with pytest.raises(NotAdmitted, match="may not commit for shard s") as raised:
        gated.check_admitted()
    assert isinstance(raised.value.__cause__, PermissionError)


class AskTheGate(Processor):
    """A source that asks, before a side effect, whether its node may still commit."""

    type_name = "TestAskTheGate"
    is_source = True
    answers: list = []

    def on_trigger(self, context, session):
        try:
            session.check_admitted()
            AskTheGate.answers.append("admitted")
        except NotAdmitted:
            AskTheGate.answers.append("refused")
        context.yield_()


class Idle(Processor):
    type_name = "TestIdle"
    relationships = ()

    def on_trigger(self, context, session):
        pass


def test_the_engine_hands_its_commit_gate_to_every_session(tmp_path):
    AskTheGate.answers = []
    engine, shard = source_to_sink(tmp_path, AskTheGate, Idle, threads=1, commit_gate=Refusing())
    engine.start()
    try:
        wait_until(lambda: AskTheGate.answers, 20, "the source to run")
    finally:
        engine.stop(timeout=10)
        shard.wal.close()
    assert set(AskTheGate.answers) == {"refused"}


class RaiseRefusal(Processor):
    """A source that lets the gate's refusal out of its task, as most processors do."""

    type_name = "TestRaiseRefusal"
    is_source = True
    runs = 0

    def on_trigger(self, context, session):
        RaiseRefusal.runs += 1
        session.check_admitted()


def test_a_refusal_let_out_of_a_task_is_one_warning_and_no_traceback(tmp_path, caplog):
    RaiseRefusal.runs = 0
    engine, shard = source_to_sink(tmp_path, RaiseRefusal, Idle, threads=1, commit_gate=Refusing())
    with caplog.at_level(logging.WARNING, logger="flow.engine"):
        engine.start()
        try:
            wait_until(lambda: RaiseRefusal.runs >= 3, 20, "the source to be refused three times")
        finally:
            engine.stop(timeout=10)
            shard.wal.close()
    said = [record for record in caplog.records if record.name == "flow.engine"]
    assert len(said) == 1, [record.getMessage() for record in said]  # at most one line a minute
    assert said[0].exc_info is None and "may not commit for shard s" in said[0].getMessage()
