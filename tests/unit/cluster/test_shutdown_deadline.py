"""The shutdown deadline: a node that has not closed everything `timeout` seconds
after the stop was asked for exits, with its stacks on stderr; one that closed in
time is left alone, and nothing happens before the stop."""

from __future__ import annotations

import logging
import threading

from cluster.node.shutdown_deadline import EXIT_STOPPED_LATE, watch_shutdown

LOG = logging.getLogger("custody.node")


def test_a_node_still_stopping_past_the_deadline_exits(caplog, capfd):
    stop, exits = threading.Event(), []
    exited = threading.Event()
    with caplog.at_level(logging.ERROR):
        _, watcher = watch_shutdown(stop, 0.2, LOG, exit=lambda code: (exits.append(code), exited.set()))
        stop.set()
        assert exited.wait(10)
        watcher.join(10)
    assert exits == [EXIT_STOPPED_LATE]
    assert "shutdown_timeout" in caplog.text
    assert "shutdown_deadline.py" in capfd.readouterr().err  # the stacks, its own thread among them


def test_a_node_that_closed_in_time_is_not_stopped():
    stop, exits = threading.Event(), []
    closed, watcher = watch_shutdown(stop, 0.2, LOG, exit=exits.append)
    stop.set()
    closed.set()
    watcher.join(10)
    assert not watcher.is_alive() and exits == []


def test_nothing_happens_before_the_stop_is_asked_for():
    stop, exits = threading.Event(), []
    _, watcher = watch_shutdown(stop, 0.01, LOG, exit=exits.append)
    watcher.join(0.3)  # bounded: the watcher must still be waiting on the stop
    assert watcher.is_alive() and exits == []
    stop.set()
    watcher.join(10)
    assert exits == [EXIT_STOPPED_LATE]
