"""The drill's round loop against a scripted target (no process, no service): every
fault kind runs its round through the `DrillTarget` protocol only, records its
timings and phases, and the run ends with the target's check."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from cluster.core.ownership import ShardState
from cluster.core.validation import ClusterView
from cluster.drills.checker import ClusterReport, DeliveryReport
from cluster.drills.fault_kinds import FAULT_KINDS
from cluster.drills.report import drill_report, round_line, summarize
from cluster.drills.runner import DrillRunner
from cluster.node.pause_monitor import STOOD_STILL
from cluster.services.process import ServiceError
from flow.processors.kafka.delivery import PRODUCER_FENCED


class ScriptedTarget:
    """Three nodes whose cluster reacts at once: a node that dies has its shard planned,
    adopted (by the next node alive) and resumed within milliseconds."""

    kind = "scripted"
    supported_faults = frozenset(kind.name for kind in FAULT_KINDS)
    names = ("n1", "n2", "n3")
    log_location = "nowhere"
    session_timeout = 0.01

    def __init__(self, fault=""):
        self.fault = fault
        self.epoch = 0
        self.log: list[tuple] = []
        self._events = {name: [] for name in self.names}
        self._shards, self._plans = {}, {}
        self._delivered = 0
        self._pauses = {name: 0 for name in self.names}
        self._lines = {name: [] for name in self.names}  # log lines besides the pause monitor's
        self.checked = False
        self.expire_retry_s = 0.0  # how long the harness's first expire attempts took in vain
        self._shift = 0.0  # the script's clock: the wall clock plus the time its faults took
        self.view = ClusterView("scripted")  # what the protocol check reads after each round
        for name in self.names:
            self._join(name)

    # -- the script --------------------------------------------------------------------
    def _now(self):
        return time.time() + self._shift

    def _emit(self, name, kind, **fields):
        self._events[name].append({"event": kind, "at": self._now(), **fields})

    def _join(self, name, *, new_process=True):
        self.epoch += 1
        if new_process:  # events are those of the current process
            self._events[name] = []
        self._emit(name, "joined", incarnation=f"{name}-{self.epoch}")

    def _die(self, name, *, adopted=True):
        incarnation = self.incarnation(name)
        self._emit(name, "dead", incarnation=incarnation, reason="session expired")
        self._plans[incarnation] = SimpleNamespace(created_at=self._now() + 0.01)
        self._adopt(incarnation, adopted=adopted)

    def _adopt(self, shard_id, *, adopted=True):
        """The last node alive takes the shard over: at once, or (adopted=False) it
        stays adopting until that node dies too."""
        survivor = next(name for name in reversed(self.names) if not self._dead(name))
        owner, now = self.incarnation(survivor), self._now()
        if not adopted:
            self._shards[shard_id] = SimpleNamespace(owner=owner, state=ShardState.ADOPTING, history=[])
            return
        earlier = self._shards[shard_id].history if shard_id in self._shards else []  # kept, as ZooKeeper's
        adopted_now = SimpleNamespace(state=ShardState.DRAINING, owner=owner, at=now + 0.02)
        self._shards[shard_id] = SimpleNamespace(
            owner=owner, state=ShardState.DRAINING, history=[*earlier, adopted_now]
        )
        self._events[survivor].append({"event": "first-output", "at": now + 0.03, "shard": shard_id, "home": False})

    def _dead(self, name):
        return any(e["incarnation"] == self.incarnation(name) for e in self._events[name] if e["event"] == "dead")

    # -- the protocol ------------------------------------------------------------------
    def incarnation(self, name):
        joined = [e for e in self._events[name] if e["event"] == "joined"]
        return joined[-1]["incarnation"] if joined else None

    def leader(self):
        return "n1"

    def events(self, name, kind, **fields):
        return [e for e in self._events[name] if e["event"] == kind and all(e.get(k) == v for k, v in fields.items())]

    def logged(self, name, text):
        lines = [f"WARNING {STOOD_STILL} for 12.0 s"] * self._pauses[name] + self._lines[name]
        return [line for line in lines if text in line]

    def prepare_round(self):
        self.log.append(("prepared",))

    def more_work(self):
        return False  # its nodes make their own

    def dump_stacks(self):
        self.log.append(("stacks",))

    def queued(self, incarnation):
        return 150

    def delivered(self):
        self._delivered += 7
        return self._delivered

    def sink_duplicates(self):
        return {}

    def heartbeats(self):
        return {}

    def shard(self, shard_id):
        return self._shards.get(shard_id)

    def cluster_view(self):
        return self.view

    def plan(self, plan_id):
        return self._plans.get(plan_id)

    def kill(self, name):
        self.log.append(("kill", name))
        held = [  # what it adopts or drains moves on with its death
            shard_id
            for shard_id, shard in self._shards.items()
            if shard.state in (ShardState.ADOPTING, ShardState.DRAINING) and shard.owner == self.incarnation(name)
        ]
        # "adopter": every kill leaves the shard adopting until its adopter dies too;
        # "partition-adopting": the first kill does (the adopter is then cut off).
        hold = self.fault == "adopter" or (self.fault == "partition-adopting" and not self.log.count(("held",)))
        if hold and self.fault == "partition-adopting":
            self.log.append(("held",))
        self._die(name, adopted=bool(held) or not hold)
        for shard_id in held:  # the adopter died: the shard moves on
            self._adopt(shard_id)

    def pause(self, name):
        self.log.append(("pause", name))
        self._die(name)

    def resume(self, name):
        self._pauses[name] += 1
        if self.fault == "stop-kafka":  # the zombie's producer met the adopter's fence
            shard = self.incarnation(name)
            self._lines[name].append(f"publish: {PRODUCER_FENCED} by another producer, transactional id d-{shard}-p")
        self._emit(name, "rejected write", shard=self.incarnation(name))
        self._join(name, new_process=False)

    def restart(self, *names, timeout=90.0):
        for name in names:
            self.log.append(("restart", name))
            self._join(name)

    def graceful_restart(self, name, timeout=60.0):
        self._join(name)
        return True

    def expire_session(self, name):
        self.log.append(("expire", name))
        self._shift += self.expire_retry_s  # an attempt that did not take: the script's clock moves on
        took = self._now()
        self._die(name)
        self._join(name, new_process=False)
        return took

    def kill_zookeeper_follower(self):
        self.log.append(("zk down",))
        return "ZooKeeper member 2"

    def restore_zookeeper_follower(self):
        self.log.append(("zk up",))

    def kill_datanode(self):
        self.log.append(("dn down",))
        return "DataNode 1"

    def restore_datanode(self):
        self.log.append(("dn up",))

    def kill_broker(self):
        self.log.append(("broker down",))
        return "the Kafka broker"

    def restore_broker(self):
        self.log.append(("broker up",))

    def launch(self, name):
        self.log.append(("launch", name))
        self._events[name] = []  # a new process
        self._emit(name, "starting", attempt=1)
        self._emit(name, "connected", node=name)

    def partition(self, name):
        self.log.append(("partition", name))
        self.cut = name
        if self.incarnation(name) is None:  # cut off while joining
            self._emit(name, "start-failed", error="cannot reach ZooKeeper", fatal=False)
            return
        held = [
            shard_id
            for shard_id, shard in self._shards.items()
            if shard.state is ShardState.ADOPTING and shard.owner == self.incarnation(name)
        ]
        self._die(name)
        for shard_id in held:  # the adopter was cut off while adopting: the shard moves on
            self._adopt(shard_id)

    def heal(self):
        self.log.append(("heal",))
        self._join(self.cut, new_process=False)

    def wait_settled(self, timeout=240.0):
        self.log.append(("settled",))

    def blocks_scheduled(self):
        """A NameNode that keeps one unfinished block for each node killed so far."""
        return sum(1 for entry in self.log if entry[0] == "kill")

    def check(self):
        self.checked = True
        return ClusterReport(delivery=DeliveryReport(expected=10, delivered=10), created=10)


@pytest.mark.parametrize("fault", ["kill", "stop", "expire", "leader", "adopter", "partition"])
def test_a_failover_round_is_timed_and_its_phases_recorded(fault):
    target = ScriptedTarget(fault)
    seen = []
    check = DrillRunner(target, [fault], on_round=seen.append).run()
    entry = seen[0]
    assert check.ok and target.checked and target.log[-1] == ("settled",)
    assert entry["victim"] == "n3-3" and entry["queued_at_death"] == 150  # the busiest non-leader, by name
    assert {"detection", "takeover", "resume", "death_to_resume"} <= set(entry)
    assert list(entry["phases"]) == ["fault_at", "plan_at", "adopted_at", "resumed_at"]
    assert entry["sink_duplicates"] == 0 and "error" not in entry
    if fault == "leader":
        assert entry["leader_killed"] == "n1-1" and ("kill", "n1") in target.log
    if fault == "adopter":
        assert entry["adopter_killed"] == "n2-2" and ("kill", "n2") in target.log
        assert "adoption_ended_first" not in entry  # killed while it adopted
    if fault == "stop":
        assert entry["zombie"] == ["rejected write"]


@pytest.mark.parametrize("fault", ["adopter", "partition"])
def test_a_fault_meant_for_an_adopter_seen_only_after_its_adoption_hits_it_then_and_the_round_says_so(fault):
    """An adoption takes well under a second: a loaded machine's drill may first see
    the shard already drained by its adopter. The round goes on with that owner."""
    target = ScriptedTarget("kill")  # every shard is adopted at once
    runner = DrillRunner(target, ["partition"] * 3 if fault == "partition" else [fault])
    assert runner.run().ok
    entry = runner.rounds[-1]
    assert "error" not in entry and entry.get("phase", "adopting") == "adopting"
    key = "adopter_cut" if fault == "partition" else "adopter_killed"
    assert entry[key] == "n2-2" if fault == "adopter" else entry[key].startswith("n2-")
    assert entry["adoption_ended_first"] >= 0
    assert "its adoption had ended" in round_line(entry, len(runner.rounds))
    assert summarize(runner.rounds, [fault], None)[fault]["after_adoption"] == 1


def test_an_expire_round_is_timed_from_the_attempt_that_ended_the_session():
    """Attaching to a session can move it back to the node's own connection, and that
    close ends nothing: the harness tries again, and the wait was its own, not the
    cluster's detection."""
    target = ScriptedTarget("expire")
    target.expire_retry_s = 0.3
    seen: list = []
    before = time.time()
    DrillRunner(target, ["expire"], on_round=seen.append).run()
    entry = seen[0]
    assert entry["phases"]["fault_at"] >= round(before + target.expire_retry_s, 3) - 0.001
    assert entry["detection"] < target.expire_retry_s / 2  # the plan came 0.01 s after the death


