"""The services page: every controller service type a flow's `services:` can name
(`flow.records.catalog`), with its kind and its properties as the classes declare them."""

from __future__ import annotations

from . import markdown as md
from .processors import describe, properties_table

TITLE = "Services"
INTRO = (
    "Every service type a flow's `services:` can name: record readers and writers, configured once by "
    "id and shared by the processors that name them (a processor's property of kind `service`). "
    "Properties are checked when the flow is loaded, as a processor's are; a processor that names a "
    "service the flow lacks, or one of the wrong kind, is refused there. How records flow: "
    "[Records](../concepts/records.md)."
)


def page_of(type_name: str) -> str:
    """The file of a service's own page, under the reference directory."""
    return f"services/{type_name}.md"


def services_page() -> str:
    """The index: every service type, its kind, a link to its page."""
    from flow.records.catalog import RECORD_SERVICE_TYPES

    rows = [
        (f"[{name}]({page_of(name)})", md.text(cls.kind), md.text(describe(cls)))
        for name, cls in sorted(RECORD_SERVICE_TYPES.items())
    ]
    return md.page(TITLE, INTRO, md.table(("service", "kind", "what it does"), rows))


def service_pages() -> dict[str, str]:
    """A page per service type: what it does, its kind, its properties."""
    from flow.records.catalog import RECORD_SERVICE_TYPES

    pages = {}
    for name, cls in sorted(RECORD_SERVICE_TYPES.items()):
        facts = [f"**Kind:** {cls.kind}", f"**Class:** {md.code(f'{cls.__module__}.{cls.__qualname__}')}"]
        mime = getattr(cls, "mime_type", None)
        if mime:
            facts.append(f"**mime.type it sets:** {md.code(mime)}")
        body = [*(f"- {fact}" for fact in facts), "", "## Properties", "", *properties_table(cls.properties)]
        body += ["All services: [Services](../services.md); how records flow: [Records](../../concepts/records.md)."]
        pages[page_of(name)] = md.page(name, md.text(describe(cls)), body)
    return pages
