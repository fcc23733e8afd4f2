"""What the leader may collect: dead incarnations' content, long-retired shard
znodes, long-done plan znodes. The decisions without ZooKeeper or HDFS, then the thin runner against a
fake client and a local directory (the order it reads in is the safety argument)."""

import logging

from kazoo.exceptions import BadVersionError, NoNodeError

from cluster.core import ownership as own
from cluster.core.collection import (
    CollectionView,
    collectable_containers,
    collectable_plans,
    collectable_shards,
    collectable_staging,
    garbage_containers,
    needed_by_others,
    plan_collection,
    retired_at,
)
from cluster.core.incarnation import Incarnation
from cluster.core.layout import ClusterLayout
from cluster.core.ownership import HASH_SPACE, HISTORY_LIMIT, ShardState
from cluster.core.plans import FailoverPlan
from cluster.failover.collector import ContentCollector, container_directory, containers_directory
from cluster.node.content import open_node_content
from cluster.zk.store import ClusterStore
from repositories.storage import LocalStorage
from repositories.storage.protocol import join, parent

HALF = HASH_SPACE // 2


def home(incarnation, at=1.0):
    return own.new_shard(incarnation, incarnation, int(incarnation.rsplit("-", 1)[1]), at=at)


def moved(shard, to, at=2.0):
    """Reassigned to `to` and adopted by it (DRAINING)."""
    shard = own.reassign(shard, to, expected_epoch=shard.epoch, at=at)
    return own.adopted(shard, to, shard.epoch, at=at)


def retired(shard, at=3.0):
    return own.retire(shard, shard.owner, shard.epoch, at=at)


def _retire_split(shard, at):
    children = {
        child: own.ShardOwnership(child, "x-1", shard.epoch, ShardState.DRAINING, seeded=True)
        for child in shard.children
    }
    return own.retire_split_parent(shard, children, at=at)


def divvy(shard, slices, at=2.0):
    """Split `shard` into [(child, owner)], two halves; returns (parent, children), children seeded."""
    ranges = [(0, HALF), (HALF, HASH_SPACE)]
    parent_, children = own.split(
        shard, [(c, o, *r) for (c, o), r in zip(slices, ranges, strict=False)], expected_epoch=shard.epoch, at=at
    )
    return parent_, [own.adopted(child, child.owner, child.epoch, at=at) for child in children]


# -- garbage_containers --------------------------------------------------------------------
def test_a_dead_incarnation_whose_shards_all_retired_is_garbage():
    shards = [retired(moved(home("n1-1"), "n2-2"))]
    assert garbage_containers(["n1-1", "n2-2"], shards, live=[]) == ["n1-1", "n2-2"]


def test_every_owner_in_a_live_shards_history_pins_its_container():
    # n1-1's home went to n2-2, then to n3-3: FlowFiles may hold claims of all three.
    shard = moved(moved(home("n1-1"), "n2-2"), "n3-3")
    assert garbage_containers(["n1-1", "n2-2", "n3-3", "n4-4"], [shard], live=["n3-3"]) == ["n4-4"]


def test_retired_shards_do_not_pin():
    shards = [retired(moved(home("n1-1"), "n2-2")), home("n3-3")]
    assert garbage_containers(["n1-1", "n2-2", "n3-3"], shards, live=[]) == ["n1-1", "n2-2"]


def test_divvy_children_pin_their_parents_owners():
    parent_, children = divvy(moved(home("n1-1"), "n2-2"), [("n1-1.a", "n3-3"), ("n1-1.b", "n4-4")])
    parent_ = _retire_split(parent_, 3.0)
    assert parent_.state is ShardState.RETIRED
    shards = [parent_, children[0], retired(children[1])]
    # n1-1.a is still draining: copies of n1-1's and n2-2's claims may be in it.
    assert garbage_containers(["n1-1", "n2-2", "n3-3", "n4-4"], shards, live=[]) == ["n4-4"]


def test_live_members_are_never_collected():
    shards = [retired(moved(home("n1-1"), "n2-2"))]
    assert garbage_containers(["n1-1", "n2-2"], shards, live=["n1-1", "n2-2"]) == []


def bounced(times):
    """n1-1's home shard, moved `times` times: n2-2, n3-3, ..."""
    shard = home("n1-1")
    for number in range(2, 2 + times):
        shard = moved(shard, f"n{number}-{number}")
    return shard


