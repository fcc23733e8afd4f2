"""ProcessSession: every operation, rollback, provenance, and the commit order."""

from __future__ import annotations

import pytest

from flow.commit import DurableCommitter, HeldCommitter
from flow.errors import CommitError, FlowFileNotTransferred, SessionError, UnknownRelationship
from flow.flowfile import FlowFile
from flow.memory_content import InMemoryContentRepository
from flow.queue import FlowFileQueue
from flow.session import ProcessSession
from flow.shard import QueueShard
from repositories.provenance import EventType, InvalidEventError, ProvenanceEvent


class Clock:
    now = 1_000_000

    def __call__(self):
        return self.now


class Env:
    def __init__(self, committer_factory=None, auto_terminated=()):
        self.clock = Clock()
        self.incoming = FlowFileQueue("in", clock_ms=self.clock)
        self.success = FlowFileQueue("ok", clock_ms=self.clock)
        self.other = FlowFileQueue("other", clock_ms=self.clock)
        self.shard = QueueShard("s", [self.incoming, self.success, self.other])
        self.content = InMemoryContentRepository()
        self.committer = (committer_factory or (lambda shard, content: HeldCommitter(shard, content)))(
            self.shard, self.content
        )
        self.auto_terminated = auto_terminated

    def session(self, outgoing=None):
        return ProcessSession(
            component_id="p",
            component_type="Test",
            committer=self.committer,
            content=self.content,
            shard=self.shard,
            incoming=[self.incoming],
            outgoing=outgoing or {"success": [self.success], "other": [self.other]},
            auto_terminated=self.auto_terminated,
            clock_ms=self.clock,
            penalty_ms=5_000,
        )

    def seed(self, *payloads):
        """Commit FlowFiles with content into the incoming queue."""
        session = ProcessSession(
            component_id="seed",
            component_type="Seed",
            committer=self.committer,
            content=self.content,
            shard=self.shard,
            outgoing={"success": [self.incoming]},
            clock_ms=self.clock,
        )
        for payload in payloads:
            flowfile = session.create(attributes={"n": payload.decode()})
            flowfile = session.write_bytes(flowfile, payload)
            session.transfer(flowfile, "success")
        session.commit()
        self.committer.events.clear()


def test_create_write_read_and_attributes_are_copy_on_write():
    env = Env()
    session = env.session()
    first = session.create(attributes={"a": "1"})
    second = session.put_attribute(first, "b", "2")
    assert first.attributes == {"filename": first.id, "path": "./", "a": "1"}
    assert second.attributes["b"] == "2" and second.id == first.id
    third = session.write_bytes(second, b"hello")
    assert session.read_bytes(third) == b"hello" and third.size == 5 and second.content_claim is None
    with session.write(third) as out:
        out.write(b"he")
        out.write(b"llo!")
    fourth = out.flowfile
    assert session.read_bytes(fourth) == b"hello!"
    fifth = session.remove_attribute(fourth, "a")
    assert "a" not in fifth.attributes and "a" in fourth.attributes
    session.transfer(fifth, "success")
    session.commit()
    (queued,) = env.success.poll(5)[0]
    assert queued.queue == "ok" and env.content.read(queued.content_claim) == b"hello!"
    # Superseded content of the same session was released; the survivor holds one claim.
    assert env.content.claimant_count(queued.content_claim) == 1
    assert env.content.resident_bytes() == len(b"hello!")


def test_stale_versions_and_foreign_flowfiles_are_refused():
    env = Env()
    session = env.session()
    first = session.create()
    session.put_attribute(first, "a", "1")
    with pytest.raises(SessionError, match="not its latest version"):
        session.transfer(first, "success")
    with pytest.raises(SessionError, match="does not belong"):
        session.transfer(FlowFile.new(0), "success")
    with pytest.raises(UnknownRelationship, match="nowhere"):
        session.transfer(session.create(), "nowhere")


def test_everything_must_be_transferred_or_removed():
    env = Env()
    env.seed(b"x")
    session = env.session()
    session.get()
    with pytest.raises(FlowFileNotTransferred):
        session.commit()
    assert env.incoming.count == 1 and env.incoming.has_available(), "rolled back into its queue"


