"""Running ConvertRecord (or any record processor) in a one-processor stateless flow."""

from __future__ import annotations

from flow.loading import parse_flow
from flow.stateless import StatelessFlow


def run_records(processor_type, properties, services, inputs, relationships=("success", "failure")):
    """Feed `inputs` [(attributes, bytes)] through one processor of a flow whose services
    are `services` [(id, type, properties)]; returns {relationship: [(attributes, bytes)]}."""
    definition = {
        "services": [{"id": sid, "type": kind, "properties": props} for sid, kind, props in services],
        "processors": [{"id": "p", "type": processor_type, "properties": properties}],
        "ports": [{"id": "in", "type": "input"}],
        "connections": [{"source": "in", "destination": "p"}],
    }
    for name in relationships:
        definition["ports"].append({"id": f"out-{name}", "type": "output"})
        definition["connections"].append({"source": "p", "relationships": [name], "destination": f"out-{name}"})
    flow = StatelessFlow(parse_flow(definition))
    try:
        result = flow.trigger(inputs)
    finally:
        flow.close()
    assert result.success, result.failure
    result.acknowledge()
    out: dict[str, list] = {name: [] for name in relationships}
    for port, attributes, data in result.outputs:
        out[port[len("out-") :]].append((attributes, data))
    return out


def convert(reader, writer, inputs, reader_properties=None, writer_properties=None):
    """ConvertRecord from `reader` to `writer` (service type names)."""
    return run_records(
        "ConvertRecord",
        {"record_reader": "in", "record_writer": "out"},
        [("in", reader, reader_properties or {}), ("out", writer, writer_properties or {})],
        inputs,
    )