def test_a_history_that_may_have_forgotten_owners_pins_everything():
    shard = bounced(HISTORY_LIMIT)
    assert len(shard.history) == HISTORY_LIMIT
    assert "n2-2" not in {entry.owner for entry in shard.history}  # cut from the history
    assert collectable_containers(["n2-2", "n90-90"], [shard], live=[], counter=100) == []
    assert collectable_containers(["n2-2", "n90-90"], [retired(shard)], live=[], counter=100) == ["n2-2", "n90-90"]


def test_a_full_history_above_a_live_divvy_child_pins_everything():
    parent_, (child, other) = divvy(bounced(HISTORY_LIMIT), [("c.a", "n80-80"), ("c.b", "n81-81")])
    parent_ = _retire_split(parent_, 3.0)
    shards = [parent_, child, retired(other)]
    assert collectable_containers(["n2-2", "n90-90"], shards, live=[], counter=100) == []
    shards = [parent_, retired(child), retired(other)]
    assert collectable_containers(["n2-2", "n90-90"], shards, live=[], counter=100) == ["n2-2", "n90-90"]


def test_a_short_history_does_not_stop_collection():
    assert collectable_containers(["n2-2", "n90-90"], [bounced(3)], live=[], counter=100) == ["n90-90"]


# -- the race rule ----------------------------------------------------------------------------
def test_the_newest_incarnation_drawn_is_never_collected():
    # n5-7 drew epoch 7 and may not have its membership znode in a lagging view yet.
    assert collectable_containers(["n1-3", "n5-7"], [], live=[], counter=7) == ["n1-3"]


def test_a_container_beyond_the_counter_is_not_ours_to_judge():
    # Content left by an earlier ZooKeeper state of the cluster: the counter restarted.
    assert collectable_containers(["n1-3", "n1-40"], [], live=[], counter=5) == ["n1-3"]


def test_no_counter_means_nothing_is_collected():
    assert collectable_containers(["n1-1", "n1-2"], [], live=[], counter=0) == []


def test_names_that_are_not_incarnations_are_left_alone():
    assert collectable_containers(["n1-1", "default", "n1-x", "-3"], [], live=[], counter=9) == ["n1-1"]


def test_the_race_rule_keeps_pins_and_liveness():
    shards = [moved(home("n1-1"), "n2-2"), retired(home("n3-3"))]
    assert collectable_containers(["n1-1", "n2-2", "n3-3", "n4-4", "n5-5"], shards, live=["n4-4"], counter=6) == [
        "n3-3",
        "n5-5",
    ]


# -- retired znodes ------------------------------------------------------------------------------
def test_retired_at_is_the_retired_entrys_time():
    assert retired_at(retired(moved(home("n1-1"), "n2-2"), at=50.0)) == 50.0
    assert retired_at(home("n1-1")) is None


def test_a_retired_znode_is_kept_for_the_retention():
    shards = {"n1-1": retired(moved(home("n1-1"), "n2-2"), at=1000.0), "n3-3": home("n3-3")}
    assert collectable_shards(shards, now=1000.0 + 599, retention=600) == []
    assert collectable_shards(shards, now=1000.0 + 600, retention=600) == ["n1-1"]


def test_a_retired_parent_is_kept_while_a_child_is_not_retired():
    parent_, children = divvy(moved(home("n1-1"), "n2-2"), [("n1-1.a", "n3-3"), ("n1-1.b", "n4-4")])
    parent_ = _retire_split(parent_, 10.0)
    shards = {parent_.shard: parent_, children[0].shard: children[0], children[1].shard: retired(children[1], 10.0)}
    assert collectable_shards(shards, now=10_000.0, retention=600) == ["n1-1.b"]
    shards["n1-1.a"] = retired(children[0], 10.0)
    assert collectable_shards(shards, now=10_000.0, retention=600) == ["n1-1", "n1-1.a", "n1-1.b"]


def test_ancestors_are_kept_through_a_retired_parent():
    grand, (parent_, other) = divvy(moved(home("g-1"), "h-2"), [("p", "a-3"), ("q", "b-4")])
    grand = _retire_split(grand, 5.0)
    parent_, (child, sibling) = divvy(parent_, [("p.a", "c-5"), ("p.b", "d-6")])
    parent_ = _retire_split(parent_, 5.0)
    shards = {s.shard: s for s in (grand, retired(other, 5.0), parent_, child, retired(sibling, 5.0))}
    assert needed_by_others(shards) >= {"p", "g-1"}
    assert collectable_shards(shards, now=10_000.0, retention=600) == ["p.b", "q"]


