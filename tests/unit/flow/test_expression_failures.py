"""A FlowFile on which an expression fails is set aside alone (to failure, or back to its
queue, penalized); file processors keep attribute-built paths under `allowed_root`;
LogAttribute reads no more content than it logs."""

from __future__ import annotations

import glob
import io
import logging
import os

import pytest

from flow.commit import HeldCommitter
from flow.errors import FlowDefinitionError
from flow.loading import load_flow, parse_flow
from flow.memory_content import InMemoryContentRepository
from flow.processor import ProcessContext
from flow.queue import FlowFileQueue
from flow.session import ProcessSession
from flow.shard import QueueShard
from flow.stateless import StatelessFlow
from tests.unit.flow.test_processors import run

POISON = "${n:plus(1)}"
EXAMPLES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))


class Queued:
    """One processor between an incoming queue and a queue per relationship, driven by
    hand as the engine does: a session per run, committed after `on_trigger`."""

    PENALTY_MS = 30_000

    def __init__(self, processor_type: str, properties: dict, attributes: list[dict], relationships=("success",)):
        self.now = 1_000_000
        definition = parse_flow(
            {
                "processors": [
                    {"id": "p", "type": processor_type, "properties": properties, "auto_terminate": list(relationships)}
                ]
            }
        ).processors["p"]
        self.incoming = FlowFileQueue("in", clock_ms=self.clock)
        self.out = {name: FlowFileQueue(name, clock_ms=self.clock) for name in relationships}
        self.shard = QueueShard("s", [self.incoming, *self.out.values()])
        self.content = InMemoryContentRepository()
        self.committer = HeldCommitter(self.shard, self.content)
        self.processor = definition.create()
        self.context = ProcessContext("p", definition.properties, definition.dynamic, has_incoming=True)
        self.add(*attributes)

    def clock(self) -> int:
        return self.now

    def add(self, *attributes: dict) -> None:
        """Queue a FlowFile with each of `attributes`."""
        seed = ProcessSession(
            component_id="seed",
            component_type="Seed",
            committer=self.committer,
            content=self.content,
            shard=self.shard,
            outgoing={"s": [self.incoming]},
            clock_ms=self.clock,
        )
        for values in attributes:
            seed.transfer(seed.create(attributes=values), "s")
        seed.commit()

    def run_once(self) -> None:
        session = ProcessSession(
            component_id="p",
            component_type="x",
            committer=self.committer,
            content=self.content,
            shard=self.shard,
            incoming=[self.incoming],
            outgoing={name: [queue] for name, queue in self.out.items()},
            clock_ms=self.clock,
            penalty_ms=self.PENALTY_MS,
        )
        self.processor.on_trigger(self.context, session)
        if not session.is_closed:
            session.commit()

    def drain(self, name: str) -> list:
        flowfiles, _ = self.out[name].poll(1000, self.now)
        self.out[name].acknowledge(flowfiles)
        return flowfiles


def _numbers(*values):
    return [{"n": value, "i": str(index)} for index, value in enumerate(values)]


# -- one FlowFile fails, not the batch ----------------------------------------------------


def test_update_attribute_routes_the_flowfile_whose_expression_fails_to_failure():
    out = run(
        "UpdateAttribute",
        {"next": POISON, "expression_failure": "route_to_failure"},
        [({"n": n}, b"") for n in ("1", "abc", "3")],
        ["success", "failure"],
    )
    assert [a["next"] for a, _ in out["success"]] == ["2", "4"]
    ((attributes, _),) = out["failure"]
    assert attributes["n"] == "abc" and "next" not in attributes
    error = attributes["expression.error"]
    assert "'next'" in error and POISON in error and "expected a number, got 'abc'" in error


def test_route_on_attribute_routes_the_flowfile_whose_expression_fails_to_failure():
    inputs = [({"size": size}, b"") for size in ("5", "huge", "500")]
    out = run(
        "RouteOnAttribute",
        {"small": "${size:lt(10)}", "expression_failure": "route_to_failure"},
        inputs,
        ["small", "unmatched", "failure"],
    )
    assert [a["size"] for a, _ in out["small"]] == ["5"]
    assert [a["size"] for a, _ in out["unmatched"]] == ["500"]
    ((attributes, _),) = out["failure"]
    assert attributes["size"] == "huge" and "${size:lt(10)}" in attributes["expression.error"]


def test_by_default_the_failing_flowfile_stays_in_its_queue_penalized_and_the_others_go_on(caplog):
    harness = Queued("UpdateAttribute", {"next": POISON}, _numbers("1", "abc", "3"))
    with caplog.at_level(logging.WARNING):
        harness.run_once()
    assert sorted(f.attributes["next"] for f in harness.drain("success")) == ["2", "4"]
    assert harness.incoming.count == 1
    assert harness.incoming.poll(10, harness.now) == ([], [])  # held back: it does not block the queue
    assert "1 FlowFile(s) whose expression failed" in caplog.text and POISON in caplog.text
    harness.now += Queued.PENALTY_MS
    (poison,), _ = harness.incoming.poll(10, harness.now)
    assert poison.attributes["n"] == "abc" and POISON in poison.attributes["expression.error"]


