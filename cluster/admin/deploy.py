"""A rolling flow deploy: a new flow version across the cluster, node by node, with
no queue that holds FlowFiles ever dropped.

    deploy = RollingDeploy(control, document, token=caller_token).start()
    deploy.status()          # DeployStatus: per node, waiting / offloading / connecting / done

The node that receives the deploy checks that it can run the flow, writes it as the
cluster's flow (ZooKeeper), then, one member at a time (the leader last, so that
leadership moves once): offload (its shards go to the others through the failover
protocol: fenced, at a new epoch, exactly once), connect (a new incarnation, which
runs the cluster's flow), and wait until it is ready on the new version. A shard
written under the old flow keeps that flow wherever it is adopted, so its queues
drain as they were. Members already on the new version are skipped. The first
failure stops the roll (a node left offloaded is connected again) and is reported.

The calls to other nodes go through their admin APIs (the address in their
heartbeats), with the token the deploy was called with.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from ..errors import first_line
from ..node.control import OffloadRefused
from .client import call

log = logging.getLogger(__name__)

STEP_TIMEOUT_S = 180.0   # offload, or join and become ready, per node


@dataclass
class NodeStep:
    incarnation: str
    admin: str
    state: str = "waiting"        # waiting, skipped, offloading, connecting, done, failed
    detail: str = ""
    new_incarnation: str | None = None


@dataclass
class DeployStatus:
    version: str
    state: str = "running"        # running, done, failed
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    error: str | None = None
    nodes: list[NodeStep] = field(default_factory=list)


def roll_order(members: dict, leader: str | None) -> list[str]:
    """Members by name, the leader last: leadership moves once."""
    return sorted(members, key=lambda incarnation: (incarnation == leader, members[incarnation].node, incarnation))


class RollingDeploy:
    def __init__(self, control, document: dict, *, token: str | None, clock=time.monotonic):
        self.control = control
        self.snapshot = control.check_flow(document)
        self.token = token
        self._clock = clock
        status = control.cluster_status()
        if len(status.members) < 2:
            raise OffloadRefused("a rolling deploy hands each node's shards to the others; this cluster has "
                                 f"{len(status.members)} member(s): start another node first")
        self._status = DeployStatus(self.snapshot.version, nodes=[
            NodeStep(incarnation, status.members[incarnation].admin)
            for incarnation in roll_order(status.members, status.leader)])
        self._versions = {name: shard.flow for name, shard in status.shards.items()}
        self._lock = threading.Lock()

    def start(self) -> "RollingDeploy":
        self.control.publish_flow(self.snapshot)
        log.info("rolling deploy of flow version %s over %s", self.snapshot.version,
                 ", ".join(step.incarnation for step in self._status.nodes))
        threading.Thread(target=self._roll, name=f"deploy {self.snapshot.version}", daemon=True).start()
        return self

    def status(self) -> DeployStatus:
        with self._lock:
            return DeployStatus(self._status.version, self._status.state, self._status.started_at,
                                self._status.finished_at, self._status.error,
                                [NodeStep(**vars(step)) for step in self._status.nodes])

    def _set(self, step: NodeStep, state: str, detail: str = "", **changes) -> None:
        with self._lock:
            step.state, step.detail = state, detail
            for name, value in changes.items():
                setattr(step, name, value)
        log.info("deploy %s: %s %s %s", self.snapshot.version, step.incarnation, state, detail)

    def _roll(self) -> None:
        failure = None
        for step in self._status.nodes:
            if self._versions.get(step.incarnation) == self.snapshot.version:
                self._set(step, "skipped", "already runs this version")
                continue
            try:
                self._deploy_to(step)
            except Exception as error:  # noqa: BLE001 - any failure stops the roll, reported in the status
                failure = f"{step.incarnation}: {first_line(error, 300)}"
                self._set(step, "failed", first_line(error, 300))
                self._reconnect(step)
                break
        with self._lock:
            self._status.state = "failed" if failure else "done"
            self._status.error = failure
            self._status.finished_at = time.time()
        log.info("deploy %s %s%s", self.snapshot.version, "failed: " if failure else "done",
                 failure or "")

    def _post(self, url: str, timeout: float) -> dict:
        status, body = call(url, "POST", timeout=timeout, token=self.token)
        if status != 200:
            raise RuntimeError(f"{url} answered {status}: {body.get('error', body)}")
        return body

    def _get(self, url: str) -> tuple[int, dict]:
        return call(url, timeout=10.0, token=self.token)

    def _deploy_to(self, step: NodeStep) -> None:
        if not step.admin:
            raise RuntimeError("its heartbeat names no admin API: it cannot be offloaded remotely")
        self._set(step, "offloading")
        body = self._post(f"{step.admin}/api/v1/node/offload?wait_s={STEP_TIMEOUT_S:g}", STEP_TIMEOUT_S + 30)
        if body["state"] != "OFFLOADED":
            raise RuntimeError(f"still {body['state']} after {STEP_TIMEOUT_S:.0f} s of offload")
        self._set(step, "connecting")
        self._post(f"{step.admin}/api/v1/node/connect", 30.0)
        deadline = self._clock() + STEP_TIMEOUT_S
        while True:
            status, node = self._get(f"{step.admin}/api/v1/node")
            ready, _ = self._get(f"{step.admin}/ready")
            if (status == 200 and ready == 200 and node.get("flow_version") == self.snapshot.version
                    and node.get("incarnation") not in (None, step.incarnation)):
                self._set(step, "done", f"runs {self.snapshot.version}", new_incarnation=node["incarnation"])
                return
            if self._clock() > deadline:
                raise RuntimeError(f"not ready on version {self.snapshot.version} {STEP_TIMEOUT_S:.0f} s after "
                                   f"connect (state {node.get('state')}, version {node.get('flow_version')})")
            time.sleep(0.5)  # polling the node's API, bounded by the deadline above

    def _reconnect(self, step: NodeStep) -> None:
        """A node the failed step left offloaded joins again (on whatever flow it can run)."""
        try:
            status, node = self._get(f"{step.admin}/api/v1/node")
            if status == 200 and node.get("state") in ("OFFLOADING", "OFFLOADED"):
                self._post(f"{step.admin}/api/v1/node/connect", 30.0)
        except Exception as error:  # noqa: BLE001 - reported; the operator connects it by hand
            log.error("deploy %s: could not connect %s again: %s; run custody node connect --url %s",
                      self.snapshot.version, step.incarnation, first_line(error, 200), step.admin)
