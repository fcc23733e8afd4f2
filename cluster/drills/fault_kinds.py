"""The faults a failover drill injects: their names, what each does to the cluster,
whether the cluster must fail over, and the parsing of an operator's list of them;
and the kinds of cluster it drills (`TARGET_KINDS`, each a `targets.DrillTarget`).

Pure: no I/O. The round loop (`runner`) injects them through a `DrillTarget`; a
target says which of them it supports (`DrillTarget.supported_faults`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ClusterError


@dataclass(frozen=True)
class FaultKind:
    name: str
    fails_over: bool  # the victim's shard must move to a survivor
    what: str
    former_name: str = ""  # its name in the drill test's environment knobs


FAULT_KINDS = (
    FaultKind("kill", True, "SIGKILL a node; its shard is adopted, then it rejoins", "sigkill"),
    FaultKind(
        "stop",
        True,
        "SIGSTOP a node past its session timeout, then SIGCONT it: a zombie whose "
        "writes must be refused; it rejoins as a new incarnation",
        "sigstop",
    ),
    FaultKind("expire", True, "expire a node's ZooKeeper session from outside", "expire"),
    FaultKind(
        "leader",
        True,
        "SIGKILL a node, then the leader once it has written the failover plan: the next leader finishes the plan",
        "kill-leader",
    ),
    FaultKind(
        "adopter",
        True,
        "SIGKILL a node, then the survivor chosen to adopt its shard while it "
        "adopts: the shard moves again, at a higher epoch",
        "kill-adopter",
    ),
    FaultKind(
        "zk-follower",
        False,
        "kill a ZooKeeper follower, then restart it: nothing fails over, delivery goes on",
        "zk-follower",
    ),
    FaultKind(
        "datanode",
        False,
        "kill an HDFS DataNode, then restart it: commits on its pipeline roll back "
        "and retry, nothing fails over, delivery goes on",
        "datanode",
    ),
    FaultKind(
        "slow-hdfs",
        False,
        "SIGSTOP every HDFS DataNode for half of every second, for 20 s (an HDFS slow everywhere: short of "
        "CPU or disk, or in long garbage collections), then SIGCONT them: nothing fails over, delivery goes on",
        "slow-hdfs",
    ),
    FaultKind(
        "slow-hdfs-kill",
        True,
        "SIGKILL a node while every HDFS DataNode stalls half of every second: its shard is adopted and it "
        "starts again on an HDFS slow everywhere, which must not keep a start from succeeding",
        "slow-hdfs-kill",
    ),
    FaultKind(
        "broker",
        False,
        "kill the Kafka broker, keep it down a few seconds, then restart it (the Kafka workload): "
        "transactions in flight abort, nothing fails over, delivery goes on once it is back",
        "broker",
    ),
    FaultKind(
        "rack",
        True,
        "SIGKILL a third of the nodes at once (a rack lost; every other such round the leader "
        "among them): each of their shards resumed exactly once, then they rejoin",
        "rack",
    ),
    FaultKind(
        "load",
        False,
        "saturate every core for a minute (--load-seconds) with busy processes outside the cluster, and meanwhile "
        "SIGSTOP a node for 0.8 s ten times in a row: a slow cluster and a node that stalls "
        "are not dead ones: nothing may fail over, delivery goes on",
        "load",
    ),
    FaultKind(
        "partition",
        True,
        "cut a node off the network until its session expires and its shard is adopted, then heal the partition",
        "partition",
    ),
)
TARGET_KINDS = ("local", "compose")

BY_NAME = {kind.name: kind for kind in FAULT_KINDS}
_FORMER = {kind.former_name: kind.name for kind in FAULT_KINDS}


class DrillUsageError(ClusterError):
    """The drill was asked for something it cannot do (a fault it does not know, one
    the target cannot inject, no rounds): nothing was started."""


def parse_faults(text: str | None, supported, target: str = "this") -> tuple[str, ...]:
    """The fault names in `text` (comma-separated; the drill test's former names are
    accepted too), in the order given, repeats kept: the rounds take the list in turn,
    so a fault named twice comes round twice as often (`kill,partition,stop,partition`).
    Every fault in `supported` (in catalogue order) when `text` is empty or None.
    Raises DrillUsageError naming an unknown or unsupported fault and the valid ones."""
    supported = [kind.name for kind in FAULT_KINDS if kind.name in set(supported)]
    words = [word.strip() for word in (text or "").split(",") if word.strip()]
    if not words:
        return tuple(supported)
    chosen: list[str] = []
    for word in words:
        name = word if word in BY_NAME else _FORMER.get(word)
        if name is None:
            raise DrillUsageError(
                f"unknown fault {word!r}; valid faults: {', '.join(kind.name for kind in FAULT_KINDS)}"
            )
        if name not in supported:
            hint = {
                "partition": " (a network partition needs containers: --target compose)",
                "broker": " (the broker fault goes with --workload kafka)",
            }.get(name, "")
            raise DrillUsageError(
                f"fault {name!r} cannot be injected on the {target} target{hint}; it supports: {', '.join(supported)}"
            )
        chosen.append(name)
    return tuple(chosen)


def rack_size(nodes: int) -> int:
    """How many of `nodes` a rack fault kills at once: a third, at least one."""
    return max(1, nodes // 3)


def rotation(faults, rounds: int) -> list[str]:
    """`rounds` rounds, the faults taken in turn."""
    return [faults[index % len(faults)] for index in range(rounds)]
