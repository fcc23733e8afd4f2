"""Flow definitions in YAML (or JSON, or a dict): processors, connections, ports.

    name: hello
    parameters: {out: /tmp/out}             # referenced as #{out}; the node adds #{data_dir}
    processors:
      - id: generate
        type: GenerateFlowFile
        properties: {batch_size: 10, file_size: 1 KB}
        scheduling: {run_schedule: 1 sec, concurrent_tasks: 1,
                     yield_duration: 1 sec, penalty_duration: 30 sec}
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

Every problem raises `FlowDefinitionError` naming the file, the processor and the
property (or connection) concerned. Validation is complete before anything runs.

A definition is parsed against the processor registry it is given (`registry`: type
name -> `Processor` class, usually a `flow.registry.ProcessorRegistry`); this module
never imports the processors. `flow.loading` parses against the standard registry.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .errors import ExpressionError, FlowDefinitionError
from .expression import compile_expression
from .prioritizers import key_function
from .queue import DEFAULT_BACK_PRESSURE_COUNT, DEFAULT_BACK_PRESSURE_SIZE
from .swap_policy import DEFAULT_SWAP_BATCH, DEFAULT_SWAP_THRESHOLD
from .units import parse_duration, parse_size

_PARAMETER = re.compile(r"#\{([A-Za-z0-9_.\-]+)\}")
PORT_KINDS = ("input", "output", "failure")


@dataclass(frozen=True)
class SchedulingDefinition:
    run_schedule_s: float = 0.0
    concurrent_tasks: int = 1
    yield_s: float = 1.0
    penalty_s: float = 30.0


@dataclass(frozen=True)
class ProcessorDefinition:
    id: str
    type: str
    processor_class: type
    properties: dict
    dynamic: dict
    scheduling: SchedulingDefinition
    auto_terminate: tuple[str, ...]
    relationships: tuple[str, ...]

    def create(self):
        return self.processor_class(self.id)


@dataclass(frozen=True)
class ConnectionDefinition:
    id: str
    source: str
    relationships: tuple[str, ...]
    destination: str
    prioritizers: tuple[str, ...] = ()
    back_pressure_count: int = DEFAULT_BACK_PRESSURE_COUNT
    back_pressure_size: int = DEFAULT_BACK_PRESSURE_SIZE
    swap_threshold: int = DEFAULT_SWAP_THRESHOLD
    swap_batch: int = DEFAULT_SWAP_BATCH
    expiration_ms: int = 0


@dataclass(frozen=True)
class PortDefinition:
    id: str
    kind: str


@dataclass(frozen=True)
class FlowDefinition:
    name: str
    processors: dict
    connections: tuple
    ports: dict
    parameters: dict = field(default_factory=dict)
    source: str = "<flow>"
    # The processor types it was parsed against: the stateless flows it embeds are parsed against them too.
    registry: Mapping[str, type] | None = field(default=None, compare=False, repr=False)

    def incoming(self, component_id: str) -> list[ConnectionDefinition]:
        return [c for c in self.connections if c.destination == component_id]

    def outgoing(self, component_id: str) -> list[ConnectionDefinition]:
        return [c for c in self.connections if c.source == component_id]

    def ports_of(self, kind: str) -> list[str]:
        return [p.id for p in self.ports.values() if p.kind == kind]


def load_flow(path: str, parameters: dict | None = None, *, registry: Mapping[str, type]) -> FlowDefinition:
    """Read and validate a flow file (.yaml, .yml or .json) against the processor types of
    `registry`; `parameters` override the file's own. Raises `FlowDefinitionError`."""
    return parse_flow(read_flow_document(path), source=str(path), parameters=parameters, registry=registry)


def read_flow_document(path: str):
    """The flow file at `path` (.yaml, .yml or .json) as data, before any parameter is
    substituted or anything validated. Raises `FlowDefinitionError` naming the file
    when it cannot be read or parsed."""
    import yaml

    source = str(path)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise FlowDefinitionError(f"cannot read the flow file: {error.strerror or error}", source=source) from None
    try:
        if source.endswith(".json"):
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise FlowDefinitionError(f"malformed YAML{where}: {problem}", source=source) from None
    except json.JSONDecodeError as error:
        raise FlowDefinitionError(f"malformed JSON at line {error.lineno}, column {error.colno}: {error.msg}",
                                  source=source) from None
    return data


def _mapping(value, what: str, source: str, **where) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FlowDefinitionError(f"{what} must be a mapping, got {type(value).__name__}", source=source, **where)
    return value


def _substitute(value, parameters: dict, source: str, **where):
    if not isinstance(value, str):
        return value

    def replace(match):
        name = match.group(1)
        if name not in parameters:
            raise FlowDefinitionError(f"unknown parameter #{{{name}}} (defined: {sorted(parameters) or 'none'})",
                                      source=source, **where)
        return str(parameters[name])

    return _PARAMETER.sub(replace, value)