def test_get_batch_clone_remove_and_claimant_counts():
    env = Env()
    env.seed(b"a", b"b", b"c")
    session = env.session()
    batch = session.get_batch(10)
    assert [f.attributes["n"] for f in batch] == ["a", "b", "c"]
    copy = session.clone(batch[0])
    session.transfer(batch[0], "success")
    session.transfer(copy, "other")
    session.remove(batch[1])
    session.transfer(batch[2], "success")
    session.commit()
    assert env.incoming.count == 0 and env.success.count == 2 and env.other.count == 1
    assert env.content.claimant_count(batch[0].content_claim) == 2  # original and clone
    assert env.content.claimant_count(batch[1].content_claim) == 0  # dropped: reclaimed
    kinds = sorted(e.event_type.value for e in env.committer.events)
    assert kinds == ["CLONE", "DROP"]


def test_rollback_requeues_in_place_releases_new_content_and_can_penalize():
    env = Env()
    env.seed(b"a", b"b")
    session = env.session()
    taken = session.get_batch(2)
    changed = session.write_bytes(taken[0], b"new content")
    session.transfer(changed, "success")
    session.rollback()
    assert env.content.resident_bytes() == 2, "the new claim was released"
    assert [f.attributes["n"] for f in env.incoming.poll(5)[0]] == ["a", "b"]
    env.incoming.requeue(taken)
    session = env.session()
    session.get_batch(2)
    session.rollback(penalize=True)
    assert not env.incoming.has_available()
    env.clock.now += 5_000
    assert env.incoming.has_available()


def test_penalize_transfer_back_to_the_source():
    env = Env()
    env.seed(b"a")
    session = env.session()
    flowfile = session.penalize(session.get())
    session.transfer(flowfile)
    session.commit()
    assert env.incoming.count == 1 and not env.incoming.has_available()


def test_provenance_attributes_are_those_at_commit_except_send():
    env = Env(auto_terminated=("done",))
    env.seed(b"a")
    session = env.session(outgoing={"success": [env.success]})
    flowfile = session.get()
    flowfile = session.put_attribute(flowfile, "stage", "sending")
    session.send(flowfile, "file:///x")
    flowfile = session.put_attribute(flowfile, "stage", "sent")
    session.route(flowfile, "success")
    session.transfer(flowfile, "success")
    session.commit()
    events = {e.event_type: e for e in env.committer.events}
    assert events[EventType.SEND].attributes_after["stage"] == "sending"
    assert events[EventType.ROUTE].attributes_after["stage"] == "sent"
    assert events[EventType.ATTRIBUTES_MODIFIED].attributes_after["stage"] == "sent"
    assert events[EventType.ATTRIBUTES_MODIFIED].attributes_before == {"filename": flowfile.id, "path": "./", "n": "a"}


def test_a_send_or_receive_without_a_transit_uri_is_refused_when_reported():
    env = Env(auto_terminated=("done",))
    env.seed(b"a")
    session = env.session(outgoing={"success": [env.success]})
    flowfile = session.get()
    for report in (session.send, session.receive):
        with pytest.raises(InvalidEventError, match="needs a transit URI"):
            report(flowfile, "")
    session.send(flowfile, "file:///x", details="one")
    session.transfer(flowfile, "success")
    session.commit()
    (sent,) = [e for e in env.committer.events if e.event_type is EventType.SEND]
    assert (sent.transit_uri, sent.details, sent.flowfile_uuid) == ("file:///x", "one", flowfile.id)


def test_a_route_is_refused_without_a_relationship_when_reported_and_its_row_is_the_events():
    env = Env(auto_terminated=("done",))
    env.seed(b"abc")
    session = env.session(outgoing={"success": [env.success]})
    flowfile = session.get()
    with pytest.raises(InvalidEventError, match="needs a relationship"):
        session.route(flowfile, "")
    before = flowfile
    flowfile = session.put_attribute(flowfile, "stage", "routed")
    session.route(flowfile, "success", details="matched 'stage'")
    session.transfer(flowfile, "success")
    session.commit()
    (routed,) = [e for e in env.committer.events if e.event_type is EventType.ROUTE]
    # What the event, built and checked by its own rules, would have been.
    expected = ProvenanceEvent(
        EventType.ROUTE,
        flowfile.id,
        routed.component_id,
        routed.component_type,
        event_time_ms=routed.event_time_ms,
        attributes_before=before.attributes,
        attributes_after=flowfile.attributes,
        content_before=before.content_claim,
        content_after=flowfile.content_claim,
        details="matched 'stage'",
        relationship="success",
        size=3,
        event_id=routed.event_id,
    )
    assert routed == expected


