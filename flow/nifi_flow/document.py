"""A NiFi flow definition document read into plain data: what NiFi's "Download flow
definition" and its registry clients write (NiFi's `RegisteredFlowSnapshot` JSON):

    {"flowContents": <process group>,            the group downloaded, recursively
     "parameterContexts": {name: {"name", "parameters": [{"name", "value", "sensitive"}],
                                  "inheritedParameterContexts": [name]}},
     "externalControllerServices": {id: {"identifier", "name"}},
     "parameterProviders": {}, "flowEncodingVersion": "1.0"}

A process group holds `processors`, `connections`, `processGroups`, `inputPorts`,
`outputPorts`, `funnels`, `controllerServices` and `labels` (lists), its
`parameterContextName` and `executionEngine`. Each component has an `identifier`; a
connection's `source` and `destination` are `{"id", "type", "groupId", "name"}`.

`read_document` checks the types of every field it reads and collects each problem with
its JSON path (`flowContents.processGroups[0].processors[2].properties."Keep Source
File"`), so that one reading lists them all. Fields it does not read (positions, styles,
bends, labels) are not checked."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .problems import Problem, json_path

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024  # a NiFi flow of thousands of components is a few MiB


@dataclass(frozen=True)
class Endpoint:
    id: str
    type: str  # PROCESSOR, INPUT_PORT, OUTPUT_PORT, FUNNEL, REMOTE_INPUT_PORT, REMOTE_OUTPUT_PORT
    group_id: str


@dataclass
class NiFiProcessor:
    path: str
    identifier: str
    name: str
    group: NiFiGroup
    type: str
    properties: dict[str, str | None]
    dynamic_names: frozenset[str]  # the properties NiFi's descriptors call dynamic
    sensitive_names: frozenset[str]
    scheduling_strategy: str
    scheduling_period: str
    execution_node: str
    penalty_duration: str
    yield_duration: str
    run_duration_ms: int
    concurrent_tasks: int
    auto_terminated: list[str]
    retried: list[str]
    scheduled_state: str
    bundle_version: str = ""  # of the bundle it comes from: a Python processor's ProcessorDetails.version


@dataclass
class NiFiConnection:
    path: str
    identifier: str
    group: NiFiGroup
    source: Endpoint
    destination: Endpoint
    relationships: list[str]
    back_pressure_count: int
    back_pressure_size: str
    expiration: str
    prioritizers: list[str]
    load_balance: str


@dataclass
class NiFiNode:
    """A port or a funnel: what FlowFiles pass through between processors."""

    path: str
    identifier: str
    name: str
    group: NiFiGroup
    kind: str  # INPUT_PORT, OUTPUT_PORT, FUNNEL
    function: str = "STANDARD"  # a port's portFunction: STANDARD or FAILURE


@dataclass
class NiFiService:
    path: str
    identifier: str
    name: str
    group: NiFiGroup
    type: str
    properties: dict[str, str | None]
    scheduled_state: str


@dataclass
class NiFiGroup:
    path: str
    identifier: str
    name: str
    parent: NiFiGroup | None
    parameter_context: str | None
    execution_engine: str

    def names(self) -> tuple[str, ...]:
        """The names of the groups from below the downloaded one down to this one."""
        if self.parent is None:
            return ()
        return self.parent.names() + (self.name,)


@dataclass(frozen=True)
class NiFiParameter:
    path: str
    name: str
    value: str | None
    sensitive: bool


@dataclass
class NiFiParameterContext:
    path: str
    name: str
    parameters: list[NiFiParameter]
    inherited: list[str]


@dataclass
class NiFiDocument:
    root: NiFiGroup
    groups: list[NiFiGroup] = field(default_factory=list)
    processors: list[NiFiProcessor] = field(default_factory=list)
    connections: list[NiFiConnection] = field(default_factory=list)
    nodes: list[NiFiNode] = field(default_factory=list)
    services: list[NiFiService] = field(default_factory=list)
    parameter_contexts: dict[str, NiFiParameterContext] = field(default_factory=dict)
    external_services: dict[str, str] = field(default_factory=dict)  # id -> name
    remote_groups: list[str] = field(default_factory=list)  # paths: Custody has no site-to-site


def parse_document(content: bytes | str, problems: list[Problem]) -> NiFiDocument | None:
    """The document in `content` (JSON text), or None when it is not a flow definition at
    all; every problem found is appended to `problems`."""
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogatepass")
    if len(content) > MAX_DOCUMENT_BYTES:
        problems.append(Problem("(document)", f"larger than {MAX_DOCUMENT_BYTES} bytes, more than any flow needs"))
        return None
    try:
        data = json.loads(content.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        problems.append(Problem("(document)", f"not UTF-8 text (byte {error.start + 1})"))
        return None
    except json.JSONDecodeError as error:
        problems.append(Problem("(document)", f"not JSON: {error.msg} at line {error.lineno}, column {error.colno}"))
        return None
    except RecursionError:
        problems.append(Problem("(document)", "not JSON NiFi writes: nested too deeply"))
        return None
    if not isinstance(data, dict):
        problems.append(Problem("(document)", f"expected a JSON object with flowContents, got {_kind(data)}"))
        return None
    return _Reader(problems).document(data)


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return "an object"


class _Reader:
    """Reads one document, appending a `Problem` for each field of a wrong type or missing."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems

    def problem(self, path: tuple, message: str) -> None:
        self.problems.append(Problem(json_path(*path), message))

    # typed fields

    def text(self, data: dict, key: str, path: tuple, *, required: bool = False, default: str = "") -> str:
        value = data.get(key)
        if value is None:
            if required:
                self.problem(path + (key,), "missing: expected text")
            return default
        if not isinstance(value, str):
            self.problem(path + (key,), f"expected text, got {_kind(value)}")
            return default
        return value

    def integer(self, data: dict, key: str, path: tuple, default: int) -> int:
        value = data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.problem(path + (key,), f"expected a whole number, not negative, got {_kind(value)}")
            return default
        return value

    def mapping(self, data: dict, key: str, path: tuple, *, required: bool = False) -> dict:
        value = data.get(key)
        if value is None:
            if required:
                self.problem(path + (key,), "missing: expected an object")
            return {}
        if not isinstance(value, dict):
            self.problem(path + (key,), f"expected an object, got {_kind(value)}")
            return {}
        return value

    def items(self, data: dict, key: str, path: tuple) -> list[tuple[tuple, dict]]:
        """(path, object) of each object in the list `key` of `data`."""
        value = data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem(path + (key,), f"expected a list, got {_kind(value)}")
            return []
        found = []
        for index, item in enumerate(value):
            if isinstance(item, dict):
                found.append((path + (key, index), item))
            else:
                self.problem(path + (key, index), f"expected an object, got {_kind(item)}")
        return found

    def names(self, data: dict, key: str, path: tuple) -> list[str]:
        value = data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem(path + (key,), f"expected a list of names, got {_kind(value)}")
            return []
        names = []
        for index, item in enumerate(value):
            if isinstance(item, str):
                names.append(item)
            else:
                self.problem(path + (key, index), f"expected text, got {_kind(item)}")
        return names

    def properties(self, data: dict, path: tuple) -> dict[str, str | None]:
        properties: dict[str, str | None] = {}
        for name, value in self.mapping(data, "properties", path).items():
            if value is None or isinstance(value, str):
                properties[name] = value
            else:
                self.problem(path + ("properties", name), f"expected text or null, got {_kind(value)}")
        return properties

    # the document

    def document(self, data: dict) -> NiFiDocument | None:
        contents = data.get("flowContents")
        if not isinstance(contents, dict):
            got = "missing" if contents is None else f"expected an object, got {_kind(contents)}"
            self.problem(("flowContents",), f"{got}: a NiFi flow definition has its process group in flowContents")
            return None
        root = self.group(contents, ("flowContents",), None)
        document = NiFiDocument(root)
        self.walk(contents, ("flowContents",), root, document)
        for name, context in self.mapping(data, "parameterContexts", ()).items():
            here = ("parameterContexts", name)
            if isinstance(context, dict):
                document.parameter_contexts[name] = self.parameter_context(context, name, here)
            else:
                self.problem(here, f"expected an object, got {_kind(context)}")
        for service_id, service in self.mapping(data, "externalControllerServices", ()).items():
            here = ("externalControllerServices", service_id)
            if isinstance(service, dict):
                document.external_services[service_id] = self.text(service, "name", here)
            else:
                self.problem(here, f"expected an object, got {_kind(service)}")
        return document

    def group(self, data: dict, path: tuple, parent: NiFiGroup | None) -> NiFiGroup:
        return NiFiGroup(
            json_path(*path),
            self.text(data, "identifier", path, required=True),
            self.text(data, "name", path, default="group"),
            parent,
            self.text(data, "parameterContextName", path) or None,
            self.text(data, "executionEngine", path, default="INHERITED"),
        )

    def walk(self, data: dict, path: tuple, group: NiFiGroup, document: NiFiDocument) -> None:
        document.groups.append(group)
        for here, item in self.items(data, "controllerServices", path):
            document.services.append(self.service(item, here, group))
        for here, item in self.items(data, "processors", path):
            document.processors.append(self.processor(item, here, group))
        for key, kind in (("inputPorts", "INPUT_PORT"), ("outputPorts", "OUTPUT_PORT"), ("funnels", "FUNNEL")):
            for here, item in self.items(data, key, path):
                document.nodes.append(
                    NiFiNode(
                        json_path(*here),
                        self.text(item, "identifier", here, required=True),
                        self.text(item, "name", here, default=kind.lower()),
                        group,
                        kind,
                        self.text(item, "portFunction", here, default="STANDARD"),
                    )
                )
        for here, item in self.items(data, "connections", path):
            connection = self.connection(item, here, group)
            if connection is not None:
                document.connections.append(connection)
        for here, _item in self.items(data, "remoteProcessGroups", path):
            document.remote_groups.append(json_path(*here))
        self.items(data, "labels", path)
        for here, item in self.items(data, "processGroups", path):
            self.walk(item, here, self.group(item, here, group), document)

    def processor(self, data: dict, path: tuple, group: NiFiGroup) -> NiFiProcessor:
        descriptors = self.mapping(data, "propertyDescriptors", path)
        dynamic, sensitive = set(), set()
        for name, descriptor in descriptors.items():
            if isinstance(descriptor, dict):
                if descriptor.get("dynamic") is True:
                    dynamic.add(name)
                if descriptor.get("sensitive") is True:
                    sensitive.add(name)
        return NiFiProcessor(
            json_path(*path),
            self.text(data, "identifier", path, required=True),
            self.text(data, "name", path) or self.text(data, "type", path).rpartition(".")[2] or "processor",
            group,
            self.text(data, "type", path, required=True),
            self.properties(data, path),
            frozenset(dynamic),
            frozenset(sensitive),
            self.text(data, "schedulingStrategy", path, default="TIMER_DRIVEN"),
            self.text(data, "schedulingPeriod", path, default="0 sec"),
            self.text(data, "executionNode", path, default="ALL"),
            self.text(data, "penaltyDuration", path, default="30 sec"),
            self.text(data, "yieldDuration", path, default="1 sec"),
            self.integer(data, "runDurationMillis", path, 0),
            self.integer(data, "concurrentlySchedulableTaskCount", path, 1),
            self.names(data, "autoTerminatedRelationships", path),
            self.names(data, "retriedRelationships", path),
            self.text(data, "scheduledState", path, default="ENABLED"),
            _bundle_version(data.get("bundle")),
        )

    def connection(self, data: dict, path: tuple, group: NiFiGroup) -> NiFiConnection | None:
        ends = []
        for key in ("source", "destination"):
            end = self.mapping(data, key, path, required=True)
            ends.append(
                Endpoint(
                    self.text(end, "id", path + (key,), required=True),
                    self.text(end, "type", path + (key,), required=True),
                    self.text(end, "groupId", path + (key,)),
                )
            )
        return NiFiConnection(
            json_path(*path),
            self.text(data, "identifier", path, required=True),
            group,
            ends[0],
            ends[1],
            self.names(data, "selectedRelationships", path),
            self.integer(data, "backPressureObjectThreshold", path, 10000),
            self.text(data, "backPressureDataSizeThreshold", path, default="1 GB"),
            self.text(data, "flowFileExpiration", path, default="0 sec"),
            self.names(data, "prioritizers", path),
            self.text(data, "loadBalanceStrategy", path, default="DO_NOT_LOAD_BALANCE"),
        )

    def service(self, data: dict, path: tuple, group: NiFiGroup) -> NiFiService:
        return NiFiService(
            json_path(*path),
            self.text(data, "identifier", path, required=True),
            self.text(data, "name", path) or self.text(data, "type", path).rpartition(".")[2] or "service",
            group,
            self.text(data, "type", path, required=True),
            self.properties(data, path),
            self.text(data, "scheduledState", path, default="ENABLED"),
        )

    def parameter_context(self, data: dict, name: str, path: tuple) -> NiFiParameterContext:
        parameters = []
        for here, item in self.items(data, "parameters", path):
            sensitive = item.get("sensitive", False)
            if not isinstance(sensitive, bool):
                self.problem(here + ("sensitive",), f"expected true or false, got {_kind(sensitive)}")
                sensitive = True  # never write out a value that may be a secret
            value = item.get("value")
            if value is not None and not isinstance(value, str):
                self.problem(here + ("value",), f"expected text or null, got {_kind(value)}")
                value = None
            parameters.append(
                NiFiParameter(json_path(*here), self.text(item, "name", here, required=True), value, sensitive)
            )
        return NiFiParameterContext(
            json_path(*path),
            self.text(data, "name", path) or name,
            parameters,
            self.names(data, "inheritedParameterContexts", path),
        )


def _bundle_version(bundle: object) -> str:
    """The version of a component's `bundle` ("" when the document gives none)."""
    version = bundle.get("version") if isinstance(bundle, dict) else None
    return version if isinstance(version, str) else ""
