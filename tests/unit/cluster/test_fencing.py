"""Fencing's directory choice, idempotence and backoff, on local disk with an
injected sleep (the real HDFS behaviour is in tests/integration/test_cluster_fencing.py)."""

import pytest

from cluster.core.layout import ClusterLayout
from cluster.errors import FencedError, FenceTimeout
from cluster.failover.fencing import current_directory, fence
from repositories.storage import LocalStorage


class SlowLeases(LocalStorage):
    """recover_lease says False `pending` times per file first, as HDFS does while
    block recovery runs."""

    def __init__(self, pending):
        super().__init__()
        self.pending, self.calls = pending, {}

    def recover_lease(self, path):
        self.calls[path] = self.calls.get(path, 0) + 1
        return self.calls[path] > self.pending


@pytest.fixture
def layout(tmp_path):
    layout = ClusterLayout("c1", str(tmp_path))
    (tmp_path / "c1" / "shards").mkdir(parents=True)
    return layout


def make_shard(layout, shard):
    storage = LocalStorage()
    directory = layout.shard_directory(shard)
    storage.mkdir(directory)
    storage.mkdir(directory + "/wal")
    for name in ("wal/partition-0", "wal/snapshot", "swap-1"):
        with storage.create(f"{directory}/{name}") as f:
            f.write(b"x")
            f.sync()
    return directory


def test_fence_renames_then_recovers_every_file_with_backoff(layout):
    original = make_shard(layout, "n1-3")
    storage, sleeps, now = SlowLeases(pending=5), [], [0.0]

    def sleep(seconds):
        sleeps.append(seconds)
        now[0] += seconds

    report = fence(
        storage, layout, "n1-3", 4, sleep=sleep, clock=lambda: now[0], first_wait=0.5, fast_window=1.0, max_wait=1.5
    )
    assert report.directory == original + "-fenced-4" and report.renamed_from == original
    assert not storage.exists(original)
    assert sorted(p.rsplit("/", 1)[-1] for p in report.files) == ["partition-0", "snapshot", "swap-1"]
    assert report.recover_calls == 3 * 6
    # One shared schedule for all files: short polls for the first second, then doubling, capped.
    assert sleeps == [0.5, 0.5, 1.0, 1.5, 1.5]


def test_fence_polls_every_twentieth_of_a_second_at_first(layout):
    make_shard(layout, "n1-3")
    storage, sleeps, now = SlowLeases(pending=50), [], [0.0]

    def sleep(seconds):
        sleeps.append(seconds)
        now[0] += seconds

    fence(storage, layout, "n1-3", 4, sleep=sleep, clock=lambda: now[0])
    assert sleeps[:40] == [0.05] * 40  # 2 s of short polls
    assert sleeps[40:44] == [0.1, 0.2, 0.4, 0.8]  # then the backoff


def test_fence_is_idempotent_at_the_same_epoch_and_moves_on_at_a_newer_one(layout):
    original = make_shard(layout, "n1-3")
    storage = LocalStorage()
    first = fence(storage, layout, "n1-3", 4, sleep=lambda s: None)
    again = fence(storage, layout, "n1-3", 4, sleep=lambda s: None)
    assert again.directory == first.directory and again.renamed_from is None
    later = fence(storage, layout, "n1-3", 5, sleep=lambda s: None)
    assert later.renamed_from == first.directory and later.directory == original + "-fenced-5"
    assert current_directory(storage, layout, "n1-3") == (later.directory, 5)


def test_a_stale_adopter_finds_a_newer_fence_and_is_told_it_is_dead(layout):
    make_shard(layout, "n1-3")
    storage = LocalStorage()
    fence(storage, layout, "n1-3", 6, sleep=lambda s: None)
    with pytest.raises(FencedError, match="you are dead"):
        fence(storage, layout, "n1-3", 5, sleep=lambda s: None)


def test_a_shard_that_never_wrote_gets_an_empty_fenced_directory(layout):
    storage = LocalStorage()
    report = fence(storage, layout, "n9-1", 2, sleep=lambda s: None)
    assert storage.exists(report.directory) and report.files == []


def test_fence_gives_up_with_a_clear_error_after_the_deadline(layout):
    make_shard(layout, "n1-3")
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds

    with pytest.raises(FenceTimeout, match="was not recovered"):
        fence(SlowLeases(pending=10**6), layout, "n1-3", 4, sleep=sleep, clock=lambda: now[0], timeout=10.0)


def test_fence_asks_for_the_journals_first_and_tells_when_every_lease_was_asked(layout):
    """A DataNode recovers blocks in the order their leases were asked for: the WAL's
    files go first, and what the adopter asks for next (`on_leases_asked`) comes after
    every file of the shard, before any poll."""
    directory = make_shard(layout, "n1-3")
    with LocalStorage().create(f"{directory}/flow.json") as f:
        f.write(b"{}")
    storage, asked = SlowLeases(pending=2), []

    def told():
        asked.append(dict(storage.calls))

    report = fence(storage, layout, "n1-3", 4, sleep=lambda s: None, on_leases_asked=told)
    names = [p.split("-fenced-4/", 1)[1] for p in report.files]
    assert names[:2] == ["wal/partition-0", "wal/snapshot"] and set(names[2:]) == {"flow.json", "swap-1"}
    assert list(storage.calls) == report.files  # asked in that order
    assert asked == [dict.fromkeys(report.files, 1)]  # once, every file asked once, no poll yet


def test_on_leases_asked_is_told_also_when_the_shard_has_no_file(layout):
    asked = []
    fence(LocalStorage(), layout, "n9-1", 2, sleep=lambda s: None, on_leases_asked=lambda: asked.append(1))
    assert asked == [1]