def test_fork_and_join_events():
    env = Env()
    env.seed(b"a", b"b")
    session = env.session()
    a, b = session.get_batch(2)
    children = [session.create(a) for _ in range(2)]
    joined = session.create([a, b])
    for flowfile in children + [joined, a, b]:
        session.transfer(flowfile, "success")
    session.commit()
    fork = [e for e in env.committer.events if e.event_type is EventType.FORK]
    join = [e for e in env.committer.events if e.event_type is EventType.JOIN]
    assert fork[0].flowfile_uuid == a.id and set(fork[0].child_uuids) == {c.id for c in children}
    assert join[0].flowfile_uuid == joined.id and join[0].parent_uuids == (a.id, b.id)


def test_a_child_inherits_as_nifis_session_makes_it():
    env = Env()
    env.seed(b"a", b"b")
    session = env.session()
    a, b = session.get_batch(2)
    a = session.put_all_attributes(a, {"alternate.identifier": "x-1", "discard.reason": "old", "kind": "k"})
    b = session.put_all_attributes(b, {"kind": "k", "filename": a.attributes["filename"]})
    child = session.create(a)
    # one parent: its filename and the rest, but not the identifiers of the parent itself
    assert child.attributes["filename"] == a.attributes["filename"] and child.attributes["kind"] == "k"
    assert "alternate.identifier" not in child.attributes and "discard.reason" not in child.attributes
    # several: what they share, and the join is named by its id even where they share a name
    joined = session.create([a, b])
    assert joined.attributes["kind"] == "k" and joined.attributes["filename"] == joined.id
    assert "n" not in joined.attributes  # "a" and "b" differ
    for flowfile in (child, joined, a, b):
        session.transfer(flowfile, "success")
    session.commit()


def test_fan_out_to_two_connections_clones():
    env = Env()
    session = env.session(outgoing={"success": [env.success, env.other]})
    flowfile = session.write_bytes(session.create(), b"x")
    session.transfer(flowfile, "success")
    session.commit()
    (one,), (two,) = env.success.poll(5)[0], env.other.poll(5)[0]
    assert one.id != two.id and one.content_claim == two.content_claim
    assert env.content.claimant_count(one.content_claim) == 2


def test_auto_terminated_relationship_drops():
    env = Env(auto_terminated=("success",))
    env.seed(b"a")
    session = env.session(outgoing={"other": [env.other]})
    session.transfer(session.get(), "success")
    session.commit()
    assert env.incoming.count == 0
    (drop,) = env.committer.events
    assert drop.event_type is EventType.DROP and "Auto-Terminated" in drop.details


def test_processor_state_is_committed_with_the_session():
    env = Env()
    session = env.session()
    session.set_state({"next": 5})
    assert session.get_state() == {"next": "5"}
    assert env.shard.get_state("p") == {}
    session.commit()
    assert env.shard.get_state("p") == {"next": "5"}


class Recorder:
    """Fakes of the content repository, WAL, provenance: record the commit order."""

    def __init__(self, fail_wal=False):
        self.calls = []
        self.fail_wal = fail_wal
        self.next_event_id = 0
        self.unsettled = []  # callbacks of WriteAheadLog.when_settled, until settle()
        self.inner = InMemoryContentRepository()

    def when_settled(self, callback):
        self.unsettled.append(callback)

    def settle(self):
        """A roll of the WAL settled every transaction of unknown outcome."""
        callbacks, self.unsettled = self.unsettled, []
        for callback in callbacks:
            callback()

    def write(self):
        return self.inner.write()

    def open_read(self, claim, *a):
        return self.inner.open_read(claim, *a)

    def sync(self):
        self.calls.append("content.sync")

    def check_durable(self, claims):
        self.calls.append(f"content.check_durable({len(list(claims))})")

    def update(self, updates, sync=True):
        if self.fail_wal:
            raise OSError("disk full")
        self.calls.append(f"wal.update({len(updates)})")

    def increment(self, claim):
        self.calls.append("claim+")
        return self.inner.increment(claim)

    def decrement(self, claim):
        self.calls.append("claim-")
        return self.inner.decrement(claim)

    def register_events(self, events, now_ms=None):
        self.calls.append(f"provenance({len(events)})")

    def register_batch(self, batch):
        self.register_events(range(len(batch)))

    def peek_next_event_id(self):
        return self.next_event_id

    def register_rows_later(self, rows, done):
        self.register_events(rows)
        done(None)


