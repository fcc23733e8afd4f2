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


def services_page() -> str:
    from flow.records.catalog import RECORD_SERVICE_TYPES

    names = sorted(RECORD_SERVICE_TYPES)
    body = [", ".join(f"[{name}](#{md.anchor(name)})" for name in names), ""]
    for name in names:
        cls = RECORD_SERVICE_TYPES[name]
        facts = [f"**Kind:** {cls.kind}", f"**Class:** {md.code(f'{cls.__module__}.{cls.__qualname__}')}"]
        mime = getattr(cls, "mime_type", None)
        if mime:
            facts.append(f"**mime.type it sets:** {md.code(mime)}")
        body += [f"## {name}", "", md.text(describe(cls)), "", *(f"- {fact}" for fact in facts), ""]
        body += properties_table(cls.properties)
    return md.page(TITLE, INTRO, body)