def test_the_children_of_a_split_parent_are_kept_until_it_retires():
    # A child drained and retired before the leader retired the parent: the parent
    # still needs to see it seeded.
    parent_, (first, second) = divvy(moved(home("n1-1"), "n2-2"), [("n1-1.a", "n3-3"), ("n1-1.b", "n4-4")])
    shards = {parent_.shard: parent_, "n1-1.a": retired(first, 1.0), "n1-1.b": retired(second, 1.0)}
    assert collectable_shards(shards, now=10_000.0, retention=600) == []


# -- done plans -----------------------------------------------------------------------------------
def failover_plan(dead, status="open", created_at=0.0, finished_at=None):
    return FailoverPlan(dead, dead, "n9-9", created_at, "whole", (), status, finished_at=finished_at)


def test_a_done_plan_is_kept_for_the_retention_from_when_it_was_done():
    plans = {"n1-1": failover_plan("n1-1", "done", created_at=0.0, finished_at=1000.0)}
    assert collectable_plans(plans, now=1000.0 + 599, retention=600) == []
    assert collectable_plans(plans, now=1000.0 + 600, retention=600) == ["n1-1"]


def test_an_open_plan_is_never_collected_however_old():
    assert collectable_plans({"n1-1": failover_plan("n1-1", "open")}, now=1e9, retention=600) == []


def test_a_done_plan_without_a_finishing_time_counts_from_its_creation():
    plans = {"n1-1": failover_plan("n1-1", "done", created_at=50.0)}
    assert collectable_plans(plans, now=649.0, retention=600) == []
    assert collectable_plans(plans, now=650.0, retention=600) == ["n1-1"]


def test_the_finishing_time_survives_json():
    plan = failover_plan("n1-1", "done", finished_at=12.5)
    assert FailoverPlan.from_json(plan.to_json()) == plan


def test_a_collection_plan_names_containers_and_versioned_znodes():
    old = retired(moved(home("n1-1"), "n2-2"), at=0.0)
    view = CollectionView(
        ("n1-1", "n2-2", "n3-3"),
        3,
        {"n1-1": (old, 7), "n3-3": (home("n3-3"), 0)},
        frozenset({"n3-3"}),
        now=601.0,
        plans={"n1-1": (failover_plan("n1-1", "done", finished_at=1.0), 4), "n2-2": (failover_plan("n2-2", "open"), 0)},
    )
    plan = plan_collection(view, retention=600)
    assert plan.containers == ("n1-1", "n2-2")
    assert plan.shards == (("n1-1", 7),)
    assert plan.plans == (("n1-1", 4),)


def test_the_collector_looks_where_node_content_writes(tmp_path):
    layout = ClusterLayout("c1", str(tmp_path / "hdfs"))
    storage = LocalStorage()
    open_node_content(storage, layout, Incarnation("n1", 3), str(tmp_path / "local")).close()
    assert [status.name for status in storage.list(containers_directory(layout))] == ["n1-3"]
    assert parent(container_directory(layout, "n1-3")) == containers_directory(layout)
    assert storage.exists(join(container_directory(layout, "n1-3"), "n1-3"))


# -- the runner, with a fake ZooKeeper client and a local directory --------------------------------
class FakeClient:
    """Just the calls the collector makes, each logged."""

    def __init__(self, layout, shards, live, counter, calls, plans=()):
        self.layout, self.calls = layout, calls
        self.data = {layout.shard(s.shard): [s.to_json(), 0] for s in shards}
        self.data.update({layout.plan(p.plan_id): [p.to_json(), 1] for p in plans})
        self.data[layout.incarnation_counter] = [repr(counter).encode(), 0]
        self.live = list(live)
        self.refuse_deletes = False

    def sync(self, path):
        self.calls.append("sync")

    def get(self, path):
        self.calls.append(f"get {path.rsplit('/', 1)[-1]}")
        if path not in self.data:
            raise NoNodeError()

        class Stat:
            version = self.data[path][1]

        return self.data[path][0], Stat()

    def get_async(self, path):
        get = self.get

        class Answer:
            def get(self):
                return get(path)

        return Answer()

    def get_children(self, path):
        self.calls.append(f"children {path.rsplit('/', 1)[-1]}")
        if path == self.layout.nodes:
            return list(self.live)
        return sorted(p.rsplit("/", 1)[-1] for p in self.data if p.startswith(path + "/"))

    def delete(self, path, version=-1):
        if path not in self.data:
            raise NoNodeError()
        if version != self.data[path][1]:
            raise BadVersionError()
        del self.data[path]


