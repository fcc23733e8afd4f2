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
