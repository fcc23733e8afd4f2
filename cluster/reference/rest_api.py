"""The REST API page: every path of a node's admin API, read from the OpenAPI document
its FastAPI application publishes at `/openapi.json` (`cluster.admin.app.create_app`).

Building the application calls nothing of the node: the routes reach it only when a
request comes in, so a stand-in that has a name is enough (the unit tests of the
admin API build it the same way)."""

from __future__ import annotations

from dataclasses import dataclass

from . import markdown as md

TITLE = "REST API"
INTRO = (
    "Every path of a node's admin API, as its OpenAPI document (`GET /openapi.json` on a node) declares it. "
    "`/health` and `/ready` need no token; every other path needs a bearer token (`Authorization: Bearer "
    "<token>`) once the node has a token file: role `read` for every GET, `admin` for control. Errors are "
    "JSON, a [Problem](#problem). Using it: [the admin API](../operate/admin-api.md)."
)
SCHEMA_PREFIX = "#/components/schemas/"


@dataclass(frozen=True)
class StandInNode:
    """What `create_app` reads of a node when it builds the application: its name."""

    name: str = "NODE"


def admin_openapi() -> dict:
    from cluster.admin.app import create_app

    return create_app(StandInNode()).openapi()


def schema_name(ref: str) -> str:
    """`#/components/schemas/cluster__admin__models_queues__ContentClaimView` -> the
    name as the document gives it."""
    return ref[len(SCHEMA_PREFIX) :]


def kind(schema: dict) -> str:
    """A JSON schema as a short phrase in Markdown, linking the models it names."""
    if "$ref" in schema:
        name = schema_name(schema["$ref"])
        return f"[{name}](#{md.anchor(name)})"
    if "anyOf" in schema or "oneOf" in schema:
        return " or ".join(kind(choice) for choice in schema.get("anyOf", schema.get("oneOf")))
    if "allOf" in schema:
        return " and ".join(kind(part) for part in schema["allOf"])
    if "enum" in schema:
        return "one of " + ", ".join(md.code(value) for value in schema["enum"])
    shown = schema.get("type", "any")
    if shown == "array":
        return f"array of {kind(schema.get('items', {}))}"
    if shown == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {kind(schema['additionalProperties'])}"
    if "format" in schema:
        shown = f"{shown} ({schema['format']})"
    return md.text(shown)


def limits(schema: dict) -> str:
    facts = []
    if "default" in schema:
        facts.append(f"default {md.code(schema['default'])}")
    for key, word in (
        ("minimum", "at least"),
        ("maximum", "at most"),
        ("minLength", "length at least"),
        ("maxLength", "length at most"),
    ):
        if key in schema:
            facts.append(f"{word} {md.code(schema[key])}")
    if "pattern" in schema:
        facts.append(f"pattern {md.code(schema['pattern'])}")
    return "; ".join(facts)


def body_of(content: dict) -> str:
    return "; ".join(
        f"{md.code(media)}: {kind(item.get('schema', {}))}" if item.get("schema") else md.code(media)
        for media, item in content.items()
    )


def operation_section(path: str, method: str, operation: dict) -> list[str]:
    lines = [f"### {method.upper()} {path}", ""]
    if operation.get("summary"):
        lines += [md.text(operation["summary"][0].upper() + operation["summary"][1:]) + ".", ""]
    if operation.get("description"):
        lines += [md.text(operation["description"]), ""]
    lines += [f"- **Token:** {'yes' if operation.get('security') else 'none'}"]
    if operation.get("requestBody"):
        request = operation["requestBody"]
        lines += [f"- **Body{' (required)' if request.get('required') else ''}:** {body_of(request['content'])}"]
    lines.append("")
    parameters = operation.get("parameters", [])
    if parameters:
        rows = [
            (
                md.code(p["name"]),
                md.text(p["in"]),
                "yes" if p.get("required") else "",
                kind(p.get("schema", {})),
                limits(p.get("schema", {})),
                md.text(p.get("description", "")),
            )
            for p in parameters
        ]
        lines += md.table(("parameter", "in", "required", "type", "limits", "description"), rows) + [""]
    rows = [
        (md.code(status), md.text(answer.get("description", "")), body_of(answer.get("content", {})))
        for status, answer in sorted(operation.get("responses", {}).items())
    ]
    lines += md.table(("status", "meaning", "body"), rows) + [""]
    return lines


def schema_section(name: str, schema: dict) -> list[str]:
    lines = [f"### {name}", ""]
    if schema.get("description"):
        lines += [md.text(schema["description"]), ""]
    properties = schema.get("properties")
    if not properties:
        return lines + [f"A value of type {kind({k: v for k, v in schema.items() if k != 'title'})}.", ""]
    required = set(schema.get("required", ()))
    rows = [
        (md.code(field), kind(spec), "yes" if field in required else "", md.text(spec.get("description", "")))
        for field, spec in properties.items()
    ]
    return lines + md.table(("field", "type", "always", "description"), rows) + [""]


def rest_api_page(spec: dict | None = None) -> str:
    spec = admin_openapi() if spec is None else spec
    body = ["## Paths", ""]
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            body += operation_section(path, method, operation)
    body += ["## Models", "", "The bodies the paths answer and take, as the document's `components` name them.", ""]
    for name, schema in sorted(spec.get("components", {}).get("schemas", {}).items()):
        body += schema_section(name, schema)
    return md.page(TITLE, INTRO, body)
