"""Failover of real node processes (`cluster.drills.ledger_node`) against the real
3-member ZooKeeper ensemble and HDFS: SIGKILL, a SIGSTOP zombie, quorum loss.

Each node runs the ledger workload (`cluster.drills.ledger_runtime`): uniquely numbered
records admitted to its home shard's WAL on HDFS, delivered to an idempotent sink,
finished by a WAL delete. After each fault the ledger must show zero lost, zero
duplicated, zero unexpected ids. Every wait is on an observed condition (node
events on stdout, znodes, ledger files) with a deadline.
"""

from __future__ import annotations

import signal
import time

import pytest

from cluster.core.ownership import ShardState
from cluster.drills.faults import lose_quorum, stopped_when_quorum_went
from cluster.drills.harness import SESSION_TIMEOUT, LedgerCluster
from cluster.drills.ledger_runtime import read_finished
from cluster.services.process import wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow]

# A victim's pause after each record it delivers (s): 150 records take 15 s, so that it
# still holds most of them when it is killed, however slowly a loaded machine polls.
# With the default (0.01 s) a victim once delivered all of its records before the test
# saw 120 admitted, and its adopted slices were empty.
VICTIM_DELIVER_INTERVAL = "0.1"


@pytest.fixture
def cluster(zk_hosts, hdfs_cluster, hdfs_store, tmp_path):
    made = LedgerCluster(zk_hosts, hdfs_cluster.url, hdfs_store.root, tmp_path, hdfs_cluster.client_config)
    yield made
    made.close()
    for node in made.nodes.values():
        with open(node.log.name) as log:
            tail = log.read()[-3000:]
        print(f"---- {node.name} stderr tail ----\n{tail}")


def assert_exactly_once(report: dict) -> None:
    assert report["lost"] == [] and report["duplicated"] == [] and report["unexpected"] == [], {
        key: value[:10] if isinstance(value, list) else value for key, value in report.items()
    }
    assert report["missing_output"] == []


def test_sigkill_moves_the_dead_nodes_shard_to_the_best_survivor_exactly_once(cluster):
    # n2 is three times the size of the others: it is the best survivor. The survivors
    # join first and the victim delivers slowly, so that it dies with a backlog however
    # long the others take to start on a loaded machine.
    n2 = cluster.start("n2", "--admit-limit", "60", "--weight", "3")
    n3 = cluster.start("n3", "--admit-limit", "60")
    for node in (n2, n3):
        node.wait("joined")
    n1 = cluster.start("n1", "--admit-limit", "150", "--deliver-interval", VICTIM_DELIVER_INTERVAL)
    n1.wait("joined")
    victim = n1.incarnation
    wait_until(lambda: cluster.admitted_by(victim) >= 100, 60, "n1 to admit 100 records")
    n1.signal(signal.SIGKILL)
    killed_at = time.time()

    adopted = n2.wait("adopted", timeout=60)
    assert adopted["shard"].startswith(victim + "@")
    shard = cluster.shard(victim)
    assert shard.owner == n2.incarnation and shard.epoch == int(victim.rsplit("-", 1)[1]) + 1
    plan = cluster.plan(victim)
    assert plan is not None and [m.to for m in plan.moves] == [n2.incarnation]

    report = cluster.wait_all_finished()
    assert_exactly_once(report)
    wait_until(
        lambda: cluster.shard(victim).state is ShardState.RETIRED, 60, "the adopted shard to retire once drained"
    )
    finished = [row for row in read_finished(cluster.sink) if row[1] == victim]
    resumed_at = min(row[4] for row in finished if row[2] == shard.epoch)
    timings = {
        "detection": plan.created_at - killed_at,
        "takeover": adopted["adopted_at"] - plan.created_at,
        "resume": resumed_at - adopted["adopted_at"],
        "total": resumed_at - killed_at,
    }
    print("failover timings (s):", {k: round(v, 2) for k, v in timings.items()})
    assert timings["total"] < 30


