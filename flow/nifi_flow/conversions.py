"""One property's value, NiFi's text to Custody's value and back, as its
`PropertyMapping` says. Pure; each raises ValueError saying what is wrong."""

from __future__ import annotations

from ..units import parse_duration, parse_size
from .mapping_model import PropertyMapping
from .values import (
    duration_text,
    has_parameter,
    nifi_boolean,
    nifi_duration_s,
    nifi_integer,
    nifi_size_bytes,
    size_text,
)


def to_custody(mapping: PropertyMapping, value: str):
    """The Custody value of NiFi's `value` for `mapping` (kind other than none). A value
    holding a #{parameter} is carried as is where Custody reads the same notation (it
    substitutes parameters as it loads); a choice is looked up, so its parameters must
    be substituted before."""
    kind = mapping.kind
    if kind in ("text", "service"):
        return value
    if has_parameter(value) and kind in ("integer", "boolean", "duration", "size"):
        return value
    if kind == "integer":
        return nifi_integer(value)
    if kind == "boolean":
        return nifi_boolean(value)
    if kind == "duration":
        seconds = nifi_duration_s(value)
        return value.strip() if _custody_duration(value) == seconds else duration_text(seconds)
    if kind == "size":
        size = nifi_size_bytes(value)
        return value.strip() if _custody_size(value) == size else size_text(size)
    if kind == "choice":
        if value not in mapping.choices:
            raise ValueError(
                f"NiFi's value {value!r} has no Custody equivalent (those that have: {', '.join(mapping.choices)})"
            )
        return mapping.choices[value]
    raise ValueError(f"no Custody property to carry {value!r} to")


def to_nifi(mapping: PropertyMapping, value) -> str | None:
    """NiFi's text for the Custody value `value` (as a flow gives it, or its default) of
    `mapping`'s property; None stays unset."""
    if value is None:
        return None
    kind = mapping.kind
    if has_parameter(value):
        return str(value)
    if kind in ("text", "service"):
        return str(value)
    if kind == "integer":
        return str(int(value))
    if kind == "boolean":
        if isinstance(value, bool):
            return "true" if value else "false"
        return "true" if str(value).lower() in ("true", "yes", "1") else "false"
    if kind == "duration":
        return duration_text(parse_duration(value))
    if kind == "size":
        return size_text(parse_size(value))
    if kind == "choice":
        for nifi_value, custody_value in mapping.choices.items():
            if custody_value == str(value):
                return nifi_value
        raise ValueError(f"NiFi's {mapping.nifi!r} has no value for Custody's {value!r}")
    raise ValueError(f"no NiFi property to carry {value!r} to")


def at_custody_default(descriptor, value) -> bool:
    """Whether `value` is what Custody's property `descriptor` takes when it is not set:
    an expression by its text, any other value once converted."""
    if value is None or descriptor.default is None:
        return value is None and descriptor.default is None
    if descriptor.kind == "expression":
        return str(value) == str(descriptor.default)
    try:
        return descriptor.convert(value) == descriptor.convert(descriptor.default)
    except ValueError:
        return False


def _custody_duration(value: str) -> float | None:
    try:
        return parse_duration(value)
    except ValueError:
        return None


def _custody_size(value: str) -> int | None:
    try:
        return parse_size(value)
    except ValueError:
        return None
