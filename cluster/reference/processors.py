"""The processors page: every processor type custody ships, read from the standard
registry (`flow.loading.standard_registry()`, the one a node parses its flow against)
without the plug-ins installed where the page is built, with its properties and
relationships as the classes declare them."""

from __future__ import annotations

import inspect
from collections.abc import Mapping

from . import markdown as md

TITLE = "Processors"
INTRO = (
    "Every processor type custody ships. A flow's `type:` can also name a processor that an installed "
    "package declares as an entry point of the group `custody.processors` (not listed here). "
    "Properties are checked when the flow is loaded, before anything runs: an unknown "
    "property, a value of the wrong kind or outside its bounds is refused, naming the processor and the "
    "property. Writing one: [Writing a processor](../develop/processors.md)."
)


def describe(cls) -> str:
    """The class's `description`, else the first paragraph of its docstring."""
    if cls.description:
        return cls.description
    doc = inspect.getdoc(cls) or ""
    return doc.split("\n\n")[0]


def default_of(descriptor) -> str:
    if descriptor.default is None:
        return ""
    if isinstance(descriptor.default, bool):
        return md.code("true" if descriptor.default else "false")
    if descriptor.default == "":
        return md.code('""')
    return md.code(descriptor.default)


def allowed_of(descriptor) -> str:
    """Choices, or bounds, of a property's value."""
    if descriptor.choices:
        return ", ".join(md.code(choice) for choice in descriptor.choices)
    bounds = []
    if descriptor.minimum is not None:
        bounds.append(f"at least {descriptor.minimum:g}")
    elif descriptor.kind == "integer":
        bounds.append("not negative")
    if descriptor.maximum is not None:
        bounds.append(f"at most {descriptor.maximum:g}")
    return md.text(", ".join(bounds))


def processor_facts(cls, origin: str) -> list[str]:
    relationships = ", ".join(md.code(name) for name in cls.relationships) or "none"
    if cls.relationships_note:
        relationships += f"; {md.text(cls.relationships_note)}"
    facts = [f"**Relationships:** {relationships}"]
    if cls.dynamic_properties:
        facts.append("**Dynamic properties:** yes (any other property name; its value is an expression)")
    facts.append(
        "**Kind:** a source (runs on its schedule, without input)"
        if cls.is_source
        else "**Kind:** runs when FlowFiles wait in its input"
    )
    facts.append(f"**Class:** {md.code(origin)}")
    return [*(f"- {fact}" for fact in facts), ""]


def kind_of(descriptor) -> str:
    """A property's kind as the page says it: a service property names the kind of service."""
    if descriptor.kind == "service" and descriptor.service_kind:
        return md.text(f"service ({descriptor.service_kind})")
    return md.text(descriptor.kind)


def properties_table(properties) -> list[str]:
    """The table of a processor's or a service's property descriptors."""
    if not properties:
        return ["No properties.", ""]
    rows = [
        (
            md.code(d.name),
            kind_of(d),
            default_of(d),
            "yes" if d.required else "",
            allowed_of(d),
            md.text(d.description),
        )
        for d in properties
    ]
    return md.table(("property", "kind", "default", "required", "allowed", "description"), rows) + [""]


def _standard_registry():
    from flow.loading import standard_registry

    # The processors custody ships, not the plug-ins of whatever machine builds the
    # page (those document themselves).
    return standard_registry(entry_points=lambda **_: ())


def page_of(type_name: str) -> str:
    """The file of a processor's own page, under the reference directory."""
    return f"processors/{type_name}.md"


def processors_page(registry: Mapping[str, type] | None = None) -> str:
    """The index: every processor, what it does, a link to its page."""
    registry = _standard_registry() if registry is None else registry
    rows = [(f"[{name}]({page_of(name)})", md.text(describe(registry[name]))) for name in sorted(registry)]
    return md.page(TITLE, INTRO, md.table(("processor", "what it does"), rows))


def processor_pages(registry: Mapping[str, type] | None = None) -> dict[str, str]:
    """A page per processor: what it does, its relationships, its properties."""
    registry = _standard_registry() if registry is None else registry
    pages = {}
    for name in sorted(registry):
        cls = registry[name]
        origin = registry.origin(name) if hasattr(registry, "origin") else cls.__module__
        body = processor_facts(cls, origin) + ["## Properties", ""] + properties_table(cls.properties)
        body += ["All processors: [Processors](../processors.md)."]
        pages[page_of(name)] = md.page(name, md.text(describe(cls)), body)
    return pages