def test_one_grep_follows_a_failover_across_every_nodes_log(cluster):
    """The leader's and the adopter's lines about one death share its step ids
    (`cluster.core.story`), whichever node leads: `grep -F '[n1-7:'` tells the story."""
    n1, n2, n3 = (
        cluster.start(name, *extra)
        for name, *extra in (
            ("n1", "--admit-limit", "40"),
            ("n2", "--admit-limit", "10", "--weight", "3"),
            ("n3", "--admit-limit", "10"),
        )
    )
    victim = n1.wait("joined")["incarnation"]
    for node in (n2, n3):
        node.wait("joined")
    wait_until(lambda: cluster.admitted_by(victim) >= 20, 60, "n1 to admit 20 records")
    n1.signal(signal.SIGKILL)
    adopted = n2.wait("adopted", timeout=60)
    move = f"{victim}:failover/move-{victim}@{victim.rsplit('-', 1)[1]}"
    assert adopted["step"] == move
    wait_until(lambda: cluster.shard(victim).state is ShardState.RETIRED, 60, "the adopted shard to retire")
    wait_until(lambda: cluster.plan(victim).status == "done", 30, "the plan to be done")
    plan = cluster.plan(victim)
    assert plan.notes[0].startswith(f"[{victim}:failover/plan] written by ")
    assert plan.notes[-1].startswith(f"[{victim}:failover/done] done by ") and f"[{move}]" in plan.notes[-1]

    def story() -> list[str]:
        lines = []
        for node in (n2, n3):
            with open(node.log.name, errors="replace") as log:
                lines += [line for line in log if f"[{victim}:" in line]
        return lines

    expected = [
        f"[{victim}:failover/plan] plan {victim} written",
        f"[{move}] moved shard {victim}",
        f"[{move}] adopting shard {victim}",
        f"[{move}] fenced shard {victim}",
        f"[{move}] shard {victim} adopted by {n2.incarnation}",
        f"[{victim}:failover/done] plan {victim} done",
        f"[{move}] shard {victim} drained and retired by {n2.incarnation}",
    ]
    wait_until(
        lambda: all(any(text in line for line in story()) for text in expected),
        30,
        "every step of the failover in the survivors' logs",
    )


def test_a_sigstopped_node_wakes_deposed_writes_nothing_new_and_rejoins_as_a_new_incarnation(cluster):
    # n1 freezes itself inside its 40th WAL sync: after its session guard let the
    # commit in and its bytes went to HDFS, before hsync. It wakes as a zombie.
    n1 = cluster.start("n1", "--admit-limit", "100", "--freeze-in-sync", "40")
    n1.wait("joined")
    n2 = cluster.start("n2", "--admit-limit", "30")
    n2.wait("joined")
    zombie = n1.incarnation
    n1.wait("freezing", timeout=60)
    frozen_epoch = int(zombie.rsplit("-", 1)[1])
    # Longer than the session timeout: the cluster declares it dead and n2 adopts.
    wait_until(
        lambda: (
            (s := cluster.shard(zombie)) is not None
            and s.owner == n2.incarnation
            and s.state is not ShardState.ADOPTING
        ),
        60,
        "n2 to adopt the frozen node's shard",
    )
    assert cluster.shard(zombie).epoch == frozen_epoch + 1
    n1.signal(signal.SIGCONT)
    # Thawed, its frozen commit ends one of three ways. Its own session guard declares
    # it dead first (the proof of its session is far too old) and it abandons its WAL:
    # the commit is never acknowledged (AbandonedInFlightError). HDFS refuses its
    # hsync (the adopter's lease recovery closed the pipeline first), in whichever way
    # the pipeline ended. Or its bytes had reached every DataNode before it froze: then
    # the adopter's recovery read them too, the commit's outcome is the adopter's view,
    # and only that commit may complete. Either way nothing new is written.
    wait_until(
        lambda: n1.find("rejected write", shard=zombie) or n1.find("dead", incarnation=zombie),
        60,
        "the zombie's frozen commit to end",
    )
    n1.wait("dead", timeout=30, incarnation=zombie)
    # It comes back only as a new incarnation, with a new shard at a newer epoch.
    wait_until(lambda: n1.incarnation != zombie, 60, "n1 to rejoin as a new incarnation")
    rejected = n1.find("rejected write", shard=zombie)
    refusals = (
        "LeaseLost",
        "StorageError",
        "StorageUnavailable",
        "StorageFileNotFound",
        "StaleEpochError",
        "OutcomeUnknownError",
        "WriteAheadLogPoisonedError",
        "AbandonedInFlightError",
        "WriteAheadLogAbandonedError",
        "StorageAbandoned",
    )
    for refusal in rejected:
        assert refusal["epoch"] == frozen_epoch and refusal["error"].split(":", 1)[0] in refusals, refusal
    assert int(n1.incarnation.rsplit("-", 1)[1]) > frozen_epoch
    assert cluster.shard(n1.incarnation).owner == n1.incarnation
    if rejected:
        with open(n1.log.name) as log:
            assert "rejected write to shard " + zombie in log.read()
    assert_exactly_once(cluster.wait_all_finished())
    # After the adoption the zombie finished nothing, beyond the one record whose
    # Delete was the frozen commit when HDFS held its bytes. Exactly once, above, says
    # that such a record is the frozen commit's: a zombie's commit that the adopter's
    # recovery did not read leaves the record in the adopter's queue, and the adopter
    # finishes it too. A rejected write does not say the frozen commit failed: another
    # thread's commit, in flight when the thawed node abandoned its WAL, is refused
    # (AbandonedInFlightError) after the frozen one completed.
    zombie_finishes = [row for row in read_finished(cluster.sink) if row[1] == zombie and row[3] == zombie]
    adopted_at = min(h.at for h in cluster.shard(zombie).history if h.epoch == frozen_epoch + 1)
    late = [row for row in zombie_finishes if row[4] >= adopted_at]
    assert len(late) <= 1, (late, rejected)


