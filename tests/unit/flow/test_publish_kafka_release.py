"""PublishKafka giving up a producer made ready for an adopted shard (`release_prepared`):
it waits for a fence already in flight, but only for a moment, so that a node stopping
or dead never waits on brokers that do not answer. Pure logic: the preparation's
fence is a held lock, the producer a fake."""

from __future__ import annotations

import threading
from concurrent.futures import Future

from flow.processors.kafka.publish import FENCE_WAIT_S, PublishKafka


class Producer:
    def __init__(self) -> None:
        self.closed = threading.Event()

    def close(self, _timeout: float) -> None:
        self.closed.set()


def _made_ready(publish: PublishKafka) -> Producer:
    producer = Producer()
    prepared: Future = Future()
    prepared.set_result(("id", producer, frozenset()))
    publish._prepared = prepared
    return producer


def test_a_fence_in_flight_is_waited_for_before_the_release_returns():
    publish = PublishKafka("publish")
    producer = _made_ready(publish)
    publish._fencing.acquire()  # the preparation's fence, in flight
    released = threading.Event()
    releasing = threading.Thread(target=lambda: (publish.release_prepared(), released.set()))
    releasing.start()
    publish._fencing.release()  # the fence ended
    releasing.join(FENCE_WAIT_S + 30)
    assert released.is_set() and producer.closed.is_set() and publish._prepared is None


def test_a_fence_stuck_on_silent_brokers_holds_the_release_a_moment_only():
    publish = PublishKafka("publish")
    producer = _made_ready(publish)
    stuck, done = threading.Event(), threading.Event()

    def fencing():  # a fence waiting on brokers that never answer, until the test ends
        with publish._fencing:
            stuck.set()
            done.wait(120)

    fence = threading.Thread(target=fencing, daemon=True)
    fence.start()
    assert stuck.wait(30)
    releasing = threading.Thread(target=publish.release_prepared, daemon=True)
    releasing.start()
    releasing.join(FENCE_WAIT_S + 30)  # before: held until the fence ended (here, never)
    try:
        assert not releasing.is_alive(), "the release waited for the stuck fence"
        assert publish._prepared is None and producer.closed.is_set()
    finally:
        done.set()
        fence.join(30)
