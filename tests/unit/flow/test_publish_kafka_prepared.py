"""PublishKafka's first task on an adopted shard taking the producer made ready for it
(`prepare_adopted`) while that preparation is still between its fences: the task
waits for the producer, the preparation goes on to its last fence and hands it over.
Pure logic: the fencing requests are a fake that calls the admission check as the
real ones do, the producer is a fake."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future

import flow.processors.kafka.publish as publish_module
from flow.processors.kafka.publish import NotAdmitted, PublishKafka
from flow.processors.kafka.tasks import run_alone

WAIT_S = 30


class Context(dict):
    logger = logging.getLogger(__name__)

    def yield_(self) -> None:
        pass


class Session:
    shard_id = "n3-3"

    def check_admitted(self) -> None:
        pass


class Producer:
    transactional_id = "custody-n3-3-publish"

    def close(self, _timeout: float) -> None:
        pass


CONTEXT = Context(delivery_guarantee="exactly_once", transactional_id_prefix="custody")


class Awaited(Future):
    """A Future that says when someone starts waiting for its result."""

    waited = threading.Event()

    def result(self, timeout=None):
        Awaited.waited.set()
        return super().result(timeout)


def _fences_held_between(monkeypatch, between: threading.Event, go_on: threading.Event) -> tuple[Producer, list]:
    """`transactional_producer` made a fake: its first fence, then a pause until `go_on`
    (`between` says it began), then its last fence, as `init_transactions` follows
    the settle of a hanging transaction."""
    refused: list = []
    producer = Producer()

    def made(context, transactional_id, admit, fencing=None):
        admit()
        between.set()
        assert go_on.wait(WAIT_S)
        try:
            admit()
        except NotAdmitted as error:
            refused.append(error)
            raise
        return producer, frozenset({"a", "b"})

    Awaited.waited = threading.Event()
    monkeypatch.setattr(publish_module, "Future", Awaited)
    monkeypatch.setattr(publish_module, "transactional_producer", made)
    return producer, refused


def _paused_between_fences(monkeypatch):
    """A PublishKafka whose preparation for shard n3-3 passed its first fence and waits
    before its last; `go_on.set()` lets it go on."""
    between, go_on = threading.Event(), threading.Event()
    producer, refused = _fences_held_between(monkeypatch, between, go_on)
    publish = PublishKafka("publish")
    preparing = threading.Thread(target=publish.prepare_adopted, args=(CONTEXT, "n3-3", lambda: None), daemon=True)
    preparing.start()
    assert between.wait(WAIT_S)
    return publish, preparing, go_on, producer, refused


def test_the_first_task_waits_for_the_producer_being_made_ready_and_takes_it(monkeypatch):
    publish, preparing, go_on, producer, refused = _paused_between_fences(monkeypatch)
    taken: list = []
    task = threading.Thread(
        target=run_alone,
        args=(publish._lock, CONTEXT, lambda: taken.append(publish._producer_for(CONTEXT, Session(), True))),
        daemon=True,
    )
    task.start()
    assert Awaited.waited.wait(WAIT_S)  # the task holds its lock and waits for the producer
    go_on.set()  # the preparation's last fence
    preparing.join(WAIT_S)
    task.join(WAIT_S)
    # Before: the last fence asked for the lock the waiting task held, and both waited for good.
    assert not preparing.is_alive() and not task.is_alive(), "the task and the preparation wait on each other"
    assert taken == [producer] and publish._producer is producer
    assert publish._pending.ids() == {"a", "b"}
    assert refused == []


def test_a_preparation_given_up_between_its_fences_is_refused_at_the_next(monkeypatch):
    publish, preparing, go_on, _, refused = _paused_between_fences(monkeypatch)
    releasing = threading.Thread(target=publish.release_prepared, daemon=True)
    releasing.start()  # waits for the fence in flight (a moment at most), then gives it up
    go_on.set()
    preparing.join(WAIT_S)
    releasing.join(WAIT_S)
    assert not preparing.is_alive() and not releasing.is_alive()
    assert len(refused) == 1 and publish._prepared is None and publish._producer is None


def test_no_preparation_begins_once_a_task_made_its_own_producer(monkeypatch):
    between, go_on = threading.Event(), threading.Event()
    _fences_held_between(monkeypatch, between, go_on)
    publish = PublishKafka("publish")
    go_on.set()
    run_alone(publish._lock, CONTEXT, lambda: publish._producer_for(CONTEXT, Session(), True))
    between.clear()
    publish.prepare_adopted(CONTEXT, "n3-3", lambda: None)
    assert not between.is_set() and publish._prepared is None
