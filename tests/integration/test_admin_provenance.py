"""The provenance endpoints of the admin API over a standalone node's own repository.

One node runs a small flow once for the module: GenerateFlowFile makes 400 FlowFiles
of three lines, SplitText forks each into three, UpdateAttribute tags the splits and
drops them: 9 events per FlowFile, 3,600 in all, indexed before the first test.
Every answer is checked against what the repository itself answers to the same
query (the ids, in order), not against numbers written here.
"""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from starlette.testclient import TestClient

from cluster.admin.app import create_app
from cluster.admin.models_provenance import iso_time
from cluster.admin.routes_provenance import STREAM_BATCH
from cluster.admin.serve import serve
from cluster.admin.settings import AdminSettings
from cluster.admin.tokens import Tokens, add_token
from cluster.node.control import NodeControl
from cluster.node.standalone import StandaloneNode
from repositories.provenance import EventType, ProvenanceEvent, ProvenanceQuery

ORIGINALS = 400
EVENTS = ORIGINALS * 9  # CREATE, FORK, DROP; and per split ATTRIBUTES_MODIFIED, DROP
FLOW = f"""
name: provenance-api
processors:
  - id: generate
    type: GenerateFlowFile
    properties:
      batch_size: 100
      max_count: {ORIGINALS}
      sequence_attribute: seq
      custom_text: "one of ${{seq}}\\ntwo of ${{seq}}\\nthree of ${{seq}}\\n"
    scheduling: {{run_schedule: 0 sec}}
  - id: split
    type: SplitText
    properties: {{line_split_count: 1}}
    auto_terminate: [original, failure]
  - id: tag
    type: UpdateAttribute
    properties: {{part: "${{fragment.index}}"}}
    auto_terminate: [success]
connections:
  - {{source: generate, relationships: [success], destination: split}}
  - {{source: split, relationships: [splits], destination: tag}}
"""
EVENTS_URL = "/api/v1/provenance/events"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    directory = tmp_path_factory.mktemp("provenance-api")
    (directory / "flow.yaml").write_text(FLOW)
    node = StandaloneNode.from_file(str(directory / "flow.yaml"), str(directory / "data"))
    node.start()
    try:
        assert node.wait_until(lambda: node.provenance.next_event_id > EVENTS, 60), (
            f"the flow registered {node.provenance.next_event_id - 1} of {EVENTS} events in 60 s"
        )
        node.provenance.sync()  # rolled over and indexed: every event can be found
        yield node
    finally:
        node.stop()


@pytest.fixture(scope="module")
def client(node):
    with TestClient(create_app(node.control())) as client:
        yield client


def repository_ids(node, **fields) -> list[int]:
    return [e.event_id for e in node.provenance.query(ProvenanceQuery(limit=10**6, **fields)).events]


def answered_ids(answer) -> list[int]:
    assert answer.status_code == 200, answer.text
    return [e["event_id"] for e in answer.json()["events"]]


def first_of(node, kind: EventType) -> ProvenanceEvent:
    return node.provenance.query(ProvenanceQuery(event_type=kind, limit=1)).events[0]


