"""One admin address for a node run with worker processes (`custody run --workers N
--admin HOST:PORT`), after NiFi's request replication (`fan_out`), its members being the
node's workers instead of a cluster's nodes.

Every worker serves its own admin API, with the same token file: worker 0 on the
operator's HOST:PORT, the others on a loopback port the kernel picks. Each writes its
address into its directory once it listens (`DATA_DIR/workers/I/admin.json`, written
aside and renamed) and removes it on a clean stop; the supervisor removes the file of a
worker that ended, before it starts it again. Worker 0 then answers for the whole node:

- `GET /api/v1/cluster/processors` and `/api/v1/cluster/queues`: each worker's
  `/api/v1/node/...`, asked with the caller's `Authorization`, merged by shard, worker
  I's shard `local` named `wI.local` (`worker_shard`) so that the merge keeps them all;
- `POST /api/v1/processors/{shard}/{processor}/stop|start`: applied on itself, then on
  every other worker in parallel, answering with what each worker said (`workers`).

A worker without an address file (starting, restarting, stopped) or that does not
answer is reported (`answered` false, `error` why), never fatal. The routes that answer
for one worker only (provenance, FlowFiles and queue listings, drops, Run Once, deploy,
offload, alarms retry) are refused with 409 on a node of workers (`refusal`): a view of
one worker's part would pass for the node's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..node.workers import ADMIN_ADDRESS_FILE, worker_directory
from .fan_out import Asked, MemberAnswer, MemberRefused, fetch_json

ADDRESS_FILE = ADMIN_ADDRESS_FILE
# A worker asked to stop a processor answers once its tasks ended or its wait_s passed:
# it is given that long and this much more.
CONTROL_MARGIN_S = 5.0


def worker_shard(index: int, shard: str) -> str:
    """The name of worker `index`'s `shard` in the node's merged views."""
    return f"w{index}.{shard}"


def write_address(directory: str, url: str) -> None:
    """Record the worker's admin address in its directory: written aside, renamed, so a
    reader sees the whole file or none."""
    path = os.path.join(directory, ADDRESS_FILE)
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8", opener=lambda name, flags: os.open(name, flags, 0o600)) as handle:
        handle.write(json.dumps({"admin": url, "pid": os.getpid()}) + "\n")
    os.replace(partial, path)


def remove_address(directory: str) -> None:
    try:
        os.remove(os.path.join(directory, ADDRESS_FILE))
    except FileNotFoundError:
        pass


def read_address(directory: str) -> str:
    """The admin address a worker recorded; "" when it recorded none (or one that
    cannot be read: a worker writes it whole, so that is not a running worker's)."""
    try:
        with open(os.path.join(directory, ADDRESS_FILE), encoding="utf-8") as handle:
            address = json.load(handle).get("admin", "")
    except (OSError, ValueError, AttributeError):
        return ""
    return address if isinstance(address, str) else ""


def member_of(index: int, address: str) -> Asked:
    return Asked(node=f"worker-{index}", incarnation=f"w{index}", admin=address)


@dataclass(frozen=True)
class WorkerSiblings:
    """The workers of the node worker `index` belongs to, on `data_dir` (the node's)."""

    data_dir: str
    index: int
    count: int

    @property
    def own(self) -> str:
        return member_of(self.index, "").incarnation

    def members(self) -> list[Asked]:
        """Every worker as a member to ask, its address as recorded now."""
        return [member_of(i, read_address(worker_directory(self.data_dir, i))) for i in range(self.count)]


def as_worker_shards(answers: Iterable[MemberAnswer]) -> list[MemberAnswer]:
    """The answers with each worker's shards named by worker (`worker_shard`), pure."""
    named = []
    for answer in answers:
        index = int(answer.member.incarnation[1:])
        shards = None if answer.shards is None else {worker_shard(index, s): v for s, v in answer.shards.items()}
        named.append(MemberAnswer(answer.member, shards, answer.error, answer.answered_at))
    return named


def no_address_reason(member: Asked) -> str | None:
    """Why a worker is not asked (pure): it recorded no admin address."""
    if member.admin:
        return None
    return "it has no admin address (starting, restarting or stopped)"


# Routes that would answer for one worker's part only: refused on a node of workers.
_REFUSED = (
    ("GET", "/api/v1/provenance"),
    ("POST", "/api/v1/provenance"),
    ("GET", "/api/v1/flowfiles"),
    ("POST", "/api/v1/flowfiles"),
    ("GET", "/api/v1/queues/"),
    ("POST", "/api/v1/queues/"),
    ("POST", "/api/v1/flow/deploy"),
    ("POST", "/api/v1/node/offload"),
    ("POST", "/api/v1/node/connect"),
    ("POST", "/api/v1/node/alarms/retry"),
)


def refusal(method: str, path: str, count: int) -> str | None:
    """Why the admin API of a worker of a node of `count` workers refuses `method
    path` (pure); None when it answers it."""
    refused = any(method == m and (path == p or path.startswith(p.rstrip("/") + "/")) for m, p in _REFUSED)
    if not refused and not (method == "POST" and path.startswith("/api/v1/processors/") and path.endswith("/run-once")):
        return None
    return (
        f"not supported on a node of {count} workers yet: each worker holds its own part of it and nothing "
        "answers for all of them; /api/v1/cluster/processors and /api/v1/cluster/queues show the whole node, "
        "and a processor's stop and start reach every worker"
    )


def post_json(url: str, authorization: str | None, timeout_s: float) -> dict:
    """POST `url` without a body (`fan_out.fetch_json`: no redirect followed with the
    caller's token, `MemberRefused` saying why when the worker does not answer 200)."""
    return fetch_json(url, authorization, timeout_s, method="POST")


def apply_on_siblings(
    siblings: WorkerSiblings,
    path_and_query: str,
    authorization: str | None,
    *,
    post: Callable[[str, str | None, float], dict] = post_json,
    timeout_s: float = CONTROL_MARGIN_S,
) -> list[dict]:
    """POST `path_and_query` to every worker but this one, in parallel; what each said:
    `{"worker", "answered", "state", "running", "error"}`."""

    def ask(member: Asked) -> dict:
        index = int(member.incarnation[1:])
        try:
            reason = no_address_reason(member)
            if reason is not None:
                raise MemberRefused(reason)
            answer = post(member.admin.rstrip("/") + path_and_query, authorization, timeout_s)
            return {
                "worker": index,
                "answered": True,
                "state": answer.get("state"),
                "running": answer.get("running"),
                "error": None,
            }
        except MemberRefused as refused:
            error = str(refused)
        except Exception as unexpected:  # noqa: BLE001 - reported for this worker, not fatal
            error = f"its answer could not be read: {type(unexpected).__name__}: {unexpected}"[:500]
        return {"worker": index, "answered": False, "state": None, "running": None, "error": error}

    others = [member for member in siblings.members() if member.incarnation != siblings.own]
    if not others:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(others)), thread_name_prefix="worker-control") as pool:
        return list(pool.map(ask, others))
