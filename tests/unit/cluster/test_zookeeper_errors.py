"""kazoo's exceptions leave `cluster.zk` as `cluster.errors.ZooKeeperError`s, named for
what they mean to the caller; inside `cluster.zk` they are still kazoo's, so its own
handling (a missing znode read as none, kazoo's retry) is unchanged."""

from __future__ import annotations

import pytest
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    MarshallingError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from cluster.core.layout import ClusterLayout
from cluster.errors import (
    ClusterError,
    ZnodeAccessDenied,
    ZnodeExists,
    ZnodeMissing,
    ZnodeNotEmpty,
    ZnodeVersionChanged,
    ZooKeeperError,
    ZooKeeperSessionExpired,
    ZooKeeperUnavailable,
)
from cluster.zk.kazoo_errors import translate
from cluster.zk.store import ClusterStore


@pytest.mark.parametrize(
    "raised, meaning",
    [
        (NoNodeError(), ZnodeMissing),
        (NodeExistsError(), ZnodeExists),
        (BadVersionError(), ZnodeVersionChanged),
        (NotEmptyError(), ZnodeNotEmpty),
        (NoAuthError(), ZnodeAccessDenied),
        (ConnectionLoss(), ZooKeeperUnavailable),
        (KazooTimeoutError("no answer"), ZooKeeperUnavailable),
        (ConnectionClosedError("Connection has been closed"), ZooKeeperUnavailable),  # stopped, not expired
        (SessionExpiredError(), ZooKeeperSessionExpired),
        (MarshallingError(), ZooKeeperError),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else value.__name__,
)
def test_each_kazoo_error_becomes_the_cluster_error_that_says_what_it_means(raised, meaning):
    translated = translate(raised, "ShardRegistry.read", "/custody/c1/shards/n1-3")
    assert type(translated) is meaning and isinstance(translated, ClusterError)
    assert str(translated).startswith("ZooKeeper ShardRegistry.read (/custody/c1/shards/n1-3) failed: ")
    assert type(raised).__name__ in str(translated)


class Client:
    """Just enough of a kazoo client: `get` and `get_children` raise what they are given,
    and the election's `contenders` fails as scripted, then answers."""

    def __init__(self, raises=None, contenders=()):
        self.raises, self.contenders = raises, list(contenders)
        self.retry = KazooRetry(max_tries=3, delay=0.0, max_jitter=0.0, sleep_func=lambda seconds: None)

    def get(self, path, watch=None):
        raise self.raises

    def get_children(self, path, watch=None):
        raise self.raises

    def Election(self, path, identifier=None):  # noqa: N802 - kazoo's name
        client = self

        class Election:
            def contenders(self):
                answer = client.contenders.pop(0)
                if isinstance(answer, BaseException):
                    raise answer
                return answer

        return Election()


STORE_LAYOUT = ClusterLayout("c1")


def test_a_store_call_raises_the_translation_with_kazoos_error_as_its_cause():
    refused = NoAuthError()
    store = ClusterStore(Client(raises=refused), STORE_LAYOUT)
    with pytest.raises(ZnodeAccessDenied) as caught:
        store.shards.read("n1-3")
    assert caught.value.__cause__ is refused and "ShardRegistry.read" in str(caught.value)
    with pytest.raises(ZooKeeperUnavailable):
        ClusterStore(Client(raises=ConnectionLoss()), STORE_LAYOUT).live_incarnations()


def test_inside_the_store_a_missing_znode_is_still_read_as_none():
    store = ClusterStore(Client(raises=NoNodeError(), contenders=[NoNodeError()]), STORE_LAYOUT)
    assert store.shards.read("n1-3") is None and store.incarnation_counter() == 0
    assert store.contenders() == []


def test_kazoos_retry_still_sees_a_lost_connection_and_asks_again():
    store = ClusterStore(Client(contenders=[ConnectionLoss(), ["n2-5", "n1-4"]]), STORE_LAYOUT)
    assert store.contenders_retried() == ["n2-5", "n1-4"]
    with pytest.raises(ZooKeeperUnavailable):  # without the retry, the loss is the caller's
        ClusterStore(Client(contenders=[ConnectionLoss()]), STORE_LAYOUT).contenders()
