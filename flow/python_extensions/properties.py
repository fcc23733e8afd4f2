"""A NiFi processor's property descriptors in a Custody flow: declared, checked when the
flow is loaded (required, allowable values, NiFi's validators, dependencies, the
processor's own `customValidate`), and given to the processor as NiFi's
`PythonPropertyValue`s.

Every NiFi property is a Custody property of kind `string` under its NiFi name (a flow
writes `Number of Spaces: 4`); its default is NiFi's `default_value`. A value that holds
an expression (`${filename}`), of a property whose `expression_language_scope` is not
NONE, is compiled when the flow is loaded and evaluated by the processor's
`evaluateAttributeExpressions`.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ExpressionError
from ..expression import Expression, compile_expression
from ..processor import PropertyDescriptor
from ..python_api.nifiapi.properties import PropertyDescriptor as NifiDescriptor
from ..python_api.nifiapi.properties import PythonPropertyValue, ValidationContext


def custody_descriptor(descriptor: NifiDescriptor) -> PropertyDescriptor:
    text = descriptor.description or ""
    if descriptor.allowableValues:
        text += f" (one of: {', '.join(str(v) for v in descriptor.allowableValues)})"
    # `required` is checked here, with dependencies, not by the parser: a required
    # property whose dependency is not met need not be set (NiFi's rule).
    return PropertyDescriptor(descriptor.name, "string", default=descriptor.defaultValue, description=text.strip())


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, Expression):
        return value.text
    text = str(value)
    return text.lower() if text in ("True", "False") else text  # YAML's true as NiFi writes it


def configured_texts(
    descriptors: tuple[NifiDescriptor, ...], properties: Mapping, dynamic: Mapping
) -> dict[str, str | None]:
    """Property name -> the configured text (None: not set) of declared and dynamic properties."""
    texts = {descriptor.name: _text(properties.get(descriptor.name)) for descriptor in descriptors}
    texts.update({name: _text(expression) for name, expression in dynamic.items()})
    return texts


def in_force(descriptor: NifiDescriptor, by_name: Mapping[str, NifiDescriptor], texts: Mapping) -> bool:
    """Whether `descriptor`'s dependencies are met (each property it depends on in force
    and set, to one of the values named when any are)."""
    seen: set[str] = set()

    def met(current: NifiDescriptor) -> bool:
        if current.name in seen:
            return False  # a dependency cycle is never met
        seen.add(current.name)
        for dependency in current.dependencies or ():
            other = dependency.property_descriptor
            other = by_name.get(getattr(other, "name", other), other)
            value = texts.get(other.name)
            if value is None or not met(other):
                return False
            if dependency.dependent_values and value not in dependency.dependent_values:
                return False
        return True

    return met(descriptor)


def _expression(descriptor: NifiDescriptor, text: str) -> Expression | None:
    if not descriptor.supports_expressions or "${" not in text:
        return None
    expression = compile_expression(text)
    return None if expression.is_literal else expression


def problems(
    descriptors: tuple[NifiDescriptor, ...], dynamic_descriptor, properties: Mapping, dynamic: Mapping
) -> list[tuple[str, str]]:
    """What is wrong with the configured values, as (property, message)."""
    texts = configured_texts(descriptors, properties, dynamic)
    by_name = {d.name: d for d in descriptors}
    found: list[tuple[str, str]] = []
    checked = list(descriptors)
    for name in dynamic:
        checked.append(dynamic_descriptor(name) if dynamic_descriptor is not None else NifiDescriptor(name, ""))
    for descriptor in checked:
        text = texts.get(descriptor.name)
        if not in_force(descriptor, by_name, texts):
            continue
        if text is None:
            if descriptor.required:
                found.append((descriptor.name, "required property is missing"))
            continue
        if descriptor.allowableValues and text not in [str(v) for v in descriptor.allowableValues]:
            allowed = ", ".join(str(v) for v in descriptor.allowableValues)
            found.append((descriptor.name, f"expected one of {allowed}, got {text!r}"))
            continue
        try:
            expression = _expression(descriptor, text)
        except ExpressionError as error:
            found.append((descriptor.name, f"invalid expression: {error}"))
            continue
        for validator in descriptor.validators or ():
            if expression is not None and not getattr(validator, "checks_expressions", False):
                continue  # checked when it is evaluated, as NiFi's validators leave it
            problem = validator.problem(text) if hasattr(validator, "problem") else None
            if problem is not None:
                found.append((descriptor.name, f"{problem} ({validator!r})"))
                break
    return found


def property_values(
    descriptors: tuple[NifiDescriptor, ...], dynamic_descriptor, properties: Mapping, dynamic: Mapping
) -> tuple[dict[str, PythonPropertyValue], dict[str, NifiDescriptor]]:
    """The values a processor reads (`context.getProperty`): those in force, each with its
    expression compiled; and the descriptors by name."""
    texts = configured_texts(descriptors, properties, dynamic)
    by_name = {d.name: d for d in descriptors}
    for name in dynamic:
        descriptor = dynamic_descriptor(name) if dynamic_descriptor is not None else NifiDescriptor(name, "")
        descriptor.dynamic = True  # NiFi marks what getDynamicPropertyDescriptor gives as dynamic
        by_name[name] = descriptor
    values = {}
    for name, descriptor in by_name.items():
        if not in_force(descriptor, by_name, texts):
            continue
        text = texts.get(name)
        values[name] = PythonPropertyValue(text, None if text is None else _expression(descriptor, text))
    return values, by_name


def validation_context(values: dict[str, PythonPropertyValue], by_name: dict[str, NifiDescriptor]):
    return ValidationContext(values, by_name)