def parse_flow(data, *, registry: Mapping[str, type], source: str = "<flow>",
               parameters: dict | None = None) -> FlowDefinition:
    """Validate a flow given as a mapping (parsed YAML or JSON) against the processor
    types of `registry`; `source` names it in errors. Raises `FlowDefinitionError`."""
    if not isinstance(data, dict):
        raise FlowDefinitionError("a flow must be a mapping with 'processors' and 'connections'", source=source)
    unknown = set(data) - {"name", "parameters", "processors", "connections", "ports", "description"}
    if unknown:
        raise FlowDefinitionError(f"unknown top-level key(s) {sorted(unknown)}", source=source)
    params = {str(k): v for k, v in _mapping(data.get("parameters"), "parameters", source).items()}
    params.update(parameters or {})
    raw_processors = data.get("processors")
    if not isinstance(raw_processors, list) or not raw_processors:
        raise FlowDefinitionError("'processors' must be a non-empty list", source=source)
    processors: dict[str, ProcessorDefinition] = {}
    for index, raw in enumerate(raw_processors):
        definition = _parse_processor(raw, index, source, params, registry)
        if definition.id in processors:
            raise FlowDefinitionError("duplicate processor id", source=source, processor=definition.id)
        processors[definition.id] = definition
    ports: dict[str, PortDefinition] = {}
    for raw in data.get("ports") or []:
        if not isinstance(raw, dict) or "id" not in raw or raw.get("type") not in PORT_KINDS:
            raise FlowDefinitionError(f"a port needs an id and a type in {PORT_KINDS}, got {raw!r}", source=source)
        port_id = str(raw["id"])
        if port_id in processors or port_id in ports:
            raise FlowDefinitionError(f"port id {port_id!r} is already used", source=source)
        ports[port_id] = PortDefinition(port_id, raw["type"])
    connections = []
    seen_ids = set()
    raw_connections = data.get("connections") or []
    if not isinstance(raw_connections, list):
        raise FlowDefinitionError("'connections' must be a list", source=source)
    for index, raw in enumerate(raw_connections):
        connection = _parse_connection(raw, index, source, processors, ports, params)
        if connection.id in seen_ids:
            raise FlowDefinitionError(f"duplicate connection id {connection.id!r}", source=source)
        seen_ids.add(connection.id)
        connections.append(connection)
    for definition in processors.values():
        connected = {r for c in connections if c.source == definition.id for r in c.relationships}
        for relationship in definition.relationships:
            if relationship not in connected and relationship not in definition.auto_terminate:
                raise FlowDefinitionError(
                    f"relationship {relationship!r} is neither connected nor auto-terminated "
                    f"(add a connection, or list it under auto_terminate)", source=source, processor=definition.id)
    return FlowDefinition(str(data.get("name") or os.path.basename(source)), processors, tuple(connections), ports,
                          params, source, registry)


def _parse_processor(raw, index: int, source: str, params: dict, registry: Mapping) -> ProcessorDefinition:
    if not isinstance(raw, dict):
        raise FlowDefinitionError(f"processor #{index + 1} must be a mapping", source=source)
    processor_id = raw.get("id")
    if not processor_id or not isinstance(processor_id, str):
        raise FlowDefinitionError(f"processor #{index + 1} needs an 'id' (text)", source=source)
    unknown = set(raw) - {"id", "type", "name", "properties", "scheduling", "auto_terminate", "comment"}
    if unknown:
        raise FlowDefinitionError(f"unknown key(s) {sorted(unknown)}", source=source, processor=processor_id)
    type_name = raw.get("type")
    cls = registry.get(type_name) if isinstance(type_name, str) else None
    if cls is None:
        raise FlowDefinitionError(f"unknown processor type {type_name!r}; known types: {', '.join(sorted(registry))}",
                                  source=source, processor=processor_id)
    configured = _mapping(raw.get("properties"), "properties", source, processor=processor_id)
    properties = {}
    dynamic = {}
    for name, value in configured.items():
        name = str(name)
        descriptor = cls.descriptor(name)
        value = _substitute(value, params, source, processor=processor_id, property=name)
        if descriptor is None:
            if not cls.dynamic_properties:
                known = ", ".join(d.name for d in cls.properties) or "none"
                raise FlowDefinitionError(f"{type_name} has no such property (it has: {known})",
                                          source=source, processor=processor_id, property=name)
            try:
                dynamic[name] = compile_expression(str(value))
            except ExpressionError as error:
                raise FlowDefinitionError(str(error), source=source, processor=processor_id, property=name) from None
            continue
        if value is None:
            continue
        try:
            properties[name] = descriptor.convert(value)
        except (ValueError, ExpressionError) as error:
            raise FlowDefinitionError(f"wrong value for a {descriptor.kind} property: {error}", source=source,
                                      processor=processor_id, property=name) from None
    for descriptor in cls.properties:
        if descriptor.name not in properties:
            if descriptor.default is not None:
                properties[descriptor.name] = descriptor.convert(descriptor.default)
            elif descriptor.required:
                raise FlowDefinitionError("required property is missing", source=source, processor=processor_id,
                                          property=descriptor.name)
            else:
                properties[descriptor.name] = None
    for name, message in cls.validate(properties, dynamic):
        raise FlowDefinitionError(message, source=source, processor=processor_id, property=name)
    scheduling = _parse_scheduling(_mapping(raw.get("scheduling"), "scheduling", source, processor=processor_id),
                                   source, processor_id)
    relationships = tuple(cls.relationships_for(properties, dynamic))
    auto = raw.get("auto_terminate") or []
    if not isinstance(auto, list):
        raise FlowDefinitionError("auto_terminate must be a list of relationships", source=source,
                                  processor=processor_id)
    for relationship in auto:
        if relationship not in relationships:
            raise FlowDefinitionError(f"auto_terminate names unknown relationship {relationship!r} "
                                      f"(it has {list(relationships)})", source=source, processor=processor_id)
    return ProcessorDefinition(processor_id, type_name, cls, properties, dynamic, scheduling, tuple(auto),
                               relationships)