class RecordingStorage(LocalStorage):
    """A local directory standing for HDFS. `open_rounds[path]`: how many more lease
    recoveries asked for `path` find it still open (as a dead writer leaves a file)."""

    def __init__(self, calls):
        self.calls, self.fail_deletes = calls, False
        self.open_rounds: dict[str, int] = {}
        self.recoveries: list[str] = []

    def recover_lease(self, path):
        self.recoveries.append(path)
        super().recover_lease(path)
        rounds = self.open_rounds.get(path, 0)
        self.open_rounds[path] = max(rounds - 1, 0)
        return rounds == 0

    def list(self, path):
        self.calls.append("list")
        return super().list(path)

    def delete(self, path, *, recursive=False):
        if self.fail_deletes:
            raise ConnectionError("HDFS is down\nsecond line")
        return super().delete(path, recursive=recursive)


def make(tmp_path, shards, live, counter, containers, plans=(), **options):
    layout = ClusterLayout("c1", str(tmp_path / "hdfs"))
    for name in containers:
        (tmp_path / "hdfs" / "c1" / "content" / name / name / "0").mkdir(parents=True)
    calls = []
    client = FakeClient(layout, shards, live, counter, calls, plans)
    collector = ContentCollector(
        ClusterStore(client, layout), RecordingStorage(calls), wall_clock=lambda: 10_000.0, **options
    )
    return collector, client, calls, tmp_path / "hdfs" / "c1" / "content"


def test_a_round_lists_hdfs_first_then_syncs_then_reads_members_last(tmp_path):
    collector, client, calls, _ = make(tmp_path, [home("n2-2")], ["n2-2"], 2, ["n1-1", "n2-2"])
    collector.read_view()
    assert calls[:4] == ["list", "list", "sync", "get incarnation"]  # content, then Spark staging
    assert calls.index("children shards") < calls.index("children nodes") == len(calls) - 1


def test_a_round_deletes_garbage_containers_and_old_retired_znodes(tmp_path, caplog):
    old = retired(moved(home("n1-1"), "n2-2"), at=0.0)
    collector, client, calls, content = make(
        tmp_path, [old, home("n3-3")], ["n3-3"], 4, ["n1-1", "n2-2", "n3-3", "n4-4"]
    )
    with caplog.at_level(logging.INFO, logger="cluster.failover.collector"):
        plan = collector.collect()
    assert plan.containers == ("n1-1", "n2-2")
    assert sorted(p.name for p in content.iterdir()) == ["n3-3", "n4-4"]
    assert client.layout.shard("n1-1") not in client.data and client.layout.shard("n3-3") in client.data
    deleted = [r.getMessage() for r in caplog.records if r.getMessage().startswith("deleted the content")]
    assert len(deleted) == 2


def test_a_round_deletes_long_done_plan_znodes_only(tmp_path, caplog):
    plans = [
        failover_plan("n1-1", "done", finished_at=1000.0),
        failover_plan("n2-2", "done", finished_at=9500.0),
        failover_plan("n3-3", "open"),
    ]
    collector, client, calls, _ = make(tmp_path, [], [], 4, [], plans)
    with caplog.at_level(logging.INFO, logger="cluster.failover.collector"):
        plan = collector.collect()
    assert plan.plans == (("n1-1", 1),)
    assert sorted(p for p in client.data if p.startswith(client.layout.plans + "/")) == [
        client.layout.plan("n2-2"),
        client.layout.plan("n3-3"),
    ]
    assert [r.getMessage() for r in caplog.records] == ["deleted the znode of plan n1-1, done more than 600 s ago"]


def test_a_failed_deletion_is_one_log_line_and_retried_next_round(tmp_path, caplog):
    collector, client, calls, content = make(tmp_path, [], [], 5, ["n1-1"])
    collector.storage.fail_deletes = True
    with caplog.at_level(logging.INFO, logger="cluster.failover.collector"):
        collector.collect()
    assert (content / "n1-1").is_dir()
    [line] = [r.getMessage() for r in caplog.records]
    assert "n1-1" in line and "retried next round" in line and "\n" not in line
    collector.storage.fail_deletes = False
    collector.collect()
    assert not (content / "n1-1").exists()


def test_an_unreadable_view_deletes_nothing(tmp_path):
    collector, client, calls, content = make(tmp_path, [], [], 5, ["n1-1"])
    client.data[client.layout.shard("bad")] = [b"not json", 0]
    assert collector.collect().containers == ()
    assert (content / "n1-1").is_dir()


def test_no_content_directory_yet_is_nothing_to_collect(tmp_path):
    collector, client, calls, _ = make(tmp_path, [], [], 5, [])
    assert collector.collect().containers == ()


def test_a_round_stops_when_leadership_ends(tmp_path):
    collector, client, calls, content = make(tmp_path, [], [], 5, ["n1-1", "n1-2"])
    collector.collect(keep_going=lambda: False)
    assert sorted(p.name for p in content.iterdir()) == ["n1-1", "n1-2"]


