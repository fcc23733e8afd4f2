"""How one NiFi component type corresponds to one Custody type: `ComponentMapping`
(the NiFi classes, the bundle NiFi loads them from, the Custody type) and, for each
NiFi property, a `PropertyMapping` (the Custody property, or none; how the value is
read). The tables (`processor_tables`, `service_tables`) are data of these shapes; the
import and the export read them both ways."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

# How a NiFi property's text becomes a Custody value:
#   text      carried as is (an expression, a regex, a path, a name)
#   integer, boolean, duration, size   read in NiFi's notation, written in Custody's
#   choice    one of NiFi's allowable values, looked up in `choices`
#   service   a controller service's identifier, to the Custody service made of it
#   connection  a controller service's identifier whose settings the Custody component
#             takes as its own properties (NiFi 2's Kafka Connection Service): mapped
#             through the `services` tables into the component that references it
#   none      Custody has no such property: only the values in `accepted` ("*": any)
#             mean what Custody does anyway; any other is a problem
KINDS = ("text", "integer", "boolean", "duration", "size", "choice", "service", "connection", "none")
ANY_VALUE = "*"


@dataclass(frozen=True)
class PropertyMapping:
    nifi: str
    custody: str | None
    nifi_default: str | None = None
    kind: str = "text"
    choices: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    accepted: tuple[str, ...] = ()
    # The NiFi default is spelt otherwise but means Custody's default (FetchFile's
    # "${absolute.path}/${filename}"): at it, the Custody property is left to its default.
    defaults_agree: bool = False
    # NiFi's default has no Custody equivalent but matters only with other settings
    # (a Kafka SASL mechanism without SASL): at it, the property is left out.
    default_ignorable: bool = False
    note: str = ""
    # The name NiFi 2 gives the property where it renamed it (a flow definition's
    # `properties` are keyed by the descriptors' names, and NiFi 2 migrated many of
    # them, `generate-ff-custom-text` to `Custom Text`): the import reads either, the
    # export writes `nifi` (NiFi 2 migrates the older name as it loads the flow).
    nifi2: str | None = None
    # A property NiFi 1.x does not have (NiFi 2's own): the export, which writes a
    # NiFi 1.x document, leaves it out.
    nifi2_only: bool = False
    # NiFi's dependsOn: the property is in force only while the property named here
    # (its value given, or its default) has one of these values; otherwise NiFi
    # ignores it, and so does the import.
    depends_on: tuple[str, tuple[str, ...]] | None = None
    # The NiFi component evaluates NiFi's Expression Language in this property itself
    # (a Python processor's descriptor with an expression language scope), whatever the
    # Custody descriptor's kind: an expression in it is carried, its functions checked.
    expression_language: bool = False
    # For `connection`: the controller service types it may reference, each with the
    # mapping of its properties into the component.
    services: tuple[ComponentMapping, ...] = ()

    def names(self) -> tuple[str, ...]:
        """NiFi's names of the property: the 1.x one, then NiFi 2's where it differs."""
        return (self.nifi,) if self.nifi2 is None or self.nifi2 == self.nifi else (self.nifi, self.nifi2)

    def accepts(self, value: str) -> bool:
        return ANY_VALUE in self.accepted or value in self.accepted or value == self.nifi_default


@dataclass(frozen=True)
class ComponentMapping:
    custody_type: str
    nifi_types: tuple[str, ...]  # fully qualified class names; the export writes the first
    artifact: str  # the NAR NiFi loads the first class from (group org.apache.nifi)
    properties: tuple[PropertyMapping, ...]
    note: str = ""
    apis: tuple[tuple[str, str], ...] = ()  # a service's (interface class, its NAR)
    # NiFi's relationship names that Custody spells otherwise (InvokeHTTP's "No Retry")
    relationships: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # NiFi's relationships Custody's processor never routes to (ExecuteStateless's
    # timeout: Custody's has no dataflow timeout): auto-terminated, they are dropped
    unused_relationships: tuple[str, ...] = ()
    # Custody properties that say what NiFi's component does without a property for it
    # (PutFile names its file after the filename attribute): each import sets them, and
    # the export writes nothing for them at these values.
    implied: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))

    def custody_relationship(self, nifi_name: str) -> str:
        return self.relationships.get(nifi_name, nifi_name)

    def nifi_relationship(self, custody_name: str) -> str:
        for nifi_name, custody_name_of in self.relationships.items():
            if custody_name_of == custody_name:
                return nifi_name
        return custody_name

    def by_nifi_name(self) -> dict[str, PropertyMapping]:
        """Each property mapping by each of NiFi's names of it (1.x and 2.x)."""
        return {name: mapping for mapping in self.properties for name in mapping.names()}

    def by_custody_name(self) -> dict[str, PropertyMapping]:
        return {mapping.custody: mapping for mapping in self.properties if mapping.custody is not None}


def prop(nifi: str, custody: str, default: str | None = None, kind: str = "text", **extra) -> PropertyMapping:
    return PropertyMapping(nifi, custody, default, kind, **extra)


def choice(nifi: str, custody: str, default: str | None, choices: Mapping[str, str], **extra) -> PropertyMapping:
    return PropertyMapping(nifi, custody, default, "choice", MappingProxyType(dict(choices)), **extra)


def same_choice(nifi: str, custody: str, default: str | None, *values: str, **extra) -> PropertyMapping:
    return choice(nifi, custody, default, {value: value for value in values}, **extra)


def none(nifi: str, default: str | None = None, *accepted: str, note: str = "", **extra) -> PropertyMapping:
    return PropertyMapping(nifi, None, default, "none", accepted=accepted, note=note, **extra)


def connection(nifi: str, *services: ComponentMapping, **extra) -> PropertyMapping:
    return PropertyMapping(nifi, None, None, "connection", services=services, **extra)