def durable_env(recorder):
    env = Env(lambda shard, content: DurableCommitter(shard, recorder, recorder, outbox=True))
    env.content = recorder
    env.shard.wal = recorder
    original_put = env.success.put_all

    def put_all(flowfiles):
        recorder.calls.append("queue.put")
        original_put(flowfiles)

    env.success.put_all = put_all
    return env


def test_commit_order_content_wal_queues_claims_provenance_callback():
    recorder = Recorder()
    env = durable_env(recorder)
    session = env.session()
    flowfile = session.write_bytes(session.create(), b"x")
    copy = session.clone(flowfile)
    session.transfer(flowfile, "success")
    session.transfer(copy, "success")
    session.commit_async(lambda: recorder.calls.append("on_success"))
    # 2 FlowFiles + the provenance outbox record in ONE WAL transaction.
    assert recorder.calls == [
        "content.sync",
        "content.check_durable(2)",
        "wal.update(3)",
        "queue.put",
        "claim+",
        "provenance(2)",
        "on_success",
    ]


def test_a_failed_wal_write_rolls_back_and_calls_on_failure_not_on_success():
    recorder = Recorder(fail_wal=True)
    env = durable_env(recorder)
    session = env.session()
    session.transfer(session.write_bytes(session.create(), b"x"), "success")
    failures = []
    session.commit_async(lambda: recorder.calls.append("on_success"), failures.append)
    # The write may still be on disk and replayed: the content stays (no claim-) until
    # a checkpoint supersedes it.
    assert recorder.calls == ["content.sync", "content.check_durable(1)"]
    assert isinstance(failures[0], CommitError) and "disk full" in str(failures[0]) and failures[0].wal_written
    assert env.success.count == 0
    with pytest.raises(SessionError):
        session.create()


def test_content_of_an_unconfirmed_wal_write_is_released_after_the_next_checkpoint():
    recorder = Recorder(fail_wal=True)
    env = durable_env(recorder)

    def commit_one():
        session = env.session()
        session.transfer(session.create(), "success")
        session.commit()

    failed = env.session()
    flowfile = failed.write_bytes(failed.create(), b"kept until a checkpoint")
    claim = flowfile.content_claim
    failed.transfer(flowfile, "success")
    with pytest.raises(CommitError):
        failed.commit()
    assert recorder.inner.claimant_count(claim) == 1  # a replay of the failed write would need it
    recorder.fail_wal = False
    commit_one()
    assert recorder.inner.claimant_count(claim) == 1  # not settled yet: still held
    recorder.settle()  # a roll of the WAL settled the failed write
    commit_one()
    assert recorder.inner.claimant_count(claim) == 0


def test_commit_without_on_failure_raises():
    recorder = Recorder(fail_wal=True)
    env = durable_env(recorder)
    session = env.session()
    session.transfer(session.create(), "success")
    with pytest.raises(CommitError, match="did not confirm"):
        session.commit()


def test_held_committer_holds_callbacks():
    env = Env()
    session = env.session()
    session.transfer(session.create(), "success")
    ran = []
    session.commit_async(lambda: ran.append(1))
    assert ran == [] and len(env.committer.held_callbacks) == 1


def test_expired_flowfiles_are_removed_with_an_expire_event():
    env = Env()
    env.incoming.expiration_ms = 1_000
    env.seed(b"old")
    env.clock.now += 5_000
    session = env.session()
    assert session.get_batch(5) == []
    session.commit()
    assert env.incoming.count == 0
    (event,) = env.committer.events
    assert event.event_type is EventType.EXPIRE
    assert env.content.resident_bytes() == 0


def test_the_outbox_slot_of_an_unconfirmed_wal_write_waits_until_the_wal_settles_it():
    recorder = Recorder(fail_wal=True)
    env = durable_env(recorder)
    committer = env.committer
    session = env.session()
    session.transfer(session.create(), "success")  # a CREATE event: the commit takes outbox slot 0
    with pytest.raises(CommitError):
        session.commit()
    other = committer._take_slot()
    assert other != 0  # its record may still be replayed
    committer._return_slot(other)
    assert committer._take_slot() == other
    committer._return_slot(other)
    recorder.settle()  # a roll of the WAL settled the failed write
    assert sorted([committer._take_slot(), committer._take_slot()]) == [0, other]


