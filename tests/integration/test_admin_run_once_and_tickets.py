"""NiFi's Run Once and download tickets over HTTP (a real uvicorn server, tokens
enabled) against a standalone node: a stopped processor runs one task and stays stopped,
a running one is a 409; a ticket serves one FlowFile's content without a token, as an
attachment named for its filename attribute, and nothing else."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from cluster.admin.serve import serve
from cluster.admin.settings import AdminSettings
from cluster.admin.tokens import add_token
from cluster.node.standalone import NodeSettings, StandaloneNode
from cluster.services.process import wait_until
from flow.loading import parse_flow

QUEUE = "generate/success/split"
COUNT = 12
FLOW = {
    "name": "run-once",
    "processors": [
        {
            "id": "generate",
            "type": "GenerateFlowFile",
            "properties": {"batch_size": COUNT, "max_count": COUNT, "file_size": 64, "unique_flowfiles": True},
        },
        {
            # SplitText takes one FlowFile per task: one task's worth is one FlowFile.
            "id": "split",
            "type": "SplitText",
            "properties": {"line_split_count": 1},
            "auto_terminate": ["original", "splits", "failure"],
        },
    ],
    "connections": [{"source": "generate", "relationships": ["success"], "destination": "split"}],
}


def call(url: str, method: str, path: str, token: str | None = None):
    request = urllib.request.Request(url + path, method=method, data=b"" if method == "POST" else None)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def answer(url: str, method: str, path: str, token: str | None, expect: int = 200) -> dict:
    status, _headers, body = call(url, method, path, token)
    assert status == expect, (status, body[:500])
    return json.loads(body)


@pytest.fixture
def standalone(tmp_path):
    """`split` stopped through the API before anything ran, its queue filled with COUNT."""
    tokens = str(tmp_path / "tokens")
    admin, reader = add_token(tokens, "admin", "ops"), add_token(tokens, "read", "grafana")
    node = StandaloneNode(parse_flow(FLOW), str(tmp_path / "node"), NodeSettings(threads=2))
    node.start(paused=True)
    server = serve(AdminSettings(port=0, token_file=tokens), node.control())
    try:
        assert answer(server.url, "POST", "/api/v1/processors/local/split/stop", admin)["state"] == "STOPPED"
        node.resume()
        wait_until(lambda: node.graph.queues[QUEUE].count == COUNT, 30, f"{COUNT} FlowFiles queued before split")
        yield node, server.url, admin, reader
    finally:
        server.stop()
        node.stop()


def test_run_once_runs_one_task_of_a_stopped_processor_which_stays_stopped(standalone):
    node, url, admin, reader = standalone
    path = "/api/v1/processors/local/split/run-once?wait_s=30"
    assert "needs the admin role" in answer(url, "POST", path, reader, expect=403)["error"]
    ran = answer(url, "POST", path, admin)
    assert ran == {
        "shard": "local",
        "processor": "split",
        "state": "STOPPED",
        "running": 0,
        "scope": None,
        "workers": None,
    }
    assert node.graph.queues[QUEUE].count == COUNT - 1
    assert node.engine.status()["processors"]["split"]["tasks"] == 1
    assert answer(url, "POST", path, admin)["state"] == "STOPPED"
    assert node.graph.queues[QUEUE].count == COUNT - 2
    # The kept run state is untouched: it is still recorded stopped.
    assert node.control().processors()["local"]["split"]["state"] == "STOPPED"
    keeper = node.run_states()
    assert keeper.stopped("local") == {"split"}

    assert "'nope'" in answer(url, "POST", "/api/v1/processors/local/nope/run-once", admin, expect=404)["error"]
    assert (
        "'elsewhere'" in answer(url, "POST", "/api/v1/processors/elsewhere/split/run-once", admin, expect=404)["error"]
    )
    assert answer(url, "POST", "/api/v1/processors/local/split/start", admin)["state"] == "RUNNING"
    refused = answer(url, "POST", path, admin, expect=409)
    assert "split is RUNNING: stop it first" in refused["error"]


def test_a_download_ticket_serves_one_flowfiles_content_without_a_token(standalone):
    node, url, _admin, reader = standalone
    first, second = (item.flowfile for item in node.graph.queues[QUEUE].snapshot().page(0, 2, 0).items)
    content = f"/api/v1/flowfiles/{first.id}/content"
    assert call(url, "GET", content)[0] == 401  # no token, no ticket
    assert call(url, "POST", content + "/ticket")[0] == 401

    made = answer(url, "POST", content + "/ticket?shard=local", reader)
    assert made["url"] == f"api/v1/flowfiles/{first.id}/content?ticket={made['ticket']}&download=true&shard=local"
    status, headers, body = call(url, "GET", "/" + made["url"])
    assert status == 200, body[:300]
    assert len(body) == 64 == first.size
    assert headers["Content-Disposition"] == f'attachment; filename="{first.attributes["filename"]}"'
    with_token = call(url, "GET", content, reader)
    assert with_token[0] == 200 and with_token[2] == body
    assert with_token[1]["Content-Disposition"].startswith("attachment; filename*=UTF-8''")

    for wrong in (
        f"/api/v1/flowfiles/{second.id}/content?ticket={made['ticket']}",  # another FlowFile's
        f"{content}?ticket={made['ticket'][:-1]}{'B' if made['ticket'].endswith('A') else 'A'}",  # altered
        f"{content}?ticket=",
    ):
        status, headers, body = call(url, "GET", wrong, reader)  # a valid token does not rescue a bad ticket
        assert status == 401, (wrong, status)
        assert "download ticket is not valid" in json.loads(body)["error"]
    unknown = "00000000-0000-4000-8000-000000000000"
    assert answer(url, "POST", f"/api/v1/flowfiles/{unknown}/content/ticket", reader, expect=404)

    # Not a ticket's matter, but this node's: a standalone node has no cluster-wide figures.
    for path in ("/api/v1/cluster/processors", "/api/v1/cluster/queues"):
        assert "is in no cluster" in answer(url, "GET", path, reader, expect=404)["error"]
