"""One NiFi component's properties to its Custody component's, as its
`ComponentMapping` says: each NiFi property mapped (or dropped at NiFi's default, or a
problem), dynamic properties carried as they are where the Custody type takes them,
every #{parameter} reference and every expression function checked. Pure: what it
finds goes to the `Problem` list and the report lines it is given."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .conversions import at_custody_default, to_custody
from .expression_check import missing_functions
from .mapping_model import ComponentMapping, PropertyMapping
from .parameters import referenced, substitute
from .problems import Problem, extend
from .values import has_parameter


@dataclass(frozen=True)
class ConnectionService:
    """A controller service whose settings a `connection` property carries into the
    component that names it (NiFi 2's Kafka3ConnectionService)."""

    path: str  # its JSON path, where its problems are reported
    name: str
    type: str
    properties: dict[str, str | None]
    parameters: dict  # name -> NiFiParameter, its group's


@dataclass
class PropertyContext:
    """What mapping one component's properties needs to know of the rest of the flow."""

    path: str  # the component's JSON path
    type_name: str  # the Custody type, for messages
    visible_parameters: dict  # name -> NiFiParameter, the component's group's
    service_ids: dict[str, str]  # NiFi service identifier -> Custody service id
    external_services: dict[str, str]  # NiFi identifier -> name, outside the document
    problems: list[Problem]
    report: list[str]
    # NiFi identifier -> the controller service a `connection` property may name, with
    # the parameters visible to it (NiFi 2's Kafka Connection Service)
    connection_services: dict[str, ConnectionService] = field(default_factory=dict)

    def problem(self, name: str, message: str) -> None:
        self.problems.append(Problem(extend(self.path, "properties", name), message))


def map_properties(
    mapping: ComponentMapping,
    custody_class,
    nifi_properties: dict[str, str | None],
    dynamic_names: frozenset[str],
    context: PropertyContext,
) -> tuple[dict, dict]:
    """(properties, dynamic properties) of the Custody component."""
    properties: dict = {}
    for property_mapping in mapping.properties:
        name, given = _given(property_mapping, nifi_properties)
        both = {nifi_properties.get(other) for other in property_mapping.names()} - {None}
        if len(both) > 1:
            context.problem(
                name,
                f"set twice, by NiFi 1.x's name and NiFi 2's ({' and '.join(map(repr, property_mapping.names()))}), "
                "to different values: keep one",
            )
            continue
        if not _in_force(property_mapping, mapping, nifi_properties):
            if given is not None:
                context.report.append(f"    {name}: {given!r} -> dropped: NiFi ignores it with these settings")
            continue
        if property_mapping.kind == "connection":
            properties.update(_connection(property_mapping, name, given, custody_class, context))
            continue
        value = _mapped(property_mapping, name, given, custody_class, context)
        if value is not _DROPPED:
            properties[property_mapping.custody] = value
    for custody_name, value in mapping.implied.items():
        properties.setdefault(custody_name, value)
        context.report.append(f"    (what NiFi's {context.type_name} does) -> {custody_name}: {value!r}")
    dynamic: dict = {}
    known = mapping.by_nifi_name()
    takes_dynamic = getattr(custody_class, "dynamic_properties", False)
    for name, value in nifi_properties.items():
        if name in known or value is None:
            continue
        if takes_dynamic and custody_class.descriptor(name) is None:
            _check_value(name, value, context, expression=True)
            dynamic[name] = value
            context.report.append(f"    {name}: {value!r} -> dynamic property {name!r}")
        elif name in dynamic_names and not takes_dynamic:
            context.problem(name, f"Custody's {context.type_name} takes no dynamic properties")
        else:
            context.problem(
                name, f"Custody's {context.type_name} has no equivalent of this property (set to {value!r})"
            )
    return properties, dynamic


class _Dropped:
    def __repr__(self) -> str:
        return "dropped"


_DROPPED = _Dropped()


def _given(mapping: PropertyMapping, nifi_properties: dict[str, str | None]) -> tuple[str, str | None]:
    """(the name the document gives the property by, its value or None): NiFi 1.x's
    name or NiFi 2's, whichever is set."""
    for name in mapping.names():
        value = nifi_properties.get(name)
        if value is not None:
            return name, value
    return next((name for name in mapping.names() if name in nifi_properties), mapping.nifi), None


def _in_force(mapping: PropertyMapping, component: ComponentMapping, nifi_properties: dict[str, str | None]) -> bool:
    """Whether NiFi reads the property: its dependsOn holds (or it has none)."""
    if mapping.depends_on is None:
        return True
    name, values = mapping.depends_on
    other = component.by_nifi_name().get(name)
    if other is None:
        return True
    _, given = _given(other, nifi_properties)
    value = given if given is not None else other.nifi_default
    return value in values if values else value is not None


def _connection(
    mapping: PropertyMapping, name: str, given: str | None, custody_class, context: PropertyContext
) -> dict:
    """The properties a `connection` property brings: the settings of the controller
    service it names, mapped as that service's type says. A problem of a setting is
    reported at the service's own property."""
    if given is None:
        return {}
    service = context.connection_services.get(given)
    if service is None:
        if given in context.external_services:
            where = f"controller service {context.external_services[given]!r} ({given}), outside the downloaded group"
        else:
            where = f"controller service {given!r}, which the document does not hold"
        context.problem(name, f"refers to {where}")
        return {}
    by_type = {nifi_type: table for table in mapping.services for nifi_type in table.nifi_types}
    table = by_type.get(service.type)
    if table is None:
        known = ", ".join(t.rpartition(".")[2] for t in by_type)
        context.problems.append(
            Problem(
                f"{service.path}.type",
                f"Custody's {context.type_name} takes its settings from NiFi's {known}, not "
                f"{service.type.rpartition('.')[2]!r} ({service.type})",
            )
        )
        return {}
    context.report.append(f"    {name}: {given!r} -> the settings of service {service.name!r} ({service.path}):")
    inner = replace(context, path=service.path, visible_parameters=service.parameters)
    properties, _ = map_properties(table, custody_class, service.properties, frozenset(), inner)
    return properties


def _mapped(mapping: PropertyMapping, name: str, given: str | None, custody_class, context: PropertyContext):
    """The Custody value of one NiFi property, or `_DROPPED`."""
    explicit = given is not None
    value = given if explicit else mapping.nifi_default
    shown = f"    {name}: {value!r}" + ("" if explicit else " (NiFi's default)")
    if value is None:
        return _DROPPED
    if mapping.kind == "none":
        if mapping.accepts(value) or not explicit:
            context.report.append(f"{shown} -> dropped: Custody does this anyway{_note(mapping)}")
            return _DROPPED
        accepted = ", ".join(repr(v) for v in (mapping.nifi_default, *mapping.accepted) if v is not None)
        context.problem(
            name,
            f"Custody's {context.type_name} has no equivalent of this property set to {value!r}"
            + (f" (only {accepted} can be carried over)" if accepted else "")
            + _note(mapping),
        )
        return _DROPPED
    if mapping.defaults_agree and value == mapping.nifi_default:
        context.report.append(f"{shown} -> {mapping.custody}: Custody's default")
        return _DROPPED
    _check_parameters(name, value, context)
    if mapping.kind in ("choice", "service") and has_parameter(value):
        try:
            value = substitute(value, context.visible_parameters)
        except ValueError as error:
            context.problem(name, str(error))
            return _DROPPED
    if mapping.kind == "service":
        return _service(name, mapping, value, shown, context)
    try:
        custody_value = to_custody(mapping, value)
    except ValueError as error:
        if mapping.default_ignorable and value == mapping.nifi_default:
            context.report.append(f"{shown} -> dropped: {error}{_note(mapping)}")
        else:
            context.problem(name, str(error))
        return _DROPPED
    descriptor = custody_class.descriptor(mapping.custody)
    if descriptor is None:
        context.problem(name, f"Custody's {context.type_name} has no property {mapping.custody!r}")
        return _DROPPED
    if not has_parameter(custody_value):
        try:
            descriptor.convert(custody_value)
        except ValueError as error:
            context.problem(name, f"as Custody's {mapping.custody}: {error}")
            return _DROPPED
        if at_custody_default(descriptor, custody_value):
            context.report.append(f"{shown} -> {mapping.custody}: Custody's default")
            return _DROPPED
    if isinstance(custody_value, str):
        expression = descriptor.kind == "expression" or mapping.expression_language
        _check_value(name, custody_value, context, expression=expression, parameters=False)
    context.report.append(f"{shown} -> {mapping.custody}: {custody_value!r}")
    return custody_value


def _service(name: str, mapping: PropertyMapping, value: str, shown: str, context: PropertyContext):
    service_id = context.service_ids.get(value)
    if service_id is None:
        if value in context.external_services:
            where = f"controller service {context.external_services[value]!r} ({value}), outside the downloaded group"
        else:
            where = f"controller service {value!r}, which the document does not hold"
        context.problem(name, f"refers to {where}")
        return _DROPPED
    context.report.append(f"{shown} -> {mapping.custody}: service {service_id!r}")
    return service_id


def _check_value(name: str, value: str, context: PropertyContext, *, expression: bool, parameters: bool = True) -> None:
    if parameters:
        _check_parameters(name, value, context)
    if "${" not in value:
        return
    if not expression:
        context.problem(
            name, f"NiFi evaluates the Expression Language in {value!r}; Custody's property takes plain text here"
        )
        return
    for function in missing_functions(value):
        context.problem(name, f"Custody's expression language has no function {function}() (in {value!r})")


def _check_parameters(name: str, value: str, context: PropertyContext) -> None:
    for parameter in referenced(value):
        if parameter not in context.visible_parameters:
            context.problem(
                name, f"references parameter #{{{parameter}}}, which the group's parameter context does not give"
            )


def _note(mapping: PropertyMapping) -> str:
    return f" ({mapping.note})" if mapping.note else ""
