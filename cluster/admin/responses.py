"""The error answers each kind of route declares in /openapi.json, the one shape every
error has (`problem`), and the 422 FastAPI declares by itself (for a route with
parameters) made to say what the app sends."""

from __future__ import annotations

from fastapi.responses import JSONResponse

from .models import Problem

_AUTH = {
    401: {"model": Problem, "description": "no token, or an unknown one"},
    403: {"model": Problem, "description": "the token's role is not enough"},
}
_OUTAGE = {503: {"model": Problem, "description": "ZooKeeper or storage does not answer; the reason"}}
_NOT_FOUND = {404: {"model": Problem, "description": "the id is unknown; which one"}}
_REFUSED = {409: {"model": Problem, "description": "the node's state refuses the call"}}
_INVALID = {422: {"model": Problem, "description": "a parameter is invalid; which one"}}

READ_ERRORS = {**_AUTH, **_OUTAGE}
LOOKUP_ERRORS = {**READ_ERRORS, **_NOT_FOUND}
CONTROL_ERRORS = {**LOOKUP_ERRORS, **_REFUSED}
# Routes with parameters declare the 422 FastAPI would otherwise describe with its own model.
PARAMETER_LOOKUP_ERRORS = {**LOOKUP_ERRORS, **_INVALID}
PARAMETER_CONTROL_ERRORS = {**CONTROL_ERRORS, **_INVALID}
BODY_CONTROL_ERRORS = {
    **PARAMETER_CONTROL_ERRORS,
    413: {"model": Problem, "description": "the body is larger than the route takes; how large"},
}
QUERY_ERRORS = {**READ_ERRORS, **_INVALID}
CONTENT_ERRORS = {
    **PARAMETER_LOOKUP_ERRORS,
    416: {
        "model": Problem,
        "description": "the Range asked for starts past the content's end (Content-Range: bytes */size)",
    },
}


def problem(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers)


def as_json(errors: dict) -> dict:
    """`errors` for a route whose own answer is not JSON (a stream): its errors still are."""
    return {
        status: {
            "description": answer["description"],
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{answer['model'].__name__}"}}},
        }
        for status, answer in errors.items()
    }


def document_validation_errors(app) -> None:
    """FastAPI documents a 422 of its own shape (`HTTPValidationError`) on every route
    with parameters; the app answers a bad parameter with a `Problem` (see app.py).
    Make the spec say so, on the routes FastAPI chose, so the spec matches the wire."""
    build = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            spec = build()
            for operations in spec.get("paths", {}).values():
                for operation in operations.values():
                    invalid = operation.get("responses", {}).get("422")
                    if invalid is not None:
                        invalid.update(
                            description="a parameter is invalid: which one, and why",
                            content={"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
                        )
            schemas = spec.get("components", {}).get("schemas", {})
            if "Problem" not in schemas:  # only FastAPI's 422s referred to an error shape
                schemas["Problem"] = Problem.model_json_schema()
            for unused in ("HTTPValidationError", "ValidationError"):
                schemas.pop(unused, None)
        return app.openapi_schema

    app.openapi = openapi