def test_quorum_loss_stops_processing_and_it_resumes_when_quorum_returns(cluster, zookeeper_ensemble):
    n1 = cluster.start("n1", "--admit-limit", "400")
    n2 = cluster.start("n2", "--admit-limit", "400")
    for node in (n1, n2):
        node.wait("joined")
    wait_until(lambda: len(read_finished(cluster.sink)) >= 30, 60, "some records to be finished")
    lost_at, restored_at = lose_quorum(zookeeper_ensemble, (n1, n2))
    # Processing resumes: new finishes after quorum returned, and the ledger settles exactly once.
    wait_until(lambda: any(row[4] > restored_at for row in read_finished(cluster.sink)), 60, "processing to resume")
    assert_exactly_once(cluster.wait_all_finished(timeout=120))
    # While a node's gate was closed it finished nothing, beyond a commit already past
    # the gate when it closed (open sessions are aborted at 1/4 of the session timeout).
    finished = read_finished(cluster.sink)
    grace = SESSION_TIMEOUT * 0.25 + 0.5
    for node in (n1, n2):
        with node._lock:
            timeline = sorted(node.events, key=lambda e: e["at"])
        closed_since, incarnation = None, None
        for event in timeline:
            if event["event"] == "joined":
                incarnation = event["incarnation"]
            elif event["event"] == "paused":
                closed_since = event["at"]
            elif event["event"] in ("resumed", "dead") and closed_since is not None:
                during = [
                    row for row in finished if row[3] == incarnation and closed_since + grace < row[4] < event["at"]
                ]
                assert during == [], (node.name, closed_since, event)
                closed_since = None
        assert stopped_when_quorum_went(timeline, lost_at), (node.name, timeline)


def test_divvy_splits_a_dead_nodes_shard_over_the_survivors_exactly_once(cluster):
    n2 = cluster.start("n2", "--admit-limit", "20", "--policy", "divvy")
    n3 = cluster.start("n3", "--admit-limit", "20", "--policy", "divvy", "--weight", "2")
    for node in (n2, n3):
        node.wait("joined")
    # The victim joins last and delivers slowly: it dies with records for both slices.
    n1 = cluster.start("n1", "--admit-limit", "150", "--policy", "divvy", "--deliver-interval", VICTIM_DELIVER_INTERVAL)
    n1.wait("joined")
    victim = n1.incarnation
    wait_until(lambda: cluster.admitted_by(victim) >= 120, 60, "n1 to admit 120 records")
    n1.signal(signal.SIGKILL)
    wait_until(
        lambda: (s := cluster.shard(victim)) is not None and s.state in (ShardState.SPLIT, ShardState.RETIRED),
        60,
        "the dead node's shard to be split",
    )
    parent = cluster.shard(victim)
    children = {child: cluster.shard(child) for child in parent.children}
    assert {c.owner for c in children.values()} == {n2.incarnation, n3.incarnation}
    report = cluster.wait_all_finished()
    assert_exactly_once(report)
    wait_until(lambda: cluster.shard(victim).state is ShardState.RETIRED, 60, "the split parent to retire")
    # Each slice finished its own part: both survivors took some of the dead node's records.
    by_child = {}
    for row in read_finished(cluster.sink):
        if row[0].startswith(victim + ".") and row[1] in children:
            by_child[row[1]] = by_child.get(row[1], 0) + 1
    assert set(by_child) == set(children), by_child
    print("divvy slices:", {c: (children[c].owner, by_child[c]) for c in children})
