"""NiFi 2 Python processors in a NiFi flow definition, to and from the Custody
processors `flow.python_extensions` makes of the same classes.

NiFi writes such a processor with its class name as its `type` (no package: `TagAndUpper`)
and the bundle `org.apache.nifi:python-extensions:<ProcessorDetails.version>`. Custody
runs the same class under the same name, with NiFi's property names as its property
names and NiFi's relationship names, so the mapping is made from the class itself
rather than from a table: every property is carried as it is (a parameter reference or
an expression checked like any other), except `Record Reader` and `Record Writer`,
which name the flow's record services. The class is found only when its directory was
loaded into the registry (`custody flow import --python-extensions DIR`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..python_api.nifiapi.properties import ExpressionLanguageScope
from ..python_extensions import versioned_name
from ..python_extensions.adapter import NifiProcessor
from ..python_extensions.work import READER_NAME, WRITER_NAME
from .mapping_model import ComponentMapping, PropertyMapping

PYTHON_ARTIFACT = "python-extensions"  # the bundle NiFi gives every Python processor
_SERVICE_PROPERTIES = (READER_NAME, WRITER_NAME)


def python_class(registry: Mapping, name: str, version: str = "") -> type[NifiProcessor] | None:
    """The Custody processor made of the NiFi Python class `name`, if the registry has
    one: of `version` when that version is loaded beside a later one (registered as
    `name@version`), else the one under `name` (the latest version loaded, which NiFi
    too takes for a version it does not have)."""
    if version:
        pinned = as_python(registry.get(versioned_name(name, version)))
        if pinned is not None:
            return pinned
    return as_python(registry.get(name))


def as_python(cls: object) -> type[NifiProcessor] | None:
    """`cls` if it is a Custody processor made of a NiFi Python class, else None."""
    return cls if isinstance(cls, type) and issubclass(cls, NifiProcessor) else None


def python_mapping(cls: type[NifiProcessor]) -> ComponentMapping:
    """The mapping of a NiFi Python processor's properties to the Custody processor of the
    same class: each by its own name."""
    scoped = {
        descriptor.name
        for descriptor in cls.nifi_descriptors
        if descriptor.expressionLanguageScope not in (None, ExpressionLanguageScope.NONE)
    }
    properties = tuple(
        PropertyMapping(
            descriptor.name,
            descriptor.name,
            kind="service" if descriptor.name in _SERVICE_PROPERTIES else "text",
            expression_language=descriptor.name in scoped,
        )
        for descriptor in cls.properties
    )
    return ComponentMapping(
        custody_type=cls.type_name,
        nifi_types=(cls.source.class_name,),
        artifact=PYTHON_ARTIFACT,
        properties=properties,
        note="a NiFi Python processor, run by Custody in-process",
    )


def unknown_type_hint(nifi_type: str) -> str:
    """What to say of a processor type Custody does not know: a type without a package
    is NiFi's way of naming a Python processor."""
    if "." in nifi_type:
        return "see docs/reference/nifi-import.md for those it maps"
    return "a NiFi Python processor is found by its class name in the directories given with --python-extensions DIR"
