"""Flow definitions in YAML (or JSON, or a dict): processors, connections, ports.

    name: hello
    parameters: {out: /tmp/out}             # referenced as #{out}; the node adds #{data_dir}
    processors:
      - id: generate
        type: GenerateFlowFile
        properties: {batch_size: 10, file_size: 1 KB}
        scheduling: {run_schedule: 1 sec, concurrent_tasks: 1,
                     yield_duration: 1 sec, penalty_duration: 30 sec,
                     max_rollbacks: 5}          # then the engine penalizes the FlowFile
        auto_terminate: [failure]
    connections:
      - source: generate
        relationships: [success]
        destination: put
        prioritizers: [fifo]                # oldest_first, newest_first, priority_attribute
        back_pressure: {object_count: 10000, data_size: 1 GB}
        swap_threshold: 20000               # swap_batch: 10000
        expiration: 0 sec
    ports:                                  # for stateless flows
      - {id: in, type: input}
      - {id: out, type: output}
      - {id: failed, type: failure}

Every problem raises `FlowDefinitionError` naming the file and the place: the processor
and its property (`processor 'generate': property 'scheduling.run_schedule'`), or the
path from the top of the document (`connections[2].back_pressure.object_count`), and
what is expected there. Validation is complete before anything runs. Numbers no one
means are refused too: more than 1024 concurrent tasks, a run schedule, yield or
penalty longer than a year, an expiration under 1 ms (0 sec is never), and a negative
integer property (unless its descriptor allows one).

Limits, so that no document, however malformed or hostile, takes long to load or refuse
(a document at the limits takes one to three seconds on two busy cores):

  MAX_DOCUMENT_BYTES   a flow file (or text) of at most 1 MiB: thousands of processors
  MAX_NESTING          values nested at most 32 levels deep (a flow needs 5)
  MAX_VALUES           at most 200,000 values (each key, item, text, number, list and
                       mapping) once every YAML alias is written out in full
  MAX_EXPANDED_CHARS   at most 2 Mi characters of text and keys, aliases written out; and
                       as many characters added by substituting parameters. An alias bomb
                       ("billion laughs") is refused at the alias that crosses a limit
  MAX_PROPERTY_CHARS   a property's value, parameters substituted, of at most 64 Ki characters

A document is a mapping whose keys are text and whose values are text (no lone UTF-16
surrogate), numbers (finite, integers within 64 bits), true/false, null, dates, lists
and mappings; a YAML alias may not be inside the node it names, and a mapping may not
repeat a key.

A definition is parsed against the processor registry it is given (`registry`: type
name -> `Processor` class, usually a `flow.registry.ProcessorRegistry`); this module
never imports the processors. `flow.loading` parses against the standard registry.

Here are the entry points; `definition_document` (with `definition_yaml` and
`definition_limits`) turns text into checked data, `definition_parser` (with
`definition_places`) validates it, and `definition_model` holds what it builds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .definition_document import _check_document, decode_flow_document, read_flow_document
from .definition_limits import MAX_DOCUMENT_BYTES, MAX_EXPANDED_CHARS, MAX_NESTING, MAX_PROPERTY_CHARS, MAX_VALUES
from .definition_model import (
    PORT_KINDS,
    ConnectionDefinition,
    FlowDefinition,
    PortDefinition,
    ProcessorDefinition,
    SchedulingDefinition,
)
from .definition_parser import _FlowParser
from .definition_places import _kind
from .errors import FlowDefinitionError

if TYPE_CHECKING:
    from .processor import Processor

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_EXPANDED_CHARS",
    "MAX_NESTING",
    "MAX_PROPERTY_CHARS",
    "MAX_VALUES",
    "PORT_KINDS",
    "ConnectionDefinition",
    "FlowDefinition",
    "PortDefinition",
    "ProcessorDefinition",
    "SchedulingDefinition",
    "decode_flow_document",
    "load_flow",
    "parse_flow",
    "processor_errors",
    "read_flow_document",
]


def load_flow(path: str, parameters: dict | None = None, *, registry: Mapping[str, type[Processor]]) -> FlowDefinition:
    """Read and validate a flow file (.yaml, .yml or .json) against the processor types of
    `registry`; `parameters` override the file's own. Raises `FlowDefinitionError`."""
    document = read_flow_document(path)
    return _FlowParser(document, registry, str(path), parameters).parse()


def parse_flow(
    data, *, registry: Mapping[str, type[Processor]], source: str = "<flow>", parameters: dict | None = None
) -> FlowDefinition:
    """Validate a flow given as a mapping (parsed YAML or JSON) against the processor
    types of `registry`; `source` names it in errors. Raises `FlowDefinitionError`."""
    if not isinstance(data, dict):
        raise FlowDefinitionError(
            f"a flow is a mapping with 'processors' and 'connections', got {_kind(data)}", source=source
        )
    _check_document(data, source)
    return _FlowParser(data, registry, source, parameters).parse()


def processor_errors(
    data: dict, *, registry: Mapping[str, type[Processor]], source: str = "<flow>", parameters: dict | None = None
) -> list[FlowDefinitionError]:
    """Every processor of a flow mapping that `parse_flow` would refuse, each checked on
    its own (its type, properties, scheduling and relationships), with the parameters and
    services it names: an importer lists them all at once, where `parse_flow` stops at
    the first. Empty when each processor is sound; the flow as a whole may still not be."""
    _check_document(data, source)
    return _FlowParser(data, registry, source, parameters).processor_errors()