def test_the_rounds_rotate_and_services_come_back_after_a_fault_that_fails_nothing_over():
    target = ScriptedTarget()
    runner = DrillRunner(target, ["zk-follower", "datanode", "kill"])
    runner.run()
    assert [("zk down",), ("zk up",)] == [e for e in target.log if e[0].startswith("zk")]
    assert [("dn down",), ("dn up",)] == [e for e in target.log if e[0].startswith("dn")]
    follower = runner.rounds[0]
    assert follower["down"] == "ZooKeeper member 2" and follower["delivered_meanwhile"] > 20
    assert set(follower["phases"]) == {"fault_at", "healed_at"}
    report = drill_report(
        runner.rounds,
        ("zk-follower", "datanode", "kill"),
        runner.report,
        runner.samples,
        target=target.kind,
        started_at=runner.started_at,
    )
    assert report["ok"] and report["faults"] == {"zk-follower": 1, "datanode": 1, "kill": 1}


def test_a_broker_round_keeps_the_broker_down_then_waits_for_delivery_after_its_return(monkeypatch):
    import cluster.drills.runner as runner_module

    monkeypatch.setattr(runner_module, "BROKER_OUTAGE_S", 0.0)
    target = ScriptedTarget()
    runner = DrillRunner(target, ["broker", "kill"])
    assert runner.run().ok
    assert [e for e in target.log if e[0].startswith("broker")] == [("broker down",), ("broker up",)]
    assert target.log.count(("prepared",)) == 2  # work given before each round
    broker = runner.rounds[0]
    assert broker["down"] == "the Kafka broker" and set(broker["phases"]) == {"fault_at", "healed_at"}
    assert broker["twenty_delivered_after"] >= 0 and "sessions_lost" not in broker


