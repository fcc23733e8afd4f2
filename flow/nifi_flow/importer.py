"""A NiFi flow definition to a Custody flow: `import_nifi_flow(content)` returns the
Custody flow document (what `custody flow import` writes as YAML) and the report of
every mapping decision, or raises `NiFiFlowError` listing every problem, each with its
JSON path in the NiFi document. Pure: text in, data out; the processor types and
service types it maps to are given (the standard ones by default).

What becomes what:
  processors           by their class, through `processor_tables`; the Custody id is the
                       names of the nested groups and the processor's ("Group/Put")
  controller services  record readers and writers, through `service_tables`; NiFi 2's
                       Kafka Connection Service into each processor that references it
  connections          flattened through nested groups' ports and funnels (`flattening`)
  parameter contexts   the flow's parameters (`parameters`); sensitive ones left unset
  top-level ports      the flow's ports (input, output, and failure for portFunction FAILURE)
  scheduling           TIMER_DRIVEN period, tasks, penalty and yield; CRON_DRIVEN, PRIMARY
                       node only, DISABLED and retried relationships are problems
  STATELESS groups     an ExecuteStateless running the group's flow, imported as a flow of its
                       own (`subflows`, written where `subflow_path` says)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..cron import CronError, parse_cron
from .component_properties import ConnectionService, PropertyContext, map_properties
from .confinement import confine
from .conversions import to_custody
from .document import NiFiDocument, NiFiProcessor, NiFiService, parse_document
from .flattening import Route, flatten
from .mapping_model import ComponentMapping, prop
from .parameters import FlowParameters, resolve_parameters
from .problems import NiFiFlowError, Problem, extend
from .processor_tables import CONNECTION_SERVICE_TYPES, processor_mapping
from .python_processors import python_class, python_mapping, unknown_type_hint
from .service_tables import service_mapping
from .stateless_groups import StatelessGroup, split
from .values import nifi_duration_s, nifi_size_bytes

PRIORITIZERS = {
    "org.apache.nifi.prioritizer.FirstInFirstOutPrioritizer": "fifo",
    "org.apache.nifi.prioritizer.OldestFlowFileFirstPrioritizer": "oldest_first",
    "org.apache.nifi.prioritizer.NewestFlowFileFirstPrioritizer": "newest_first",
    "org.apache.nifi.prioritizer.PriorityAttributePrioritizer": "priority_attribute",
}
# NiFi's defaults for a connection's queue, as Custody's (`flow.queue`).
_DEFAULT_COUNT = 10_000
_DEFAULT_SIZE = 1024**3
# What a sensitive parameter stands for while the import checks the flow loads: its
# value is never in the document, and "0" reads as text, a number, a duration or false.
_UNSET_PLACEHOLDER = "0"


@dataclass
class ImportedFlow:
    flow: dict  # the Custody flow document
    report: list[str] = field(default_factory=list)
    unset_parameters: dict[str, str] = field(default_factory=dict)  # name -> why (sensitive, no value)
    # Custody processor id -> the JSON path of the NiFi processor it came from
    origins: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # The flows of STATELESS groups, by the path their ExecuteStateless names
    subflows: dict[str, dict] = field(default_factory=dict)


def import_nifi_flow(
    content: bytes | str,
    *,
    source: str = "<NiFi flow>",
    name: str | None = None,
    registry: Mapping | None = None,
    service_types: Mapping | None = None,
    subflow_path: Callable[[str], str] | None = None,
) -> ImportedFlow:
    """The Custody flow of the NiFi flow definition `content` (JSON). Raises
    `NiFiFlowError` with every problem when anything of it cannot run in Custody.
    `subflow_path` gives the file a STATELESS group's flow goes to, from the Custody id
    of the ExecuteStateless that runs it (without it, such a group is a problem)."""
    if registry is None:
        from ..loading import standard_registry

        registry = standard_registry()
    if service_types is None:
        from ..records.catalog import RECORD_SERVICE_TYPES

        service_types = RECORD_SERVICE_TYPES
    problems: list[Problem] = []
    document = parse_document(content, problems)
    if document is None:
        raise NiFiFlowError(source, problems)
    imported = _Import(document, registry, service_types, problems, subflow_path).run(name)
    if not problems:
        _check_loads(imported, registry, problems)
    if problems:
        # a service of a group around a STATELESS group is read for both flows: say each problem once
        raise NiFiFlowError(source, list(dict.fromkeys(problems)))
    return imported


class _Import:
    def __init__(
        self,
        document: NiFiDocument,
        registry: Mapping,
        service_types: Mapping,
        problems: list[Problem],
        subflow_path: Callable[[str], str] | None = None,
    ):
        self.document, self.registry, self.service_types = document, registry, service_types
        self.problems = problems
        self.subflow_path = subflow_path
        self.origins: dict[str, str] = {}
        self.subflows: dict[str, dict] = {}
        self.stateless_ends: set[str] = set()  # the ports of STATELESS groups: where routes end or start
        self.stateless_outputs: dict[str, str] = {}  # output port -> ExecuteStateless relationship
        self.stateless_loops: list[dict] = []
        self.report: list[str] = []
        self.ids: dict[str, str] = {}  # NiFi identifier -> Custody id (processors, kept ports)
        self.relationships: dict[str, tuple[str, ...]] = {}  # Custody processor id -> its relationships
        self.auto_terminated: dict[str, set[str]] = {}
        self.mappings: dict[str, ComponentMapping] = {}  # Custody processor id -> its mapping
        self.connection_services: dict[str, ConnectionService] = {}  # NiFi identifier -> service, for `connection`

    def route_relationships(self, route: Route) -> tuple[str, ...]:
        """The Custody relationships a route takes from its source: the connection's
        (as Custody names them), or the ExecuteStateless relationship of a STATELESS
        group's output port."""
        if route.source in self.stateless_outputs:
            return (self.stateless_outputs[route.source],)
        return self.custody_relationships(self.ids[route.source], route.relationships)

    def custody_relationships(self, source: str, names) -> tuple[str, ...]:
        """NiFi's relationship `names` of the processor `source` (a Custody id), as Custody names them."""
        mapping = self.mappings.get(source)
        return tuple(mapping.custody_relationship(name) if mapping else name for name in names)

    def problem(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def run(self, name: str | None) -> ImportedFlow:
        for path in self.document.remote_groups:
            self.problem(path, "a remote process group (site-to-site): Custody has none")
        if self.document.root.execution_engine == "STATELESS":
            self.report.append(
                f"group {self.document.root.name!r} runs STATELESS in NiFi: run the imported flow as ExecuteStateless's"
            )
        self.document, stateless = split(self.document)
        document = self.document
        depth = len(document.root.names())  # a stateless group's flow names its processors from the group down
        parameters = resolve_parameters(document, self.problems)
        self.connection_services = {
            service.identifier: ConnectionService(
                service.path, service.name, service.type, service.properties, parameters.visible(service.group)
            )
            for service in document.services
        }
        service_ids = self._names([(s.identifier, s.group.names()[depth:] + (s.name,)) for s in document.services])
        services = [self._service(service, service_ids, parameters) for service in document.services]
        kept_ports = [node for node in document.nodes if node.group is document.root and node.kind != "FUNNEL"]
        named = [(p.identifier, p.group.names()[depth:] + (p.name,)) for p in document.processors]
        named += [(port.identifier, (port.name,)) for port in kept_ports]
        named += [(group.group.identifier, group.group.names()[depth:]) for group in stateless]
        self.ids = self._names(named)
        self.origins = {self.ids[p.identifier]: p.path for p in document.processors}
        processors = [self._processor(processor, service_ids, parameters) for processor in document.processors]
        processors += [self._stateless_group(group) for group in stateless]
        ends = {port.identifier for port in kept_ports} | set(self.stateless_ends)
        routes = flatten(document, ends, self.problems)
        connections = self._connections(routes) + self.stateless_loops
        self._check_relationships(routes)
        mapped = [processor for processor in processors if processor is not None]
        self.report.extend(confine(mapped, ((c["source"], c["destination"]) for c in connections)))
        flow: dict = {"name": name or document.root.name}
        if parameters.values:
            flow["parameters"] = dict(parameters.values)
        mapped_services = [service for service in services if service is not None]
        if mapped_services:
            flow["services"] = mapped_services
        flow["processors"] = mapped
        flow["connections"] = connections
        if kept_ports:
            flow["ports"] = [
                {"id": self.ids[port.identifier], "type": _port_kind(port.kind, port.function)} for port in kept_ports
            ]
        for parameter, why in parameters.unset.items():
            self.report.append(f"parameter #{{{parameter}}}: left unset ({why}): give it with --param {parameter}=...")
        return ImportedFlow(flow, self.report, dict(parameters.unset), self.origins, self.subflows)

    def _stateless_group(self, stateless: StatelessGroup) -> dict:
        """The ExecuteStateless that runs a STATELESS group's flow, which goes to a file of
        its own; the group's ports become its ends: what enters its input port is the
        ExecuteStateless's input, what leaves an output port its `output` (a failure
        port's: `failure`)."""
        group = stateless.group
        custody_id = self.ids[group.identifier]
        self.origins[custody_id] = group.path
        if self.subflow_path is None:
            self.problem(
                f"{group.path}.executionEngine",
                "a STATELESS group becomes an ExecuteStateless that runs a flow file of its own: write the import "
                "to a file (-o), next to which that flow is written",
            )
        path = self.subflow_path(custody_id) if self.subflow_path is not None else f"{custody_id}.yaml"
        inner = _Import(stateless.document, self.registry, self.service_types, self.problems, self.subflow_path)
        before = len(self.problems)
        imported = inner.run(group.name)
        for parameter, why in imported.unset_parameters.items():
            self.problem(
                f"{group.path}.parameterContextName",
                f"parameter #{{{parameter}}} ({why}) is used in the STATELESS group: Custody's ExecuteStateless "
                "loads its flow without run-time parameters, so it cannot be given",
            )
        if len(self.problems) == before:
            _check_loads(imported, self.registry, self.problems)
        self.subflows.update(imported.subflows)
        self.subflows[path] = imported.flow
        self.report.append(f"group {custody_id!r} <- {group.path} (STATELESS) as ExecuteStateless running {path}")
        self.report.extend(f"    {line}" for line in imported.report)
        ports = [node for node in stateless.document.nodes if node.group is group and node.kind != "FUNNEL"]
        inputs = [port for port in ports if port.kind == "INPUT_PORT"]
        outputs = [port for port in ports if port.kind == "OUTPUT_PORT" and port.function != "FAILURE"]
        failures = [port for port in ports if port.kind == "OUTPUT_PORT" and port.function == "FAILURE"]
        properties: dict = {"flow": path}
        if len(inputs) > 1:
            self.problem(
                inputs[1].path,
                f"Custody's ExecuteStateless takes FlowFiles into one input port; this group has {len(inputs)}",
            )
        elif inputs:
            properties["input_port"] = inner.ids[inputs[0].identifier]
        if len(outputs) > 1:
            self.problem(
                outputs[1].path,
                f"Custody's ExecuteStateless sends what its flow outputs to one relationship; this group has "
                f"{len(outputs)} output ports: make them one",
            )
        for port in ports:
            self.ids[port.identifier] = custody_id
            self.stateless_ends.add(port.identifier)
        for port in outputs + failures:
            self.stateless_outputs[port.identifier] = "failure" if port in failures else "output"
        self.relationships[custody_id] = ("output", "original", "failure")
        auto = ["original"] + ([] if outputs else ["output"])
        self.auto_terminated[custody_id] = set(auto)
        if not failures:
            # NiFi retries a stateless group's input when its flow fails: so does a failure connected back
            self.stateless_loops.append({"source": custody_id, "relationships": ["failure"], "destination": custody_id})
            self.report.append("    failure -> back to itself (NiFi retries the input of a stateless group that fails)")
        return {"id": custody_id, "type": "ExecuteStateless", "properties": properties, "auto_terminate": auto}

    def _names(self, components: list[tuple[str, tuple[str, ...]]]) -> dict[str, str]:
        """Custody ids for NiFi components: their group and own names joined by '/', a
        name taken twice numbered (" 2", " 3") in document order."""
        ids: dict[str, str] = {}
        taken: set[str] = set()
        for identifier, names in components:
            base = "/".join(names) or identifier
            candidate, number = base, 1
            while candidate in taken:
                number += 1
                candidate = f"{base} {number}"
            taken.add(candidate)
            ids[identifier] = candidate
        return ids

    # controller services

    def _service(self, service: NiFiService, service_ids: dict[str, str], parameters: FlowParameters) -> dict | None:
        mapping = service_mapping(service.type)
        cls = self.service_types.get(mapping.custody_type) if mapping else None
        if not service.type:
            return None  # reported where the document was read
        if service.type in CONNECTION_SERVICE_TYPES:
            self.report.append(
                f"service {service.name!r} <- {service.path} ({service.type}): its settings go into each processor "
                "that references it"
            )
            return None
        if mapping is None or cls is None:
            known = ", ".join(sorted(self.service_types))
            self.problem(
                f"{service.path}.type",
                f"Custody has no controller service {service.type.rpartition('.')[2]!r} ({service.type}); "
                f"it has: {known}",
            )
            return None
        custody_id = service_ids[service.identifier]
        self.report.append(f"service {custody_id!r} <- {service.path} ({service.type}) as {mapping.custody_type}")
        context = self._context(service.path, mapping.custody_type, service.group, service_ids, parameters)
        properties, _ = map_properties(mapping, cls, service.properties, frozenset(), context)
        result: dict = {"id": custody_id, "type": mapping.custody_type}
        if properties:
            result["properties"] = properties
        return result

    def _context(self, path, type_name, group, service_ids, parameters: FlowParameters) -> PropertyContext:
        return PropertyContext(
            path,
            type_name,
            parameters.visible(group),
            service_ids,
            self.document.external_services,
            self.problems,
            self.report,
            self.connection_services,
        )

    # processors

    def _processor(
        self, processor: NiFiProcessor, service_ids: dict[str, str], parameters: FlowParameters
    ) -> dict | None:
        mapping = processor_mapping(processor.type)
        cls = self.registry.get(mapping.custody_type) if mapping else None
        python = python_class(self.registry, processor.type, processor.bundle_version) if mapping is None else None
        if python is not None:
            mapping, cls = python_mapping(python), python
        custody_id = self.ids[processor.identifier]
        if not processor.type:
            return None  # reported where the document was read
        if mapping is None or cls is None:
            self.problem(
                f"{processor.path}.type",
                f"Custody has no processor {processor.type.rpartition('.')[2]!r} ({processor.type}); "
                f"{unknown_type_hint(processor.type)}",
            )
            return None
        self.report.append(f"processor {custody_id!r} <- {processor.path} ({processor.type}) as {mapping.custody_type}")
        context = self._context(processor.path, mapping.custody_type, processor.group, service_ids, parameters)
        properties, dynamic = map_properties(mapping, cls, processor.properties, processor.dynamic_names, context)
        result: dict = {"id": custody_id, "type": mapping.custody_type}
        if properties or dynamic:
            result["properties"] = {**properties, **dynamic}
        scheduling = self._scheduling(processor)
        if scheduling:
            result["scheduling"] = scheduling
        self.relationships[custody_id] = _relationships(cls, properties, dynamic)
        self.mappings[custody_id] = mapping
        auto = []
        for index, relationship in enumerate(self.custody_relationships(custody_id, processor.auto_terminated)):
            if relationship in self.relationships[custody_id]:
                auto.append(relationship)
            elif relationship in mapping.unused_relationships:
                self.report.append(f"    auto-terminated {relationship!r} -> dropped: Custody's never routes to it")
            elif relationship in mapping.relationships.values():
                # NiFi's processor always has it, Custody's only with other settings (ConsumeKafka's
                # parse.failure outside record mode): nothing can go to it
                self.report.append(
                    f"    auto-terminated {relationship!r} -> dropped: not a relationship with these settings"
                )
            else:
                self.problem(
                    extend(processor.path, "autoTerminatedRelationships", index),
                    f"Custody's {mapping.custody_type} has no relationship {relationship!r} "
                    f"(it has {', '.join(self.relationships[custody_id])})",
                )
        self.auto_terminated[custody_id] = set(auto)
        if auto:
            result["auto_terminate"] = auto
        return result

    def _scheduling(self, processor: NiFiProcessor) -> dict:
        path = processor.path
        scheduling: dict = {}
        if processor.scheduling_strategy in ("TIMER_DRIVEN", "EVENT_DRIVEN"):
            if processor.scheduling_strategy == "EVENT_DRIVEN":
                self.report.append("    schedulingStrategy: EVENT_DRIVEN -> run_schedule 0 sec (runs when work waits)")
            else:
                self._duration(processor.scheduling_period, 0.0, "run_schedule", f"{path}.schedulingPeriod", scheduling)
        elif processor.scheduling_strategy == "CRON_DRIVEN":
            try:
                parse_cron(processor.scheduling_period)
            except CronError as error:
                self.problem(f"{path}.schedulingPeriod", f"CRON_DRIVEN: {error}")
            else:
                scheduling["cron"] = processor.scheduling_period
        else:
            self.problem(
                f"{path}.schedulingStrategy",
                f"Custody schedules processors by period (TIMER_DRIVEN) or by cron (CRON_DRIVEN), not "
                f"{processor.scheduling_strategy} ({processor.scheduling_period!r})",
            )
        if processor.execution_node != "ALL":
            self.problem(
                f"{path}.executionNode",
                f"Custody has no primary node: every node runs each processor for the shards it owns "
                f"({processor.execution_node!r}); set ALL, or run this part on one standalone node",
            )
        if processor.concurrent_tasks < 1:
            self.problem(f"{path}.concurrentlySchedulableTaskCount", "expected at least 1 task")
        elif processor.concurrent_tasks != 1:
            scheduling["concurrent_tasks"] = processor.concurrent_tasks
        self._duration(processor.penalty_duration, 30.0, "penalty_duration", f"{path}.penaltyDuration", scheduling)
        self._duration(processor.yield_duration, 1.0, "yield_duration", f"{path}.yieldDuration", scheduling)
        if processor.run_duration_ms:
            self.report.append(
                f"    runDurationMillis: {processor.run_duration_ms} -> dropped (Custody batches by batch sizes)"
            )
        if processor.retried:
            self.problem(
                f"{path}.retriedRelationships",
                f"Custody does not retry relationships ({', '.join(processor.retried)}): connect them back "
                "to the processor instead",
            )
        if processor.scheduled_state == "DISABLED":
            self.problem(
                f"{path}.scheduledState",
                "a DISABLED processor: Custody runs every processor of a flow; enable it or remove it",
            )
        return scheduling

    def _duration(self, text: str, default_s: float, key: str, path: str, scheduling: dict) -> None:
        try:
            value = to_custody(prop("", key, kind="duration"), text)
            seconds = nifi_duration_s(text)
        except ValueError as error:
            self.problem(path, str(error))
            return
        if seconds != default_s:
            scheduling[key] = value

    # connections

    def _connections(self, routes: list[Route]) -> list[dict]:
        connections: list[dict] = []
        seen: dict[tuple, int] = {}
        for route in routes:
            source, destination = self.ids[route.source], self.ids[route.destination]
            relationships = self.route_relationships(route)
            connection: dict = {"source": source}
            if source in self.relationships:
                connection["relationships"] = list(relationships)
            connection["destination"] = destination
            last = route.last
            pressure: dict = {}
            if last.back_pressure_count != _DEFAULT_COUNT:
                pressure["object_count"] = last.back_pressure_count
            try:
                if nifi_size_bytes(last.back_pressure_size) != _DEFAULT_SIZE:
                    pressure["data_size"] = last.back_pressure_size
            except ValueError as error:
                self.problem(f"{last.path}.backPressureDataSizeThreshold", str(error))
            if pressure:
                connection["back_pressure"] = pressure
            try:
                if nifi_duration_s(last.expiration):
                    connection["expiration"] = last.expiration
            except ValueError as error:
                self.problem(f"{last.path}.flowFileExpiration", str(error))
            prioritizers = []
            for index, prioritizer in enumerate(last.prioritizers):
                if prioritizer in PRIORITIZERS:
                    prioritizers.append(PRIORITIZERS[prioritizer])
                else:
                    self.problem(
                        extend(last.path, "prioritizers", index),
                        f"Custody has no prioritizer {prioritizer!r} (it has NiFi's {', '.join(PRIORITIZERS)})",
                    )
            if prioritizers:
                connection["prioritizers"] = prioritizers
            if last.load_balance != "DO_NOT_LOAD_BALANCE":
                self.problem(
                    f"{last.path}.loadBalanceStrategy",
                    f"Custody does not load-balance a connection ({last.load_balance}): a cluster spreads work by "
                    "shards; set DO_NOT_LOAD_BALANCE",
                )
            key = (source, relationships, destination)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                connection["id"] = f"{source}/{'+'.join(relationships)}/{destination} ({seen[key]})"
            via = "" if route.first is route.last else f" via {route.last.path}"
            self.report.append(f"connection {route.first.path}{via} -> {source} {list(relationships)} -> {destination}")
            connections.append(connection)
        return connections

    def _check_relationships(self, routes: list[Route]) -> None:
        connected: dict[str, set[str]] = {loop["source"]: {"failure"} for loop in self.stateless_loops}
        for route in routes:
            source = self.ids[route.source]
            if source not in self.relationships:
                continue
            relationships = self.route_relationships(route)
            if not relationships:
                self.problem(f"{route.first.path}.selectedRelationships", "selects no relationship")
            for index, relationship in enumerate(relationships):
                if relationship not in self.relationships[source]:
                    self.problem(
                        extend(route.first.path, "selectedRelationships", index),
                        f"{source!r} has no relationship {relationship!r} in Custody "
                        f"(it has {', '.join(self.relationships[source])})",
                    )
                connected.setdefault(source, set()).add(relationship)
        for custody_id, relationships in self.relationships.items():
            for relationship in relationships:
                if relationship not in connected.get(custody_id, set()) | self.auto_terminated[custody_id]:
                    self.problem(
                        f"{self.origins[custody_id]}.autoTerminatedRelationships",
                        f"relationship {relationship!r} is neither connected nor auto-terminated",
                    )


def _relationships(cls, properties: dict, dynamic: dict) -> tuple[str, ...]:
    """The relationships the Custody processor will have, its properties as mapped."""
    full = {}
    for descriptor in cls.properties:
        value = properties.get(descriptor.name, descriptor.default)
        try:
            full[descriptor.name] = descriptor.convert(value) if value is not None else None
        except (ValueError, TypeError):
            full[descriptor.name] = value
    try:
        return tuple(cls.relationships_for(full, dict.fromkeys(dynamic)))
    except Exception:  # noqa: BLE001 - a value the final check refuses with its own message
        return tuple(cls.relationships)


def _port_kind(kind: str, function: str) -> str:
    if kind == "INPUT_PORT":
        return "input"
    return "failure" if function == "FAILURE" else "output"


def _check_loads(imported: ImportedFlow, registry: Mapping, problems: list[Problem]) -> None:
    """The last gate: the Custody flow loads as Custody loads it (each value converted
    and checked by its processor type)."""
    from ..definition import parse_flow, processor_errors
    from ..errors import FlowDefinitionError

    placeholders = dict.fromkeys(imported.unset_parameters, _UNSET_PLACEHOLDER)
    errors = processor_errors(imported.flow, registry=registry, source="", parameters=placeholders)
    for error in errors:
        where = imported.origins.get(error.processor or "", "(the imported flow)")
        problems.append(Problem(where, f"Custody refuses it: {error}"))
    if errors:
        return
    try:
        parse_flow(imported.flow, registry=registry, source="", parameters=placeholders)
    except FlowDefinitionError as error:
        where = imported.origins.get(error.processor or "", "(the imported flow)")
        problems.append(Problem(where, f"Custody refuses it: {error}"))
