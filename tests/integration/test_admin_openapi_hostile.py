"""The admin API fuzzed by the clients it must refuse. schemathesis reads /openapi.json
from a standalone node (a real uvicorn server on a free port; no ZooKeeper or HDFS, so
the run takes seconds) and calls every operation the spec lists, GET and POST, as such
clients send it:

  without a token                         to a node with a token file: 401 on every
                                          route that needs one
  with a foreign Host                     421 (DNS rebinding)
  with a foreign Origin                   403 on every POST (a cross-site form or fetch)
  declaring a huge body and sending none  refused from its headers (401, 413), never
                                          waited for

the hostile ones both to the node with tokens and to one without (loopback, where
every caller is an admin and these rules are all that stands between a web page and
the node). No answer is a 5xx, and after every call the node is as it was: its state,
each processor's, each queue's count, and its provenance (a replay or a drop would
add events). The spec is read at run time, so routes added later are fuzzed too.
"""

from __future__ import annotations

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings

from cluster.admin.serve import serve
from cluster.admin.settings import AdminSettings
from cluster.admin.tokens import add_token
from cluster.node.standalone import NodeSettings, StandaloneNode
from cluster.services.process import wait_until
from flow.loading import parse_flow

from .test_admin_hostile_clients import node_state
from .test_admin_openapi import _item_id_for_schemathesis  # noqa: F401 - an autouse fixture, used here too

EXAMPLES = 5  # per operation: every answer is a refusal, and the run stays within seconds
FLOWFILES = 5
QUEUE = "generate/success/hold"
FLOW = {
    "name": "hostile-fuzz",
    "processors": [
        {
            "id": "generate",
            "type": "GenerateFlowFile",
            "properties": {"batch_size": FLOWFILES, "max_count": FLOWFILES, "file_size": 100},
        },
        {"id": "hold", "type": "UpdateAttribute", "auto_terminate": ["success"]},
    ],
    "connections": [{"source": "generate", "relationships": ["success"], "destination": "hold"}],
}
HOSTILE = {
    "without a token": {},
    "a foreign Host": {"Host": "attacker.example"},
    "a foreign Origin": {"Origin": "http://attacker.example"},
    "a huge Content-Length": {"Content-Length": str(200 << 20)},
}


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    started = StandaloneNode(parse_flow(FLOW), str(tmp_path_factory.mktemp("fuzz") / "node"), NodeSettings(threads=2))
    started.start(paused=True)
    try:
        started.control().stop_processor("local", "hold", 5.0)
        started.resume()
        wait_until(lambda: started.graph.queues[QUEUE].summary().count == FLOWFILES, 30, "the queue to fill")
        started.provenance.sync()
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def servers(node, tmp_path_factory):
    tokens = str(tmp_path_factory.mktemp("tokens") / "tokens")
    add_token(tokens, "admin", "ops")
    guarded = serve(AdminSettings(port=0, token_file=tokens), node.control())
    open_ = serve(AdminSettings(port=0), node.control())
    yield guarded, open_
    guarded.stop()
    open_.stop()


@pytest.fixture(scope="module")
def before(node, servers) -> dict:
    return node_state(node)


@pytest.fixture(scope="module")
def sessions(servers):
    made = {server.url: requests.Session() for server in servers}
    yield made
    for session in made.values():
        session.close()


@pytest.fixture
def admin_spec(servers):
    schema = schemathesis.openapi.from_url(f"{servers[0].url}/openapi.json", timeout=10)
    schema.config.update(request_timeout=10)  # and no Authorization header
    return schema


admin_api = schemathesis.pytest.from_fixture("admin_spec")


def expected(case, hostile: str, *, tokens: bool) -> set[int] | None:
    """The statuses a call may answer (None: any but a 5xx)."""
    responses = case.operation.definition.raw.get("responses", {})
    if hostile == "a foreign Host":
        return {421}
    if hostile == "a foreign Origin" and case.method.upper() not in ("GET", "HEAD"):
        return {403}
    if case.method.upper() != case.operation.method.upper():
        return None  # the coverage phase's other methods: 405, before any route runs
    if tokens and "401" in responses:
        return {401, 404}  # 404: a generated path no route matches (a newline in a parameter), before any runs
    if hostile == "a huge Content-Length" and not case.operation.body:
        return {413}
    return None


@admin_api.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_no_call_of_a_client_without_a_token_or_of_a_hostile_one_fails_or_changes_the_node(
    case, servers, sessions, node, before
):
    guarded, open_ = servers
    # The browser rules run before the token check: a foreign Host or Origin is refused
    # alike with tokens or without, so those go to the node without tokens only. An
    # Origin matters on what may change state (a GET with one is the plain GET that
    # test_admin_openapi fuzzes), and a huge body to a GET without a token is the 401
    # the first call gets.
    calls = [
        (guarded, "without a token", True),
        (open_, "a foreign Host", False),
        (open_, "a huge Content-Length", False),
    ]
    if case.method.upper() != "GET":
        calls += [(open_, "a foreign Origin", False), (guarded, "a huge Content-Length", True)]
    for server, hostile, tokens in calls:
        # A copy: the call adds its own headers to the mapping it is given.
        response = case.call(
            base_url=server.url, session=sessions[server.url], headers=dict(HOSTILE[hostile]), timeout=10
        )
        what = f"{case.method} {case.formatted_path} with {hostile} to the node with{'' if tokens else 'out'} tokens"
        assert response.status_code < 500, (what, response.text[:300])
        allowed = expected(case, hostile, tokens=tokens)
        assert allowed is None or response.status_code in allowed, (what, response.status_code, response.text[:300])
        if response.status_code == 404 and allowed is not None:
            assert response.json()["error"] == "Not Found", (what, response.text[:300])  # the router's, not a route's
        assert node_state(node) == before, what
