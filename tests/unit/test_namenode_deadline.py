"""A NameNode call that never answers (its connection cut by a network partition)
fails at its deadline as HDFS unavailable, and the calls after it go to a new client:
the node recovers without a restart."""

import threading

import pytest

from replication.deadline import DeadlineRunner
from replication.hdfs_storage import _NameNodeClient

RELEASE = threading.Event()  # set at the end of the test: the stuck worker returns


class Client:
    def __init__(self, number, hang):
        self.number, self.hang = number, hang

    def get_file_info(self, path):
        if self.hang.is_set():
            RELEASE.wait(5)  # a cut connection: no answer
        return (self.number, path)


def test_a_call_past_its_deadline_fails_and_the_next_goes_to_a_new_client():
    hang, made = threading.Event(), []

    def make():
        made.append(Client(len(made) + 1, hang if not made else threading.Event()))
        return made[-1]

    client = _NameNodeClient(make, DeadlineRunner("test-namenode"), 0.2)
    assert client.get_file_info("/a") == (1, "/a")
    hang.set()
    with pytest.raises(TimeoutError, match="NameNode timed out: no answer to get_file_info within 0.2 s"):
        client.get_file_info("/b")
    assert client.get_file_info("/c") == (2, "/c") and len(made) == 2
    RELEASE.set()


def test_errors_of_the_call_itself_pass_through_and_keep_the_client():
    class Missing:
        def get_file_info(self, path):
            raise FileNotFoundError(path)

    made = []
    client = _NameNodeClient(lambda: made.append(Missing()) or made[-1], DeadlineRunner("test-namenode"), 1.0)
    with pytest.raises(FileNotFoundError):
        client.get_file_info("/nope")
    assert len(made) == 1


def test_a_call_refused_for_want_of_a_worker_says_so_and_keeps_the_client():
    """Every worker is held by calls past their deadlines: the call never reached the
    NameNode, so it does not claim the NameNode timed out nor replaces the connection."""
    made, held = [], threading.Event()
    runner = DeadlineRunner("test-namenode-full", max_workers=1)
    client = _NameNodeClient(lambda: made.append(Client(len(made) + 1, threading.Event())) or made[-1], runner, 1.0)
    runner.start(lambda: held.wait(5))
    with pytest.raises(TimeoutError, match="all 1 test-namenode-full workers are still blocked"):
        client.get_file_info("/a")
    assert len(made) == 1
    held.set()


def test_renewed_workers_leave_the_blocked_calls_behind_and_take_every_later_call(monkeypatch):
    """An incarnation died with calls blocked (a partition cut its pipelines): the
    storage's calls after it run on fresh workers of the same runners, over a new
    NameNode connection; the blocked ones end on their own; with nothing blocked,
    nothing is renewed."""
    import replication.hdfs_storage as hdfs_storage
    from cluster.services.process import wait_until

    made = []
    monkeypatch.setattr(
        hdfs_storage.hdfs_native,
        "Client",
        lambda *args: made.append(Client(len(made) + 1, threading.Event())) or made[-1],
    )
    storage = hdfs_storage.HdfsStorage("hdfs://127.0.0.1:1", io_timeout=1.0)
    assert storage.renew_workers() == 0 and len(made) == 1
    held = threading.Event()
    runner = storage._runner
    stuck = [runner.start(lambda: held.wait(5)) for _ in range(2)]
    assert storage.renew_workers() == 2 and len(made) == 2 and storage._runner is runner
    assert storage._client.get_file_info("/after") == (2, "/after")  # the new connection, a fresh worker
    held.set()
    assert all(call.done.wait(5) for call in stuck)
    wait_until(lambda: runner.busy == 0, 10, "the blocked calls to end")
    assert storage.renew_workers() == 0 and len(made) == 2