def test_a_stop_round_records_the_zombies_fenced_producer_from_its_log():
    target = ScriptedTarget("stop-kafka")
    runner = DrillRunner(target, ["stop"])
    assert runner.run().ok
    assert runner.rounds[0]["producer_fenced"].endswith("transactional id d-n3-3-p")
    plain = DrillRunner(ScriptedTarget("stop"), ["stop"])
    plain.run()
    assert "producer_fenced" not in plain.rounds[0]  # a zombie that did not publish to Kafka


def test_a_round_that_times_out_is_kept_with_its_error_and_nothing_is_checked(monkeypatch):
    import cluster.drills.runner as runner_module

    monkeypatch.setattr(runner_module, "MOVE_DEADLINE", 0.5)
    target = ScriptedTarget()
    target.kill = lambda name: target.log.append(("kill", name))  # the cluster never reacts
    runner = DrillRunner(target, ["kill"])
    with pytest.raises(Exception, match="shard n3-3 to be adopted"):
        runner.run()
    assert "to be adopted" in runner.rounds[0]["error"] and runner.error.startswith("ServiceError")
    assert not target.checked and runner.report is None


def test_a_fault_the_target_cannot_inject_is_refused_before_any_round():
    target = ScriptedTarget()
    target.supported_faults = frozenset({"kill"})
    with pytest.raises(ValueError, match="cannot inject"):
        DrillRunner(target, ["kill", "partition"])


