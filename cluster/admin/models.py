"""The answers of the admin API, as pydantic models: /openapi.json is built from them,
so the spec says exactly what each endpoint returns (and the fuzzing test holds every
answer to it). Times are UNIX seconds (float); sizes are bytes."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .models_processors import ProcessorActivity, ProcessorBulletin


class Problem(BaseModel):
    """Every error: what went wrong, and what to do."""

    error: str = Field(description="one line: what was not found, refused or unavailable")
    status: int


class Health(BaseModel):
    status: str = Field(description="'ok': the process answers")
    node: str


class Readiness(BaseModel):
    ready: bool
    node: str
    reasons: list[str] = Field(description="why it is not ready (empty when ready)")


# -- node ------------------------------------------------------------------------------
class QueueFigures(BaseModel):
    queue: str
    count: int
    bytes: int
    swapped_count: int
    swapped_bytes: int
    swap_files: int
    in_flight: int = Field(description="FlowFiles taken by a task, not yet committed")
    back_pressure: bool = Field(description="at or over the queue's object or size threshold")
    oldest_entry_ms: int | None = None


class ProcessorFigures(BaseModel):
    processor: str
    type: str
    state: str = Field(description="RUNNING or STOPPED")
    tasks: int
    failures: int = Field(description="tasks that raised and were rolled back")
    running: int = Field(description="tasks running now")
    last_error: str | None = Field(default=None, description="the error of its last task, if that one failed")
    five_minutes: ProcessorActivity = Field(description="over the last five minutes (in 5-second steps)")
    since_start: ProcessorActivity = Field(description="since the shard's engine started on this node")
    last_bulletin: ProcessorBulletin | None = Field(description="the last error it met, kept until the next one")


class ShardFigures(BaseModel):
    shard: str
    epoch: int | None
    home: bool
    flow_version: str | None = None
    queued: int
    queued_bytes: int
    running_tasks: int
    recovery: dict[str, float] = Field(default_factory=dict, description="what its recovery found, and its seconds")


class RepositorySizes(BaseModel):
    content_bytes: int | None = None
    provenance_bytes: int | None = None
    wal_bytes: int | None = None


class NodeStatus(BaseModel):
    node: str
    kind: str = Field(description="'clustered' or 'standalone'")
    cluster: str | None = None
    incarnation: str | None = None
    state: str = Field(description="STARTING, RUNNING, OFFLOADING, OFFLOADED or STOPPING")
    flow_version: str | None = None
    admin: str | None = None
    shards: list[ShardFigures]
    repositories: RepositorySizes


# -- cluster ---------------------------------------------------------------------------
class Member(BaseModel):
    incarnation: str
    node: str
    epoch: int
    admin: str
    last_heartbeat: float = Field(description="when the member sent its last heartbeat")
    heartbeat_sequence: int
    queued: int
    queued_bytes: int
    active_threads: int
    max_threads: int
    cpu: float = Field(description="load: the machine's 1-minute load average per core, capped at 1")
    free_disk: int
    capacity_weight: float
    owned_shards: list[str]


class ShardHistoryEntry(BaseModel):
    epoch: int
    owner: str | None
    state: str
    at: float
    reason: str


class Shard(BaseModel):
    shard: str
    owner: str | None
    epoch: int
    state: str
    flow_version: str | None = None
    backlog: int | None = Field(None, description="FlowFiles queued, from the owner's heartbeat")
    swapped: int | None = Field(None, description="FlowFiles swapped out, when the owner is this node")
    history: list[ShardHistoryEntry]


class PlanMove(BaseModel):
    shard: str
    from_epoch: int
    targets: list[str]
    done: bool


class Plan(BaseModel):
    plan: str
    dead: str
    status: str
    policy: str
    leader: str
    created_at: float
    revision: int
    moves: list[PlanMove]


class Failover(BaseModel):
    """One dead incarnation's shards moved: when the leader last heard from it (its last
    heartbeat the leader read), when the leader planned the move (detection),
    when the last shard ran at its new owner (fenced and recovered: takeover), when the
    last shard first delivered there (resume), and when the leader marked the plan done
    (each shard assigned: this may come before the takeover ends)."""

    plan: str
    dead: str
    last_seen_at: float | None = Field(
        None,
        description="when the dead incarnation sent the last heartbeat the leader read before it wrote the plan "
        "(None: not known, as in plans written by older versions)",
    )
    detected_at: float = Field(description="the leader wrote the plan")
    taken_over_at: float | None = Field(None, description="the last moved shard runs at its new owner")
    finished_at: float | None = Field(
        None,
        description="the leader marked the plan done: every shard has its new owner (which may still be recovering it)",
    )
    resumed_at: float | None = Field(None, description="the last moved shard first delivered at its new owner")
    detection_s: float | None = Field(
        None,
        description="from last_seen_at to detection: the death came in between, so detecting it took at most this long",
    )
    takeover_s: float | None = Field(None, description="from detection to taken_over_at")
    resume_s: float | None = Field(None, description="from detection to the last shard's first delivery")
    finish_s: float | None = None
    shards: list[str]


class DecommissionedNode(BaseModel):
    """A node an operator decommissioned: it may not join until connected again."""

    node: str
    state: str = Field(
        description="decommissioning (its shards, or what was kept for it, are still being handled) "
        "or decommissioned (nothing of it is left)"
    )
    requested_at: float
    requested_by: str
    finished_at: float | None = None
    notes: list[str] = Field(description="what the leader handed to a survivor or dropped, newest last")


class ClusterView(BaseModel):
    cluster: str
    leader: str | None
    contenders: list[str]
    members: list[Member]
    shards: list[Shard]
    plans: list[Plan]
    failovers: list[Failover]
    decommissioned: list[DecommissionedNode] = []


# -- control ---------------------------------------------------------------------------
class ControlResult(BaseModel):
    node: str
    action: str
    state: str = Field(description="the node's state after the call")
    detail: str = ""


class NodeDecommission(BaseModel):
    """A node of the cluster decommissioned, or connected again (any node answers)."""

    node: str
    action: str = Field(description="decommission or connect")
    state: str = Field(description="decommissioning, decommissioned, or connectable (it may join again)")
    decommissioned: bool
    live: list[str] = Field(description="its incarnations that are members now (a decommissioned one leaves and stops)")
    requested_at: float | None = None
    finished_at: float | None = None
    notes: list[str] = []
    detail: str


# -- flow deploys ----------------------------------------------------------------------
class DeployRequest(BaseModel):
    flow: dict = Field(description="the flow document (what the YAML or JSON flow file holds), before parameters")


class DeployNode(BaseModel):
    incarnation: str
    admin: str
    state: str = Field(description="waiting, skipped, offloading, connecting, done or failed")
    detail: str
    new_incarnation: str | None
    node: str | None = Field(None, description="the node's name")


class Deploy(BaseModel):
    version: str = Field(description="the flow version being deployed")
    state: str = Field(description="running, done or failed")
    started_at: float
    finished_at: float | None
    error: str | None
    nodes: list[DeployNode]
    id: str | None = Field(None, description="the roll's id: its version and start time")
    received_by: str | None = Field(None, description="the incarnation whose admin API took the deploy")
    driver: str | None = Field(None, description="the leader driving the roll (the last one, once it ended)")
    outcome: str | None = Field(
        None,
        description="who finished or aborted it, and after what: 'finished by "
        "leader n2-9 after n1-4 died', 'aborted by leader ...: why'",
    )
    summary: str | None = Field(None, description="the roll in one line")
    notes: list[str] = Field(default_factory=list, description="the roll's story: who drove it, who took it over")


class FlowVersions(BaseModel):
    cluster_version: str | None = Field(description="the flow deployed to the cluster (None: never deployed)")
    node_version: str | None = Field(description="the flow this node runs")
    shards: dict[str, str | None] = Field(description="shard -> the flow version it was written under")
    deploy: Deploy | None = Field(
        None, description="the cluster's last rolling deploy, as ZooKeeper holds it (None: never one)"
    )
