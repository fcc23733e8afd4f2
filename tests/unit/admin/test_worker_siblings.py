"""One admin address for a node of worker processes (`cluster.admin.worker_siblings`):
the address files the workers leave in their directories, which workers are asked,
how their answers merge (each worker's shard named by worker), which routes a node of
workers refuses, and a control applied on the other workers with an injected POST."""

from __future__ import annotations

import argparse
import http.server
import json
import os
import threading

import pytest

from cluster.admin.fan_out import MemberAnswer, MemberRefused, merge
from cluster.admin.worker_siblings import (
    ADDRESS_FILE,
    WorkerSiblings,
    apply_on_siblings,
    as_worker_shards,
    member_of,
    post_json,
    read_address,
    refusal,
    remove_address,
    write_address,
)
from cluster.node.workers import worker_command, worker_directory


def _siblings(tmp_path, addresses: dict[int, str], count: int = 3, index: int = 0) -> WorkerSiblings:
    for worker in range(count):
        directory = worker_directory(str(tmp_path), worker)
        os.makedirs(directory, exist_ok=True)
        if worker in addresses:
            write_address(directory, addresses[worker])
    return WorkerSiblings(str(tmp_path), index, count)


def test_a_worker_address_is_written_whole_read_back_and_removed(tmp_path):
    assert read_address(str(tmp_path)) == ""
    write_address(str(tmp_path), "http://127.0.0.1:4711")
    assert read_address(str(tmp_path)) == "http://127.0.0.1:4711"
    assert sorted(os.listdir(tmp_path)) == [ADDRESS_FILE]  # nothing written aside is left
    (tmp_path / ADDRESS_FILE).write_text('{"admin": ')  # not a whole file: no address
    assert read_address(str(tmp_path)) == ""
    remove_address(str(tmp_path))
    remove_address(str(tmp_path))  # already gone: not an error
    assert read_address(str(tmp_path)) == "" and os.listdir(tmp_path) == []


def test_every_worker_is_a_member_with_the_address_it_recorded_or_none(tmp_path):
    siblings = _siblings(tmp_path, {0: "http://127.0.0.1:8080", 2: "http://127.0.0.1:40001"})
    assert siblings.own == "w0"
    assert siblings.members() == [
        member_of(0, "http://127.0.0.1:8080"),
        member_of(1, ""),
        member_of(2, "http://127.0.0.1:40001"),
    ]
    assert [m.node for m in siblings.members()] == ["worker-0", "worker-1", "worker-2"]


def test_the_workers_shards_of_one_name_are_all_kept_named_by_worker():
    answers = [
        MemberAnswer(member_of(1, "http://127.0.0.1:2"), {"local": [{"queue": "a", "count": 7}]}, None, 2.0),
        MemberAnswer(member_of(0, "http://127.0.0.1:1"), {"local": [{"queue": "a", "count": 5}]}, None, 1.0),
        MemberAnswer(member_of(2, ""), None, "it advertises no admin API address ('')"),
    ]
    merged = merge(as_worker_shards(answers), {})
    assert merged["shards"] == {"w0.local": [{"queue": "a", "count": 5}], "w1.local": [{"queue": "a", "count": 7}]}
    assert [(m["node"], m["answered"]) for m in merged["members"]] == [
        ("worker-0", True),
        ("worker-1", True),
        ("worker-2", False),
    ]
    # Without the naming, the merge would keep one worker's `local` only.
    assert len(merge(answers, {})["shards"]) == 1


def test_a_node_of_workers_refuses_the_routes_that_would_answer_for_one_worker_only():
    for method, path in [
        ("GET", "/api/v1/provenance/events"),
        ("POST", "/api/v1/provenance/events/12/replay"),
        ("GET", "/api/v1/queues/local/g/success/flowfiles"),
        ("POST", "/api/v1/queues/local/g/success/drop"),
        ("GET", "/api/v1/flowfiles/abc/content"),
        ("POST", "/api/v1/processors/local/generate/run-once"),
        ("POST", "/api/v1/flow/deploy"),
        ("POST", "/api/v1/node/offload"),
    ]:
        reason = refusal(method, path, 2)
        assert reason is not None and "not supported on a node of 2 workers yet" in reason, (method, path)
    for method, path in [
        ("GET", "/api/v1/node/processors"),
        ("GET", "/api/v1/node/queues"),
        ("GET", "/api/v1/cluster/processors"),
        ("GET", "/api/v1/cluster/queues"),
        ("POST", "/api/v1/processors/local/generate/stop"),
        ("POST", "/api/v1/processors/local/generate/start"),
        ("GET", "/api/v1/flow"),
        ("GET", "/health"),
        ("GET", "/"),
        ("GET", "/api/v1/provenanceX"),
    ]:
        assert refusal(method, path, 2) is None, (method, path)