def test_a_cluster_without_a_backlog_gets_one_by_restarting_the_oldest_non_leader_first():
    target = ScriptedTarget("kill")
    restarted = []

    def graceful_restart(name, timeout=60.0):
        restarted.append(name)
        target._join(name)
        return False  # its stop hung: it was killed instead

    target.graceful_restart = graceful_restart
    target.queued = lambda incarnation: 150 if restarted and incarnation == target.incarnation(restarted[0]) else 0
    runner = DrillRunner(target, ["kill"])
    runner.run()
    assert restarted == ["n2"]  # joined before n3; n1 leads
    entry = runner.rounds[0]
    assert entry["left_on_purpose"] == "stop hung" and entry["victim"] == "n2-4" and "resume" in entry


@pytest.mark.parametrize("fault", ["datanode", "zk-follower", "load"])
def test_a_fault_ridden_out_waits_for_a_restarted_node_to_queue_before_it_is_injected(fault, quick_load):
    """With every backlog drained, the node restarted to make one is the only one with
    work: a fault injected while it starts would time its start, not the fault."""
    target = ScriptedTarget()
    restarted, looks, at_injection = [], {"count": 0}, []

    def graceful_restart(name, timeout=60.0):
        restarted.append(name)
        target._join(name)
        return True

    def queued(incarnation):
        if not restarted or incarnation != target.incarnation(restarted[0]):
            return 0
        looks["count"] += 1
        return 150 if looks["count"] >= 3 else 10  # starting: its backlog builds

    def injected(what):
        at_injection.append(looks["count"])
        return what

    target.graceful_restart, target.queued = graceful_restart, queued
    target.kill_datanode = lambda: injected("DataNode 1")
    target.kill_zookeeper_follower = lambda: injected("follower 2")
    target.pause = lambda name: injected(name)  # a stall, not a death
    target.resume = lambda name: None
    runner = DrillRunner(target, [fault])
    assert runner.run().ok
    entry = runner.rounds[0]
    assert entry["left_on_purpose"] is True and entry["queued_at_fault"] == 150
    assert at_injection and at_injection[0] >= 3  # injected once the backlog was seen


def test_a_workload_fed_from_outside_is_sent_more_instead_of_a_node_restarted():
    target = ScriptedTarget("kill")
    fed = []
    target.more_work = lambda: fed.append("feed") or True
    target.graceful_restart = lambda name, timeout=60.0: pytest.fail(f"{name} restarted")
    target.queued = lambda incarnation: 150 if fed and incarnation == target.incarnation("n2") else 0
    runner = DrillRunner(target, ["kill"])
    assert runner.run().ok
    entry = runner.rounds[0]
    assert fed == ["feed"] and entry["left_on_purpose"] is False and entry["victim"] == "n2-2"


