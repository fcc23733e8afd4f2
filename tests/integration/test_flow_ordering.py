"""Seed 004's ordering: an acknowledging source that acks only in `on_success`.

Traditional engine: the source's session is durable before the ack (at-least-once); a
downstream failure does not undo it (processors succeed or fail independently), and a
lost ack means the source delivers again - duplicates, never loss.
Stateless engine: the whole flow is one transaction; a downstream failure means no ack
and nothing delivered, and the retry delivers exactly once.
"""

from __future__ import annotations

import threading

from cluster.node.standalone import StandaloneNode
from flow.definition import parse_flow
from flow.processor import Processor, PropertyDescriptor
from flow.processors import PROCESSOR_TYPES
from flow.stateless import StatelessFlow

BROKERS: dict = {}


class Broker:
    """A message source like a Kafka partition: a message is redelivered until acked."""

    def __init__(self, messages):
        self.lock = threading.Lock()
        self.available = dict(enumerate(messages))
        self.in_flight: dict = {}
        self.acked: list = []
        self.lose_next_ack = False

    def poll(self, n):
        with self.lock:
            offsets = sorted(self.available)[:n]
            batch = [(o, self.available.pop(o)) for o in offsets]
            self.in_flight.update(batch)
            return batch

    def ack(self, offsets):
        with self.lock:
            if self.lose_next_ack:  # the connection dropped before the ack arrived
                self.lose_next_ack = False
                self.release(offsets, locked=True)
                return
            for offset in offsets:
                self.acked.append(offset)
                self.in_flight.pop(offset)

    def release(self, offsets, locked=False):
        if not locked:
            with self.lock:
                return self.release(offsets, locked=True)
        for offset in offsets:
            self.available[offset] = self.in_flight.pop(offset)

    def pending(self):
        with self.lock:
            return len(self.available) + len(self.in_flight)


class AckingSource(Processor):
    type_name = "TestAckingSource"
    is_source = True
    properties = (PropertyDescriptor("broker", "string", required=True),)

    def on_trigger(self, context, session):
        broker = BROKERS[context["broker"]]
        batch = broker.poll(5)
        if not batch:
            context.yield_()
            return
        for offset, message in batch:
            flowfile = session.create(attributes={"offset": str(offset)})
            session.transfer(session.write_bytes(flowfile, message), "success")
        offsets = [offset for offset, _ in batch]
        # Seed 004: commit the session first, acknowledge in on_success.
        session.commit_async(lambda: broker.ack(offsets), lambda error: broker.release(offsets))


class Downstream(Processor):
    type_name = "TestDownstream"
    failing = True

    def on_trigger(self, context, session):
        flowfile = session.get()
        if flowfile is None:
            return
        if Downstream.failing:
            raise RuntimeError("the database is down")
        session.transfer(flowfile, "success")


REGISTRY = {**PROCESSOR_TYPES, AckingSource.type_name: AckingSource, Downstream.type_name: Downstream}


def definition(broker_name, stateless=False):
    processors = [
        {"id": "source", "type": "TestAckingSource", "properties": {"broker": broker_name}},
        {"id": "sink", "type": "TestDownstream"},
    ]
    connections = [
        {"id": "to-sink", "source": "source", "destination": "sink"},
        {"source": "sink", "destination": "out"},
    ]
    ports = [{"id": "out", "type": "output"}]
    return parse_flow({"processors": processors, "connections": connections, "ports": ports}, registry=REGISTRY)


def test_traditional_engine_is_at_least_once(tmp_path):
    BROKERS["t"] = broker = Broker([f"m{i}".encode() for i in range(20)])
    Downstream.failing = True
    node = StandaloneNode(definition("t"), str(tmp_path / "node"))
    node.start()
    try:
        queue = node.graph.queues["to-sink"]
        # Acked as soon as the source's own session is durable, though downstream fails.
        assert node.wait_until(lambda: broker.pending() == 0 and queue.count == 20, 30), node.status()
        assert sorted(broker.acked) == list(range(20))
        assert node.engine.status()["processors"]["sink"]["failures"] > 0
    finally:
        node.stop()
    # Acked data is custody's now: it survives a restart.
    node = StandaloneNode(definition("t"), str(tmp_path / "node"))
    node.start(paused=True)
    try:
        assert node.graph.queues["to-sink"].count == 20
    finally:
        node.stop()

    # A lost ack: the session committed, the source did not hear back, it redelivers.
    BROKERS["t"] = broker = Broker([b"x"])
    broker.lose_next_ack = True
    node = StandaloneNode(definition("t"), str(tmp_path / "node"))
    node.start()
    try:
        queue = node.graph.queues["to-sink"]
        assert node.wait_until(lambda: broker.pending() == 0, 30)
        assert queue.count == 22, "the message is in custody twice: at-least-once, not at-most-once"
    finally:
        node.stop()


def test_stateless_engine_acks_nothing_on_failure_and_loses_nothing():
    BROKERS["s"] = broker = Broker([f"m{i}".encode() for i in range(3)])
    Downstream.failing = True
    flow = StatelessFlow(definition("s"))
    result = flow.trigger()
    assert not result.success and "database is down" in result.failure
    result.acknowledge()
    assert broker.acked == [] and broker.pending() == 3, "nothing acked, nothing lost"
    # The broker redelivers what was never acked (a real one would after a timeout).
    broker.release(list(broker.in_flight))
    Downstream.failing = False
    result = flow.trigger()
    assert result.success and sorted(d for _, _, d in result.outputs) == [b"m0", b"m1", b"m2"]
    assert broker.acked == [], "held until the whole flow succeeded"
    result.acknowledge()
    assert sorted(broker.acked) == [0, 1, 2] and broker.pending() == 0
    flow.close()
