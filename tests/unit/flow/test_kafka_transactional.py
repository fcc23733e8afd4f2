"""The making of PublishKafka's transactional producer when its fence is refused while
the steps beside the fencing still run (`flow.processors.kafka.transactional`): the
refusal is raised at once, the producer is discarded, nothing fences, and the progress
reader those steps use is closed only once they are done with it."""

from __future__ import annotations

import threading

import pytest

from flow.errors import NotAdmitted
from flow.processors.kafka import transactional

WAIT_S = 30.0  # a deadline for what the test waits on, never a pause
made: list = []  # the producer and the reader, as the making made them


class Reader:
    def __init__(self, config, transactional_id):
        self.closed = threading.Event()
        self.in_use = False
        made.append(self)

    def close(self):
        assert not self.in_use, "closed while the steps beside the fencing still used it"
        self.closed.set()


class Producer:
    def __init__(self, context, transactional_id):
        self.config = {}
        self.discarded = False
        self.fenced = False
        made.append(self)

    def init_transactions(self):
        self.fenced = True

    def discard(self):
        self.discarded = True


def test_a_fence_refused_while_the_steps_beside_run_closes_the_reader_only_after_them(monkeypatch):
    made.clear()
    started, release = threading.Event(), threading.Event()

    def beside(context, producer, reader, transactional_id, steps):
        reader.in_use = True
        started.set()
        assert release.wait(WAIT_S)
        reader.in_use = False
        return 0

    def own_hanging(context, producer, transactional_id, admit):
        assert started.wait(WAIT_S)
        admit()  # the look for the id's own hanging transactions asks before it fences

    asked = []

    def admit():
        asked.append(True)
        if len(asked) > 1:
            raise NotAdmitted("this node was deposed")

    monkeypatch.setattr(transactional, "SinkProducer", Producer)
    monkeypatch.setattr(transactional, "ProgressReader", Reader)
    monkeypatch.setattr(transactional, "_place_and_others", beside)
    monkeypatch.setattr(transactional, "_finish_hanging", own_hanging)

    with pytest.raises(NotAdmitted):
        transactional.transactional_producer({}, "t-shard-publish", admit)
    producer, reader = made
    assert producer.discarded and not producer.fenced
    assert not reader.closed.is_set()  # the steps beside still hold it
    release.set()
    assert reader.closed.wait(WAIT_S)