def test_each_filter_answers_what_the_repository_answers(node, client):
    fork = first_of(node, EventType.FORK)
    times = sorted(e.event_time_ms for e in node.provenance.query(ProvenanceQuery(limit=10**6)).events)
    early, late = times[len(times) // 4], times[len(times) // 2]
    cases = [
        ({"uuid": fork.flowfile_uuid}, {"flowfile_uuid": fork.flowfile_uuid}),
        ({"uuid": fork.child_uuids[0]}, {"flowfile_uuid": fork.child_uuids[0]}),
        ({"filename": fork.filename}, {"filename": fork.filename}),
        ({"component": "split"}, {"component_id": "split"}),
        ({"type": "FORK"}, {"event_type": "FORK"}),
        (
            {"type": "ATTRIBUTES_MODIFIED", "component": "tag"},
            {"event_type": "ATTRIBUTES_MODIFIED", "component_id": "tag"},
        ),
        ({"start": str(early), "end": str(late)}, {"start_ms": early, "end_ms": late}),
        ({"start": iso_time(early), "type": "DROP"}, {"start_ms": early, "event_type": "DROP"}),
    ]
    everything = len(repository_ids(node))
    for params, fields in cases:
        expected = repository_ids(node, **fields)
        answer = client.get(EVENTS_URL, params={**params, "limit": 1000})
        assert 0 < len(expected) < everything, (params, len(expected))
        assert answered_ids(answer) == expected[:1000], params
        assert answer.json()["total"] == len(expected), params
    assert answered_ids(client.get(EVENTS_URL, params={"type": "FETCH"})) == []  # NiFi's, never recorded here
    empty_range = {"start": "2024-05-02T00:00:00Z", "end": "2024-05-01T00:00:00Z"}  # an end before its start
    assert answered_ids(client.get(EVENTS_URL, params=empty_range)) == []


def test_pages_cover_every_match_once_and_hold_still_while_events_arrive(node, client):
    expected = repository_ids(node, event_type="DROP")
    pages, offset, as_of = [], 0, None
    while offset is not None:
        answer = client.get(
            EVENTS_URL,
            params={"type": "DROP", "limit": 500, "offset": offset, **({"as_of": as_of} if as_of is not None else {})},
        )
        pages.append(answered_ids(answer))
        as_of, offset = answer.json()["as_of"], answer.json()["next_offset"]
        assert answer.json()["total"] == len(expected)
        if len(pages) == 1:  # newer DROP events arrive after the first page
            arrived = node.provenance.register_events(
                [ProvenanceEvent(EventType.DROP, f"late-{n}", "late") for n in range(7)]
            )
            node.provenance.sync()
    assert [len(page) for page in pages] == [500, 500, 500, len(expected) - 1500]
    assert [i for page in pages for i in page] == expected
    fresh = client.get(EVENTS_URL, params={"type": "DROP", "limit": 10}).json()
    assert [e["event_id"] for e in fresh["events"][:7]] == list(reversed(arrived))
    assert fresh["as_of"] == arrived[-1] and fresh["total"] == len(expected) + 7


@pytest.mark.parametrize(
    "url, params, parameter",
    [
        (EVENTS_URL, {"type": "SENT"}, "query.type"),
        (EVENTS_URL, {"type": "fork"}, "query.type"),  # the names are NiFi's, in capitals, as the spec lists them
        (EVENTS_URL, {"start": "yesterday"}, "query.start"),
        (EVENTS_URL, {"limit": 1001}, "query.limit"),
        (EVENTS_URL, {"limit": 0}, "query.limit"),
        (EVENTS_URL, {"offset": -1}, "query.offset"),
        (EVENTS_URL, {"as_of": "newest"}, "query.as_of"),
        (EVENTS_URL + ".ndjson", {"end": "soon"}, "query.end"),
        (EVENTS_URL + ".ndjson", {"limit": 0}, "query.limit"),
        (EVENTS_URL + "/first", {}, "path.event_id"),
        ("/api/v1/provenance/lineage/x", {"max_flowfiles": 0}, "query.max_flowfiles"),
    ],
)
def test_bad_parameters_answer_422_naming_the_parameter(client, url, params, parameter):
    answer = client.get(url, params=params)
    assert answer.status_code == 422 and answer.json()["error"].startswith(parameter + ":"), answer.text


def test_one_event_with_every_field(node, client):
    event = first_of(node, EventType.ATTRIBUTES_MODIFIED)
    answer = client.get(f"{EVENTS_URL}/{event.event_id}")
    assert answer.status_code == 200
    body, stored = answer.json(), event.to_dict()
    assert {k: body[k] for k in stored} == stored
    assert body["updated_attributes"] == {"part": event.attributes_after["part"]}
    assert body["content_after"]["length"] == event.size > 0 and body["event_time"].endswith("+00:00")
    fork = client.get(f"{EVENTS_URL}/{first_of(node, EventType.FORK).event_id}").json()
    assert fork["event_type"] == "FORK" and len(fork["child_uuids"]) == 3


def test_unknown_ids_answer_404_naming_them(client):
    answer = client.get(f"{EVENTS_URL}/987654321")
    assert answer.status_code == 404 and "987654321" in answer.json()["error"]
    answer = client.get("/api/v1/provenance/lineage/no-such-flowfile")
    assert answer.status_code == 404 and "no-such-flowfile" in answer.json()["error"]


def test_lineage_is_the_repositorys_graph_bounded_by_max_flowfiles(node, client):
    fork = first_of(node, EventType.FORK)
    child = fork.child_uuids[1]
    graph = node.provenance.lineage(child)
    answer = client.get(f"/api/v1/provenance/lineage/{child}")
    assert answer.status_code == 200
    body = answer.json()
    flowfiles = {n["flowfile_uuid"] for n in body["nodes"] if n["kind"] == "flowfile"}
    events = {n["event_id"] for n in body["nodes"] if n["kind"] == "event"}
    assert flowfiles == graph.flowfiles == {fork.flowfile_uuid, child} and events == set(graph.events)
    links = {(link["source"], link["target"]) for link in body["links"]}
    assert (f"flowfile:{fork.flowfile_uuid}", f"event:{fork.event_id}") in links
    assert (f"event:{fork.event_id}", f"flowfile:{child}") in links
    assert not body["truncated"]
    whole = client.get(f"/api/v1/provenance/lineage/{fork.flowfile_uuid}").json()
    assert {n["flowfile_uuid"] for n in whole["nodes"] if n["kind"] == "flowfile"} == {
        fork.flowfile_uuid,
        *fork.child_uuids,
    }
    bounded = client.get(f"/api/v1/provenance/lineage/{fork.flowfile_uuid}", params={"max_flowfiles": 1}).json()
    assert bounded["truncated"] and len([n for n in bounded["nodes"] if n["kind"] == "flowfile"]) == 2


class GatedRepository:
    """The node's repository, whose second query waits for the test to let it go."""

    def __init__(self, repository):
        self._repository = repository
        self.limits: list[int] = []
        self.answered = 0
        self.release = threading.Event()

    def query(self, query: ProvenanceQuery):
        self.limits.append(query.limit)
        if len(self.limits) == 2 and not self.release.wait(10):
            raise TimeoutError("the test never let the second batch be read")
        result = self._repository.query(query)
        self.answered += 1
        return result


class GatedControl(NodeControl):
    def __init__(self, node, repository: GatedRepository):
        super().__init__(node)
        self._gated = repository

    @property
    def provenance(self):
        return self._gated


def test_the_stream_sends_the_first_batch_before_it_reads_the_second(node):
    expected = repository_ids(node)
    assert len(expected) > 4 * STREAM_BATCH
    gated = GatedRepository(node.provenance)
    server = serve(AdminSettings(port=0), GatedControl(node, gated))
    try:
        with httpx.stream("GET", f"{server.url}{EVENTS_URL}.ndjson", timeout=20) as answer:
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("application/x-ndjson")
            lines = answer.iter_lines()
            first = json.loads(next(lines))
            # The first event is here, and the second batch cannot have been read yet.
            assert first["event_id"] == expected[0] and gated.answered == 1 and not gated.release.is_set()
            gated.release.set()
            streamed = [first["event_id"]] + [json.loads(line)["event_id"] for line in lines if line]
    finally:
        gated.release.set()
        server.stop()
    assert streamed == expected
    # Batches of STREAM_BATCH, and one more that comes back short (or empty).
    assert set(gated.limits) == {STREAM_BATCH} and len(gated.limits) == len(expected) // STREAM_BATCH + 1


def test_the_stream_filters_and_bounds_like_the_listing(node, client):
    expected = repository_ids(node, component_id="tag", start_ms=0)
    answer = client.get(f"{EVENTS_URL}.ndjson", params={"component": "tag", "start": "0", "limit": 1234})
    assert answer.status_code == 200
    assert [json.loads(line)["event_id"] for line in answer.content.splitlines()] == expected[:1234]


def test_a_read_token_is_enough_and_no_token_is_refused(node, tmp_path):
    token_file = str(tmp_path / "tokens")
    token = add_token(token_file, "read", "grafana")
    event = first_of(node, EventType.FORK)
    urls = [
        EVENTS_URL,
        f"{EVENTS_URL}.ndjson?limit=3",
        f"{EVENTS_URL}/{event.event_id}",
        f"/api/v1/provenance/lineage/{event.flowfile_uuid}",
    ]
    with TestClient(create_app(node.control(), Tokens.load(token_file))) as client:
        for url in urls:
            assert client.get(url).status_code == 401, url
            assert client.get(url, headers={"Authorization": "Bearer cst_not-a-token"}).status_code == 401, url
            assert client.get(url, headers={"Authorization": f"Bearer {token}"}).status_code == 200, url


def test_openapi_declares_the_errors_the_app_answers(client):
    paths = client.get("/openapi.json").json()["paths"]
    provenance = {
        path: ops["get"] for path, ops in paths.items() if path.startswith("/api/v1/provenance") and "get" in ops
    }  # replay is a POST of the queues' routes
    assert len(provenance) == 5  # events, events.ndjson, an event, a lineage and its drawing
    for path, operation in provenance.items():
        expected = {"200", "401", "403", "422", "503"} | ({"404"} if "{" in path else set())
        assert set(operation["responses"]) == expected, path
        for status in expected - {"200"}:
            assert operation["responses"][status]["content"] == {
                "application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}
            }, (path, status)
