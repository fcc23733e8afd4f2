"""A processor gets the node's shared SparkSession from its context: the node makes
it (lazily, on the first lookup) and stops it when the node stops, with no test
harness in between."""

from __future__ import annotations

import pytest

from cluster.drills.checker import ids_in_directory
from cluster.node.standalone import StandaloneNode
from flow.loading import parse_flow, standard_registry
from flow.processor import ProcessContext, Processor, PropertyDescriptor

pytestmark = [pytest.mark.spark]


class SparkCount(Processor):
    """Counts a range on the node's Spark session and emits the count (once)."""

    type_name = "SparkCount"
    is_source = True
    properties = (PropertyDescriptor("upto", "integer", default=10),)

    def on_trigger(self, context: ProcessContext, session) -> None:
        if session.get_state().get("done"):
            context.yield_()
            return
        spark = context.service("spark")
        count = spark.range(context["upto"]).count()
        flowfile = session.write_bytes(session.create(), f"counted {count} on {spark.sparkContext.master}".encode())
        session.transfer(flowfile, "success")
        session.set_state({"done": "1"})


def test_a_processor_gets_the_nodes_spark_session_from_its_context(tmp_path):
    registry = standard_registry()
    registry.register(SparkCount)
    out = tmp_path / "out"
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "count",
                    "type": "SparkCount",
                    "properties": {"upto": 1234},
                    "scheduling": {"run_schedule": "1 sec"},
                },
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": str(out)},
                    "auto_terminate": ["success", "failure"],
                },
            ],
            "connections": [{"id": "counted", "source": "count", "destination": "put"}],
        },
        registry=registry,
    )
    node = StandaloneNode(definition, str(tmp_path / "node"))
    node.start()
    try:
        assert node.wait_until(lambda: len(ids_in_directory(str(out))) == 1, 120), node.status()
        assert node.services.started() == ["spark"]
    finally:
        node.stop()
    [delivered] = [path.read_text() for path in out.glob("[!.]*")]
    assert delivered == "counted 1234 on local[*]"
    assert node.services.started() == []  # stopped with the node
