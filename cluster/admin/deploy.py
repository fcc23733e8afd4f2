"""A rolling flow deploy: a new flow version across the cluster, node by node, with
no queue that holds FlowFiles ever dropped.

    roll = start_deploy(control, document)    # checked, published, written: 202
    deploy_answer(roll)                        # the admin API's `Deploy`

The node that receives the deploy checks that it can run the flow, writes it as the
cluster's flow (ZooKeeper), and writes the roll beside it (`cluster.core.rolls`): its
version, the members in order (the leader last, so that leadership moves once), and
a step for each. From there the roll lives in ZooKeeper, not in the node that
received it: the leader drives it (`cluster.failover.rolling`), and each member
offloads itself when its step says so and connects again after it
(`cluster.node.deploy_follower`): its shards go to the others through the failover
protocol (fenced, at a new epoch, exactly once), and its new incarnation runs the
cluster's flow. A shard written under the old flow keeps that flow wherever it is
adopted, so its queues drain as they were. Members already on the new version are
skipped. The first failure stops the roll (a node left offloaded connects again).

If the leader dies mid-roll, or the node that received it, the next leader takes the
roll over and finishes it, or aborts it when it can no longer be finished as asked;
`GET /api/v1/flow` and `GET /api/v1/flow/deploy` say which, and after what.
"""

from __future__ import annotations

import time

from ..core.rolls import Roll, may_start, new_roll, roll_order, summary
from ..node.control import Conflict, OffloadRefused

__all__ = ["deploy_answer", "roll_order", "start_deploy"]


def start_deploy(control, document: dict, *, wall_clock=time.time) -> Roll:
    """Check `document`, publish it as the cluster's flow and write its roll; the roll.
    `Invalid` (a flow this node cannot run), `OffloadRefused` (fewer than two members),
    `Conflict` (a roll is running)."""
    snapshot = control.check_flow(document)
    status = control.cluster_status()
    if len(status.members) < 2:
        raise OffloadRefused(
            "a rolling deploy hands each node's shards to the others; this cluster has "
            f"{len(status.members)} member(s): start another node first"
        )
    previous = control.current_roll()
    refusal = may_start(previous[0] if previous is not None else None)
    if refusal is not None:
        raise Conflict(f"{refusal} (GET /api/v1/flow/deploy)")
    identity = control.identity()
    roll = new_roll(
        snapshot.version,
        status.members,
        status.leader,
        {name: shard.flow for name, shard in status.shards.items()},
        received_by=identity.get("incarnation") or identity["node"],
        at=wall_clock(),
    )
    # The flow first: a leader that finds the roll checks it is the cluster's flow.
    control.publish_flow(snapshot)
    control.write_roll(roll, previous)
    return roll


def deploy_answer(roll: Roll) -> dict:
    """The roll as the admin API's `Deploy` (the fields it always had, and the roll's)."""
    return {
        "version": roll.version,
        "state": roll.state,
        "started_at": roll.started_at,
        "finished_at": roll.finished_at,
        "error": roll.error,
        "nodes": [
            {
                "incarnation": step.incarnation,
                "admin": step.admin,
                "state": step.state,
                "detail": step.detail,
                "new_incarnation": step.new_incarnation,
                "node": step.node,
            }
            for step in roll.steps
        ],
        "id": roll.roll_id,
        "received_by": roll.received_by,
        "driver": roll.driver,
        "outcome": roll.outcome,
        "summary": summary(roll),
        "notes": list(roll.notes),
    }
