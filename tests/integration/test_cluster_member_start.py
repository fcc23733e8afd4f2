"""A member that starts while its services cannot serve it, or that dies while it
starts, on the real ZooKeeper ensemble (local disk standing in for HDFS, with a
storage fault where HDFS would refuse writes).

* HDFS cannot take a write yet (a NameNode in safe mode, no DataNode): the member
  takes no incarnation and leaves nothing in ZooKeeper; once storage takes writes,
  its first incarnation is epoch 1.
* The session ends while the member is recovering its home shard: `start` raises
  `IncarnationEnded`, the shard's runtime is stopped without ever starting, and the
  member does not join or lead. The next member joins as a new incarnation.
"""

from __future__ import annotations

import threading

import pytest

from cluster.core.layout import ClusterLayout
from cluster.errors import IncarnationEnded, StorageUnavailable
from cluster.failover.member import ClusterMember, MemberConfig
from cluster.services.process import wait_until
from cluster.services.zookeeper import ZooKeeperEnsemble
from cluster.zk.store import ClusterStore
from repositories.storage import LocalStorage

pytestmark = [pytest.mark.zookeeper]
TIMEOUT = 4.0


class RefusingStorage(LocalStorage):
    """Local storage whose file creation fails while `refusing` is set, as HDFS's does
    while its NameNode is in safe mode."""

    def __init__(self):
        super().__init__()
        self.refusing = threading.Event()
        self.refused = 0

    def create(self, path: str, *, overwrite: bool = False):
        if self.refusing.is_set():
            self.refused += 1
            raise OSError(f"Cannot create file {path}. Name node is in safe mode.")
        return super().create(path, overwrite=overwrite)


class Runtime:
    """A shard runtime that records what the member asked of it; `recover` can be held."""

    def __init__(self, hold: threading.Event | None = None):
        self.hold, self.recovering = hold, threading.Event()
        self.calls: list[str] = []

    def recover(self):
        self.calls.append("recover")
        self.recovering.set()
        if self.hold is not None:
            assert self.hold.wait(30), "the test never released recovery"

    def start(self):
        self.calls.append("start")

    def stop(self):
        self.calls.append("stop")

    def pause(self):
        pass

    def resume(self):
        pass

    def abort_open_sessions(self):
        pass

    def drained(self):
        return False

    def load(self):
        return {}

    def active_threads(self):
        return 0


def member(zk_hosts, tmp_path, storage, runtimes, **config):
    def factory(handle):
        runtimes.append(runtimes.pop(0) if runtimes and not runtimes[0].calls else Runtime())
        return runtimes[-1]

    return ClusterMember(
        MemberConfig(
            zk_hosts=zk_hosts, cluster="c1", node="n1", session_timeout=TIMEOUT, hdfs_root=str(tmp_path), **config
        ),
        storage,
        factory,
    )


def test_a_member_takes_no_incarnation_while_storage_refuses_writes(zk_hosts, zk_client, tmp_path):
    storage, runtimes = RefusingStorage(), []
    storage.refusing.set()
    store = ClusterStore(zk_client, ClusterLayout("c1", str(tmp_path)))
    for _ in range(3):
        first = member(zk_hosts, tmp_path, storage, runtimes)
        with pytest.raises(StorageUnavailable, match="safe mode.*the node waits and tries again"):
            first.start()
        first.stop(leave=False)
    assert storage.refused == 3 and runtimes == []
    assert store.incarnation_counter() == 0 and store.members() == {} and store.shards.all() == {}
    storage.refusing.clear()
    joined = member(zk_hosts, tmp_path, storage, runtimes)
    try:
        assert joined.start().epoch == 1
        assert [runtime.calls for runtime in runtimes] == [["recover", "start"]]
        assert not (tmp_path / "c1" / "probes" / "n1").exists()  # the probe is deleted
    finally:
        joined.stop()


def test_a_member_whose_session_ends_while_it_starts_goes_no_further(zk_hosts, zk_client, tmp_path):
    release, runtimes = threading.Event(), []
    runtimes.append(Runtime(hold=release))
    dying = member(zk_hosts, tmp_path, LocalStorage(), runtimes, lead=True)
    outcome: dict = {}

    def start():
        try:
            outcome["incarnation"] = dying.start()
        except Exception as error:  # noqa: BLE001 - the outcome under test
            outcome["error"] = error

    starting = threading.Thread(target=start)
    starting.start()
    held = runtimes[0]
    assert held.recovering.wait(30), "the member never reached its home shard's recovery"
    ZooKeeperEnsemble.expire_session(dying.client, timeout=30)
    wait_until(dying.dead.is_set, 30, "the member to notice its session ended")
    release.set()
    starting.join(30)
    error = outcome.get("error")
    assert isinstance(error, IncarnationEnded), outcome
    assert error.step == "recovering its home shard" and error.incarnation == dying.incarnation.id
    assert held.calls == ["recover", "stop"]  # never started, and stopped
    assert dying.leader is None and dying.owned_shards() == ()
    store = ClusterStore(zk_client, ClusterLayout("c1", str(tmp_path)))
    assert dying.incarnation.id not in store.members()
    again = member(zk_hosts, tmp_path, LocalStorage(), runtimes)
    try:
        assert again.start().epoch == dying.incarnation.epoch + 1
    finally:
        again.stop()
