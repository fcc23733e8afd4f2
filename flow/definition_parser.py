"""`_FlowParser`: one flow document, its shape checked already, validated against a
processor registry and built into a `FlowDefinition`: parameters substituted, each
processor's properties converted and checked by its type, scheduling, ports, and
connections between known relationships."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .cron import CronError, parse_cron
from .definition_limits import _MAX_INTEGER, MAX_EXPANDED_CHARS, MAX_PROPERTY_CHARS
from .definition_model import (
    MAX_CONCURRENT_TASKS,
    MAX_SCHEDULING_S,
    PORT_KINDS,
    ConnectionDefinition,
    FlowDefinition,
    PortDefinition,
    ProcessorDefinition,
    SchedulingDefinition,
)
from .definition_places import (
    _article,
    _count,
    _duration,
    _kind,
    _list,
    _listing,
    _mapping,
    _names,
    _Place,
    _refuse_unknown_keys,
    _short,
    _size,
    _text,
)
from .errors import ExpressionError, FlowDefinitionError
from .expression import compile_expression
from .prioritizers import key_function
from .swap_policy import DEFAULT_SWAP_BATCH, DEFAULT_SWAP_THRESHOLD

if TYPE_CHECKING:
    from .controller_service import ControllerService
    from .processor import Processor

_PARAMETER = re.compile(r"#\{([A-Za-z0-9_.\-]+)\}")
_TOP_KEYS = ("name", "description", "parameters", "services", "processors", "connections", "ports")
_SERVICE_KEYS = ("id", "type", "name", "properties", "comment")
_PROCESSOR_KEYS = ("id", "type", "name", "properties", "scheduling", "auto_terminate", "comment")
_CONNECTION_KEYS = (
    "id",
    "name",
    "source",
    "destination",
    "relationships",
    "prioritizers",
    "back_pressure",
    "swap_threshold",
    "swap_batch",
    "expiration",
)
_SCHEDULING_KEYS = {
    "run_schedule": "run_schedule_s",
    "yield_duration": "yield_s",
    "penalty_duration": "penalty_s",
    "concurrent_tasks": "concurrent_tasks",
    "max_rollbacks": "max_rollbacks",
    "cron": "cron",
}
_BACK_PRESSURE_KEYS = ("object_count", "data_size")


class _FlowParser:
    """One document parsed against one registry: each method reads one part of it, checks
    the type of every value it reads and raises `FlowDefinitionError` naming the place."""

    def __init__(
        self,
        data: dict,
        registry: Mapping[str, type[Processor]],
        source: str,
        parameters: dict | None,
        service_types: Mapping[str, type[ControllerService]] | None = None,
    ):
        self.data, self.registry, self.source = data, registry, source
        self.service_types = service_types
        self.overrides = parameters or {}
        self.parameters: dict = {}
        self.services: dict[str, ControllerService] = {}
        self.substituted = 0  # characters that substituting parameters added, across the document

    def parse(self) -> FlowDefinition:
        top = _Place(self.source)
        _refuse_unknown_keys(self.data, _TOP_KEYS, top)
        name = _text(self.data.get("name"), top.at("name"), "text (the flow's name)", required=False)
        _text(self.data.get("description"), top.at("description"), required=False)
        self.parameters = self._parameters(self.data.get("parameters"), top.at("parameters"))
        self.services = self._services(self.data.get("services"), top.at("services"))
        processors = self._processors(self.data.get("processors"), top.at("processors"))
        ports = self._ports(self.data.get("ports"), top.at("ports"), processors)
        connections = self._connections(self.data.get("connections"), top.at("connections"), processors, ports)
        _check_every_relationship_goes_somewhere(processors, connections, top)
        return FlowDefinition(
            name or os.path.basename(self.source),
            processors,
            connections,
            ports,
            self.parameters,
            self.source,
            self.registry,
            services=self.services,
        )

    def processor_errors(self) -> list[FlowDefinitionError]:
        top = _Place(self.source)
        try:
            self.parameters = self._parameters(self.data.get("parameters"), top.at("parameters"))
            self.services = self._services(self.data.get("services"), top.at("services"))
        except FlowDefinitionError as error:
            return [error]
        errors = []
        place = top.at("processors")
        for index, item in enumerate(_list(self.data.get("processors"), place, "a list of processors")):
            try:
                self._processor(item, place.at(index))
            except FlowDefinitionError as error:
                errors.append(error)
        return errors

    def _parameters(self, raw, place: _Place) -> dict:
        parameters = {}
        for name, value in _mapping(raw, place, "a mapping of parameter names to values").items():
            if isinstance(value, (list, dict)) or value is None:
                raise place.at(name).error(f"expected text or a number (a parameter's value), got {_kind(value)}")
            parameters[name] = value
        parameters.update(self.overrides)
        return parameters

    # controller services

    def _services(self, raw, place: _Place) -> dict[str, ControllerService]:
        services: dict[str, ControllerService] = {}
        if raw is None:
            return services
        types = self.service_types
        if types is None:  # Arrow is imported only for a flow that has services
            from .records.catalog import RECORD_SERVICE_TYPES

            types = RECORD_SERVICE_TYPES
        for index, item in enumerate(_list(raw, place, "a list of services")):
            item_place = place.at(index)
            item = _mapping(item, item_place, "a mapping (a service with an id and a type)")
            service_id = _text(item.get("id"), item_place.at("id"), "text (the service's id)")
            item_place = place.at(service_id)
            _refuse_unknown_keys(item, _SERVICE_KEYS, item_place)
            _text(item.get("name"), item_place.at("name"), required=False)
            _text(item.get("comment"), item_place.at("comment"), required=False)
            if service_id in services:
                raise place.at(index).error(
                    f"duplicate service id {_short(service_id)!r}: give each service its own id"
                )
            type_name = _text(item.get("type"), item_place.at("type"), "text (a service type)")
            cls = types.get(type_name)
            if cls is None:
                raise item_place.at("type").error(
                    f"unknown service type {_short(type_name)!r}; known types: {', '.join(sorted(types))}"
                )
            properties = self._service_properties(cls, item.get("properties"), item_place.at("properties"))
            for name, message in cls.validate(properties):
                raise item_place.at("properties", name).error(message)
            services[service_id] = cls(service_id, properties)
        return services

    def _service_properties(self, cls, raw, place: _Place) -> dict:
        properties: dict = {}
        for name, value in _mapping(raw, place, "a mapping of property names to values").items():
            descriptor = cls.descriptor(name)
            if descriptor is None:
                known = ", ".join(d.name for d in cls.properties) or "none"
                raise place.at(name).error(f"{cls.type_name} has no such property (it has: {known})")
            value = self._property_value(value, place.at(name))
            if value is not None:
                properties[name] = _convert(descriptor, value, place.at(name))
        _fill_defaults(cls.properties, properties, place)
        return properties

    def _service_named(self, descriptor, name: str, place: _Place) -> ControllerService:
        """The flow's service `name` for a processor's property of kind "service"."""
        service = self.services.get(name)
        wanted = descriptor.service_kind or "service"
        if service is None:
            defined = _listing(sorted(self.services))
            raise place.error(f"no service with id {_short(name)!r} in the flow's services (defined: {defined})")
        if descriptor.service_kind and service.kind != descriptor.service_kind:
            raise place.error(f"service {name!r} is a {service.kind} ({service.type_name}); expected a {wanted}")
        return service

    # processors

    def _processors(self, raw, place: _Place) -> dict[str, ProcessorDefinition]:
        items = _list(raw, place, "a list of processors")
        if not items:
            raise place.error(
                f"expected a non-empty list of processors, got {_kind(raw) if raw is not None else 'none'}"
            )
        processors: dict[str, ProcessorDefinition] = {}
        for index, item in enumerate(items):
            definition = self._processor(item, place.at(index))
            if definition.id in processors:
                raise _Place(self.source, processor=definition.id).error(
                    f"duplicate processor id (processors[{index}] repeats it): give each processor its own id"
                )
            processors[definition.id] = definition
        return processors

    def _processor(self, raw, place: _Place) -> ProcessorDefinition:
        raw = _mapping(raw, place, "a mapping (a processor with an id and a type)")
        processor_id = _text(raw.get("id"), place.at("id"), "text (the processor's id)")
        place = _Place(self.source, processor=processor_id)
        _refuse_unknown_keys(raw, _PROCESSOR_KEYS, place)
        _text(raw.get("name"), place.at("name"), required=False)
        _text(raw.get("comment"), place.at("comment"), required=False)
        type_name = _text(raw.get("type"), place.at("type"), "text (a processor type)")
        cls = self.registry.get(type_name)
        if cls is None:
            raise place.error(
                f"unknown processor type {_short(type_name)!r}; known types: {', '.join(sorted(self.registry))}"
            )
        properties, dynamic = self._properties(cls, raw.get("properties"), place)
        for name, message in cls.validate(properties, dynamic):
            raise place.at(name).error(message)
        for descriptor in cls.properties:
            problem = descriptor.problem(properties.get(descriptor.name))
            if problem is not None:
                raise place.at(descriptor.name).error(
                    f"wrong value for {_article(descriptor.kind)} property: {problem}"
                )
        scheduling = _scheduling(raw.get("scheduling"), place.at("scheduling"))
        relationships = tuple(cls.relationships_for(properties, dynamic))
        auto_terminate = _auto_terminate(raw.get("auto_terminate"), relationships, place)
        return ProcessorDefinition(
            processor_id, type_name, cls, properties, dynamic, scheduling, auto_terminate, relationships
        )

    def _properties(self, cls, raw, place: _Place) -> tuple[dict, dict]:
        properties, dynamic = {}, {}
        for name, value in _mapping(raw, place.at("properties"), "a mapping of property names to values").items():
            value = self._property_value(value, place.at(name))
            descriptor = cls.descriptor(name)
            if descriptor is None:
                dynamic[name] = _dynamic_property(cls, value, place.at(name))
            elif value is not None:
                properties[name] = _convert(descriptor, value, place.at(name))
                if descriptor.kind == "service":
                    properties[name] = self._service_named(descriptor, properties[name], place.at(name))
        _fill_defaults(cls.properties, properties, place)
        return properties, dynamic

    def _property_value(self, value, place: _Place):
        if isinstance(value, (list, dict)):
            raise place.error(f"expected a single value (text, a number or true/false), got {_kind(value)}")
        if isinstance(value, str) and len(value) > MAX_PROPERTY_CHARS:
            raise place.error(
                f"the value is {len(value)} characters long, more than the {MAX_PROPERTY_CHARS} a property may hold"
            )
        return self._substitute(value, place)

    def _substitute(self, value, place: _Place):
        if not isinstance(value, str):
            return value
        added = 0

        def replace(match):
            nonlocal added
            name = match.group(1)
            if name not in self.parameters:
                defined = _short(", ".join(sorted(map(str, self.parameters))), 200) or "none"
                raise place.error(f"unknown parameter #{{{name}}} (defined: {defined})")
            text = str(self.parameters[name])
            added += len(text) - len(match.group(0))
            if len(value) + added > MAX_PROPERTY_CHARS:
                raise place.error(
                    f"with its parameters substituted the value is longer than the "
                    f"{MAX_PROPERTY_CHARS} characters a property may hold"
                )
            return text

        result = _PARAMETER.sub(replace, value)
        self.substituted += max(added, 0)
        if self.substituted > MAX_EXPANDED_CHARS:
            raise place.error(
                f"substituting parameters adds more than {MAX_EXPANDED_CHARS} characters "
                f"to the flow, the most it may grow"
            )
        return result

    # ports and connections

    def _ports(self, raw, place: _Place, processors: dict) -> dict[str, PortDefinition]:
        ports: dict[str, PortDefinition] = {}
        for index, item in enumerate(_list(raw, place, "a list of ports")):
            here = place.at(index)
            item = _mapping(item, here, f"a mapping (a port with an id and a type in {PORT_KINDS})")
            port_id = _text(item.get("id"), here.at("id"), "text (the port's id)")
            kind = item.get("type")
            if kind not in PORT_KINDS:
                raise here.at("type").error(f"expected one of {', '.join(PORT_KINDS)}, got {_kind(kind)}")
            if port_id in processors or port_id in ports:
                raise here.at("id").error(
                    f"id {_short(port_id)!r} is already used by a processor or port: give each its own"
                )
            ports[port_id] = PortDefinition(port_id, kind)
        return ports

    def _connections(self, raw, place: _Place, processors: dict, ports: dict) -> tuple:
        connections = []
        seen = set()
        for index, item in enumerate(_list(raw, place, "a list of connections")):
            connection = self._connection(item, place.at(index), processors, ports)
            if connection.id in seen:
                raise place.at(index).error(
                    f"duplicate connection id {_short(connection.id)!r}: give each connection its own id"
                )
            seen.add(connection.id)
            connections.append(connection)
        return tuple(connections)

    def _connection(self, raw, place: _Place, processors: dict, ports: dict) -> ConnectionDefinition:
        raw = _mapping(raw, place, "a mapping (a connection with a source and a destination)")
        _refuse_unknown_keys(raw, _CONNECTION_KEYS, place)
        _text(raw.get("name"), place.at("name"), required=False)
        src = _connection_end(raw.get("source"), "source", place, processors, ports)
        dst = _connection_end(raw.get("destination"), "destination", place, processors, ports)
        if src in ports and ports[src].kind != "input":
            raise place.at("source").error(
                f"only an input port can be a connection's source; {_short(src)!r} is an {ports[src].kind} port"
            )
        if dst in ports and ports[dst].kind == "input":
            raise place.at("destination").error(f"an input port cannot be a connection's destination ({_short(dst)!r})")
        relationships = _connected_relationships(
            raw.get("relationships"), processors.get(src), place.at("relationships")
        )
        default_id = f"{src}/{'+'.join(relationships)}/{dst}".replace("//", "/")
        connection_id = _text(raw.get("id"), place.at("id"), "text (the connection's id)", required=False)
        prioritizers = _prioritizers(raw.get("prioritizers"), place.at("prioritizers"))
        values = self._back_pressure(raw.get("back_pressure"), place.at("back_pressure"))
        values.update(_swap(raw, place))
        if "expiration" in raw:
            seconds = _duration(raw["expiration"], place.at("expiration"))
            values["expiration_ms"] = int(seconds * 1000)
            if seconds and not values["expiration_ms"]:
                raise place.at("expiration").error(
                    f"{_short(str(raw['expiration']))!r} is less than 1 ms, which "
                    "would mean never: give 0 sec for never, or at least 1 ms"
                )
        return ConnectionDefinition(
            connection_id or default_id, src, relationships, dst, prioritizers=prioritizers, **values
        )

    def _back_pressure(self, raw, place: _Place) -> dict[str, int]:
        pressure = _mapping(raw, place, "a mapping with object_count and/or data_size")
        _refuse_unknown_keys(pressure, _BACK_PRESSURE_KEYS, place)
        values = {}
        if "object_count" in pressure:
            values["back_pressure_count"] = _count(pressure["object_count"], place.at("object_count"), 0)
        if "data_size" in pressure:
            here = place.at("data_size")
            values["back_pressure_size"] = _size(self._substitute(pressure["data_size"], here), here)
        return values


def _fill_defaults(descriptors, properties: dict, place: _Place) -> None:
    """Every property of `descriptors` not given: its default, or None; a required one
    missing is refused."""
    for descriptor in descriptors:
        if descriptor.name in properties:
            continue
        if descriptor.default is not None:
            properties[descriptor.name] = descriptor.convert(descriptor.default)
        elif descriptor.required:
            raise place.at(descriptor.name).error("required property is missing")
        else:
            properties[descriptor.name] = None


def _dynamic_property(cls, value, place: _Place):
    if not cls.dynamic_properties:
        known = ", ".join(d.name for d in cls.properties) or "none"
        raise place.error(f"{cls.type_name or cls.__name__} has no such property (it has: {known})")
    if value is None:
        raise place.error("expected a value (text or an expression), got nothing (null)")
    try:
        return compile_expression(str(value))
    except (ExpressionError, ValueError) as error:
        raise place.error(_short(str(error), 300)) from None
    except RecursionError:
        raise place.error("the expression is nested too deeply to read") from None


def _convert(descriptor, value, place: _Place):
    kind = descriptor.kind
    try:
        converted = descriptor.convert(value)
    except (ValueError, ExpressionError) as error:
        raise place.error(f"wrong value for {_article(kind)} property: {_short(str(error), 300)}") from None
    except OverflowError:
        raise place.error(f"wrong value for {_article(kind)} property: {_kind(value)} is too large") from None
    except RecursionError:
        raise place.error(f"wrong value for {_article(kind)} property: nested too deeply to read") from None
    if isinstance(converted, float) and not math.isfinite(converted):
        raise place.error(f"wrong value for {_article(kind)} property: expected a finite number, got {_kind(value)}")
    if isinstance(converted, int) and not isinstance(converted, bool) and abs(converted) >= _MAX_INTEGER:
        raise place.error(f"wrong value for {_article(kind)} property: expected a number within 64 bits")
    return converted


def _scheduling(raw, place: _Place) -> SchedulingDefinition:
    counts: dict[str, int] = {}
    durations: dict[str, float] = {}
    for key, value in _mapping(raw, place, "a mapping of scheduling settings").items():
        if key not in _SCHEDULING_KEYS:
            raise place.at(key).error(f"unknown scheduling key (known: {', '.join(_SCHEDULING_KEYS)})")
        if key in ("concurrent_tasks", "max_rollbacks"):
            counts[key] = _count(value, place.at(key), 1)
        elif key == "cron":
            cron = _text(value, place.at(key), "text (a Quartz cron expression)")
            try:
                parse_cron(cron)
            except CronError as error:
                raise place.at(key).error(str(error)) from None
            if "run_schedule" in raw:
                raise place.at(key).error("give cron or run_schedule, not both")
        else:
            durations[_SCHEDULING_KEYS[key]] = _duration(value, place.at(key))
    if counts.get("concurrent_tasks", 1) > MAX_CONCURRENT_TASKS:
        raise place.at("concurrent_tasks").error(
            f"expected at most {MAX_CONCURRENT_TASKS} concurrent tasks, got {counts['concurrent_tasks']} (tasks beyond "
            "the node's threads only wait)"
        )
    for key, field in _SCHEDULING_KEYS.items():
        if key == "cron":
            continue
        if durations.get(field, 0) > MAX_SCHEDULING_S:
            raise place.at(key).error(
                f"the duration {_short(str(raw[key]))!r} is longer than a year, the most a "
                f"{key} may be (a number without a unit is seconds)"
            )
    return SchedulingDefinition(
        concurrent_tasks=counts.get("concurrent_tasks", SchedulingDefinition.concurrent_tasks),
        max_rollbacks=counts.get("max_rollbacks", SchedulingDefinition.max_rollbacks),
        cron=raw.get("cron") if isinstance(raw, dict) else None,
        **durations,  # the fields ending in _s
    )


def _auto_terminate(raw, relationships: tuple, place: _Place) -> tuple[str, ...]:
    names = _list(raw, place.at("auto_terminate"), "a list of relationships")
    for index, name in enumerate(names):
        _text(name, place.at("auto_terminate", index), "text (a relationship)")
        if name not in relationships:
            raise place.error(
                f"auto_terminate names unknown relationship {_short(name)!r} (it has {_listing(relationships)})"
            )
    return tuple(names)


def _connection_end(value, end: str, place: _Place, processors: dict, ports: dict) -> str:
    value = _text(value, place.at(end), "text (a processor's or port's id)")
    if value not in processors and value not in ports:
        raise place.error(f"{end} {_short(value)!r} is neither a processor nor a port")
    return value


def _connected_relationships(raw, source, place: _Place) -> tuple[str, ...]:
    """The relationships of `source` (None: a port) that a connection takes: those named,
    or `success` when none are and it has one."""
    names = _names(raw, place, "relationship") if raw is not None else []
    if source is None:
        return ("",)
    if not names:
        if "success" not in source.relationships:
            raise place.error(
                f"name the relationships of {_short(source.id)!r} to connect (it has {_listing(source.relationships)})"
            )
        names = ["success"]
    for index, name in enumerate(names):
        if name not in source.relationships:
            raise place.at(index).error(
                f"unknown relationship {_short(name)!r} of {_short(source.id)!r} (it has "
                f"{_listing(source.relationships)})"
            )
    return tuple(names)


def _prioritizers(raw, place: _Place) -> tuple[str, ...]:
    names = tuple(_names(raw, place, "prioritizer name"))
    try:
        key_function(names)
    except ValueError as error:
        raise place.error(_short(str(error), 200)) from None
    return names


def _swap(raw: dict, place: _Place) -> dict:
    values = {key: _count(raw[key], place.at(key), 1) for key in ("swap_threshold", "swap_batch") if key in raw}
    threshold = values.get("swap_threshold", DEFAULT_SWAP_THRESHOLD)
    batch = values.get("swap_batch", min(DEFAULT_SWAP_BATCH, threshold))
    if batch > threshold:
        raise place.at("swap_batch").error(f"swap_batch ({batch}) cannot exceed swap_threshold ({threshold})")
    values["swap_batch"] = batch
    return values


def _check_every_relationship_goes_somewhere(processors: dict, connections: tuple, place: _Place) -> None:
    connected: dict[str, set] = {}
    for connection in connections:
        connected.setdefault(connection.source, set()).update(connection.relationships)
    for definition in processors.values():
        for relationship in definition.relationships:
            if relationship not in connected.get(definition.id, ()) and relationship not in definition.auto_terminate:
                raise _Place(place.source, processor=definition.id).error(
                    f"relationship {_short(relationship)!r} is neither connected nor auto-terminated "
                    f"(add a connection, or list it under auto_terminate)"
                )
