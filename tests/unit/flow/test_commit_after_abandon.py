"""Nothing is acknowledged after a death. A session whose commit is in flight when its
shard's WAL is abandoned (its WAL sync stuck in a storage that does not answer) never
runs `on_success`, whatever that sync does afterwards: ListenHTTP answers no 200 and a
source deletes nothing. The commit fails as "outcome unknown" (`wal_written`), which
ListenHTTP answers by closing the connection unanswered; the adopter finds the
transaction whole or not at all. A commit that starts after the abandon writes nothing.
And the runtime's gate shuts the moment it is abandoned."""

from __future__ import annotations

import threading

import pytest

from cluster.errors import WorkGateClosed
from cluster.node.flow_runtime import FlowRuntime
from flow.errors import CommitError
from tests.durable_shard import DurableShard
from tests.stalled_storage import StalledStorage


@pytest.mark.parametrize("sync_succeeds", [True, False])
def test_a_commit_in_flight_at_the_abandon_never_runs_on_success(tmp_path, sync_succeeds):
    storage = StalledStorage()
    durable = DurableShard(storage, str(tmp_path / "shard"), str(tmp_path / "content"))
    durable.create([b"queued"])
    stall = storage.stall("sync", "journal")
    answers: list[str] = []
    failures: list[BaseException] = []

    def commit():
        session = durable.session()
        session.transfer(session.write_bytes(session.create(), b"received"), "success")
        try:
            session.commit_async(lambda: answers.append("200"), failures.append)
        except CommitError:
            pass

    thread = threading.Thread(target=commit, daemon=True)
    thread.start()
    assert stall.entered.wait(5)
    durable.shard.wal.abandon("incarnation n1-7 is dead")
    stall.release(fail=not sync_succeeds)
    thread.join(10)
    assert answers == []  # never acknowledged
    assert len(failures) == 1 and isinstance(failures[0], CommitError) and failures[0].wal_written
    # A session that starts now is refused before it writes anything.
    session = durable.session()
    session.transfer(session.write_bytes(session.create(), b"later"), "success")
    with pytest.raises(CommitError, match="nothing was written to the WAL.*abandoned") as raised:
        session.commit_async(lambda: answers.append("200"))
    assert not raised.value.wal_written and answers == []


class Handle:
    shard, epoch, home, step = "n1-7", 7, True, None
    gate = None


def test_the_runtimes_gate_shuts_the_moment_it_is_abandoned():
    runtime = FlowRuntime(Handle(), None, None, None)
    runtime.admit("put")  # open
    runtime.abandon("incarnation n1-7 is dead")
    with pytest.raises(WorkGateClosed, match="abandoned; it never writes again"):
        runtime.admit("put")
    runtime.resume()  # a reconnect cannot open it again
    with pytest.raises(WorkGateClosed):
        runtime.admit("put")
    runtime.stop()  # nothing recovered: nothing to stop, and nothing of a WAL closed
