"""The admin API's queues, FlowFiles, content, drop, replay and processor control,
over HTTP (a real uvicorn server), against a standalone node, and against a clustered
node on the real ZooKeeper ensemble and HDFS; every answer is checked against what the
node really holds (its queues, WAL, content repository and provenance)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from cluster.admin.serve import serve
from cluster.admin.settings import AdminSettings
from cluster.admin.tokens import add_token
from cluster.node.standalone import NodeSettings, StandaloneNode
from cluster.services.process import wait_until
from flow.loading import parse_flow
from repositories.provenance import EventType

QUEUE = "generate/success/hold"
SIZE = 150_000  # bytes of each FlowFile's content: more than two chunks of the stream
FLOW = {
    "name": "queues",
    "processors": [
        {
            "id": "generate",
            "type": "GenerateFlowFile",
            "properties": {
                "batch_size": 30,
                "max_count": 30,
                "file_size": SIZE,
                "unique_flowfiles": True,
                "sequence_attribute": "seq",
                "mime.type": "text/plain; charset=utf-8",
            },
        },
        {"id": "hold", "type": "UpdateAttribute", "properties": {"held": "yes"}, "auto_terminate": ["success"]},
    ],
    "connections": [
        {
            "source": "generate",
            "relationships": ["success"],
            "destination": "hold",
            "swap_threshold": 10,
            "swap_batch": 5,
        }
    ],
}


class Api:
    """HTTP calls to one node's admin API with a bearer token."""

    def __init__(self, url: str, token: str | None):
        self.url, self.token = url, token

    def call(self, method: str, path: str, *, token: str | None = "default", headers: dict | None = None):
        request = urllib.request.Request(self.url + path, method=method, data=b"" if method == "POST" else None)
        token = self.token if token == "default" else token
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    def json(self, method: str, path: str, expect: int = 200, **kwargs):
        status, _headers, body = self.call(method, path, **kwargs)
        assert status == expect, (status, body[:500])
        return json.loads(body)


@pytest.fixture
def standalone(tmp_path):
    tokens = str(tmp_path / "tokens")
    admin_token, read_token = add_token(tokens, "admin", "ops"), add_token(tokens, "read", "grafana")
    node = StandaloneNode(parse_flow(FLOW), str(tmp_path / "node"), NodeSettings(threads=2))
    node.start(paused=True)  # recovered, nothing runs yet: the test stops `hold` first
    server = serve(AdminSettings(port=0, token_file=tokens), node.control())
    yield node, Api(server.url, admin_token), Api(server.url, read_token)
    server.stop()
    node.stop()