def test_partition_rounds_cut_a_node_off_while_running_leading_adopting_and_joining():
    target = ScriptedTarget("partition-adopting")
    runner = DrillRunner(target, ["partition"] * 4)
    assert runner.run().ok
    phases = [entry["phase"] for entry in runner.rounds]
    assert phases == ["running", "leader", "adopting", "joining"]
    running, leading, adopting, joining = runner.rounds
    assert all("error" not in entry for entry in runner.rounds)
    assert running["deposed"] == "session expired" and running["zombie"] == "stopped before writing"
    assert leading["victim"] == target.incarnation("n1") or leading["victim"].startswith("n1-")
    assert "queued_at_death" not in leading  # the leader is cut off whatever it holds
    assert adopting["adopter_cut"].startswith("n2-") and ("kill", "n3") in target.log
    assert joining["deposed"].startswith("start-failed: cannot reach ZooKeeper") and ("launch", "n3") in target.log
    cut = [entry[1] for entry in target.log if entry[0] == "partition"]
    assert cut == ["n3", "n1", "n2", "n3"] and len([e for e in target.log if e == ("heal",)]) == 4


def test_a_round_that_leaves_the_protocol_broken_is_kept_with_its_violations_and_fails_the_drill():
    from cluster.core.heartbeat import Heartbeat

    target = ScriptedTarget("kill")
    runner = DrillRunner(
        target,
        ["kill", "kill"],
        on_round=lambda entry: setattr(
            target, "view", ClusterView("scripted", members={"n2-2": Heartbeat("n2", "n2-2", 2)}, contenders=("n1-1",))
        ),
    )
    assert runner.run().ok  # exactly once held at the sink ...
    first, second = runner.rounds
    assert first["violations"] == [] and first["protocol_check_s"] >= 0
    assert second["violations"] == ["leader: leader n1-1: leads, but is not a live member"]
    report = drill_report(runner.rounds, ("kill",), runner.report, runner.samples, target=target.kind)
    assert not report["ok"] and report["summary"]["all"]["violations"] == 1  # ... but the protocol did not
    assert "PROTOCOL VIOLATED: leader: leader n1-1" in round_line(second, 2)


def test_the_victim_dies_with_the_backlog_it_was_picked_for_even_if_a_second_look_finds_it_drained():
    """An incarnation that has made all its FlowFiles drains its backlog in seconds; the
    round must not wait for it to grow again (it never does): the count read with the
    incarnation when the victim was picked is the one the round keeps."""
    target = ScriptedTarget("kill")
    looks: list[str] = []

    def queued(incarnation):
        looks.append(incarnation)
        return 150 if looks.count(incarnation) == 1 else 40  # draining, for good

    target.queued = queued
    runner = DrillRunner(target, ["kill"])
    assert runner.run().ok
    entry = runner.rounds[0]
    assert entry["victim"] == "n3-3" and entry["queued_at_death"] == 150 and "resume" in entry


class ScriptedRack(ScriptedTarget):
    names = ("n1", "n2", "n3", "n4", "n5", "n6")


def test_rack_rounds_kill_a_third_of_the_nodes_at_once_and_time_each_shard():
    target = ScriptedRack("kill")
    backlog = {"n2": 120, "n3": 30, "n4": 400, "n5": 90, "n6": 10}
    target.queued = lambda incarnation: backlog.get(incarnation.rsplit("-", 1)[0], 0) if incarnation else 0
    runner = DrillRunner(target, ["rack", "rack"])
    assert runner.run().ok
    first, second = runner.rounds
    # Two of six: the busiest non-leader, then the next busiest; the second rack round
    # takes the leader instead of the next busiest.
    assert [victim.rsplit("-", 1)[0] for victim in first["victims"]] == ["n4", "n2"]
    assert "leader_killed" not in first and first["queued_at_death"] == 400
    assert [victim.rsplit("-", 1)[0] for victim in second["victims"]] == ["n4", "n1"]
    assert second["leader_killed"] == second["victims"][1]
    kills = [entry[1] for entry in target.log if entry[0] == "kill"]
    restarts = [entry[1] for entry in target.log if entry[0] == "restart"]
    assert kills == ["n4", "n2", "n4", "n1"] and restarts == kills
    for entry in runner.rounds:
        assert len(entry["shards"]) == 2 and all("death_to_resume" in shard for shard in entry["shards"])
        assert entry["death_to_resume"] == max(shard["death_to_resume"] for shard in entry["shards"])
    report = drill_report(runner.rounds, ("rack",), runner.report, runner.samples, target=target.kind)
    assert report["summary"]["rack"]["death_to_resume"]["n"] == 4  # each shard counted
    slowest = max(second["shards"], key=lambda shard: shard["death_to_resume"])["victim"]
    assert second["slowest_shard"] == slowest
    line = round_line(second, 2)
    assert f"victim {second['victim']} " in line and f"the slowest shard {slowest}: " in line
    assert "killed together: " in line


