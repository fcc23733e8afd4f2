"""A node's ZooKeeper client tries the ensemble again about once a second while it
cannot reach it, not after kazoo's default pause, which doubles up to an hour."""

from __future__ import annotations

from kazoo.exceptions import ConnectionLoss

from cluster.zk.client import new_client


def _pauses(retry, tries: int) -> list[float]:
    """The pauses `retry` would take before each of its first `tries` attempts."""
    taken: list[float] = []
    retry = retry.copy()
    retry.sleep_func, retry.interrupt = taken.append, None  # a client not started counts as stopped

    def refused() -> None:
        if len(taken) < tries:
            raise ConnectionLoss("the ensemble has no quorum")

    retry(refused)
    return taken


def test_a_client_that_cannot_reach_the_ensemble_tries_again_about_once_a_second():
    client = new_client("127.0.0.1:1", 10.0)
    try:
        pauses = _pauses(client._conn_retry, 40)
    finally:
        client.close()
    assert len(pauses) == 40  # it never gives up
    assert max(pauses) <= 1.0 + 0.4, pauses  # at most a second, plus kazoo's jitter
    assert pauses[0] < 0.6, pauses  # and begins promptly
