"""What the node and ZooKeeper hold, as the API's models: the routes, the metrics and
the status page all read the node through these."""

from __future__ import annotations

from ..core.failovers import failover_timelines
from ..core.plans import move_is_done
from .models import (
    ClusterView,
    DecommissionedNode,
    Failover,
    Member,
    NodeStatus,
    Plan,
    PlanMove,
    ProcessorFigures,
    QueueFigures,
    RepositorySizes,
    Shard,
    ShardFigures,
    ShardHistoryEntry,
)
from .models_processors import activity, bulletin


def queue_figures(queue: str, figures: dict) -> QueueFigures:
    return QueueFigures(
        queue=queue,
        count=figures.get("count", 0),
        bytes=figures.get("size", 0),
        swapped_count=figures.get("swapped_count", 0),
        swapped_bytes=figures.get("swapped_size", 0),
        swap_files=figures.get("swap_files", 0),
        in_flight=figures.get("unacknowledged", 0),
        back_pressure=bool(figures.get("back_pressure", False)),
        oldest_entry_ms=figures.get("oldest_entry"),
    )


def processor_figures(processor: str, figures: dict) -> ProcessorFigures:
    return ProcessorFigures(
        processor=processor,
        type=figures.get("type", ""),
        state=figures.get("state", "RUNNING"),
        tasks=figures.get("tasks", 0),
        failures=figures.get("failures", 0),
        running=figures.get("running", 0),
        last_error=figures.get("last_error"),
        five_minutes=activity(figures.get("five_minutes")),
        since_start=activity(figures.get("since_start")),
        last_bulletin=bulletin(figures.get("last_bulletin")),
    )


def shard_queues(control) -> dict[str, list[QueueFigures]]:
    """Every queue of every shard the node runs: shard -> queues, by id."""
    return {
        shard: [queue_figures(queue, figures) for queue, figures in sorted(queues.items())]
        for shard, queues in sorted(control.queues().items())
    }


def shard_processors(control) -> dict[str, list[ProcessorFigures]]:
    """Every processor of every shard the node runs: shard -> processors, by id."""
    return {
        shard: [processor_figures(p, figures) for p, figures in sorted(processors.items())]
        for shard, processors in sorted(control.processors().items())
    }


def node_status(control) -> NodeStatus:
    status = control.status()
    sizes = control.repository_sizes()
    return NodeStatus(
        node=status["node"],
        kind=status["kind"],
        cluster=status.get("cluster"),
        incarnation=status.get("incarnation"),
        state=status["state"],
        flow_version=status.get("flow_version"),
        admin=status.get("admin"),
        shards=[
            ShardFigures(
                shard=shard,
                epoch=figures["epoch"],
                home=figures["home"],
                flow_version=figures.get("flow_version") or status.get("flow_version"),
                queued=figures["queued"],
                queued_bytes=figures["queued_bytes"],
                running_tasks=figures["running_tasks"],
                recovery=figures["recovery"],
            )
            for shard, figures in sorted(status["shards"].items())
        ],
        repositories=RepositorySizes(
            content_bytes=sizes.get("content"), provenance_bytes=sizes.get("provenance"), wal_bytes=sizes.get("wal")
        ),
    )


def cluster_view(status) -> ClusterView:
    members = [
        Member(
            incarnation=name,
            node=b.node,
            epoch=b.epoch,
            admin=b.admin,
            last_heartbeat=b.sent_at,
            heartbeat_sequence=b.sequence,
            queued=b.queued_count,
            queued_bytes=b.queued_bytes,
            active_threads=b.active_threads,
            max_threads=b.max_threads,
            cpu=round(b.cpu, 3),
            free_disk=b.free_disk,
            capacity_weight=b.capacity_weight,
            owned_shards=list(b.owned_shards),
        )
        for name, b in sorted(status.members.items())
    ]
    backlog: dict[str, int] = {}
    for beat in status.members.values():  # heartbeats key their queues "<shard>/<queue>"
        for key, load in beat.queues.items():
            shard = key.split("/", 1)[0]
            backlog[shard] = backlog.get(shard, 0) + load.count
    shards = [
        Shard(
            shard=name,
            owner=s.owner,
            epoch=s.epoch,
            state=s.state.value,
            flow_version=s.flow,
            backlog=backlog.get(name),
            history=[
                ShardHistoryEntry(epoch=h.epoch, owner=h.owner, state=h.state.value, at=h.at, reason=h.reason)
                for h in s.history
            ],
        )
        for name, s in sorted(status.shards.items())
    ]
    plans = [
        Plan(
            plan=name,
            dead=p.dead,
            status=p.status,
            policy=p.policy,
            leader=p.leader,
            created_at=p.created_at,
            revision=p.revision,
            moves=[
                PlanMove(
                    shard=m.shard,
                    from_epoch=m.from_epoch,
                    targets=[t for t in m.targets if t],
                    done=move_is_done(m, status.shards.get(m.shard)),
                )
                for m in p.moves
            ],
        )
        for name, p in sorted(status.plans.items())
    ]
    failovers = [
        Failover(
            plan=t.plan,
            dead=t.dead,
            last_seen_at=t.last_seen_at,
            detected_at=t.detected_at,
            taken_over_at=t.taken_over_at,
            finished_at=t.finished_at,
            resumed_at=t.resumed_at,
            detection_s=t.detection_s,
            takeover_s=t.takeover_s,
            resume_s=t.resume_s,
            finish_s=t.finish_s,
            shards=list(t.shards),
        )
        for t in failover_timelines(status.plans, status.shards)
    ]
    decommissioned = [
        DecommissionedNode(
            node=name,
            state=d.state,
            requested_at=d.requested_at,
            requested_by=d.requested_by,
            finished_at=d.finished_at,
            notes=list(d.notes),
        )
        for name, d in sorted(status.decommissioned.items())
    ]
    return ClusterView(
        cluster=status.cluster,
        leader=status.leader,
        contenders=list(status.contenders),
        members=members,
        shards=shards,
        plans=plans,
        failovers=failovers,
        decommissioned=decommissioned,
    )