def test_a_rack_of_three_nodes_is_one_node():
    target = ScriptedTarget("kill")
    runner = DrillRunner(target, ["rack", "rack"])
    assert runner.run().ok
    assert [entry["victims"] for entry in runner.rounds] == [["n3-3"], ["n3-4"]]  # never the leader alone


@pytest.fixture
def quick_load(monkeypatch):
    """The load fault in miniature: no busy processes, two stalls of no length."""
    import contextlib

    import cluster.drills.runner as runner_module

    monkeypatch.setattr(runner_module, "LOAD_SECONDS", 0.0)
    monkeypatch.setattr(runner_module, "LOAD_STALLS", 2)
    monkeypatch.setattr(runner_module, "LOAD_STALL_S", 0.0)
    monkeypatch.setattr(runner_module, "LOAD_RUN_S", 0.0)
    monkeypatch.setattr(runner_module, "CpuLoad", lambda: contextlib.nullcontext(SimpleNamespace(count=2)))


def test_a_load_round_stalls_a_node_and_passes_when_nothing_fails_over(quick_load):
    target = ScriptedTarget()
    target.pause = lambda name: target.log.append(("pause", name))  # a stall, not a death
    target.resume = lambda name: target.log.append(("resume", name))
    runner = DrillRunner(target, ["load", "kill"])
    assert runner.run().ok
    load = runner.rounds[0]
    assert [e for e in target.log if e[0] in ("pause", "resume")] == [("pause", "n3"), ("resume", "n3")] * 2
    assert load["down"] == "every core (2) busy; n3 stalled 2 x 0s" and load["delivered_meanwhile"] > 20
    assert set(load["phases"]) == {"fault_at", "healed_at"} and "detection" not in load
    went_on, meanwhile = load["twenty_delivered_after"], load["delivered_meanwhile"]
    said = f"n3 stalled 2 x 0s: nothing failed over, 20 more delivered after {went_on:.1f}s, {meanwhile} under the load"
    assert round_line(load, 2).endswith(said)


def test_a_load_round_fails_the_drill_when_a_stalled_node_is_taken_over(quick_load):
    target = ScriptedTarget()  # its pause is a death: the shard is planned and adopted at once
    runner = DrillRunner(target, ["load"])
    with pytest.raises(Exception, match="a failover started with every core busy"):
        runner.run()
    assert "plans for ['n3-3']" in runner.rounds[0]["error"] and not target.checked


