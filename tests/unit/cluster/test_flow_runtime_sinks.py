"""Which processors a `FlowRuntime` counts as the flow's sinks: those with input
whose output goes nowhere but back to themselves (a failure loop) or nowhere at all."""

import os
import textwrap

from cluster.node.flow_runtime import _terminal_processors
from flow.graph import FlowGraph
from flow.loading import load_flow

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")


def sinks(path, parameters=None):
    return _terminal_processors(FlowGraph(load_flow(path, parameters)))


def write(tmp_path, text):
    path = tmp_path / "flow.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_the_cluster_example_has_put_as_its_only_sink():
    # put's failure loops back to put, and rewrite's failure loop does not make it a sink.
    assert sinks(os.path.join(EXAMPLES, "cluster.yaml"), {"node": "n1", "data_dir": "/tmp/x", "out": "/tmp/x/out"}) == {
        "put"
    }


def test_a_processor_without_outgoing_connections_is_a_sink(tmp_path):
    path = write(
        tmp_path,
        """
        processors:
          - {id: gen, type: GenerateFlowFile}
          - {id: stamp, type: UpdateAttribute}
          - {id: log, type: LogAttribute, auto_terminate: [success]}
          - {id: idle, type: LogAttribute, auto_terminate: [success]}
        connections:
          - {source: gen, destination: stamp}
          - {source: stamp, destination: log}
    """,
    )
    # gen has no input (a source); idle has neither input nor output: neither is a sink.
    assert sinks(path) == {"log"}


def test_two_branches_give_two_sinks(tmp_path):
    path = write(
        tmp_path,
        """
        processors:
          - {id: gen, type: GenerateFlowFile}
          - {id: left, type: LogAttribute, auto_terminate: [success]}
          - {id: right, type: UpdateAttribute, auto_terminate: [success]}
        connections:
          - {source: gen, destination: left}
          - {source: gen, destination: right}
    """,
    )
    assert sinks(path) == {"left", "right"}