def test_spark_staging_goes_with_its_retired_shard_and_stays_with_a_running_one():
    shards = {"n1-1": retired(moved(home("n1-1"), "n2-2")), "n2-2": home("n2-2"), "n3-3": moved(home("n3-3"), "n2-2")}
    # n4-4: a home shard retired and collected (no znode); n9-9: an incarnation the
    # counter has not reached; "scratch": not a name this cluster gives.
    found = collectable_staging(["n1-1", "n2-2", "n3-3", "n4-4", "n9-9", "scratch"], shards, counter=5)
    assert found == ["n1-1", "n4-4"]


def test_a_round_deletes_the_spark_staging_of_retired_shards(tmp_path, caplog):
    old = retired(moved(home("n1-1"), "n2-2"))
    collector, client, calls, _ = make(tmp_path, [old, home("n2-2")], ["n2-2"], 3, [])
    spark = tmp_path / "hdfs" / "c1" / "spark"
    for shard in ("n1-1", "n2-2"):
        (spark / shard / "sql" / "abc-e1" / "in").mkdir(parents=True)
    with caplog.at_level(logging.INFO, logger="cluster.failover.collector"):
        plan = collector.collect()
    assert plan.staging == ("n1-1",)
    assert sorted(p.name for p in spark.iterdir()) == ["n2-2"]
    assert [r.getMessage() for r in caplog.records if "Spark staging" in r.getMessage()] == [
        f"deleted the Spark staging of shard n1-1 ({spark / 'n1-1'}): the shard is retired"
    ]


# -- files a dead writer left open ------------------------------------------------------------------
def open_file(collector, content, container: str, name: str, rounds: int) -> str:
    path = content / container / container / "0" / name
    path.write_bytes(b"a resource")
    collector.storage.open_rounds[str(path)] = rounds
    return str(path)


def test_a_directory_is_deleted_only_once_every_file_in_it_is_closed(tmp_path, caplog):
    """HDFS deleting a file still open leaves its last block counted against its
    DataNodes for good: the first round asks for every file's lease recovery and waits;
    later rounds ask only for the files still open, and delete once none is."""
    collector, client, calls, content = make(tmp_path, [], [], 5, ["n1-1"])
    closed = open_file(collector, content, "n1-1", "1", rounds=0)
    still = open_file(collector, content, "n1-1", "2", rounds=2)
    with caplog.at_level(logging.INFO, logger="cluster.failover.collector"):
        assert collector.collect().containers == ("n1-1",)
        assert (content / "n1-1").is_dir()
        assert sorted(collector.storage.recoveries) == sorted([closed, still])
        [waiting] = [r.getMessage() for r in caplog.records]
        assert "1 file(s) still open" in waiting and still in waiting
        collector.storage.recoveries.clear()
        collector.collect()
        assert (content / "n1-1").is_dir() and collector.storage.recoveries == [still]
        collector.collect()
    assert not (content / "n1-1").exists()
    assert collector.storage.recoveries == [still, still]
    assert caplog.records[-1].getMessage().startswith("deleted the content of dead incarnation n1-1")


def test_a_file_that_never_closes_is_deleted_after_the_patience_with_a_warning(tmp_path, caplog):
    now = [100.0]
    collector, client, calls, content = make(tmp_path, [], [], 5, ["n1-1"], clock=lambda: now[0], close_patience=600.0)
    stuck = open_file(collector, content, "n1-1", "7", rounds=10**6)
    collector.collect()
    now[0] += 599.0
    collector.collect()
    assert (content / "n1-1").is_dir()
    now[0] += 1.0
    with caplog.at_level(logging.WARNING, logger="cluster.failover.collector"):
        collector.collect()
    assert not (content / "n1-1").exists()
    [warning] = [r.getMessage() for r in caplog.records]
    assert "1 file(s) still open 600 s" in warning and stuck in warning


def test_a_directory_no_longer_decided_forgets_its_wait(tmp_path):
    """A container waiting for its files to close that a later round no longer calls
    garbage is not remembered: were it ever garbage again, its files are all asked anew."""
    collector, client, calls, content = make(tmp_path, [], [], 5, ["n1-1"])
    open_file(collector, content, "n1-1", "1", rounds=5)
    collector.collect()
    assert collector.waiting_to_close == [container_directory(client.layout, "n1-1")]
    client.data[client.layout.shard("n1-1")] = [home("n1-1").to_json(), 0]  # pinned again
    assert collector.collect().containers == ()
    assert collector.waiting_to_close == []