def test_queues_flowfiles_content_drop_replay_and_processors_over_http(standalone):
    node, api, reader = standalone
    encoded = urllib.parse.quote(QUEUE, safe="")

    # -- stop `hold` so that the queue fills; a read token may not --------------------------
    refused = reader.json("POST", "/api/v1/processors/local/hold/stop", expect=403)
    assert "needs the admin role" in refused["error"]
    stopped = api.json("POST", "/api/v1/processors/local/hold/stop")
    assert (stopped["state"], stopped["running"]) == ("STOPPED", 0)
    node.resume()
    queue = node.graph.queues[QUEUE]
    # Settled: 10 in memory (the threshold), 20 in swap files of 5, nothing being swapped.
    wait_until(
        lambda: (s := queue.summary()).count == 30 and (s.active, s.swapped_count) == (10, 20),
        30,
        "30 FlowFiles queued, 20 of them swapped out",
    )

    # -- list the queue --------------------------------------------------------------------
    listing = reader.json("GET", f"/api/v1/queues/local/{QUEUE}/flowfiles?offset=3&limit=4")
    expected = queue.snapshot().page(3, 4, int(time.time() * 1000))
    assert [f["uuid"] for f in listing["flowfiles"]] == [item.flowfile.id for item in expected.items]
    assert [f["position"] for f in listing["flowfiles"]] == [4, 5, 6, 7]
    first = expected.items[0].flowfile
    assert listing["flowfiles"][0] == {
        "uuid": first.id,
        "filename": first.attributes["filename"],
        "size": SIZE,
        "entry_date_ms": first.entry_date,
        "lineage_start_date_ms": first.lineage_start_date,
        "penalty_expiration_ms": None,
        "position": 4,
        "penalized": False,
    }
    summary = queue.summary()
    assert (listing["count"], listing["swapped_count"], listing["in_flight"]) == (30, summary.swapped_count, 0)
    assert listing["swapped_count"] > 0 and listing["listable"] + listing["swapped_count"] == 30
    assert listing["bytes"] == 30 * SIZE
    assert reader.json("GET", f"/api/v1/queues/local/{encoded}/flowfiles?offset=3&limit=4") == listing  # %2F
    every = reader.json("GET", f"/api/v1/queues/local/{QUEUE}/flowfiles?limit=1000")
    assert len(every["flowfiles"]) == every["listable"]

    # -- one FlowFile: in memory, and swapped out ---------------------------------------------
    details = reader.json("GET", f"/api/v1/flowfiles/{first.id}")
    assert details["attributes"] == first.attributes and details["attributes"]["seq"] == first.attributes["seq"]
    assert (details["shard"], details["queue"], details["swapped"]) == ("local", QUEUE, False)
    claim = first.content_claim
    assert details["content_claim"] == {
        "container": claim.resource.container,
        "section": claim.resource.section,
        "resource": claim.resource.id,
        "offset": claim.offset,
        "length": SIZE,
    }
    _, records = node.shard.swap_store.read(queue.swap_summaries()[0].location)
    swapped = reader.json("GET", f"/api/v1/flowfiles/{records[0].id}?shard=local")
    assert swapped["swapped"] is True and swapped["attributes"] == dict(records[0].attributes)
    assert records[0].id not in {f["uuid"] for f in every["flowfiles"]}, "swapped FlowFiles are not listed"

    # -- its content, streamed, whole and in ranges ------------------------------------------
    data = node.content.read(claim)
    status, headers, body = reader.call("GET", f"/api/v1/flowfiles/{first.id}/content")
    assert (status, body) == (200, data) and len(body) == SIZE
    assert headers["Content-Type"] == "text/plain; charset=utf-8" and headers["Accept-Ranges"] == "bytes"
    assert headers["Content-Length"] == str(SIZE)
    status, headers, body = reader.call(
        "GET", f"/api/v1/flowfiles/{first.id}/content", headers={"Range": "bytes=65000-140000"}
    )
    assert (status, body, headers["Content-Range"]) == (206, data[65000:140001], f"bytes 65000-140000/{SIZE}")
    status, headers, body = reader.call("GET", f"/api/v1/flowfiles/{first.id}/content", headers={"Range": "bytes=-100"})
    assert (status, body) == (206, data[-100:])
    status, headers, body = reader.call(
        "GET", f"/api/v1/flowfiles/{first.id}/content", headers={"Range": f"bytes={SIZE}-"}
    )
    assert (status, headers["Content-Range"]) == (416, f"bytes */{SIZE}") and b"not satisfiable" in body
    status, _headers, body = reader.call("GET", f"/api/v1/flowfiles/{records[0].id}/content")
    assert (status, body) == (200, node.content.read(records[0].content_claim))

    # -- what is not there, and what is not valid --------------------------------------------
    unknown = "00000000-0000-4000-8000-000000000000"
    assert unknown in reader.json("GET", f"/api/v1/flowfiles/{unknown}", expect=404)["error"]
    assert unknown in reader.json("GET", f"/api/v1/flowfiles/{unknown}/content", expect=404)["error"]
    assert "uuid" in reader.json("GET", "/api/v1/flowfiles/not-a-uuid", expect=422)["error"]
    assert "'n9-1'" in reader.json("GET", f"/api/v1/queues/n9-1/{QUEUE}/flowfiles", expect=404)["error"]
    assert "'generate/nope'" in reader.json("GET", "/api/v1/queues/local/generate/nope/flowfiles", expect=404)["error"]
    assert "limit" in reader.json("GET", f"/api/v1/queues/local/{QUEUE}/flowfiles?limit=0", expect=422)["error"]
    assert "offset" in reader.json("GET", f"/api/v1/queues/local/{QUEUE}/flowfiles?offset=-1", expect=422)["error"]
    assert "'nope'" in api.json("POST", "/api/v1/processors/local/nope/stop", expect=404)["error"]
    assert reader.json("POST", f"/api/v1/queues/local/{QUEUE}/drop", expect=403)["status"] == 403

    # -- drop everything, swapped FlowFiles included -------------------------------------------
    swap_locations = node.shard.swap_store.locations()
    dropped = api.json("POST", f"/api/v1/queues/local/{encoded}/drop")
    assert (dropped["dropped"], dropped["dropped_bytes"], dropped["in_flight"], dropped["remaining"]) == (
        30,
        30 * SIZE,
        0,
        0,
    )
    assert dropped["swap_files"] == len(swap_locations) > 0 and dropped["swapped_dropped"] == summary.swapped_count
    assert queue.count == 0 and node.shard.swap_store.locations() == [] and node.shard.wal.swap_files == {}
    assert not [r for r in node.shard.wal.records.values() if r.queue == QUEUE]
    assert api.json("GET", f"/api/v1/queues/local/{QUEUE}/flowfiles")["count"] == 0
    node.provenance.sync(timeout=30)
    events = node.provenance.events(0, 1000)
    drops = {e.flowfile_uuid: e for e in events if e.event_type is EventType.DROP}
    assert len(drops) == 30 and drops[first.id].component_id == QUEUE

    # -- replay the first one's DROP event: a new FlowFile with its attributes and content ---
    replayed = api.json("POST", f"/api/v1/provenance/events/{drops[first.id].event_id}/replay")
    assert replayed["parent_uuid"] == first.id and replayed["uuid"] != first.id
    assert (replayed["queue"], replayed["shard"], replayed["size"]) == (QUEUE, "local", SIZE)
    again = reader.json("GET", f"/api/v1/flowfiles/{replayed['uuid']}")
    assert again["attributes"] == first.attributes
    assert reader.call("GET", f"/api/v1/flowfiles/{replayed['uuid']}/content")[2] == data
    create = next(e for e in events if e.event_type is EventType.CREATE)
    assert (
        "no incoming queue"
        in api.json("POST", f"/api/v1/provenance/events/{create.event_id}/replay", expect=409)["error"]
    )
    assert "999999" in api.json("POST", "/api/v1/provenance/events/999999/replay", expect=404)["error"]
    node.provenance.sync(timeout=30)
    [replay_event] = [e for e in node.provenance.events(0, 1000) if e.event_type is EventType.REPLAY]
    assert (replay_event.flowfile_uuid, replay_event.parent_uuids) == (replayed["uuid"], (first.id,))

    # -- start `hold` again: it takes the replayed FlowFile; then stop it once more -----------
    assert api.json("POST", "/api/v1/processors/local/hold/start")["state"] == "RUNNING"
    wait_until(lambda: queue.count == 0, 30, "hold to take the replayed FlowFile")
    states = {p["processor"]: p["state"] for p in reader.json("GET", "/api/v1/node/processors")["local"]}
    assert states == {"generate": "RUNNING", "hold": "RUNNING"}
    assert api.json("POST", "/api/v1/processors/local/hold/stop?wait_s=10")["state"] == "STOPPED"
    states = {p["processor"]: p["state"] for p in reader.json("GET", "/api/v1/node/processors")["local"]}
    assert states["hold"] == "STOPPED" == node.engine.status()["processors"]["hold"]["state"]


