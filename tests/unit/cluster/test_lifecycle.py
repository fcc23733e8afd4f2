"""The incarnation loop: a member that cannot join because of its configuration stops
the node (exit code 2, one fatal event); one that cannot join because a service is
down is retried."""

import threading

from cluster.errors import SessionTimeoutRefused
from cluster.node.lifecycle import run_incarnations


class Member:
    def __init__(self, error):
        self.error, self.stopped = error, 0

    def start(self):
        raise self.error

    def stop(self, *, leave):
        self.stopped += 1


def test_a_configuration_the_cluster_refuses_stops_the_node_instead_of_rejoining():
    events, made = [], []

    def make():
        made.append(Member(SessionTimeoutRefused("zk:2181", 30.0, 20.0)))
        return made[-1]

    code = run_incarnations(make, lambda kind, **fields: events.append((kind, fields)), retry_pause=0.01)
    assert code == 2 and len(made) == 1 and made[0].stopped == 1
    [(kind, fields)] = events
    assert kind == "start-failed" and fields["fatal"] is True and "at most 20" in fields["error"]


def test_a_service_that_is_down_is_retried():
    stop, made = threading.Event(), []

    def make():
        made.append(Member(ConnectionError("no quorum")))
        if len(made) == 3:
            stop.set()
        return made[-1]

    events = []
    assert run_incarnations(make, lambda kind, **fields: events.append(fields), stop=stop, retry_pause=0.01) == 0
    assert len(made) == 3 and all(not fields["fatal"] for fields in events)