def test_a_flowfile_that_keeps_failing_is_penalized_each_time_and_new_ones_pass_it():
    harness = Queued(
        "RouteOnAttribute", {"even": "${n:mod(2):equals(0)}"}, _numbers("abc"), relationships=("even", "unmatched")
    )
    for round_ in range(3):
        harness.run_once()
        assert harness.incoming.count == 1
        harness.add({"n": str(2 * round_)})
        harness.run_once()
        assert [f.attributes["n"] for f in harness.drain("even")] == [str(2 * round_)]
        harness.now += Queued.PENALTY_MS


def test_generate_flowfile_routes_a_failing_flowfile_to_failure_and_emits_the_others():
    out = run(
        "GenerateFlowFile",
        {
            "batch_size": 3,
            "sequence_attribute": "seq",
            "expression_failure": "route_to_failure",
            "tag": "${seq:equals(1):ifElse('x', ${seq}):plus(1)}",
        },
        source=True,
        relationships=["success", "failure"],
    )
    assert [a["tag"] for a, _ in out["success"]] == ["1", "3"]
    assert [a["seq"] for a, _ in out["failure"]] == ["1"]


def test_a_stateless_flow_that_cannot_keep_the_failing_flowfile_fails_naming_the_expression():
    flow = StatelessFlow(
        parse_flow(
            {
                "processors": [{"id": "p", "type": "UpdateAttribute", "properties": {"next": POISON}}],
                "ports": [{"id": "in", "type": "input"}, {"id": "out", "type": "output"}],
                "connections": [{"source": "in", "destination": "p"}, {"source": "p", "destination": "out"}],
            }
        )
    )
    try:
        result = flow.trigger([({"n": "abc"}, b"")])
    finally:
        flow.close()
    assert not result.success and POISON in result.failure


# -- flows without a failure connection ---------------------------------------------------


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(EXAMPLES, "*.yaml"))), ids=os.path.basename)
def test_every_example_flow_still_loads(path):
    definition = load_flow(path, {"data_dir": "/tmp/custody", "node": "n1", "out": "/tmp/out", "inbox": "/tmp/in"})
    for processor in definition.processors.values():
        if processor.type in ("UpdateAttribute", "RouteOnAttribute", "GenerateFlowFile"):
            assert "failure" not in processor.relationships


def test_routing_to_failure_needs_the_relationship_connected_or_auto_terminated():
    processors = [
        {
            "id": "tag",
            "type": "UpdateAttribute",
            "properties": {"x": POISON, "expression_failure": "route_to_failure"},
            "auto_terminate": ["success"],
        }
    ]
    with pytest.raises(FlowDefinitionError, match="'failure' is neither connected nor auto-terminated"):
        parse_flow({"processors": processors})
    processors[0]["auto_terminate"].append("failure")
    assert parse_flow({"processors": processors}).processors["tag"].relationships == ("success", "failure")


def test_a_route_named_failure_is_refused_when_failures_are_routed():
    with pytest.raises(FlowDefinitionError, match="rename the route"):
        parse_flow(
            {
                "processors": [
                    {
                        "id": "r",
                        "type": "RouteOnAttribute",
                        "properties": {"failure": "${x:isEmpty()}", "expression_failure": "route_to_failure"},
                    }
                ]
            }
        )


# -- file processors: allowed_root --------------------------------------------------------


def _fetch(tmp_path, attributes, **properties):
    return run(
        "FetchFile",
        {"completion_strategy": "delete", "allowed_root": str(tmp_path / "in"), **properties},
        [(attributes, b"")],
    )


def test_fetch_file_refuses_and_does_not_delete_a_file_outside_allowed_root(tmp_path):
    (tmp_path / "in").mkdir()
    secret = tmp_path / "secret"
    secret.write_bytes(b"not for the flow")
    out = _fetch(tmp_path, {"absolute.path": str(tmp_path / "in") + "/", "filename": "../secret"})
    ((attributes, data),) = out["failure"]
    assert data == b"" and "outside allowed_root" in attributes["path.refused"]
    assert secret.read_bytes() == b"not for the flow"


def test_fetch_file_refuses_a_link_inside_allowed_root_that_leads_out(tmp_path):
    (tmp_path / "in").mkdir()
    secret = tmp_path / "secret"
    secret.write_bytes(b"not for the flow")
    os.symlink(secret, tmp_path / "in" / "innocent")
    out = _fetch(tmp_path, {"absolute.path": str(tmp_path / "in") + "/", "filename": "innocent"})
    assert f"leads to {secret}" in out["failure"][0][0]["path.refused"]
    assert secret.exists() and (tmp_path / "in" / "innocent").is_symlink()