def test_a_processor_stopped_through_the_api_stays_stopped_after_a_standalone_restart(tmp_path):
    """The stop is kept in the data directory (as NiFi keeps it in flow.json.gz): the
    next start schedules `hold` not at all, and the queue in front of it fills; a start
    through the API is kept the same way."""
    tokens = str(tmp_path / "tokens")
    admin_token = add_token(tokens, "admin", "ops")
    data_dir = str(tmp_path / "node")

    def started():
        node = StandaloneNode(parse_flow(FLOW), data_dir, NodeSettings(threads=2))
        node.start(paused=True)
        return node, serve(AdminSettings(port=0, token_file=tokens), node.control())

    node, server = started()
    try:
        stopped = Api(server.url, admin_token).json("POST", "/api/v1/processors/local/hold/stop")
        assert stopped["state"] == "STOPPED"
    finally:
        server.stop()
        node.stop()

    node, server = started()
    try:
        assert node.engine.status()["processors"]["hold"]["state"] == "STOPPED"
        assert "across restarts" in stopped["scope"]
        node.resume()
        wait_until(lambda: node.graph.queues[QUEUE].count == 30, 30, "generate's 30 FlowFiles queued before hold")
        assert node.engine.status()["processors"]["hold"]["tasks"] == 0  # not one task ran
        assert Api(server.url, admin_token).json("POST", "/api/v1/processors/local/hold/start")["state"] == "RUNNING"
        wait_until(lambda: node.graph.queues[QUEUE].count == 0, 30, "hold to take them")
    finally:
        server.stop()
        node.stop()

    node, server = started()
    try:
        assert node.engine.status()["processors"]["hold"]["state"] == "RUNNING"
    finally:
        server.stop()
        node.stop()