def test_many_contents_are_written_side_by_side_and_read_back_at_once():
    env = Env()
    session = env.session()
    made = [session.create(attributes={"n": index}) for index in range(5)]
    assert made[3].attributes["n"] == "3"  # attributes are text, as put_attribute stores them
    with pytest.raises(SessionError, match="5 FlowFiles but 1 contents"):
        session.write_bytes_many(made, [b"x"])
    with pytest.raises(SessionError, match="named twice"):
        session.write_bytes_many([made[0], made[0]], [b"x", b"y"])
    assert session.read_bytes_many(made) == [b""] * 5  # nothing changed
    written = session.write_bytes_many(made, [b"ab" * index for index in range(5)])
    assert [flowfile.size for flowfile in written] == [0, 2, 4, 6, 8]
    empty = session.create()
    assert session.read_bytes_many([written[4], empty, written[1]]) == [b"ab" * 4, b"", b"ab"]
    with pytest.raises(SessionError):
        session.read_bytes_many([made[0]])  # not its latest version
    for flowfile in (*written, empty):
        session.transfer(flowfile, "success")
    session.commit()
    queued = sorted(env.success.poll(10)[0], key=lambda flowfile: flowfile.size)
    assert [env.content.read(f.content_claim) if f.content_claim else b"" for f in queued] == [b"", b""] + [
        b"ab" * index for index in range(1, 5)
    ]


def test_events_that_cannot_be_encoded_fail_the_commit_and_roll_it_back():
    recorder = Recorder()
    env = durable_env(recorder)
    env.incoming.put_all([FlowFile.new(env.clock()).in_queue("in")])
    session = env.session()
    flowfile = session.get()
    session.send(flowfile, 12345)  # not a text URI: provenance cannot store it
    session.transfer(flowfile, "success")
    with pytest.raises(CommitError, match="nothing was written to the WAL"):
        session.commit()
    assert "wal.update(2)" not in recorder.calls and env.success.count == 0
    assert [f.id for f in env.incoming.poll(5)[0]] == [flowfile.id]  # back in its place


class CountingContent(InMemoryContentRepository):
    """Counts the opens of claims; fails the batch read when asked to."""

    def __init__(self):
        super().__init__()
        self.opened = []
        self.fail_batch = False

    def open_read(self, claim, offset=0, length=None):
        self.opened.append(claim)
        return super().open_read(claim, offset, length)

    def read_many(self, claims):
        if self.fail_batch:
            from repositories.content.errors import ContentUnavailable

            raise ContentUnavailable("the storage did not answer", claim=claims[0])
        return super().read_many(claims)


def test_prefetched_contents_are_read_together_once_and_served_from_memory(monkeypatch):
    from flow import session as session_module

    env = Env()
    env.content = CountingContent()
    env.committer = HeldCommitter(env.shard, env.content)
    big = b"B" * 200
    monkeypatch.setattr(session_module, "PREFETCH_MAX_CONTENT", 100)
    env.seed(b"one", b"two", big, b"three")
    session = env.session()
    batch = session.get_batch(10)
    env.content.opened.clear()
    session.prefetch(batch)
    spans = len(env.content.opened)
    assert spans == 3  # the small ones (a resource each in this repository); the big one is left
    contents = {flowfile.attributes["n"]: session.read_bytes(flowfile) for flowfile in batch}
    assert contents == {"one": b"one", "two": b"two", big.decode(): big, "three": b"three"}
    assert len(env.content.opened) == spans + 1  # only the big one was opened again
    for flowfile in batch:
        session.transfer(flowfile, "success")
    session.commit()
    assert session._prefetched == {}  # held no longer than the session


def test_a_failed_prefetch_leaves_each_content_to_its_own_read():
    env = Env()
    env.content = CountingContent()
    env.committer = HeldCommitter(env.shard, env.content)
    env.seed(b"one", b"two")
    env.content.fail_batch = True
    session = env.session()
    batch = session.get_batch(10)
    session.prefetch(batch)
    assert sorted(session.read_bytes(flowfile) for flowfile in batch) == [b"one", b"two"]
    session.rollback()