def test_a_control_reaches_every_other_worker_with_the_callers_token_and_reports_each(tmp_path):
    siblings = _siblings(
        tmp_path, {0: "http://127.0.0.1:1", 1: "http://127.0.0.1:2/", 3: "http://127.0.0.1:4"}, count=4
    )
    asked = []

    def post(url, authorization, timeout_s):
        asked.append((url, authorization))
        if url.startswith("http://127.0.0.1:4"):
            raise MemberRefused("it could not be reached: [Errno 111] Connection refused")
        return {"shard": "local", "processor": "g", "state": "STOPPED", "running": 0}

    answers = apply_on_siblings(siblings, "/api/v1/processors/local/g/stop?wait_s=30.0", "Bearer t", post=post)
    assert sorted(asked) == [
        ("http://127.0.0.1:2/api/v1/processors/local/g/stop?wait_s=30.0", "Bearer t"),
        ("http://127.0.0.1:4/api/v1/processors/local/g/stop?wait_s=30.0", "Bearer t"),
    ]  # not itself (worker 0), nor worker 2, which recorded no address
    assert answers == [
        {"worker": 1, "answered": True, "state": "STOPPED", "running": 0, "error": None},
        {
            "worker": 2,
            "answered": False,
            "state": None,
            "running": None,
            "error": "it has no admin address (starting, restarting or stopped)",
        },
        {
            "worker": 3,
            "answered": False,
            "state": None,
            "running": None,
            "error": "it could not be reached: [Errno 111] Connection refused",
        },
    ]


def test_worker_0_serves_the_operators_address_and_the_others_a_loopback_port_with_the_same_tokens(tmp_path):
    args = argparse.Namespace(
        flow="flow.yaml",
        data_dir=str(tmp_path),
        threads=2,
        status_interval=0.0,
        name="edge",
        spark_master="local[*]",
        param=[],
        spark_conf=[],
        accept_wal_damage=False,
        python_extensions=[],
        python_index_url="",
        python_find_links=[],
        python_no_index=False,
        verbose=False,
        admin="127.0.0.1:8080",
        admin_tokens="tokens.json",
        admin_allowed_host=["custody.example"],
    )
    first, second = worker_command(args, 0, 2), worker_command(args, 1, 2)
    assert first[first.index("--admin") + 1] == "127.0.0.1:8080"
    assert second[second.index("--admin") + 1] == "127.0.0.1:0"
    for command in (first, second):
        assert command[command.index("--admin-tokens") + 1] == os.path.abspath("tokens.json")
        assert command[command.index("--admin-allowed-host") + 1] == "custody.example"
    args.admin = None
    assert "--admin" not in worker_command(args, 1, 2)


def test_a_control_is_posted_with_the_token_and_a_refusal_says_the_workers_reason():
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            seen.append((self.command, self.path, self.headers.get("Authorization")))
            known = self.path.startswith("/api/v1/processors/local/g/")
            body = {"state": "STOPPED", "running": 0} if known else {"error": "no processor 'x'", "status": 404}
            data = json.dumps(body).encode()
            self.send_response(200 if known else 404)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert post_json(url + "/api/v1/processors/local/g/stop", "Bearer t", 5.0)["state"] == "STOPPED"
        with pytest.raises(MemberRefused, match="it answered 404: no processor 'x'"):
            post_json(url + "/api/v1/processors/local/x/stop", "Bearer t", 5.0)
    finally:
        server.shutdown()
        server.server_close()
    assert seen == [
        ("POST", "/api/v1/processors/local/g/stop", "Bearer t"),
        ("POST", "/api/v1/processors/local/x/stop", "Bearer t"),
    ]