def test_a_slow_hdfs_round_stalls_every_datanode_and_passes_when_nothing_fails_over(monkeypatch):
    import cluster.drills.runner as runner_module

    monkeypatch.setattr(runner_module, "SLOW_HDFS_SECONDS", 0.0)  # one stall
    monkeypatch.setattr(runner_module, "SLOW_HDFS_STOP_S", 0.0)
    monkeypatch.setattr(runner_module, "SLOW_HDFS_RUN_S", 0.0)
    target = ScriptedTarget()
    target.pause_datanodes = lambda: target.log.append(("pause datanodes",)) or "every DataNode (3)"
    target.resume_datanodes = lambda: target.log.append(("resume datanodes",))
    runner = DrillRunner(target, ["slow-hdfs", "kill"])
    assert runner.run().ok
    slow = runner.rounds[0]
    stalls = [e[0] for e in target.log if "datanodes" in e[0]]  # one at least; each ended
    assert stalls and stalls == ["pause datanodes", "resume datanodes"] * (len(stalls) // 2)
    assert slow["down"] == "every DataNode (3) stopped 0s of every 0s" and "detection" not in slow
    went_on, meanwhile = slow["twenty_delivered_after"], slow["delivered_meanwhile"]
    said = f"every DataNode (3) stopped 0s of every 0s: delivery went on (20 more delivered after {went_on:.1f}s, "
    assert round_line(slow, 2).endswith(f"{said}{meanwhile} while HDFS was slow)")


def delivering_once_restarted(target: ScriptedTarget) -> None:
    """A node `target` restarts delivers a FlowFile of its own at once."""
    restart = target.restart

    def restart_and_deliver(name, timeout=90.0):
        restart(name, timeout)
        target._emit(name, "first-output", shard=target.incarnation(name), home=True)

    target.restart = restart_and_deliver


def test_a_kill_on_a_slow_hdfs_is_timed_as_a_kill_and_waits_for_the_node_to_deliver_again(monkeypatch):
    import cluster.drills.runner as runner_module

    monkeypatch.setattr(runner_module, "SLOW_HDFS_SECONDS", 0.0)
    monkeypatch.setattr(runner_module, "SLOW_HDFS_STOP_S", 0.0)
    monkeypatch.setattr(runner_module, "SLOW_HDFS_RUN_S", 0.01)
    target = ScriptedTarget()
    target.pause_datanodes = lambda: target.log.append(("pause datanodes",)) or "every DataNode (3)"
    target.resume_datanodes = lambda: target.log.append(("resume datanodes",))
    delivering_once_restarted(target)
    runner = DrillRunner(target, ["slow-hdfs-kill"])
    assert runner.run().ok
    entry = runner.rounds[0]
    log = [e for e in target.log if e[0] not in ("prepared", "settled")]
    assert log[0] == ("pause datanodes",)  # the first stall was on before the kill
    stalls = [e for e in log if "datanodes" in e[0]]
    assert stalls == [("pause datanodes",), ("resume datanodes",)] * (len(stalls) // 2)  # the DataNodes left running
    assert log.index(("kill", "n3")) < log.index(("restart", "n3"))
    assert entry["death_to_resume"] >= 0 and entry["started_again_after"] >= 0
    assert entry["stalled"] == "every DataNode (3) stopped 0s of every 0.01s" and "down" not in entry
    assert round_line(entry, 1).endswith(
        f"it started again and delivered {entry['started_again_after']:.1f}s after its restart]"
    )


def test_a_kill_on_a_slow_hdfs_fails_the_round_when_the_datanodes_cannot_be_stalled(monkeypatch):
    import cluster.drills.runner as runner_module

    monkeypatch.setattr(runner_module, "SLOW_HDFS_SECONDS", 0.0)
    target = ScriptedTarget()

    def refused():
        raise OSError("docker: no such container")

    target.pause_datanodes = refused
    target.resume_datanodes = lambda: None
    delivering_once_restarted(target)
    runner = DrillRunner(target, ["slow-hdfs-kill"])
    with pytest.raises(Exception, match="the DataNodes could not be stalled: docker: no such container"):
        runner.run()


def test_hdfs_unfinished_blocks_are_read_before_the_first_round_and_after_each():
    target = ScriptedTarget()
    runner = DrillRunner(target, ["kill", "zk-follower", "kill"])
    runner.run()
    assert runner.blocks_scheduled_at_start == 0
    assert [entry["blocks_scheduled"] for entry in runner.rounds] == [1, 1, 2]
    report = drill_report(
        runner.rounds,
        ("kill", "zk-follower"),
        runner.report,
        runner.samples,
        target=target.kind,
        blocks_scheduled_at_start=runner.blocks_scheduled_at_start,
    )
    assert report["hdfs_blocks_scheduled"]["rise_per_round"] == {"kill": 1.0, "zk-follower": 0.0}


def test_a_stall_that_cannot_begin_in_time_fails_before_anything_else_and_leaves_the_datanodes_running(monkeypatch):
    import cluster.drills.runner as runner_module

    monkeypatch.setattr(runner_module, "STALL_START_DEADLINE", 0.05)
    monkeypatch.setattr(runner_module, "SLOW_HDFS_STOP_S", 0.0)
    target = ScriptedTarget()
    answered = threading.Event()

    def late_pause():  # a docker pause that does not return until the test says so
        answered.wait(30)
        target.log.append(("pause datanodes",))
        return "every DataNode"

    target.pause_datanodes = late_pause
    target.resume_datanodes = lambda: target.log.append(("resume datanodes",))
    stalls = runner_module.DataNodeStalls(target)
    with pytest.raises(ServiceError, match="the DataNodes were not stalled within 0.05s"):
        stalls.start()
    answered.set()  # the pause returns late: the thread resumes the DataNodes and ends
    stalls._thread.join(10)
    assert not stalls._thread.is_alive()
    assert target.log == [("pause datanodes",), ("resume datanodes",)]