def test_the_openapi_spec_declares_each_endpoint_and_its_errors(standalone):
    _node, api, _reader = standalone
    spec = api.json("GET", "/openapi.json")
    paths = spec["paths"]
    assert set(paths["/api/v1/flowfiles/{uuid}/content"]["get"]["responses"]) == {
        "200",
        "206",
        "401",
        "403",
        "404",
        "416",
        "422",
        "503",
    }
    assert set(paths["/api/v1/provenance/events/{event_id}/replay"]["post"]["responses"]) == {
        "200",
        "401",
        "403",
        "404",
        "409",
        "422",
        "503",
    }
    for path in (
        "/api/v1/queues/{shard}/{queue}/flowfiles",
        "/api/v1/queues/{shard}/{queue}/drop",
        "/api/v1/flowfiles/{uuid}",
        "/api/v1/processors/{shard}/{processor}/stop",
        "/api/v1/processors/{shard}/{processor}/start",
    ):
        (operation,) = paths[path].values()
        assert {"401", "403", "404", "422", "503"} <= set(operation["responses"]), path
        assert operation["responses"]["404"]["content"]["application/json"]["schema"]["$ref"].endswith("/Problem")


@pytest.mark.zookeeper
@pytest.mark.hdfs
def test_a_clustered_node_answers_for_its_home_shard_queue_and_content(zk_hosts, hdfs_cluster, hdfs_store, tmp_path):
    """A `custody node` process on the real ZooKeeper and HDFS: its admin URL is in its
    heartbeat; it lists its home shard's queue (swapped to HDFS), finds a FlowFile and
    streams its content, whose first 36 bytes are the FlowFile's own uuid (the sample
    flow writes it there)."""
    from cluster.drills.flow_cluster import SWAPPED_QUEUE, FlowCluster

    cluster = FlowCluster(zk_hosts, hdfs_cluster.url, hdfs_store.root, tmp_path, hdfs_cluster.client_config)
    try:
        node = cluster.start("n1", count=300)
        node.wait("joined", timeout=60)
        shard = node.incarnation
        beat = wait_until(lambda: cluster.heartbeats().get(shard), 30, f"a heartbeat of {shard}")
        api = Api(beat.admin, None)  # loopback, no token file: every caller is an admin
        assert api.json("POST", f"/api/v1/processors/{shard}/put/stop")["state"] == "STOPPED"

        def swapped_listing():
            listing = api.json("GET", f"/api/v1/queues/{shard}/{SWAPPED_QUEUE}/flowfiles?limit=5")
            return listing if listing["swapped_count"] and listing["flowfiles"] else None

        listing = wait_until(swapped_listing, 60, f"{SWAPPED_QUEUE} to swap to HDFS")
        assert listing["listable"] + listing["swapped_count"] + listing["in_flight"] == listing["count"]
        uuid = listing["flowfiles"][0]["uuid"]
        details = api.json("GET", f"/api/v1/flowfiles/{uuid}")
        assert (details["shard"], details["queue"]) == (shard, SWAPPED_QUEUE)
        assert details["attributes"]["custody.stage"] == "stamped"
        status, headers, body = api.call("GET", f"/api/v1/flowfiles/{uuid}/content")
        assert status == 200 and len(body) == details["size"] == int(headers["Content-Length"])
        assert body.startswith(uuid.encode()) and body.endswith(b" stage=stamped\n")
        status, headers, body = api.call("GET", f"/api/v1/flowfiles/{uuid}/content", headers={"Range": "bytes=0-35"})
        assert (status, body, headers["Content-Range"]) == (206, uuid.encode(), f"bytes 0-35/{details['size']}")
        assert (
            "does not run on this node"
            in api.json("GET", f"/api/v1/queues/n9-1/{SWAPPED_QUEUE}/flowfiles", expect=404)["error"]
        )
        assert api.json("POST", f"/api/v1/processors/{shard}/put/start")["state"] == "RUNNING"
    finally:
        cluster.close()