def _parse_scheduling(raw: dict, source: str, processor_id: str) -> SchedulingDefinition:
    values = {}
    fields = {"run_schedule": ("run_schedule_s", parse_duration), "yield_duration": ("yield_s", parse_duration),
              "penalty_duration": ("penalty_s", parse_duration), "concurrent_tasks": ("concurrent_tasks", None)}
    for key, value in raw.items():
        if key not in fields:
            raise FlowDefinitionError(f"unknown scheduling key (known: {', '.join(fields)})", source=source,
                                      processor=processor_id, property=f"scheduling.{key}")
        target, parse = fields[key]
        try:
            if parse is None:
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise ValueError(f"expected a positive integer, got {value!r}")
                values[target] = value
            else:
                values[target] = parse(value)
        except ValueError as error:
            raise FlowDefinitionError(str(error), source=source, processor=processor_id,
                                      property=f"scheduling.{key}") from None
    return SchedulingDefinition(**values)


def _parse_connection(raw, index: int, source: str, processors: dict, ports: dict, params: dict):
    where = f"connection #{index + 1}"
    if not isinstance(raw, dict):
        raise FlowDefinitionError(f"{where} must be a mapping", source=source)
    known = {"id", "source", "destination", "relationships", "prioritizers", "back_pressure", "swap_threshold",
             "swap_batch", "expiration", "name"}
    if set(raw) - known:
        raise FlowDefinitionError(f"{where}: unknown key(s) {sorted(set(raw) - known)}", source=source)
    src, dst = raw.get("source"), raw.get("destination")
    for end, value in (("source", src), ("destination", dst)):
        if value not in processors and value not in ports:
            raise FlowDefinitionError(f"{where}: {end} {value!r} is neither a processor nor a port", source=source)
    if src in ports and ports[src].kind != "input":
        raise FlowDefinitionError(f"{where}: only an input port can be a connection's source", source=source)
    if dst in ports and ports[dst].kind == "input":
        raise FlowDefinitionError(f"{where}: an input port cannot be a connection's destination", source=source)
    relationships = raw.get("relationships")
    if src in processors:
        if isinstance(relationships, str):
            relationships = [relationships]
        if not relationships or not isinstance(relationships, list):
            relationships = ["success"] if "success" in processors[src].relationships else None
        if not relationships:
            raise FlowDefinitionError(f"{where}: name the relationships to connect "
                                      f"(it has {list(processors[src].relationships)})", source=source, processor=src)
        for relationship in relationships:
            if relationship not in processors[src].relationships:
                raise FlowDefinitionError(f"{where}: unknown relationship {relationship!r} (it has "
                                          f"{list(processors[src].relationships)})", source=source, processor=src)
    else:
        relationships = [""]
    connection_id = str(raw.get("id") or f"{src}/{'+'.join(relationships)}/{dst}".replace("//", "/"))
    values = {}
    try:
        prioritizers = tuple(raw.get("prioritizers") or ())
        key_function(prioritizers)
        values["prioritizers"] = prioritizers
        pressure = _mapping(raw.get("back_pressure"), "back_pressure", source)
        if set(pressure) - {"object_count", "data_size"}:
            raise ValueError(f"back_pressure takes object_count and data_size, not {sorted(pressure)}")
        if "object_count" in pressure:
            count = pressure["object_count"]
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValueError(f"back_pressure.object_count must be a non-negative integer, got {count!r}")
            values["back_pressure_count"] = count
        if "data_size" in pressure:
            values["back_pressure_size"] = parse_size(_substitute(pressure["data_size"], params, source))
        for key in ("swap_threshold", "swap_batch"):
            if key in raw:
                value = raw[key]
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise ValueError(f"{key} must be a positive integer, got {value!r}")
                values[key] = value
        threshold = values.get("swap_threshold", DEFAULT_SWAP_THRESHOLD)
        batch = values.get("swap_batch", min(DEFAULT_SWAP_BATCH, threshold))
        if batch > threshold:
            raise ValueError(f"swap_batch ({batch}) cannot exceed swap_threshold ({threshold})")
        values["swap_batch"] = batch
        if "expiration" in raw:
            values["expiration_ms"] = int(parse_duration(raw["expiration"]) * 1000)
    except ValueError as error:
        raise FlowDefinitionError(f"{where} ({connection_id}): {error}", source=source) from None
    return ConnectionDefinition(connection_id, src, tuple(relationships), dst, **values)
