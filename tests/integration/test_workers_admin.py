"""One admin address for `custody run --workers 2 --admin 127.0.0.1:PORT`: worker 0
answers the processors and queues of both workers (`/api/v1/cluster/...`, each
worker's shard named by worker), a stop of a processor sent to it stops that processor
in both workers (its queue fills to back pressure in both and its task count stays), a
start starts both again (their task counts grow), the caller's token reaching worker 1;
worker 1 SIGKILLed is reported as not answering until it is back, then answers again,
its processor still stopped (its run state is its own, kept); the routes that would
answer for one worker are refused with 409; a clean stop leaves no address file."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

from cluster.admin.tokens import add_token
from cluster.services.network import free_ports
from cluster.services.process import wait_until

ROOT = Path(__file__).resolve().parents[2]
THRESHOLD = 40  # the connection's back pressure: full queues, whatever the host's speed

FLOW = f"""\
name: held
processors:
  - id: generate
    type: GenerateFlowFile
    properties: {{batch_size: 5, file_size: 16}}
  - id: update
    type: UpdateAttribute
    properties: {{seen: "yes"}}
    auto_terminate: [success]
connections:
  - source: generate
    destination: update
    back_pressure: {{object_count: {THRESHOLD}}}
"""
QUEUE = "generate/success/update"
STARTED = re.compile(r"worker (\d+) of 2 started \(pid (\d+)\)")


class Admin:
    def __init__(self, url: str, token: str):
        self.url, self.token = url, token

    def call(self, method: str, path: str) -> tuple[int, dict]:
        request = urllib.request.Request(self.url + path, method=method, data=b"" if method == "POST" else None)
        request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())
        except OSError:
            return 0, {}  # worker 0 not listening yet

    def json(self, method: str, path: str) -> dict:
        status, body = self.call(method, path)
        assert status == 200, (method, path, status, body)
        return body


def _by_worker(document: dict, name: str) -> dict[str, dict]:
    """shard -> the item named `name` in it (a queue or a processor)."""
    key = "queue" if "queue" in next(iter(next(iter(document["shards"].values())))) else "processor"
    return {shard: next(i for i in items if i[key] == name) for shard, items in document["shards"].items()}


def test_one_admin_address_shows_and_controls_both_workers_and_reports_a_killed_one(tmp_path):
    tokens = str(tmp_path / "tokens")
    token = add_token(tokens, "admin", "ops")
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW)
    data_dir = tmp_path / "data"
    (port,) = free_ports(1)
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "cluster.cli", "run", "--flow", str(flow), "--data-dir", str(data_dir)]
        + ["--workers", "2", "--threads", "2", "--status-interval", "0"]
        + ["--admin", f"127.0.0.1:{port}", "--admin-tokens", tokens],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "custody.log", "ab"),  # noqa: SIM115 - the child holds it
        text=True,
    )
    pids: dict[int, list[int]] = {0: [], 1: []}

    def read() -> None:
        assert supervisor.stdout is not None
        for line in supervisor.stdout:
            found = STARTED.search(line)
            if found:
                pids[int(found.group(1))].append(int(found.group(2)))

    threading.Thread(target=read, daemon=True).start()
    admin = Admin(f"http://127.0.0.1:{port}", token)

    def both(path: str) -> dict | None:
        status, body = admin.call("GET", path)
        if status != 200 or not all(m["answered"] for m in body["members"]) or len(body["members"]) != 2:
            return None
        return body

    try:
        queues = wait_until(lambda: both("/api/v1/cluster/queues"), 25, "both workers' queues")
        assert sorted(queues["shards"]) == ["w0.local", "w1.local"]
        assert [m["node"] for m in queues["members"]] == ["worker-0", "worker-1"]
        assert admin.call("GET", "/api/v1/provenance/events")[0] == 409
        assert Admin(admin.url, "not-a-token").call("GET", "/api/v1/cluster/queues")[0] == 401

        # -- a stop sent to worker 0 stops `update` in both: their queues fill -------------
        stopped = admin.json("POST", "/api/v1/processors/local/update/stop?wait_s=10")
        assert stopped["state"] == "STOPPED"
        assert [(w["worker"], w["answered"], w["state"]) for w in stopped["workers"]] == [(1, True, "STOPPED")]

        def full() -> dict | None:
            body = both("/api/v1/cluster/queues")
            if body is None:
                return None
            held = _by_worker(body, QUEUE)
            return held if all(q["count"] >= THRESHOLD and q["back_pressure"] for q in held.values()) else None

        wait_until(full, 20, "both workers' queues full behind the stopped processor")
        processors = _by_worker(wait_until(lambda: both("/api/v1/cluster/processors"), 10, "processors"), "update")
        assert {shard: p["state"] for shard, p in processors.items()} == {"w0.local": "STOPPED", "w1.local": "STOPPED"}
        tasks_at_stop = {shard: p["tasks"] for shard, p in processors.items()}

        # -- worker 1 killed: reported as not answering, then back, still stopped -----------
        first_pid = wait_until(lambda: pids[1] and pids[1][0], 5, "worker 1's pid")
        os.kill(first_pid, signal.SIGKILL)

        def worker_1_silent() -> dict | None:
            status, body = admin.call("GET", "/api/v1/cluster/queues")
            if status != 200:
                return None
            members = {m["node"]: m for m in body["members"]}
            return body if not members["worker-1"]["answered"] and members["worker-0"]["answered"] else None

        silent = wait_until(worker_1_silent, 10, "worker 1 reported as not answering")
        assert sorted(silent["shards"]) == ["w0.local"]
        assert {m["node"]: m["error"] for m in silent["members"]}["worker-1"]
        back = wait_until(lambda: len(pids[1]) >= 2 and full(), 25, "worker 1 back, its queue still full")
        assert sorted(back) == ["w0.local", "w1.local"]
        processors = _by_worker(admin.json("GET", "/api/v1/cluster/processors"), "update")
        assert processors["w0.local"]["tasks"] == tasks_at_stop["w0.local"]  # its queue did not drain
        assert processors["w1.local"]["state"] == "STOPPED"  # kept in worker 1's run states

        # -- a start sent to worker 0 starts both: each runs tasks again --------------------
        started = admin.json("POST", "/api/v1/processors/local/update/start")
        assert started["state"] == "RUNNING"
        assert [(w["worker"], w["answered"], w["state"]) for w in started["workers"]] == [(1, True, "RUNNING")]
        base = {"w0.local": tasks_at_stop["w0.local"], "w1.local": processors["w1.local"]["tasks"]}

        def running_again() -> bool:
            body = both("/api/v1/cluster/processors")
            if body is None:
                return False
            now = _by_worker(body, "update")
            return all(now[s]["state"] == "RUNNING" and now[s]["tasks"] > base[s] for s in base)

        wait_until(running_again, 15, "update running again in both workers")
    finally:
        supervisor.send_signal(signal.SIGTERM)
        try:
            code = supervisor.wait(60)
        finally:
            if supervisor.poll() is None:
                supervisor.kill()
    assert code == 0
    assert not any((data_dir / "workers" / str(i) / "admin.json").exists() for i in (0, 1))
