"""Processors' run states as an operator set them, kept so that a restart or an
adoption applies them again: the model and the decisions, no I/O.

NiFi keeps a processor's run state in its flow.json.gz, and its stop is cluster-wide.
Custody's admin API stops a processor in one shard of one node
(`POST /api/v1/processors/{shard}/{processor}/stop`), and a shard outlives the
incarnation that made it (it is adopted), while the node comes back as a new
incarnation with a new home shard. So the run state is kept per **node**, by name,
across its incarnations, and applies to every shard that node started:

    stop `put` in shard n1-5      kept as: node n1, put STOPPED
    n1 restarts as n1-7           n1-7 (its new home shard) runs without `put`
    n1-5 is adopted by n2         n1-5 drains on n2 without `put` (until started)
    start `put` in n1-7 (or n1-5) both run `put` again

A shard's node is the node of the incarnation it is named after (`origin_node`). A
clustered node keeps these records in ZooKeeper (`cluster.zk.operator`), a
standalone node in a file of its data directory (`cluster.node.run_states`).

A record is one JSON object per node:

    {"node": "n1", "processors": {"put": {"state": "STOPPED", "at": 1700000000.0,
                                          "by": "n1-5", "shard": "n1-5"}}}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from .incarnation import Incarnation

RUNNING, STOPPED = "RUNNING", "STOPPED"
STATES = (RUNNING, STOPPED)


def origin_node(shard: str) -> str:
    """The node whose run states a shard follows: the node of the incarnation the shard
    is named after (a home shard is named after its incarnation). A shard whose name is
    not an incarnation's (a standalone node's `local`, a divvy slice) is its own scope."""
    try:
        return Incarnation.parse(shard).node
    except ValueError:
        return shard


def scope_text(node: str) -> str:
    return (
        f"node {node}: every shard it started, in each of its incarnations, wherever it is adopted; kept "
        "across restarts"
    )


@dataclass(frozen=True)
class ProcessorRunState:
    state: str  # RUNNING or STOPPED
    at: float  # wall clock of the operator's request
    by: str = ""  # the incarnation (or node) that took the request
    shard: str = ""  # the shard named in the request

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"a processor's run state is one of {', '.join(STATES)}, not {self.state!r}")


@dataclass(frozen=True)
class NodeRunStates:
    node: str
    processors: dict[str, ProcessorRunState] = field(default_factory=dict)

    def stopped(self) -> frozenset[str]:
        return frozenset(pid for pid, entry in self.processors.items() if entry.state == STOPPED)

    def with_state(self, processor: str, entry: ProcessorRunState) -> NodeRunStates:
        """This record with `processor` set to `entry`; the record itself when nothing
        would change but the time (so that no write is made)."""
        current = self.processors.get(processor)
        if current is not None and current.state == entry.state:
            return self
        if current is None and entry.state == RUNNING:
            return self  # running is what a processor without a record does
        return replace(self, processors={**self.processors, processor: entry})

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "node": self.node,
                "processors": {
                    pid: {"state": e.state, "at": e.at, "by": e.by, "shard": e.shard}
                    for pid, e in sorted(self.processors.items())
                },
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> NodeRunStates:
        body = json.loads(data.decode())
        if not isinstance(body, dict) or not isinstance(body.get("processors", {}), dict):
            raise ValueError("a run-state record is a JSON object with a 'processors' object")
        return cls(
            str(body["node"]),
            {
                str(pid): ProcessorRunState(
                    entry["state"], float(entry.get("at", 0.0)), str(entry.get("by", "")), str(entry.get("shard", ""))
                )
                for pid, entry in body.get("processors", {}).items()
            },
        )


@dataclass(frozen=True)
class Reconcile:
    stop: tuple[str, ...] = ()
    start: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()  # wanted running but still stopping: try again later

    def __bool__(self) -> bool:
        return bool(self.stop or self.start)


def reconcile(stopped: frozenset[str], states: dict[str, str], runs: frozenset[str]) -> Reconcile:
    """What makes an engine match the record: processors recorded STOPPED that run
    (or are stopping) are stopped; processors not recorded STOPPED that are STOPPED
    are started, if they run on this shard at all (an adopted shard never runs its
    sources). Processors the record names and the shard's flow lacks are ignored.
    `states`: processor -> RUNNING, STOPPING or STOPPED; `runs`: the processors the
    shard runs."""
    stop = tuple(sorted(pid for pid in stopped if states.get(pid) == RUNNING))
    start = tuple(
        sorted(pid for pid, state in states.items() if state == STOPPED and pid not in stopped and pid in runs)
    )
    waiting = tuple(
        sorted(pid for pid, state in states.items() if state == "STOPPING" and pid not in stopped and pid in runs)
    )
    return Reconcile(stop, start, waiting)
