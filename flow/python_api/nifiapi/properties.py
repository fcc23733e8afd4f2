"""Properties as NiFi 2's Python API declares and reads them: `PropertyDescriptor`,
`PropertyDependency`, `ExpressionLanguageScope`, `StandardValidators`, `TimeUnit`,
`DataUnit`, the context a processor is given (`ProcessContext`) and the values it reads
from it (`PythonPropertyValue`).

Names and signatures are NiFi's. Behind them: a validator is a Custody object that says
what is wrong with a value (`Validator.problem`), checked when the flow is loaded; an
expression (`${filename:toUpper()}`) is Custody's expression language
(`flow.expression`), compiled when the flow is loaded and evaluated against the
FlowFile a processor passes to `evaluateAttributeExpressions`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from enum import Enum
from urllib.parse import urlparse

from flow.expression import Expression
from flow.units import parse_duration, parse_size

from .componentstate import StateManager


class ExpressionLanguageScope(Enum):
    NONE = 1
    ENVIRONMENT = 2
    FLOWFILE_ATTRIBUTES = 3


class Validator:
    """One of NiFi's standard validators: `problem(value)` says what is wrong with a
    configured value, None when nothing is. A value holding an expression, of a property
    that takes one, is left to be checked when it is evaluated (as NiFi's validators do),
    unless `checks_expressions`."""

    def __init__(self, name: str, check: Callable[[str], str | None], *, checks_expressions: bool = False):
        self.name = name
        self._check = check
        self.checks_expressions = checks_expressions

    def problem(self, value: str) -> str | None:
        return self._check(value)

    def __repr__(self) -> str:
        return f"StandardValidators.{self.name}"


def _integer(low: int | None, high: int | None, what: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        try:
            number = int(value.strip())
        except ValueError:
            return f"must be {what}, not {value!r}"
        if (low is not None and number < low) or (high is not None and number > high):
            return f"must be {what}, not {number}"
        return None

    return check


def _number(value: str) -> str | None:
    try:
        float(value)
    except ValueError:
        return f"must be a number, not {value!r}"
    return None


def _non_empty(value: str) -> str | None:
    return None if value != "" else "must not be empty"


def _boolean(value: str) -> str | None:
    return None if value.lower() in ("true", "false") else f"must be true or false, not {value!r}"


def _time_period(value: str) -> str | None:
    try:
        parse_duration(value)
    except ValueError as error:
        return str(error)
    return None


def _data_size(value: str) -> str | None:
    try:
        parse_size(value)
    except ValueError as error:
        return str(error)
    return None


def _regular_expression(value: str) -> str | None:
    try:
        re.compile(value)
    except re.error as error:
        return f"is not a valid regular expression: {error}"
    return None


def _url(value: str) -> str | None:
    parsed = urlparse(value)
    return None if parsed.scheme and parsed.netloc else f"must be a URL, not {value!r}"


def _uri(value: str) -> str | None:
    return None if urlparse(value).scheme else f"must be a URI, not {value!r}"


def _host_port_list(value: str) -> str | None:
    for item in value.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            return f"must be a comma-separated list of host:port, not {value!r}"
    return None


def _file_exists(value: str) -> str | None:
    return None if os.path.exists(value) else f"names no existing file: {value!r}"


class StandardValidators:
    ALWAYS_VALID = Validator("ALWAYS_VALID", lambda value: None)
    NON_EMPTY_VALIDATOR = Validator("NON_EMPTY_VALIDATOR", _non_empty, checks_expressions=True)
    INTEGER_VALIDATOR = Validator("INTEGER_VALIDATOR", _integer(-(1 << 31), (1 << 31) - 1, "an integer"))
    POSITIVE_INTEGER_VALIDATOR = Validator(
        "POSITIVE_INTEGER_VALIDATOR", _integer(1, (1 << 31) - 1, "a positive integer")
    )
    POSITIVE_LONG_VALIDATOR = Validator("POSITIVE_LONG_VALIDATOR", _integer(1, (1 << 63) - 1, "a positive integer"))
    NON_NEGATIVE_INTEGER_VALIDATOR = Validator(
        "NON_NEGATIVE_INTEGER_VALIDATOR", _integer(0, (1 << 31) - 1, "a non-negative integer")
    )
    NUMBER_VALIDATOR = Validator("NUMBER_VALIDATOR", _number)
    LONG_VALIDATOR = Validator("LONG_VALIDATOR", _integer(-(1 << 63), (1 << 63) - 1, "an integer"))
    PORT_VALIDATOR = Validator("PORT_VALIDATOR", _integer(1, 65535, "a port from 1 to 65535"))
    NON_EMPTY_EL_VALIDATOR = Validator("NON_EMPTY_EL_VALIDATOR", _non_empty, checks_expressions=True)
    HOSTNAME_PORT_LIST_VALIDATOR = Validator("HOSTNAME_PORT_LIST_VALIDATOR", _host_port_list)
    BOOLEAN_VALIDATOR = Validator("BOOLEAN_VALIDATOR", _boolean)
    URL_VALIDATOR = Validator("URL_VALIDATOR", _url)
    URI_VALIDATOR = Validator("URI_VALIDATOR", _uri)
    REGULAR_EXPRESSION_VALIDATOR = Validator("REGULAR_EXPRESSION_VALIDATOR", _regular_expression)
    REGULAR_EXPRESSION_WITH_EL_VALIDATOR = Validator("REGULAR_EXPRESSION_WITH_EL_VALIDATOR", _regular_expression)
    TIME_PERIOD_VALIDATOR = Validator("TIME_PERIOD_VALIDATOR", _time_period)
    DATA_SIZE_VALIDATOR = Validator("DATA_SIZE_VALIDATOR", _data_size)
    FILE_EXISTS_VALIDATOR = Validator("FILE_EXISTS_VALIDATOR", _file_exists)


class PropertyDependency:
    """The property it belongs to is in force only while `property_descriptor` is set
    (to one of `dependent_values`, when any are given)."""

    def __init__(self, property_descriptor: PropertyDescriptor, *dependent_values: str):
        self.property_descriptor = property_descriptor
        self.dependent_values = dependent_values


class ResourceDefinition:
    def __init__(self, allow_multiple=False, allow_file=True, allow_url=False, allow_directory=False, allow_text=False):
        self.allow_multiple = allow_multiple
        self.allow_file = allow_file
        self.allow_url = allow_url
        self.allow_directory = allow_directory
        self.allow_text = allow_text


class PropertyDescriptor:
    """A property of a processor, with NiFi's arguments; its `name` is the property's
    name in a Custody flow too."""

    def __init__(
        self,
        name,
        description,
        required=False,
        sensitive=False,
        display_name=None,
        default_value=None,
        allowable_values=None,
        dependencies=None,
        expression_language_scope=ExpressionLanguageScope.NONE,
        dynamic=False,
        validators=None,
        resource_definition=None,
        controller_service_definition=None,
    ):
        self.name = name
        self.description = description
        self.required = required
        self.sensitive = sensitive
        self.displayName = display_name
        self.defaultValue = None if default_value is None else str(default_value)
        self.allowableValues = allowable_values
        self.dependencies = dependencies
        self.expressionLanguageScope = expression_language_scope
        self.dynamic = dynamic
        self.validators = [StandardValidators.ALWAYS_VALID] if validators is None else validators
        self.resourceDefinition = resource_definition
        self.controllerServiceDefinition = controller_service_definition

    @property
    def supports_expressions(self) -> bool:
        scope = self.expressionLanguageScope
        return scope is not None and scope != ExpressionLanguageScope.NONE and str(scope) != "NONE"

    def __repr__(self) -> str:
        return f"PropertyDescriptor({self.name!r})"


class TimeUnit(Enum):
    NANOSECONDS = 1e-9
    MICROSECONDS = 1e-6
    MILLISECONDS = 1e-3
    SECONDS = 1.0
    MINUTES = 60.0
    HOURS = 3600.0
    DAYS = 86400.0


class DataUnit(Enum):
    B = 1
    KB = 1 << 10
    MB = 1 << 20
    GB = 1 << 30
    TB = 1 << 40


class _AttributeView:
    """What an expression reads of a FlowFile, for an attribute map that is not one."""

    __slots__ = ("attributes",)
    id = ""
    size = 0
    entry_date = 0
    lineage_start_date = 0

    def __init__(self, attributes: dict[str, str]):
        self.attributes = attributes


def _expression_target(attribute_map):
    """The Custody FlowFile (or a view of attributes) an expression is evaluated on."""
    if attribute_map is None:
        return None
    flowfile = getattr(attribute_map, "custody_flowfile", None)
    if flowfile is not None:
        return flowfile
    if isinstance(attribute_map, dict):
        return _AttributeView(attribute_map)
    return _AttributeView(dict(attribute_map.getAttributes()))


class PythonPropertyValue:
    """A configured value: the text (`getValue`) and what it reads as."""

    def __init__(self, value: str | None, expression: Expression | None = None):
        self.value = value
        self._expression = expression

    def getValue(self) -> str | None:
        return self.value

    def isSet(self) -> bool:
        return self.value is not None

    def isExpressionLanguagePresent(self) -> bool:
        return self._expression is not None

    def asInteger(self) -> int | None:
        return None if self.value is None else int(self.value)

    def asBoolean(self) -> bool | None:
        return None if self.value is None else self.value.lower() == "true"

    def asFloat(self) -> float | None:
        return None if self.value is None else float(self.value)

    def asTimePeriod(self, time_unit: TimeUnit) -> int | None:
        """The duration in `time_unit`, truncated to a whole number as NiFi's is."""
        if self.value is None:
            return None
        return int(parse_duration(self.value) / time_unit.value)

    def asDataSize(self, data_unit: DataUnit) -> float | None:
        if self.value is None:
            return None
        return parse_size(self.value) / data_unit.value

    def asControllerService(self):
        raise NotImplementedError(
            "Custody gives Python processors no controller services (a RecordTransform's reader and writer "
            "are the framework's); see docs/develop/python-processors.md"
        )

    def evaluateAttributeExpressions(self, attributeMap=None) -> PythonPropertyValue:
        """The value with its expressions evaluated against `attributeMap` (the FlowFile
        given to `transform`, the attribute map of a record, a dict, or None)."""
        if self._expression is None:
            return self
        return PythonPropertyValue(self._expression.evaluate(_expression_target(attributeMap)))

    def __repr__(self) -> str:
        return f"PythonPropertyValue({self.value!r})"


class PropertyContext:
    def __init__(self, values: dict[str, PythonPropertyValue], descriptors: dict[str, PropertyDescriptor]):
        self.property_values = values
        self._descriptors = descriptors

    def getProperty(self, descriptor) -> PythonPropertyValue | None:
        name = descriptor if isinstance(descriptor, str) else descriptor.name
        return self.property_values.get(name)

    def getProperties(self) -> dict[PropertyDescriptor, str | None]:
        return {self._descriptors[name]: value.getValue() for name, value in self.property_values.items()}

    def newPropertyValue(self, value: str) -> PythonPropertyValue:
        from flow.expression import compile_expression

        expression = compile_expression(value)
        return PythonPropertyValue(value, None if expression.is_literal else expression)


class ProcessContext(PropertyContext):
    """What `transform`, `create`, `onScheduled` and `onStopped` are given: the
    processor's name, its property values (those whose dependencies are met), its state
    manager, and `yield_resources`."""

    def __init__(
        self,
        name: str,
        values: dict[str, PythonPropertyValue],
        descriptors: dict[str, PropertyDescriptor],
        state_manager: StateManager,
        yield_resources: Callable[[], None] = lambda: None,
    ):
        super().__init__(values, descriptors)
        self.name = name
        self._state_manager = state_manager
        self._yield = yield_resources

    def getName(self) -> str:
        return self.name

    def yield_resources(self) -> None:
        self._yield()

    def getStateManager(self) -> StateManager:
        return self._state_manager


class ValidationContext(PropertyContext):
    """What `customValidate(context)` is given: the property values."""


class ValidationResult:
    def __init__(self, subject="", explanation="", valid=False, input=None):
        self.subject = subject
        self.explanation = explanation
        self.valid = valid
        self.input = input