def test_fetch_file_reads_and_deletes_a_file_under_allowed_root(tmp_path):
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "sub" / "a").write_bytes(b"A")
    out = _fetch(tmp_path, {"absolute.path": str(tmp_path / "in") + "/sub/../sub/", "filename": "a"})
    assert [d for _, d in out["success"]] == [b"A"]
    assert not (tmp_path / "in" / "sub" / "a").exists()


def test_fetch_file_routes_a_failing_expression_and_a_directory_to_failure(tmp_path):
    (tmp_path / "in").mkdir()
    out = run(
        "FetchFile",
        {"file": "${dir}/${n:plus(1)}"},
        [({"dir": str(tmp_path), "n": "x"}, b""), ({"dir": str(tmp_path), "n": "1"}, b"")],
    )
    reasons = sorted(a.get("expression.error", a.get("path.refused", "")) for a, _ in out["failure"])
    assert "expected a number" in reasons[0] and "'file'" in reasons[0]
    assert out["not.found"][0][0]["n"] == "1"
    out = run("FetchFile", {"file": "${dir}"}, [({"dir": str(tmp_path / "in")}, b"")])
    assert "cannot open" in out["failure"][0][0]["path.refused"]


def test_put_file_keeps_a_directory_built_from_attributes_under_allowed_root(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    properties = {"directory": f"{root}/${{path}}", "allowed_root": str(root), "sync": False}
    out = run("PutFile", properties, [({"path": "../escaped"}, b"x"), ({"path": "a/b"}, b"y"), ({"path": "${}"}, b"z")])
    assert not (tmp_path / "escaped").exists()
    refused = [a["path.refused"] for a, _ in out["failure"]]
    assert len(refused) == 1 and f"leads to {tmp_path}/escaped, outside allowed_root {root}" in refused[0]
    assert len(out["success"]) == 2 and len(os.listdir(root / "a" / "b")) == 1


def test_put_file_routes_a_failing_directory_expression_to_failure(tmp_path):
    out = run(
        "PutFile",
        {"directory": f"{tmp_path}/${{n:padLeft(${{n}})}}", "allowed_root": str(tmp_path), "sync": False},
        [({"n": "99999999999"}, b"x")],
    )
    assert "the limit is" in out["failure"][0][0]["expression.error"]


@pytest.mark.parametrize(
    "processor_type, properties",
    [
        ("FetchFile", {"completion_strategy": "delete"}),
        ("FetchFile", {"completion_strategy": "move", "move_destination_directory": "/tmp/done"}),
        ("PutFile", {"directory": "/data/${customer}"}),
    ],
)
def test_a_file_processor_that_attributes_steer_anywhere_is_refused_at_load(processor_type, properties):
    def flow(**extra):
        return {
            "processors": [
                {
                    "id": "files",
                    "type": processor_type,
                    "properties": {**properties, **extra},
                    "auto_terminate": ["success", "failure", "not.found", "permission.denied"]
                    if processor_type == "FetchFile"
                    else ["success", "failure"],
                }
            ]
        }

    with pytest.raises(
        FlowDefinitionError,
        match="processor 'files': property 'allowed_root': .* set allowed_root "
        "to the directory the paths must stay under, or allow_any_path",
    ):
        parse_flow(flow())
    parse_flow(flow(allowed_root="/data"))
    parse_flow(flow(allow_any_path=True))


def test_file_processors_whose_paths_attributes_do_not_steer_load_without_allowed_root():
    parse_flow(
        {
            "processors": [
                {
                    "id": "fetch",
                    "type": "FetchFile",
                    "properties": {"completion_strategy": "none"},
                    "auto_terminate": ["success", "failure", "not.found", "permission.denied"],
                },
                {
                    "id": "fetch_one",
                    "type": "FetchFile",
                    "properties": {"file": "/data/in/today.csv", "completion_strategy": "delete"},
                    "auto_terminate": ["success", "failure", "not.found", "permission.denied"],
                },
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": "#{out}/x"},
                    "auto_terminate": ["success", "failure"],
                },
            ],
            "parameters": {"out": "/data/out"},
        }
    )


# -- LogAttribute -------------------------------------------------------------------------


def test_log_attribute_reads_no_more_of_the_payload_than_it_logs(monkeypatch, caplog):
    from flow.processors.attributes import PAYLOAD_SHOWN

    read = []

    class Counting(io.BytesIO):
        def read(self, size=-1):
            data = super().read(size)
            read.append(len(data))
            return data

    original = ProcessSession.read

    def counting_read(self, flowfile):
        with original(self, flowfile) as stream:
            return Counting(stream.read())

    monkeypatch.setattr(ProcessSession, "read", counting_read)
    monkeypatch.setattr(ProcessSession, "read_bytes", lambda self, ff: counting_read(self, ff).read())
    with caplog.at_level(logging.INFO):
        out = run("LogAttribute", {"log_payload": True}, [({}, b"x" * (1 << 20))])
    assert len(out["success"][0][1]) == 1 << 20
    assert sum(read) == PAYLOAD_SHOWN and "x" * PAYLOAD_SHOWN in caplog.text
