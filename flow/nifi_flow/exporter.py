"""A Custody flow to a NiFi flow definition: `export_nifi_flow(flow)` returns the JSON
document NiFi's "Upload flow definition" and registry clients read (see `document` for
its shape), every component in one process group, or raises `NiFiFlowError` listing
every part NiFi cannot run as the Custody flow does: a processor only Custody has, a
property at a value NiFi's processor has no equivalent for, a scheduling or queue
setting NiFi lacks. Importing the export gives back an equal Custody flow.

Identifiers are name-based UUIDs (version 5) of the flow's name and each component's
id, so that exporting one flow twice gives the same document."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping

from ..definition_model import FlowDefinition, SchedulingDefinition
from ..swap_policy import DEFAULT_SWAP_BATCH, DEFAULT_SWAP_THRESHOLD
from .conversions import at_custody_default, to_nifi
from .importer import PRIORITIZERS
from .mapping_model import ComponentMapping
from .problems import NiFiFlowError, Problem
from .processor_tables import processor_mapping_of
from .python_processors import PYTHON_ARTIFACT, as_python, python_mapping
from .service_tables import service_mapping_of
from .values import PARAMETER_REFERENCE, duration_text, size_text

NIFI_VERSION = "1.28.1"  # the bundle version written: NiFi resolves another installed version on import
_GROUP = "org.apache.nifi"
_NAMESPACE = uuid.UUID("6f1c0d58-8d1e-4c1e-9a55-6e1f0b3c2a10")
_PRIORITIZER_CLASSES = {short: full for full, short in PRIORITIZERS.items()}
_PRIORITIZER_ALIASES = {"first_in_first_out": "fifo", "oldest": "oldest_first", "newest": "newest_first"}
_PLACEHOLDER = "0"  # an undefined parameter's stand-in while the flow is checked (the node adds data_dir)


def export_nifi_flow(
    flow: dict, *, registry: Mapping | None = None, source: str = "<flow>", nifi_version: str = NIFI_VERSION
) -> dict:
    """NiFi's flow definition document for the Custody flow document `flow` (as read
    from its YAML). Raises `FlowDefinitionError` when `flow` is not a valid Custody flow
    and `NiFiFlowError` listing everything NiFi has no equivalent for."""
    from ..definition import parse_flow

    if registry is None:
        from ..loading import standard_registry

        registry = standard_registry()
    undefined = sorted(set(_references(flow)) - set(flow.get("parameters") or {}))
    definition = parse_flow(flow, registry=registry, source=source, parameters=dict.fromkeys(undefined, _PLACEHOLDER))
    return _Export(flow, definition, undefined, source, nifi_version).run()


def _references(value) -> list[str]:
    if isinstance(value, str):
        return PARAMETER_REFERENCE.findall(value)
    if isinstance(value, dict):
        return [name for item in value.values() for name in _references(item)]
    if isinstance(value, list):
        return [name for item in value for name in _references(item)]
    return []


class _Export:
    def __init__(self, flow: dict, definition: FlowDefinition, undefined: list[str], source: str, version: str):
        self.flow, self.definition, self.undefined = flow, definition, undefined
        self.source, self.version = source, version
        self.name = str(flow.get("name") or definition.name)
        self.group_id = self.uuid("group", self.name)
        self.problems: list[Problem] = []
        self.service_ids = {
            service["id"]: self.uuid("service", service["id"]) for service in flow.get("services") or []
        }

    def uuid(self, kind: str, name: str) -> str:
        return str(uuid.uuid5(_NAMESPACE, f"{self.name}\0{kind}\0{name}"))

    def run(self) -> dict:
        processors = [self.processor(index, raw) for index, raw in enumerate(self.flow.get("processors") or [])]
        services = [self.service(raw) for raw in self.flow.get("services") or []]
        ports = [self.port(index, port) for index, port in enumerate(self.definition.ports.values())]
        connections = [
            self.connection(index, connection) for index, connection in enumerate(self.definition.connections)
        ]
        if self.problems:
            raise NiFiFlowError(self.source, self.problems)
        contents = {
            "identifier": self.group_id,
            "name": self.name,
            "comments": str(self.flow.get("description") or ""),
            "position": {"x": 0.0, "y": 0.0},
            "processGroups": [],
            "remoteProcessGroups": [],
            "processors": processors,
            "inputPorts": [port for port in ports if port["type"] == "INPUT_PORT"],
            "outputPorts": [port for port in ports if port["type"] == "OUTPUT_PORT"],
            "connections": connections,
            "labels": [],
            "funnels": [],
            "controllerServices": services,
            "defaultFlowFileExpiration": "0 sec",
            "defaultBackPressureObjectThreshold": 10000,
            "defaultBackPressureDataSizeThreshold": "1 GB",
            "flowFileConcurrency": "UNBOUNDED",
            "flowFileOutboundPolicy": "STREAM_WHEN_AVAILABLE",
            "executionEngine": "INHERITED",
            "componentType": "PROCESS_GROUP",
        }
        document: dict = {"flowContents": contents, "externalControllerServices": {}, "parameterContexts": {}}
        parameters = {str(k): v for k, v in (self.flow.get("parameters") or {}).items()}
        if parameters or self.undefined:
            contents["parameterContextName"] = self.name
            listed = [_parameter(name, str(value)) for name, value in parameters.items()]
            listed += [_parameter(name, None) for name in self.undefined]
            document["parameterContexts"][self.name] = {
                "name": self.name,
                "description": "",
                "parameters": listed,
                "inheritedParameterContexts": [],
                "componentType": "PARAMETER_CONTEXT",
            }
        document["parameterProviders"] = {}
        document["flowEncodingVersion"] = "1.0"
        return document

    def problem(self, place: str, message: str) -> None:
        self.problems.append(Problem(place, message))

    def bundle(self, artifact: str) -> dict:
        return {"group": _GROUP, "artifact": artifact, "version": self.version}

    # processors and services

    def processor(self, index: int, raw: dict) -> dict:
        processor_id = raw["id"]
        definition = self.definition.processors[processor_id]
        mapping = processor_mapping_of(definition.type)
        python = as_python(definition.processor_class) if mapping is None else None
        if python is not None:
            mapping = python_mapping(python)
        place = f"processor {processor_id!r}"
        if mapping is None:
            self.problem(place, f"NiFi has no processor {definition.type} (only Custody has it)")
            return {}
        properties, descriptors = self.properties(mapping, definition.processor_class, raw, place)
        self.scheduling(definition.scheduling, place)
        scheduling = definition.scheduling
        return {
            "identifier": self.uuid("processor", processor_id),
            "name": processor_id,
            "comments": str(raw.get("comment") or ""),
            "position": {"x": 400.0 * (index % 4), "y": 250.0 * (index // 4)},
            "type": mapping.nifi_types[0],
            "bundle": self.bundle(mapping.artifact)
            if python is None
            else {"group": _GROUP, "artifact": PYTHON_ARTIFACT, "version": python.source.version},
            "properties": properties,
            "propertyDescriptors": descriptors,
            "style": {},
            "schedulingPeriod": scheduling.cron or duration_text(scheduling.run_schedule_s),
            "schedulingStrategy": "CRON_DRIVEN" if scheduling.cron else "TIMER_DRIVEN",
            "executionNode": "ALL",
            "penaltyDuration": duration_text(scheduling.penalty_s),
            "yieldDuration": duration_text(scheduling.yield_s),
            "bulletinLevel": "WARN",
            "runDurationMillis": 0,
            "concurrentlySchedulableTaskCount": scheduling.concurrent_tasks,
            "autoTerminatedRelationships": [mapping.nifi_relationship(name) for name in definition.auto_terminate],
            "scheduledState": "ENABLED",
            "retryCount": 10,
            "retriedRelationships": [],
            "backoffMechanism": "PENALIZE_FLOWFILE",
            "maxBackoffPeriod": "10 mins",
            "componentType": "PROCESSOR",
            "groupIdentifier": self.group_id,
        }

    def scheduling(self, scheduling: SchedulingDefinition, place: str) -> None:
        if scheduling.max_rollbacks != SchedulingDefinition.max_rollbacks:
            self.problem(
                f"{place}: scheduling.max_rollbacks",
                "NiFi has no equivalent: it penalizes after every rollback",
            )

    def service(self, raw: dict) -> dict:
        service_id = raw["id"]
        place = f"service {service_id!r}"
        mapping = service_mapping_of(raw["type"])
        cls = type(self.definition.services[service_id])
        if mapping is None:
            self.problem(place, f"NiFi has no controller service {raw['type']}")
            return {}
        properties, descriptors = self.properties(mapping, cls, raw, place)
        return {
            "identifier": self.service_ids[service_id],
            "name": service_id,
            "comments": str(raw.get("comment") or ""),
            "type": mapping.nifi_types[0],
            "bundle": self.bundle(mapping.artifact),
            "controllerServiceApis": [{"type": api, "bundle": self.bundle(artifact)} for api, artifact in mapping.apis],
            "properties": properties,
            "propertyDescriptors": descriptors,
            "scheduledState": "ENABLED",
            "bulletinLevel": "WARN",
            "componentType": "CONTROLLER_SERVICE",
            "groupIdentifier": self.group_id,
        }

    def properties(self, mapping: ComponentMapping, cls, raw: dict, place: str) -> tuple[dict, dict]:
        given = dict(raw.get("properties") or {})
        properties: dict = {}
        descriptors: dict = {}
        for name, value in mapping.implied.items():
            if given.get(name) != value:
                self.problem(
                    f"{place}: property {name!r}",
                    f"NiFi's {mapping.nifi_types[0].rpartition('.')[2]} always works as {name}: {value!r} does "
                    f"(this flow's is {given.get(name, '')!r}): set it so to export",
                )

        def add(name: str, value, *, service: bool = False, dynamic: bool = False) -> None:
            properties[name] = value
            descriptors[name] = {
                "name": name,
                "displayName": name,
                "identifiesControllerService": service,
                "sensitive": False,
                "dynamic": dynamic,
            }

        for property_mapping in mapping.properties:
            if property_mapping.nifi2_only:
                continue  # the document is NiFi 1.x's
            if property_mapping.custody is None:
                add(property_mapping.nifi, property_mapping.nifi_default)
                continue
            descriptor = cls.descriptor(property_mapping.custody)
            value = given.get(property_mapping.custody, descriptor.default if descriptor else None)
            if property_mapping.defaults_agree and descriptor is not None and at_custody_default(descriptor, value):
                add(property_mapping.nifi, property_mapping.nifi_default)
                continue
            if property_mapping.kind == "service":
                add(
                    property_mapping.nifi, self.service_ids.get(str(value)) if value is not None else None, service=True
                )
                continue
            try:
                add(property_mapping.nifi, to_nifi(property_mapping, value))
            except ValueError as error:
                self.problem(f"{place}: property {property_mapping.custody!r}", str(error))
        mapped = mapping.by_custody_name()
        for name, value in given.items():
            if name in mapping.implied and value == mapping.implied[name]:
                continue  # what NiFi's component does anyway
            descriptor = cls.descriptor(name)
            if descriptor is None:
                add(name, str(value), dynamic=True)
            elif name not in mapped and not at_custody_default(descriptor, value):
                self.problem(
                    f"{place}: property {name!r}",
                    f"NiFi's {mapping.nifi_types[0].rpartition('.')[2]} has no equivalent of it (set to {value!r})",
                )
        return properties, descriptors

    # ports and connections

    def port(self, index: int, port) -> dict:
        kind = "INPUT_PORT" if port.kind == "input" else "OUTPUT_PORT"
        return {
            "identifier": self.uuid("port", port.id),
            "name": port.id,
            "position": {"x": -400.0, "y": 250.0 * index},
            "type": kind,
            "concurrentlySchedulableTaskCount": 1,
            "scheduledState": "ENABLED",
            "allowRemoteAccess": False,
            "portFunction": "FAILURE" if port.kind == "failure" else "STANDARD",
            "componentType": kind,
            "groupIdentifier": self.group_id,
        }

    def nifi_relationship(self, source: str, name: str) -> str:
        definition = self.definition.processors.get(source)
        mapping = processor_mapping_of(definition.type) if definition is not None else None
        return mapping.nifi_relationship(name) if mapping is not None else name

    def endpoint(self, component_id: str) -> dict:
        port = self.definition.ports.get(component_id)
        if port is None:
            kind, identifier = "PROCESSOR", self.uuid("processor", component_id)
        else:
            kind = "INPUT_PORT" if port.kind == "input" else "OUTPUT_PORT"
            identifier = self.uuid("port", component_id)
        return {"id": identifier, "type": kind, "groupId": self.group_id, "name": component_id}

    def connection(self, index: int, connection) -> dict:
        place = f"connection {connection.id!r}"
        if connection.swap_threshold != DEFAULT_SWAP_THRESHOLD or connection.swap_batch != min(
            DEFAULT_SWAP_BATCH, connection.swap_threshold
        ):
            self.problem(
                place, "NiFi sets swapping for the whole instance (nifi.queue.swap.threshold), not a connection"
            )
        prioritizers = []
        for name in connection.prioritizers:
            short = _normalized_prioritizer(name)
            prioritizers.append(_PRIORITIZER_CLASSES.get(short, short))
        return {
            "identifier": self.uuid("connection", connection.id),
            "name": "",
            "source": self.endpoint(connection.source),
            "destination": self.endpoint(connection.destination),
            "labelIndex": 1,
            "zIndex": index,
            "selectedRelationships": [
                self.nifi_relationship(connection.source, r) for r in connection.relationships if r
            ],
            "backPressureObjectThreshold": connection.back_pressure_count,
            "backPressureDataSizeThreshold": size_text(connection.back_pressure_size),
            "flowFileExpiration": duration_text(connection.expiration_ms / 1000),
            "prioritizers": prioritizers,
            "bends": [],
            "loadBalanceStrategy": "DO_NOT_LOAD_BALANCE",
            "partitioningAttribute": "",
            "loadBalanceCompression": "DO_NOT_COMPRESS",
            "componentType": "CONNECTION",
            "groupIdentifier": self.group_id,
        }


def _parameter(name: str, value: str | None) -> dict:
    return {"name": name, "description": "", "sensitive": False, "value": value, "provided": False}


def _normalized_prioritizer(name: str) -> str:
    normalized = re.sub(r"[\s-]+", "_", name.strip().lower())
    return _PRIORITIZER_ALIASES.get(normalized, normalized)
